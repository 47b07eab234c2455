"""The Ray backend's driver side: `RayBackend`, which spreads ops over the shard actors and gathers their rows and messages."""

from __future__ import annotations

import multiprocessing
import weakref

import numpy as np

from seer.errors import ClosedError
from seer._checks import check_worker_timeout
from seer.vector.process.protocol import WORKER_TIMEOUT_S
from seer.vector import shm as shm_blocks
from seer.vector.messages import restarts, shifted
from seer.vector.ray.batch import COPY_FIELDS, BatchBlocks
from seer.vector.ray.lane import LaneCall
from seer.vector.ray.cluster import _connect, _release, import_ray
from seer.vector.ray.restart import CALL, RESET, STEP, ShardRestarts, _ShardDied
from seer.vector.ray.rollout import ShardRollouts
from seer.vector.ray.startup import ShardStartup


class RayBackend(ShardStartup, ShardRestarts, ShardRollouts):
    """The backend interface of :class:`SeerVectorEnv` (see ``_thread.py``)
    over shard actors, plus ``send`` / ``recv`` for env-pool stepping and
    ``rollout``.  Its parts in files of their own: starting the shards
    (:class:`~seer.vector.ray.startup.ShardStartup`), a shard that died
    (:class:`~seer.vector.ray.restart.ShardRestarts`) and rollouts
    (:class:`~seer.vector.ray.rollout.ShardRollouts`)."""

    name = "ray"

    def __init__(self, env_fn, num_copies, workers, *, pad, autoreset, restart, num_shards=None,
                 ray_address=None, shard_backend="thread", num_cpus_per_shard=1, shard_options=None,
                 ray_init=None, startup_timeout=300.0, validate_actions=True, context=None, inline=None,
                 shared_memory=True, worker_timeout=WORKER_TIMEOUT_S):
        ray = import_ray()
        self.ray = ray
        self.closed = False
        self.broken: str | None = None
        self.actors: list = []
        self._owns_ray = False
        self.lane = None  # Lane: step / rollout calls to the shards on this node through shared memory
        # the shared-memory blocks: "bufs" (the row buffers), "lane", and rollout batches (by name)
        self._boxes: dict = {}
        self._batches = BatchBlocks(self._boxes)
        self._box_finalizer = weakref.finalize(self, shm_blocks.release_all, self._boxes)
        self.autoreset = autoreset
        self.restart_failed = bool(restart)
        self.startup_timeout = float(startup_timeout)
        self.worker_timeout = check_worker_timeout(worker_timeout)
        self.use_shm = bool(shared_memory)
        if shard_backend not in ("thread", "process"):
            raise ValueError(f"shard_backend={shard_backend!r} is invalid: expected 'thread' or 'process'")
        if shard_backend == "thread" and (context is not None or inline not in (None, "auto", False)):
            raise TypeError("context= and inline= are for shard_backend='process' only")
        if num_cpus_per_shard is not None and (not isinstance(num_cpus_per_shard, (int, float))
                                               or isinstance(num_cpus_per_shard, bool) or num_cpus_per_shard < 0):
            raise ValueError(f"num_cpus_per_shard={num_cpus_per_shard!r} is invalid: expected a number >= 0")
        self._owns_ray = _connect(ray, ray_address, ray_init)
        try:
            self._start(env_fn, num_copies, workers, pad, num_shards, shard_backend, num_cpus_per_shard,
                        shard_options, validate_actions, context, inline)
        except BaseException:
            self.close()
            raise

    # ---- helpers -----------------------------------------------------------------------------

    def _check(self) -> None:
        if self.closed:
            raise ClosedError("this vector env is closed" + (f" ({self.broken})" if self.broken else ""))
        if self.broken:
            raise ClosedError(f"this vector env can no longer be used ({self.broken}); close() it")

    def describe(self, s: int) -> str:
        st = self.shard_info[s] if s < len(getattr(self, "shard_info", [])) else {}
        actor = self.actors[s]
        aid = actor._actor_id.hex()[:8] if hasattr(actor, "_actor_id") else "?"
        return f"shard {s} (Ray actor {aid}, pid {st.get('pid', '?')} on {st.get('node', '?')})"

    def _what(self, s: int) -> str:
        (c0, c1), (r0, r1) = self.copy_ranges[s], self.row_ranges[s]
        return f"env copies {c0}..{c1 - 1} (rows {r0}..{r1 - 1})"

    def _put(self, s: int, state, copies=None) -> None:
        """Copy shard ``s``'s arrays into the driver buffers (only the rows of
        ``copies``, a bool array over the shard's copies, if given)."""
        if copies is None or copies.all():
            for dst, src in zip(self._dest[s], state):
                dst[...] = src
            return
        rows = np.repeat(copies, self.layout.slots)
        for n, dst, src in zip(self._names, self._dest[s], state):
            m = copies if n in COPY_FIELDS else rows
            dst[m] = src[m]

    def _remap(self, s: int, msgs) -> list:
        if not msgs:
            return []
        return shifted(msgs, self.row_ranges[s][0], self.copy_ranges[s][0])

    def _count_restarts(self, msgs) -> None:
        for m in restarts(msgs):
            self.restart_counts[m.copy] += 1

    # ---- backend interface -------------------------------------------------------------------

    def reset(self, options) -> list:
        self._check()
        b = self.bufs
        sel = b["select"]
        for c in np.flatnonzero(sel):
            self.last_seeds[c] = int(b["seeds"][c]) if b["seeded"][c] else None
        calls = {}
        for s, (c0, c1) in enumerate(self.copy_ranges):
            mine = sel[c0:c1].copy()
            if not mine.any():
                continue
            seeded, seeds = b["seeded"][c0:c1].copy(), b["seeds"][c0:c1].copy()
            if s in self.pending:  # a restarted shard: its copies reset now rather than at the next step
                p_seeded, p_seeds = self.pending.pop(s)
                seeded[~mine], seeds[~mine] = p_seeded[~mine], p_seeds[~mine]
                mine[:] = True
            calls[s] = (mine, self.actors[s].reset.remote(mine, seeded, seeds, options))
        msgs = []
        for s, (mine, ref) in calls.items():
            try:
                state, m = self._get(s, ref)
            except _ShardDied as d:
                if not (self.restart_failed and d.result is not None and mine.all()):
                    self._died(d, RESET)  # raises WorkerError: a reset is not restarted
                    raise
                # Ray restarted the actor before this reset, which covers all its (new) copies: go on
                try:
                    info = self._call_restarting(s, "start")
                    self._adopt(s, info)
                except Exception as exc:
                    self._died(_ShardDied(s, exc), RESET)
                    raise
                state, m = d.result
                c0, c1 = self.copy_ranges[s]
                for c in range(c0, c1):
                    self.restart_counts[c] += 1
            self._put(s, state, mine)
            msgs += self._remap(s, m)
        return msgs

    def send(self, shards) -> None:
        """Send shard ``s`` its rows of ``bufs["act"]`` (one call each, none awaited)."""
        self._check()
        if self.restart_failed:  # what a restart truncates, should a shard die in this step
            self._alive_before = self.bufs["alive"].copy()
        act = self.bufs["act"]
        for s in shards:
            if s in self.pending:
                seeded, seeds = self.pending[s]
                ref = self.actors[s].reset.remote(np.ones(len(seeds), bool), seeded, seeds, None)
                self.inflight[s] = (RESET, ref)
            else:
                call = None
                if s in self.direct and s in self.lane.open:  # actions already in its rows (shared memory)
                    call = self.lane.submit(s, "step", (None,))
                if call is None:
                    r0, r1 = self.row_ranges[s]
                    call = self._step_m[s].remote(None if s in self.direct else act[r0:r1])
                self.inflight[s] = (STEP, call)

    def _gather(self, s: int, op: str, result) -> list:
        state, msgs = result
        if op == RESET:  # the NEXT_STEP reset of a restarted shard, standing in for its step
            self.pending.pop(s, None)
        if state is not None:  # (None: the shard wrote its rows in place)
            self._put(s, state)
        msgs = self._remap(s, msgs)
        self._count_restarts(msgs)
        return msgs

    def recv(self, min_shards=None, timeout=None) -> tuple[list, list]:
        """Gather in-flight steps: all of them (``min_shards=None``), or at
        least ``min_shards`` plus any others already done.  Returns (shards,
        messages); raises ``multiprocessing.TimeoutError`` after ``timeout``
        seconds with too few done (those done stay gathered for the next call)."""
        self._check()
        ray = self.ray
        order = list(self.inflight)
        refs = [self.inflight[s][1] for s in order]
        results: dict = {}
        have = len(self._done_shards)
        if min_shards is None and timeout is None:
            got = order
            self._wait_all(refs, order)  # bounded by worker_timeout
            remote = [(s, r) for s, r in zip(order, refs) if not isinstance(r, LaneCall)]
            if remote:
                try:  # the usual case: one call for every shard's result
                    results = dict(zip([s for s, _ in remote], ray.get([r for _, r in remote])))
                except ray.exceptions.RayError:
                    results = {}  # a shard died or raised: _get sorts it out shard by shard
        elif refs:
            need = len(refs) if min_shards is None else max(0, min(int(min_shards), have + len(refs)) - have)
            ready = set(self._ready(order, refs, need, timeout)) if need else set()
            if len(ready) < len(order):  # and whoever else is done by now
                ready |= set(self._ready(order, refs, len(order), 0.0))
            got = [s for s in order if s in ready]
        else:
            got = []
        for s in got:
            op, ref = self.inflight.pop(s)
            try:
                self._acc += self._gather(s, op, self._get(s, ref, results.get(s)))
            except _ShardDied as d:
                self._acc += self._died(d, STEP)
            self._done_shards.append(s)
        if min_shards is None:
            short = bool(self.inflight)
        else:
            short = len(self._done_shards) < min(int(min_shards), len(self._done_shards) + len(self.inflight))
        if short:
            raise multiprocessing.TimeoutError(
                f"the vector env's step has timed out after {timeout} s (shards {sorted(self.inflight)} still busy); "
                f"wait again or close()")
        shards, self._done_shards = sorted(self._done_shards), []
        msgs, self._acc = self._acc, []
        return shards, msgs

    def step_async(self) -> None:
        self._alive_before = None
        self.send(range(self.num_shards))

    def step_wait(self, timeout=None) -> list:
        return self.recv(None, timeout)[1]

    def call(self, kind, name, args, kwargs, values=None, copies=None):
        self._check()
        copies = list(range(self.layout.num_copies)) if copies is None else list(copies)
        refs = {}
        for s, (c0, c1) in enumerate(self.copy_ranges):
            mine = [i for i, c in enumerate(copies) if c0 <= c < c1]
            if mine:
                refs[s] = self.actors[s].call.remote(kind, name, args, kwargs,
                                                     None if values is None else [values[i] for i in mine],
                                                     [copies[i] - c0 for i in mine])
        results, errs = [], []
        for s, ref in refs.items():  # shards in order, so results follow copies (sorted)
            try:
                out, m = self._get(s, ref)
            except _ShardDied as d:
                self._died(d, CALL)  # raises WorkerError: a call is not restarted
                raise
            results += out
            errs += self._remap(s, m)
        return results, errs

    def worker_of(self, c: int) -> str:
        for s, (c0, c1) in enumerate(self.copy_ranges):
            if c0 <= c < c1:
                return self.describe(s)
        return "?"

    def restarts(self) -> list[int]:
        return list(self.restart_counts)

    def worker_pids(self) -> list[int]:
        return [st["pid"] for st in getattr(self, "shard_info", [])]

    def close(self, timeout: float = 2.0) -> None:
        if self.closed:
            return
        self.closed = True
        ray = self.ray
        if self.lane is not None:  # ends a wait of another thread's step
            self.lane.close()
        try:
            if self.actors and ray.is_initialized():
                try:  # let each shard close its copies (and its worker processes, shared memory) first
                    refs = [a.close.remote() for a in self.actors]
                    ray.wait(refs, num_returns=len(refs), timeout=timeout)
                except Exception:
                    pass
                for a in self.actors:
                    try:
                        ray.kill(a, no_restart=True)
                    except Exception:
                        pass
        finally:
            self.actors = []
            self.inflight = {}
            self._batches.close()
            self._box_finalizer()
            if self._owns_ray:
                self._owns_ray = False
                _release(ray)
