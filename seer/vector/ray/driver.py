"""The Ray backend's driver side: `RayBackend`, which spreads ops over the shard actors and gathers their rows and messages."""

from __future__ import annotations

import hashlib
import multiprocessing
import weakref
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode

from seer.errors import ActorRestartedError, ClosedError, WorkerError
from seer.vector import shm as shm_blocks
from seer.vector._layout import build_layout
from seer.vector._runner import restart_seed, same_spaces
from seer.vector.messages import CopyRestarted, restarts, shifted
from seer.vector.ray.batch import COPY_FIELDS, _batch_spec, _views, shard_fields
from seer.vector.ray.cluster import _connect, _release, import_ray
from seer.vector.ray.shard import _Shard


#: Ray inlines task arguments up to 100 KiB; larger policies go through the
#: object store once per rollout instead of once per shard.
_INLINE_BYTES = 100 * 1024

STEP, RESET, CALL, ROLLOUT = "stepping", "resetting", "calling into", "rolling out"


def _dumps(obj) -> bytes:
    import cloudpickle

    return cloudpickle.dumps(obj)

class _ShardDied(Exception):
    def __init__(self, s, exc, result=None):
        super().__init__(s, exc)
        self.s, self.exc, self.result = s, exc, result


class RayBackend:
    """The backend interface of :class:`SeerVectorEnv` (see ``_thread.py``)
    over shard actors, plus ``send`` / ``recv`` for env-pool stepping and
    ``rollout``."""

    name = "ray"

    def __init__(self, env_fn, num_copies, workers, *, pad, autoreset, restart, num_shards=None,
                 ray_address=None, shard_backend="thread", num_cpus_per_shard=1, shard_options=None,
                 ray_init=None, startup_timeout=300.0, validate_actions=True, context=None, inline=None,
                 shared_memory=True):
        ray = import_ray()
        self.ray = ray
        self.closed = False
        self.broken: str | None = None
        self.actors: list = []
        self._owns_ray = False
        self._boxes: dict = {}  # shard -> SharedMemory for its rollout batches (shards on this node)
        self._box_views: dict = {}  # shard -> (T, (name, views of its block for T steps))
        self._box_finalizer = weakref.finalize(self, shm_blocks.release_all, self._boxes)
        self.autoreset = autoreset
        self.restart_failed = bool(restart)
        self.startup_timeout = float(startup_timeout)
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

    # ---- start-up ----------------------------------------------------------------------------

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
              "inline": None if inline == "auto" else inline}
        actor_cls = ray.remote(_Shard)
        fn_bytes = _dumps(env_fn)
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
            tokens = ray.get([self.actors[s].attach.remote(self._boxes["bufs"].name, self._row_spec(s))
                              for s in local], timeout=self.startup_timeout)
            if tokens == [self.tokens[s] for s in local]:
                self.direct = set(local)

    # ---- helpers -----------------------------------------------------------------------------

    def _check(self) -> None:
        if self.closed:
            raise ClosedError("this vector env is closed" + (f" ({self.broken})" if self.broken else ""))

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

    def _get(self, s: int, ref, result=None):
        """The result of shard ``s``'s call (``result``: already fetched), less
        its incarnation token.  A dead actor -- or one that Ray restarted
        since the last call -- raises _ShardDied; a call that raised becomes
        a WorkerError (the vector env closes)."""
        ray = self.ray
        try:
            if result is None:
                result = ray.get(ref)
            if result[0] != self.tokens[s]:
                raise _ShardDied(s, ActorRestartedError(
                    "its process died between two calls and Ray restarted it (its env copies are new)"), result[1:])
            return result[1:]
        except ray.exceptions.RayActorError as exc:
            raise _ShardDied(s, exc) from exc
        except ray.exceptions.RayError as exc:  # the call raised (a broken local pool), or Ray failed
            what = f"{self.describe(s)} failed while running {self._what(s)}"
            self.broken = what
            self.close()
            raise WorkerError(f"{what}; the vector env is closed:\n{exc}") from None

    def _adopt(self, s: int, info: dict) -> None:
        """Take shard ``s``'s new incarnation (Ray restarted its actor) on."""
        self.shard_info[s] = info
        self.tokens[s] = info["token"]
        self._policy_keys.pop(s, None)
        self._step_m[s] = self.actors[s].step
        if s in self.direct:
            self.direct.discard(s)
            token = self.ray.get(self.actors[s].attach.remote(self._boxes["bufs"].name, self._row_spec(s)),
                                 timeout=self.startup_timeout)
            if token == info["token"]:
                self.direct.add(s)

    def _died(self, d: _ShardDied, op: str) -> list:
        """Shard ``d.s``'s actor died during ``op``: raise WorkerError (and
        close), or restart it (restart_failed, step/rollout) and return the
        restart messages of its copies."""
        s = d.s
        what = f"{self.describe(s)} died while {op} {self._what(s)}"
        first = str(d.exc).strip().splitlines()[0] if str(d.exc).strip() else type(d.exc).__name__
        if not (self.restart_failed and op in (STEP, ROLLOUT)):
            self.broken = what
            self.close()
            raise WorkerError(f"{what} ({type(d.exc).__name__}: {first}); the vector env is closed"
                              + ("" if self.restart_failed else " (pass restart_failed=True to restart failed "
                                 "shards and go on)")) from d.exc
        ray = self.ray
        try:  # Ray restarts the actor (max_restarts): its constructor recreates the copies
            ref = self.actors[s].start.remote()
            ready, _ = ray.wait([ref], timeout=self.startup_timeout)
            if not ready:
                raise TimeoutError(f"not back within {self.startup_timeout} s")
            info = ray.get(ref)
            c0, c1 = self.copy_ranges[s]
            if len(info["specs"]) != c1 - c0 or not all(same_spaces(a, b) for a, b in
                                                        zip(info["specs"], self.specs[c0:c1])):
                raise ValueError("its new env copies have other agents or spaces than the original ones")
            self._adopt(s, info)
        except BaseException as exc:
            self.broken = f"{what}, and restarting it failed: {exc}"
            self.close()
            raise WorkerError(f"{what}; restarting it failed: {exc}") from exc
        b, L = self.bufs, self.layout
        (c0, c1), (r0, r1) = self.copy_ranges[s], self.row_ranges[s]
        C = L.num_copies
        seeds = []
        for c in range(c0, c1):
            seeds.append(restart_seed(self.last_seeds[c], C, self.restart_counts[c] + 1))
        sl = slice(r0, r1)
        alive_before = self._alive_before[sl].copy() if self._alive_before is not None else b["alive"][sl].copy()
        for n in ("obs", "rew", "term", "mask", "alive"):
            b[n][sl] = 0
        b["trunc"][sl] = alive_before
        b["ended"][c0:c1] = True
        b["restarted"][c0:c1] = True
        if L.same_step:
            b["final_mask"][sl] = False
        seeded = np.array([x is not None for x in seeds])
        seed_arr = np.array([0 if x is None else x for x in seeds], np.int64)
        tb = (f"{what} ({type(d.exc).__name__}: {first}); Ray restarted the actor (pid {info['pid']} on "
              f"{info['node']}) and its copies start new episodes")
        msgs = [CopyRestarted(c, tb) for c in range(c0, c1)]
        if self.autoreset == AutoresetMode.NEXT_STEP:
            self.pending[s] = (seeded, seed_arr)
        elif self.autoreset == AutoresetMode.SAME_STEP:
            try:
                state, rmsgs = self._get(s, self.actors[s].reset.remote(np.ones(c1 - c0, bool), seeded, seed_arr,
                                                                         None))
            except _ShardDied as again:
                self.broken = f"{what}, and it died again while resetting"
                self.close()
                raise WorkerError(f"{self.broken}") from again.exc
            names = self._names
            b["obs"][sl] = state[names.index("obs")]
            b["alive"][sl] = state[names.index("alive")]
            msgs += self._remap(s, rmsgs)
        for c in range(c0, c1):
            self.restart_counts[c] += 1
        return msgs

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
                    info = self.ray.get(self.actors[s].start.remote(), timeout=self.startup_timeout)
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
                r0, r1 = self.row_ranges[s]
                self.inflight[s] = (STEP, self._step_m[s].remote(None if s in self.direct else act[r0:r1]))

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
            try:  # the usual case: one call for every shard's result
                results = dict(zip(order, ray.get(refs)))
            except ray.exceptions.RayError:
                results = {}  # a shard died or raised: _get sorts it out shard by shard
        elif refs:
            need = len(refs) if min_shards is None else max(0, min(int(min_shards), have + len(refs)) - have)
            ready = []
            if need:
                ready, _ = ray.wait(refs, num_returns=need, timeout=timeout)
            rest = [r for r in refs if r not in set(ready)]
            if rest:  # and whoever else is done by now
                more, _ = ray.wait(rest, num_returns=len(rest), timeout=0)
                ready = list(ready) + list(more)
            done = set(ready)
            got = [s for s, r in zip(order, refs) if r in done]
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

    def rollout(self, policy, num_steps: int, want_infos: bool, validate: bool):
        """Run ``num_steps`` steps in every shard; returns (batch dict with
        arrays (T, rows, ...), steps done, per-step messages, failures)."""
        self._check()
        ray = self.ray
        data = _dumps(policy)
        key = hashlib.blake2b(data, digest_size=16).digest()
        payload = None
        b = self.bufs
        self._alive_before = b["alive"].copy() if self.restart_failed else None
        refs, views = {}, {}
        T, L = num_steps, self.layout
        for s in range(self.num_shards):
            send = None
            if self._policy_keys.get(s) != key:
                if payload is None:
                    payload = [ray.put(data)] if len(data) > _INLINE_BYTES else data
                send = payload
            reset_first = self.pending.get(s)
            box = self._box(s, T)
            if box is not None:
                views[s] = box[1]
            refs[s] = self.actors[s].rollout.remote(key, send, num_steps, reset_first, want_infos, validate,
                                                    box and box[0])
            self._policy_keys[s] = key
        R = L.rows
        out = {n: np.empty((T, *sh[1:]), dt) for n, sh, dt, _ in
               _batch_spec(1, R, b["obs"].shape[1:], b["obs"].dtype, b["act"].shape[1:], b["act"].dtype)[0]}
        steps = [[] for _ in range(T)]
        failures = []
        for s, ref in refs.items():
            r0, r1 = self.row_ranges[s]
            try:
                batch, done, smsgs, failure, state = self._get(s, ref)
            except _ShardDied as d:
                self._policy_keys.pop(s, None)
                for v in out.values():
                    v[:, r0:r1] = 0
                out["obs"][0, r0:r1] = b["obs"][r0:r1]  # what the policy saw (its rows are untouched so far)
                msgs = self._died(d, ROLLOUT)
                out["truncations"][0, r0:r1] = self._alive_before[r0:r1]
                steps[0] += msgs
                continue
            if s in self.pending and done > 0:
                self.pending.pop(s)
            if batch is None:  # written into this shard's shared-memory block
                batch = views[s]
            for k, v in batch.items():
                out[k][:done, r0:r1] = v[:done]
            if state is not None:
                self._put(s, state)
            for t, m in smsgs:
                m = self._remap(s, m)
                self._count_restarts(m)
                steps[t] += m
            if failure is not None:
                failures.append((s, failure))
                if failure[0] == "load":
                    self._policy_keys.pop(s, None)
        return out, steps, failures

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

    def _box(self, s: int, T: int):
        """(name, views) of shard ``s``'s shared-memory block for a batch of
        ``T`` steps; None when the shard runs on another node (its batch
        comes back through Ray's object store)."""
        if not self.use_shm or self._node_id is None or self.shard_info[s].get("node_id") != self._node_id:
            return None
        cached = self._box_views.get(s)
        if cached is not None and cached[0] == T:
            return cached[1]
        b = self.bufs
        r0, r1 = self.row_ranges[s]
        spec, size = _batch_spec(T, r1 - r0, b["obs"].shape[1:], b["obs"].dtype, b["act"].shape[1:], b["act"].dtype)
        shm = self._boxes.get(s)
        if shm is None or shm.size < size:
            self._box_views.pop(s, None)
            if shm is not None:  # (a shard still mapping it keeps it until it attaches anew)
                shm_blocks.release(self._boxes.pop(s), unlink=True)
            shm = shm_blocks.create(size)
            self._boxes[s] = shm
        box = (shm.name, _views(shm.buf, spec))
        self._box_views[s] = (T, box)
        return box

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
            self._box_views.clear()
            self._box_finalizer()
            if self._owns_ray:
                self._owns_ray = False
                _release(ray)


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
