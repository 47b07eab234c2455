"""Ray backend (package): env copies split into shards, each shard a Ray actor that runs
its copies on its own local SEER pool (the thread or process backend).

Driver and shards::

    driver (RayVectorEnv + RayBackend)                 shard s (a Ray actor, _Shard)
      global Layout + buffers (rows of all copies)      build_local(shard_backend, env_fn, n_s, ...)
      step_async: act[rows_s] -> actor.step.remote()    writes act, steps its copies (local backend)
                  (one call per shard, all submitted    returns (its rows' arrays, its messages)
                   before any result is gathered)
      step_wait:  ray.get -> copy each shard's arrays
                  into the driver buffers at its rows,
                  messages re-indexed to global rows/copies

Everything above the row buffers -- masks, autoreset bookkeeping, infos,
``EnvCopyError`` -- is :class:`~seer.vector.SeerVectorEnv`'s, as for the other
backends: a shard drives its local backend through the backend contract
(:class:`seer.vector.backend.Backend`) and returns its typed messages (:mod:`seer.vector.messages`,
numbered from its first copy), which the driver re-indexes.  Copy ``c``
is reset with ``seed + c`` wherever it lives, so results equal the thread and
process backends' for the same seed and actions.

Shards on the driver's node skip Ray's object store for the arrays: the
driver's row buffers live in a shared-memory block, such a shard reads its
actions and writes its rows there in place (its calls carry only messages),
and a rollout batch goes through one more block per shard, reused from call
to call.  Shards on other nodes send and receive the arrays through Ray.

A shard actor that dies shows up as ``ray.exceptions.RayActorError`` on its
pending call: it becomes a :class:`~seer.errors.WorkerError` naming the shard
and its rows (and closes the vector env), or, with ``restart_failed=True``,
Ray restarts the actor (``max_restarts``) and its rows come back truncated and
reset, as a restarted worker process does in the process backend.  Every
reply carries the actor's incarnation token, so an actor that died *between*
two calls (and that Ray restarted with new copies) is caught as well.

Files: ``cluster`` (importing Ray, owning the Ray session, pickling for the
actors), ``batch`` (the buffers a shard sends back and the rollout batch
layout), ``shard`` (the shard actor), ``driver`` (:class:`RayBackend`, the
driver's side: ops fanned out to the shards, their rows gathered) with its
parts ``startup`` (starting the shards), ``restart`` (a shard that died) and
``rollout`` (batched rollouts), ``env`` (:class:`RayVectorEnv` and
``make_ray``).
"""

from seer.vector.ray.cluster import RAY_MISSING, import_ray
from seer.vector.ray.driver import RayBackend
from seer.vector.ray.env import RayVectorEnv, make_ray

__all__ = ["RAY_MISSING", "import_ray", "RayBackend", "RayVectorEnv", "make_ray"]
