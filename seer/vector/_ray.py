"""The Ray backend's old module name, kept importable: re-exports :mod:`seer.vector.ray`."""

from seer.errors import ActorRestartedError  # noqa: F401  (its old home)
from seer.vector.ray.batch import (BATCH_KEYS, COPY_FIELDS, MASK_FIELDS, ROW_FIELDS, SAME_STEP_FIELDS,  # noqa: F401
                                   _batch_spec, _views, shard_fields)
from seer.vector.ray.cluster import (_INLINE_BYTES, _OWNED, RAY_MISSING, _connect, _dumps, _release,  # noqa: F401
                                     import_ray)
from seer.vector.ray.driver import RayBackend  # noqa: F401
from seer.vector.ray.restart import _ShardDied  # noqa: F401
from seer.vector.ray.startup import _cause  # noqa: F401
from seer.vector.ray.env import RayVectorEnv, make_ray  # noqa: F401
from seer.vector.ray.shard import _Shard  # noqa: F401
