"""Thread backend: env copies are the entities of a SEER model, stepped by the
runtime's worker pool.

One vector step is one :meth:`seer.Runtime.step`: an event of kind
``env_copy`` at time ``k`` for each copy (payload: the op), horizon ``k + 1``.
Copies never send each other events, so the lookahead is the whole step
length and every step is one window in which the runtime hands the copies to
its workers.  The Python handler releases the GIL only where the copy's own
code does (SEER's built-in envs run their event streams in C with the GIL
released; pure-Python envs gain nothing from threads: use the process
backend for them).
"""

from __future__ import annotations

import numpy as np

from seer.model import EventKind, Model
from seer.runtime import Runtime
from seer.vector._layout import build_layout, describe_copy
from seer.vector._runner import RESET, STEP, CopyRunner, make_parallel


class _CopiesModel(Model):
    """Entities: env copies.  One kind, ``env_copy``, whose payload is the op."""

    lookahead = 1.0
    shared_state = ()
    #: STPA must not probe by stepping: that would step the env copies
    stpa_probe = False

    def __init__(self, num_copies: int, run):
        self.num_entities = num_copies
        self.kinds = [EventKind("env_copy", run, batched=True)]
        self.state = {"ops": np.zeros(num_copies, np.int64)}

    def reset(self, runtime, seed):
        pass


def _auto_workers(model) -> int:
    """STPA's choice.  It cannot probe (stepping copies changes them), so its
    documented heuristic decides: one worker for Python handlers, which
    serialize on the GIL.  Envs that release the GIL for most of a step
    should pass ``workers=`` explicitly (or use the process backend)."""
    try:
        from seer.stpa import select_workers_for_model

        return int(select_workers_for_model(model))
    except Exception:
        return 1


class ThreadBackend:
    name = "thread"

    def __init__(self, env_fn, num_copies, workers, *, pad, autoreset, restart):
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
        self.runner = CopyRunner(self.layout, self.bufs, envs, specs, autoreset, env_fn, restart)
        self._options = None
        self.model = _CopiesModel(num_copies, self._handle)
        if workers == "auto":
            workers = _auto_workers(self.model)
        self.num_workers = workers
        # python_batch=1: a worker takes one copy at a time from the runtime's
        # claim set, so copies go to whichever worker is free (a slow copy
        # holds up one worker, not a batch of copies behind it)
        self.runtime = Runtime(self.model, workers=workers, python_batch=1 if workers > 1 else 256)
        self._k = 0
        self._ones = np.ones(num_copies, np.int32)
        self._all = np.arange(num_copies, dtype=np.int32)
        self.closed = False

    # the handler: a batch of copies (one event each) on one runtime worker
    def _handle(self, ctx, events):
        runner, b = self.runner, self.bufs
        for c, op in zip(events["entity"].tolist(), events["payload"].tolist()):
            if op == STEP:
                runner.step(c)
            else:
                runner.reset(c, int(b["seeds"][c]) if b["seeded"][c] else None, self._options)

    def _run(self, copies: np.ndarray, op: int) -> list:
        self.runner.msgs = []
        k = self._k
        self.runtime.schedule(copies, np.full(len(copies), float(k)), np.zeros(len(copies), np.int32),
                              np.full(len(copies), op, np.int64))
        self.runtime.step(float(k + 1))
        self._k = k + 1
        return self.runner.msgs

    # ---- backend interface -------------------------------------------------------------------

    def reset(self, options) -> list:
        self._options = options
        try:
            sel = np.flatnonzero(self.bufs["select"]).astype(np.int32)
            return self._run(sel, RESET)
        finally:
            self._options = None

    def step_async(self) -> None:
        self._msgs = self._run(self._all, STEP)

    def step_wait(self, timeout=None) -> list:
        msgs, self._msgs = self._msgs, None
        return msgs

    def call(self, kind, name, args, kwargs, values=None):
        self.runner.msgs = []
        out = []
        for c in range(self.layout.num_copies):
            a = values[c] if kind == "set_attr" else args
            out.append(self.runner.call(c, kind, name, a, kwargs))
        return out, self.runner.msgs

    def worker_of(self, c: int) -> str:
        return "thread pool"

    def restarts(self) -> list[int]:
        return [self.runner.restarts[c] for c in range(self.layout.num_copies)]

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            self.runtime.close()
        finally:
            self.runner.close()
