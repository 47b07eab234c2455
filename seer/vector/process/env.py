"""`ProcessVectorEnv`: the vector env (with env-pool stepping) on the process backend."""

from __future__ import annotations

from seer.vector._env import SeerVectorEnv
from seer.vector._pool import EnvPool


class ProcessVectorEnv(EnvPool, SeerVectorEnv):
    """A :class:`~seer.vector.SeerVectorEnv` whose copies run in worker
    processes, from ``seer.vector.make(..., backend="process")``.

    On top of the whole :class:`~seer.vector.SeerVectorEnv` contract:
    env-pool stepping (:class:`~seer.vector._pool.EnvPool`), with one shard
    per worker process (``shard_copies[w]``: its copies):
    :meth:`send` steps some workers' copies, :meth:`recv` returns the rows
    of the first workers to finish, so a slow copy holds up its own worker's
    copies only.  (A copy cannot move between processes: a PettingZoo env is
    a Python object inside one of them.)  Every wait for the workers is
    bounded by ``worker_timeout`` (see :data:`WORKER_TIMEOUT_S`).
    """
