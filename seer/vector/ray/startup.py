"""Starting the Ray backend's shards (`ShardStartup`, a part of `RayBackend`): creating the actors, checking that their rows lay out as the whole vector env's, and attaching those on the driver's node to its shared-memory buffers."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode

from seer.errors import InvalidArgumentError, WorkerError
from seer.vector import shm as shm_blocks
from seer.vector._layout import build_layout
from seer.vector.process.options import unpicklable
from seer.vector.ray.batch import COPY_FIELDS, shard_fields
from seer.vector.ray.cluster import _INLINE_BYTES, _dumps
from seer.vector.ray.lane import Lane
from seer.vector.ray.shard import _Shard


class ShardStartup:
    """How :class:`~seer.vector.ray.driver.RayBackend` starts its shards."""

    def _start(self, env_fn, num_copies, workers, pad, num_shards, shard_backend, cpus, shard_options,
               validate, context, inline) -> None:
        ray = self.ray
        cluster_cpus = float(ray.cluster_resources().get("CPU", 0))
        if num_shards is None:
            per = cpus if cpus else 1
            num_shards = max(1, min(num_copies, int(cluster_cpus // per) if cluster_cpus else 1))
        if not isinstance(num_shards, (int, np.integer)) or isinstance(num_shards, bool) \
                or not 1 <= num_shards <= num_copies:
            raise ValueError(f"num_shards={num_shards!r} is invalid: expected an integer in [1, num_envs={num_copies}] "
                             f"(each shard runs at least one env copy)")
        num_shards = int(num_shards)
        opts: dict[str, Any] = {"max_restarts": -1 if self.restart_failed else 0, "max_task_retries": 0}
        if cpus is not None:
            opts["num_cpus"] = cpus
        opts.update(shard_options or {})
        need = num_shards * float(opts.get("num_cpus") or 0)
        if need > cluster_cpus:
            raise ValueError(
                f"{num_shards} shards x num_cpus_per_shard={opts.get('num_cpus')} need {need:g} CPUs but the Ray "
                f"cluster has {cluster_cpus:g}: lower num_shards or num_cpus_per_shard (fractions and 0 are "
                f"allowed), or add nodes"
            )
        splits = [s for s in np.array_split(np.arange(num_copies), num_shards)]
        self.copy_ranges = [(int(s[0]), int(s[-1]) + 1) for s in splits]
        self.num_shards = num_shards
        kw = {"workers": workers, "backend": shard_backend, "autoreset": self.autoreset, "pad": bool(pad),
              "restart": self.restart_failed, "validate": bool(validate), "context": context,
              "inline": None if inline == "auto" else inline,
              # a process shard bounds its waits for its own workers the same way
              "worker_timeout": self.worker_timeout}
        actor_cls = ray.remote(_Shard)
        try:
            fn_bytes = _dumps(env_fn)
        except Exception as exc:
            raise InvalidArgumentError(unpicklable(env_fn, exc, "Ray sends it to each shard actor")) from exc
        fn_arg = ray.put(fn_bytes) if len(fn_bytes) > _INLINE_BYTES else fn_bytes
        self.actors = [actor_cls.options(**opts).remote(s, fn_arg, c1 - c0, num_copies, kw)
                       for s, (c0, c1) in enumerate(self.copy_ranges)]
        refs = [a.start.remote() for a in self.actors]
        ready, pending = ray.wait(refs, num_returns=len(refs), timeout=self.startup_timeout)
        if pending:
            late = [refs.index(r) for r in pending]
            raise WorkerError(f"shards {late} did not start within {self.startup_timeout} s (Ray resources: "
                              f"{ray.available_resources()}; each shard asks for {opts})")
        starts = []
        for s, r in enumerate(refs):
            try:
                starts.append(ray.get(r))
            except ray.exceptions.RayTaskError as exc:
                raise _cause(exc, f"while shard {s} created env copies {self.copy_ranges[s][0]}.."
                                  f"{self.copy_ranges[s][1] - 1}") from None
        self.shard_info = starts
        self.tokens = [st["token"] for st in starts]
        self.specs = [spec for st in starts for spec in st["specs"]]
        #: per copy: whether its shard steps it on the native path (in C)
        self.native_copies = [bool(n) for st in starts for n in st.get("native", [False] * len(st["specs"]))]
        self.layout = build_layout(self.specs, pad, same_step=self.autoreset == AutoresetMode.SAME_STEP)
        L = self.layout
        for s, (c0, c1) in enumerate(self.copy_ranges):
            local = build_layout(self.specs[c0:c1], pad, same_step=L.same_step)
            if local.slots != L.slots or local.obs_space != L.obs_space or local.act_space != L.act_space:
                raise ValueError(
                    f"shard {s} (env copies {c0}..{c1 - 1}) lays its rows out differently from the whole vector env "
                    f"(agent slots {local.slots} vs {L.slots}, observation space {local.obs_space} vs "
                    f"{L.obs_space}, action space {local.act_space} vs {L.act_space}): with pad=True every shard's "
                    f"copies must pad to the same spaces; use num_shards that group copies with the same agents, "
                    f"or give the copies equal spaces"
                )
        A = L.slots
        self.row_ranges = [(c0 * A, c1 * A) for c0, c1 in self.copy_ranges]
        try:
            self._node_id = ray.get_runtime_context().get_node_id()
        except Exception:
            self._node_id = None
        self.direct: set[int] = set()  # shards that read and write the driver's buffers in shared memory
        local = [s for s, st in enumerate(starts) if self.use_shm and st.get("node_id") == self._node_id]
        if local:
            shm = shm_blocks.create(L.offsets()[1])
            self._boxes["bufs"] = shm
            self.bufs = L.allocate(shm.buf)
        else:
            self.bufs = L.allocate()
        self._names = shard_fields(L)
        self._dest = []
        for (c0, c1), (r0, r1) in zip(self.copy_ranges, self.row_ranges):
            self._dest.append(tuple(self.bufs[n][c0:c1] if n in COPY_FIELDS else self.bufs[n][r0:r1]
                                    for n in self._names))
        self.num_workers = sum(st["workers"] for st in starts)
        self._step_m = [a.step for a in self.actors]
        self.restart_counts = [0] * num_copies
        self.last_seeds: list = [None] * num_copies
        self.pending: dict[int, tuple] = {}  # shard -> (seeded, seeds) of its due NEXT_STEP reset (restarted)
        self.inflight: dict[int, tuple] = {}  # shard -> (op, ref)
        self._acc: list = []  # messages of the shards gathered so far in this step ...
        self._done_shards: list[int] = []  # ... and those shards
        self._policy_keys: dict[int, bytes] = {}
        self._alive_before = None
        if local:
            self.lane = Lane(num_shards)
            self._boxes["lane"] = self.lane.shm
            tokens = ray.get([self.actors[s].attach.remote(self._boxes["bufs"].name, self._row_spec(s),
                                                           self.lane.config(s))
                              for s in local], timeout=self.startup_timeout)
            if tokens == [self.tokens[s] for s in local]:
                self.direct = set(local)
                for s in local:
                    self.lane.adopt(s, starts[s]["pid"])

    def _row_spec(self, s: int) -> list:
        """(field, dtype, shape, byte offset) of shard ``s``'s rows (copies)
        in the driver's buffers, for the fields it writes and ``act``."""
        L = self.layout
        off, _ = L.offsets()
        (c0, c1), (r0, r1) = self.copy_ranges[s], self.row_ranges[s]
        spec = []
        for name, shape, dt in L.fields():
            if name not in self._names and name != "act":
                continue
            lo, hi = (c0, c1) if name in COPY_FIELDS else (r0, r1)
            per = int(np.prod(shape[1:], dtype=np.int64)) * dt.itemsize
            spec.append((name, dt.str, (hi - lo, *shape[1:]), off[name] + lo * per))
        return spec


def _cause(exc, where: str):
    """The exception a shard's method raised (with the remote traceback as a
    note), from Ray's RayTaskError."""
    cause = getattr(exc, "cause", None)
    if isinstance(cause, BaseException):
        try:
            cause.add_note(f"(raised in a seer.vector Ray shard, {where}; remote traceback:\n{exc})")
        except Exception:
            pass
        return cause
    return WorkerError(f"{where}: {exc}")
