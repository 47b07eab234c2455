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

import threading

import numpy as np

from seer._seer_c import lib
from seer.model import EventKind, Model
from seer.runtime import Runtime
from seer.vector._layout import build_layout, describe_copy
from seer.vector._runner import RESET, STEP, CopyRunner, make_parallel

#: The C runtime hands a worker up to 256 entities with Python events in one
#: call; this entry point (when the runtime has it) limits that to one entity
#: per take, so copies spread over the workers one at a time.
_PY_BATCH_SYMBOL = "seer_rt_set_python_batch"


class _Helpers:
    """Fallback while the runtime lacks ``seer_rt_set_python_batch``: the
    worker that got the batch shares it with ``n`` parked threads; each takes
    the next copy from a shared counter (dynamic, like the runtime would)."""

    def __init__(self, n: int):
        self._cv = threading.Condition()
        self._job = None
        self._gen = 0
        self._busy = 0
        self._stop = False
        self._threads = [threading.Thread(target=self._main, name=f"seer-vector-helper-{i}", daemon=True)
                         for i in range(n)]
        for t in self._threads:
            t.start()

    def _take(self, job):
        items, fn, lock, state = job
        while True:
            with lock:
                i = state[0]
                state[0] = i + 1
            if i >= len(items):
                return
            fn(items[i])

    def _main(self):
        seen = 0
        while True:
            with self._cv:
                while self._gen == seen and not self._stop:
                    self._cv.wait()
                if self._stop:
                    return
                seen = self._gen
                job = self._job
                self._busy += 1
            try:
                self._take(job)
            finally:
                with self._cv:
                    self._busy -= 1
                    self._cv.notify_all()

    def run(self, items, fn):
        job = (items, fn, threading.Lock(), [0])
        with self._cv:
            self._job = job
            self._gen += 1
            self._cv.notify_all()
        self._take(job)
        with self._cv:
            while self._busy:
                self._cv.wait()

    def close(self):
        with self._cv:
            self._stop = True
            self._cv.notify_all()
        for t in self._threads:
            t.join()


class _CopiesModel(Model):
    """Entities: env copies.  One kind, ``env_copy``, whose payload is the op."""

    lookahead = 1.0
    shared_state = ()

    def __init__(self, num_copies: int, run):
        self.num_entities = num_copies
        self.kinds = [EventKind("env_copy", run, batched=True)]
        self.state = {"ops": np.zeros(num_copies, np.int64)}

    def reset(self, runtime, seed):
        pass


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
        self.num_workers = workers
        self._options = None
        self._helpers = None
        self.model = _CopiesModel(num_copies, self._handle)
        native_spread = hasattr(lib, _PY_BATCH_SYMBOL)
        self.runtime = Runtime(self.model, workers=workers if native_spread else 1)
        if native_spread:
            getattr(lib, _PY_BATCH_SYMBOL)(self.runtime._core.rt, 1)
        elif workers > 1:
            self._helpers = _Helpers(workers - 1)
        self._k = 0
        self._ones = np.ones(num_copies, np.int32)
        self._all = np.arange(num_copies, dtype=np.int32)
        self.closed = False

    # the handler: a batch of copies (one event each) on one runtime worker
    def _handle(self, ctx, events):
        copies = events["entity"].tolist()
        ops = events["payload"].tolist()
        items = list(zip(copies, ops))
        if self._helpers is not None and len(items) > 1:
            self._helpers.run(items, self._run_one)
        else:
            for it in items:
                self._run_one(it)

    def _run_one(self, item):
        c, op = item
        if op == STEP:
            self.runner.step(c)
        else:
            b = self.bufs
            self.runner.reset(c, int(b["seeds"][c]) if b["seeded"][c] else None, self._options)

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
            if self._helpers is not None:
                self._helpers.close()
            self.runtime.close()
        finally:
            self.runner.close()
