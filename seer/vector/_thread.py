"""Thread backend: env copies are the entities of a SEER model, stepped by the
runtime's worker pool.

One vector step is one :meth:`seer.Runtime.step`: an event at time ``k``
for each copy, horizon ``k + 1``.  Copies never send each other events, so
the lookahead is the whole step length and every step is one window in which
the runtime hands the copies to its workers.

Two event kinds.  ``env_copy_native`` (a native handler) steps a copy that
has seer.vector's native path (SEER's built-in envs): the copy's whole step
runs in C, rows in and rows out, so a vector step of such copies never takes
the GIL.  ``env_copy`` (a Python handler; payload: the op) runs every other
op through the PettingZoo API; it releases the GIL only where the copy's own
code does, so pure-Python envs gain nothing from threads (use the process
backend for them).
"""

from __future__ import annotations

import numpy as np
from gymnasium.vector import AutoresetMode

from seer._host import usable_cores
from seer._seer_c import lib
from seer.model import EventKind, Model, Native
from seer.runtime import Runtime
from seer.stpa import attach_tuner, resolve_workers
from seer.vector._env import SeerVectorEnv
from seer.vector._layout import build_layout, describe_copy
from seer.vector._pool import EnvPool
from seer.vector._runner import NATIVE_STEP, RESET, STEP, ActionsRejected, CopyRunner, make_parallel


PY_KIND, NATIVE_KIND = 0, 1


class _CopiesModel(Model):
    """Entities: env copies.  Kinds: ``env_copy`` (Python; payload: the op)
    and ``env_copy_native`` (a step through the native path)."""

    lookahead = 1.0
    shared_state = ()
    #: STPA must not probe by stepping: that would step the env copies
    stpa_probe = False

    def __init__(self, num_copies: int, run, native_copies):
        self.num_entities = num_copies
        self.kinds = [EventKind("env_copy", run, batched=True),
                      EventKind("env_copy_native", Native("seer_vec_copy_step"))]
        self.state = {"ops": np.zeros(num_copies, np.int64)}
        self.native_model = native_copies
        #: the share of copies on the native path (STPA's static feature)
        self.native_share = 0.0

    def reset(self, runtime, seed):
        pass


def _auto_workers(model, env_fn, num_copies: int, specs, layout, pad: bool, autoreset) -> int:
    """What ``workers="auto"`` means for these copies.

    Copies that all run on the native path (independent C work) are a
    stepper workload for STPA (:func:`seer.stpa.select_for_stepper`), probed
    exactly as ``seer tune`` measured its ``vector-*`` workloads: throwaway
    thread-backend vector envs of the same copies on 1 and 2 workers, stepped
    with fixed random actions (the real copies are never stepped).  The
    choice is kept for the process's later vector envs of the same env,
    copies and rows.  Anything else is :func:`seer.stpa.resolve_workers`'s
    documented heuristic (Python handlers serialize on the GIL: one worker);
    envs that release the GIL for most of a Python step should pass
    ``workers=`` explicitly (or use the process backend)."""
    if model.native_share != 1.0 or num_copies == 1 or usable_cores() == 1:
        return resolve_workers("auto", model) if model.native_share != 1.0 else 1
    from seer.stpa import select_for_stepper
    from seer.stpa.workloads import vector_stepper

    name = specs[0].metadata.get("name")
    key = None if name is None else ("seer.vector thread", name, num_copies, layout.rows, bool(pad), autoreset.value)

    # the probe steps past episodes' ends, which autoreset DISABLED refuses: it times them autoresetting
    probe_mode = AutoresetMode.NEXT_STEP if autoreset == AutoresetMode.DISABLED else autoreset

    def make(workers):
        # what seer.vector.make(env_fn, num_copies, backend="thread", workers=workers) builds
        impl = ThreadBackend(env_fn, num_copies, workers, pad=pad, autoreset=probe_mode, restart=False)
        try:
            envs = ThreadVectorEnv(impl, probe_mode, copy=False, validate_actions=False)
        except BaseException:
            impl.close()
            raise
        return vector_stepper(envs)

    static = {"entities": float(num_copies), "kinds": 2.0, "native_kind_share": 1.0, "lookahead": 1.0}
    return max(1, min(select_for_stepper(make, static, key=key).workers, num_copies))


class ThreadBackend:
    name = "thread"

    @property
    def num_workers(self) -> int:
        """The runtime's pool size now (``workers="auto"`` tunes it between steps)."""
        return self.runtime.workers

    @property
    def native_copies(self) -> list[bool]:
        """Per copy: whether it steps on the native path (in C), not through its Python ``step``."""
        runner = self.runner
        return [] if runner is None else [bool(x) for x in runner.vec.native]

    def __init__(self, env_fn, num_copies, workers, *, pad, autoreset, restart, seed_stride=None):
        envs = {}
        try:
            for c in range(num_copies):
                envs[c] = make_parallel(env_fn)
            specs = {c: describe_copy(e) for c, e in envs.items()}
            self.specs = [specs[c] for c in range(num_copies)]
            self.layout = build_layout(self.specs, pad, same_step=autoreset.value == "SameStep")
        except BaseException:
            for e in envs.values():
                try:
                    e.close()
                except Exception:
                    pass
            raise
        self.bufs = self.layout.allocate()
        self.runner = CopyRunner(self.layout, self.bufs, envs, specs, autoreset, env_fn, restart, seed_stride)
        self.restart_failed = restart
        # env-pool stepping over one shard: every copy steps in the runtime's one step
        self.num_shards = 1
        self.copy_ranges = [(0, num_copies)]
        self.row_ranges = [(0, self.layout.rows)]
        self.inflight: dict[int, list] = {}
        self._options = None
        self.model = _CopiesModel(num_copies, self._handle, self.runner.vec.struct)
        self.model.native_share = float(self.runner.vec.native.mean())
        auto = workers == "auto"
        if auto:
            workers = _auto_workers(self.model, env_fn, num_copies, self.specs, self.layout, pad, autoreset)
        else:
            workers = resolve_workers(workers, self.model)
        # python_batch=1: a worker takes one copy at a time from the runtime's
        # claim set, so copies go to whichever worker is free (a slow copy
        # holds up one worker, not a batch of copies behind it)
        self.runtime = Runtime(self.model, workers=workers, python_batch=1 if workers > 1 else 256)
        if auto and self.model.native_share == 1.0:
            # the choice, checked against its neighbours on the real vector
            # steps (all native: the Python batch size plays no part)
            attach_tuner(self.runtime, max_workers=num_copies)
        self._k = 0
        self._all = np.arange(num_copies, dtype=np.int32)
        # one step's events, pushed from these arrays (entities: the copies in
        # order; a reset's subset is written into the front)
        self._entities = self._all.copy()
        self._times = np.zeros(num_copies)
        self._kinds = np.zeros(num_copies, np.int32)
        self._payloads = np.zeros(num_copies, np.int64)
        self._push_ptrs = self.runtime.queue.prepare_push(self._entities, self._times, self._kinds, self._payloads)
        self._steady_kinds()
        # the one-call step: NEXT_STEP autoresets in C, DISABLED has none to
        # run (SAME_STEP resets in Python), no trace to collect
        self._fast = autoreset.value in ("NextStep", "Disabled") and not self.runtime.tracing
        self.closed = False

    # the handler: a batch of copies (one event each) on one runtime worker
    def _handle(self, ctx, events):
        runner, b = self.runner, self.bufs
        for c, op in zip(events["entity"].tolist(), events["payload"].tolist()):
            if op == STEP:
                runner.step(c)
            else:
                runner.reset(c, int(b["seeds"][c]) if b["seeded"][c] else None, self._options)

    def _step_all_native(self) -> list:
        """A step of copies that all take the native path, with no reset due
        but autoresets: one C call (seer_vec_step_all) pushes the events in
        LPT order and runs the runtime's step."""
        runner, vec, rt = self.runner, self.runner.vec, self.runtime
        runner.msgs = []
        if runner.pending:
            vec.due[list(runner.pending)] = 1
            runner.pending.clear()
        k = self._k
        with rt.exclusive("step()"):
            rt.check_steppable()
            rc = lib.seer_vec_step_all(vec.struct, rt.native_handle, rt.queue.native_handle, NATIVE_KIND, float(k),
                                       vec.due_ptr, vec.attention)
            if rc == lib.SEER_VEC_E_ACTION:
                for c in np.flatnonzero(vec.due).tolist():  # still due: nothing ran
                    runner.pending[c] = None
                vec.due[:] = 0
                raise ActionsRejected()
            if rc != lib.SEER_OK:
                rt.fail(rc)
            rt.now = float(k + 1)
        self._k = k + 1
        self._after_native(vec.native, bool(vec.attention[0]))
        return runner.msgs

    def _after_native(self, native: np.ndarray, attention: bool) -> None:
        """After a step of the ``native`` copies: clear their restart flags of
        the last step first, then hand the copies that ended or failed to
        Python (a failure may restart a copy, which flags it again)."""
        runner, vec, b = self.runner, self.runner.vec, self.bufs
        if runner.any_restarts:
            b["restarted"][native] = False
        if attention:
            for c in np.flatnonzero((b["ended"] | (vec.status != 0)) & native).tolist():
                runner.native_done(c)  # may restart a copy: a new env, maybe not native
            self._steady_kinds()

    def _run(self, copies: np.ndarray, op: int) -> list:
        runner = self.runner
        runner.msgs = []
        k = self._k
        n = len(copies)
        kinds, payloads, times = self._kinds[:n], self._payloads[:n], self._times[:n]
        times.fill(k)
        native = None
        vec = runner.vec
        if op == STEP and vec.native_any:
            # copies is every copy (in order): index by copy
            native = vec.native
            if runner.pending:
                native = native.copy()
                for c in list(runner.pending):
                    nop = runner.native_op(c)
                    native[c] = nop != 0
                    if nop:
                        del runner.pending[c]
                        payloads[c] = nop
                    else:
                        payloads[c] = op
                    kinds[c] = NATIVE_KIND if nop else PY_KIND
        else:
            kinds.fill(PY_KIND)
            payloads.fill(op)
        dirty = native is not vec.native  # kinds/payloads differ from the steady state
        try:
            self.runtime.queue.push_prepared(self._push_ptrs, n)
            self.runtime.step_quick(float(k + 1))
            self._k = k + 1
        finally:
            if dirty:
                self._steady_kinds()
        if native is not None:
            b = self.bufs
            self._after_native(native, bool(b["ended"].any() or vec.status.any()))
            if self.layout.same_step:
                b["final_mask"].reshape(-1, self.layout.slots)[native & ~b["ended"]] = False
        return runner.msgs

    def _steady_kinds(self) -> None:
        """Kinds and payloads of a step with no reset due: native copies take
        the native kind (these arrays are reused step after step)."""
        native = self.runner.vec.native
        self._kinds[:] = np.where(native, NATIVE_KIND, PY_KIND)
        self._payloads[:] = np.where(native, NATIVE_STEP, STEP)

    # ---- backend interface -------------------------------------------------------------------

    def reset(self, options) -> list:
        self._options = options
        try:
            sel = np.flatnonzero(self.bufs["select"]).astype(np.int32)
            self._entities[:len(sel)] = sel
            return self._run(sel, RESET)
        finally:
            self._options = None
            self._entities[:] = self._all

    def check_actions_natively(self) -> bool:
        """Whether C checks the actions (every step) instead of the vector env."""
        return self.runner.vec.check_actions_natively()

    def step_async(self) -> None:
        vec, pending = self.runner.vec, self.runner.pending
        if self._fast and vec.native_all and all(v is None and vec.autoreset[c] for c, v in pending.items()):
            self._msgs = self._step_all_native()
        else:
            if not vec.actions_ok():
                raise ActionsRejected()
            self._msgs = self._run(self._all, STEP)

    def step_wait(self, timeout=None) -> list:
        msgs, self._msgs = self._msgs, None
        return msgs

    def send(self, shards) -> None:
        """Step every copy now (the one shard): the runtime's step is one
        call, so there is nothing to overlap; :meth:`recv` hands the result."""
        if list(shards) != [0]:
            raise ValueError(f"shards={list(shards)!r} is invalid: the thread backend has one shard, [0]")
        self.step_async()
        self.inflight[0] = self.step_wait()

    def recv(self, min_shards=None, timeout=None) -> tuple[list, list]:
        return [0], self.inflight.pop(0)

    def call(self, kind, name, args, kwargs, values=None, copies=None):
        self.runner.msgs = []
        copies = range(self.layout.num_copies) if copies is None else copies
        out = [self.runner.call(c, kind, name, values[i] if kind == "set_attr" else args, kwargs)
               for i, c in enumerate(copies)]
        return out, self.runner.msgs

    def worker_of(self, c: int) -> str:
        return "thread pool"

    def restarts(self) -> list[int]:
        return [self.runner.restarts[c] for c in range(self.layout.num_copies)]

    def interrupt(self) -> None:
        """Stop a vector step running in another thread (close() from another thread)."""
        if not self.runtime.closed:
            self.runtime.interrupt()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            self.runtime.close()
        finally:
            self.runner.close()


class ThreadVectorEnv(EnvPool, SeerVectorEnv):
    """A :class:`~seer.vector.SeerVectorEnv` whose copies are stepped by SEER's
    runtime, from ``seer.vector.make(..., backend="thread")``; ``send`` /
    ``recv`` over its one shard (every copy), as on the other backends."""
