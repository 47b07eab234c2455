"""Ray backend (package): env copies split into shards, each shard a Ray actor that runs
its copies on its own local SEER pool (the thread or process backend).

Driver and shards::

    driver (RayVectorEnv + RayBackend)                 shard s (a Ray actor, _Shard)
      global Layout + buffers (rows of all copies)      build_local(shard_backend, env_fn, n_s, ...)
      step_async: one call per shard, all sent          reads its actions, steps its copies (local
                  before any answer is gathered         backend), writes its rows, answers its messages
      step_wait:  answers gathered, messages
                  re-indexed to global rows/copies

Everything above the row buffers -- masks, autoreset bookkeeping, infos,
``EnvCopyError`` -- is :class:`~seer.vector.SeerVectorEnv`'s, as for the other
backends: a shard drives its local backend through the backend contract
(:class:`seer.vector.backend.Backend`) and returns its typed messages (:mod:`seer.vector.messages`,
numbered from its first copy), which the driver re-indexes.  Copy ``c``
is reset with ``seed + c`` wherever it lives, so results equal the thread and
process backends' for the same seed and actions.

Shards on the driver's node skip Ray for the per-step work: the driver's
row buffers live in a shared-memory block, where such a shard reads its
actions and writes its rows in place, and its ``step`` and ``rollout``
calls go through the lane (``lane``: sealed commands and replies, flags
and futex bells in one more block, as the process backend's), which costs
tens of microseconds where a Ray actor call costs about a millisecond.  A
rollout's batch is one block that every such shard writes its rows of, and
the arrays ``rollout`` returns are views of it (a block comes back for a
later rollout once they are all gone).  Shards on other nodes, resets and
``call``/``get_attr`` go through Ray's calls and its object store.

A shard actor that dies shows up as ``ray.exceptions.RayActorError`` on its
pending call (on a lane call: the driver sees its process end, then asks
Ray about the actor): it becomes a :class:`~seer.errors.WorkerError` naming the shard
and its rows (and closes the vector env), or, with ``restart_failed=True``,
Ray restarts the actor (``max_restarts``) and its rows come back truncated and
reset, as a restarted worker process does in the process backend.  Every
reply carries the actor's incarnation token, so an actor that died *between*
two calls (and that Ray restarted with new copies) is caught as well.

Files: ``cluster`` (importing Ray, owning the Ray session, pickling for the
actors), ``batch`` (the buffers a shard sends back, the rollout batch
layout and its blocks), ``lane`` (calls through shared memory), ``shard``
(the shard actor), ``driver`` (:class:`RayBackend`, the
driver's side: ops fanned out to the shards, their rows gathered) with its
parts ``startup`` (starting the shards), ``restart`` (a shard that died) and
``rollout`` (batched rollouts), ``env`` (:class:`RayVectorEnv` and
``make_ray``).
"""

from seer.vector.ray.cluster import RAY_MISSING, import_ray
from seer.vector.ray.driver import RayBackend
from seer.vector.ray.env import RayVectorEnv, make_ray

__all__ = ["RAY_MISSING", "import_ray", "RayBackend", "RayVectorEnv", "make_ray"]
