"""The part of a `seer.Runtime` that its worker threads and the C dispatch reach (`_Core`).

It holds the C runtime, the worker pool, the snapshot binding of the
model's state arrays, the dispatch of Python handlers and the per-worker
trace buffers (`TraceBuffers`); the `Runtime`
object around it is what users hold, and it may be collected while the
pool runs (its finalizer closes the core).
"""

from __future__ import annotations

import threading
import traceback
import warnings
from typing import Mapping

import numpy as np

from seer._host import usable_cores
from seer._seer_c import ffi, lib
from seer.context import HandlerContext
from seer.errors import ClosedError, InvalidArgumentError, MisuseError
from seer.guard import CLOSE_WAIT_S, CallGuard
from seer.model import Model
from seer.pool_stats import PoolStats
from seer.queue import EVENT_DTYPE, EventQueue
from seer.trace import TRACE_EVENT_DTYPE, TRACE_WINDOW_DTYPE, Trace


class _Core:
    """The parts of a runtime that its worker threads and the C dispatch
    callback reach.  Kept apart from :class:`Runtime` so that an unclosed
    runtime can still be garbage collected (its finalizer stops the pool)."""

    def __init__(self, model: Model, queue: EventQueue, workers: int):
        self.model = model
        self.queue = queue
        self.num_entities = model.num_entities
        self.num_workers = workers
        self.kinds = list(model.kinds)
        self.snapshots = model.snapshot_targets()
        rt = lib.seer_rt_new(queue._q, workers, float(model.lookahead), _spin(workers))
        if rt == ffi.NULL:
            raise MemoryError(f"cannot allocate a runtime for {workers} workers")
        self.rt = rt
        self.handle = ffi.new_handle(self)
        self.errors: dict[int, BaseException] = {}
        self.contexts = [HandlerContext(self, w) for w in range(workers)]
        self.threads: list[threading.Thread] = []
        self.closed = False
        #: held while rt is freed and while another thread interrupts it
        #: (close and interrupt come from any thread; the free from the
        #: thread whose call close() interrupted)
        self.free_lock = threading.Lock()
        self.guard = CallGuard("this Runtime")
        self.local = self.guard.local
        #: the open Runtime.pool_stats() block's stats (None: accounting is off)
        self.pool_stats: PoolStats | None = None
        #: Runtime.now: what every entity's clock may have reached
        self.now = 0.0
        #: debug mode with native handlers: the per-entity arrays the C runtime checks, and its copies of them
        self.debug_rows: dict[str, np.ndarray] | None = None
        self._debug_keep: tuple = ()
        queue._owner = self.guard  # its pushes, pops and releases take turns with the steps
        queue._clock = self  # and none is for a time before now (its entities' clocks are there)

    def bind_state(self) -> None:
        """Point the C runtime's snapshot copies at the model's state arrays,
        as they are now (between steps; the caller holds the guard)."""
        state = self.model.state
        live = {}
        for name, snap in self.snapshots.items():
            arr = state.get(name) if isinstance(state, Mapping) else None
            where = f"model.state[{name!r}]"
            if not isinstance(arr, np.ndarray):
                raise InvalidArgumentError(f"{where} is {type(arr).__name__}: expected the numpy array it was "
                                           f"when the Runtime was built (a shared state array stays)")
            if arr.shape != snap.shape or arr.dtype != snap.dtype:
                raise InvalidArgumentError(f"{where} is now a {arr.dtype} array of shape {arr.shape}: expected "
                                           f"{snap.dtype} {snap.shape}, as its snapshot buffer (ctx.snapshot)")
            if not arr.flags.c_contiguous:
                raise InvalidArgumentError(f"{where} is not C-contiguous: the runtime copies it as one block "
                                           f"into its snapshot (np.ascontiguousarray)")
            live[name] = arr
        lib.seer_rt_clear_snapshots(self.rt)
        for name, arr in live.items():
            snap = self.snapshots[name]
            lib.seer_rt_add_snapshot(self.rt, ffi.from_buffer(arr), ffi.from_buffer(snap), arr.nbytes)
        # Referenced here, so an array the model drops stays alive until the
        # runtime no longer reads it.
        self.live = live
        self.state = state
        for ctx in self.contexts:
            ctx.state = state
        if self.debug_rows is not None:
            self.watch_native_rows()

    def follow_state(self) -> None:
        """Before a step: re-bind a state array the model rebound (``self.state["x"] = np.zeros(n)``
        in ``reset``).  A native model's C struct still points at the old array, so it is refused."""
        state = self.model.state
        if state is self.state and all(state.get(name) is arr for name, arr in self.live.items()) and (
                self.debug_rows is None or all(state.get(name) is arr for name, arr in self.debug_rows.items())):
            return
        if self.model.native_model is not None:
            name = next((n for n, a in self.live.items() if not isinstance(state, Mapping) or state.get(n) is not a),
                        "state")
            raise InvalidArgumentError(
                f"model.state[{name!r}] was rebound to a new array, but this model's native code (model.native_model) "
                f"points at the old one: change state arrays in place (state[{name!r}][...] = ...)")
        self.bind_state()

    def start_pool(self) -> None:
        """Start pool threads 1..num_workers-1 (the stepping thread is worker 0)."""
        for w in range(1, self.num_workers):
            t = threading.Thread(target=lib.seer_rt_worker_main, args=(self.rt, w),
                                 name=f"seer-worker-{w}", daemon=True)
            t.start()
            self.threads.append(t)

    def stop_pool(self) -> None:
        lib.seer_rt_shutdown(self.rt)
        for t in self.threads:
            t.join()
        self.threads = []

    def resize(self, workers: int) -> None:
        """A pool of ``workers`` from the next step on (the caller holds the guard)."""
        self.stop_pool()
        self.take_pool_stats()  # the old workers' counts go with them
        rc = lib.seer_rt_resize(self.rt, workers, _spin(workers))
        if rc == lib.SEER_OK:
            self.num_workers = workers
            self.contexts = [HandlerContext(self, w) for w in range(workers)]
        self.start_pool()  # the new pool, or the old one again if C refused
        if rc != lib.SEER_OK:
            raise MemoryError(f"cannot allocate a pool of {workers} workers")

    def take_pool_stats(self) -> None:
        """Add the workers' counts to an open pool_stats() block (between steps)."""
        if self.pool_stats is not None:
            self.pool_stats.take(self.rt, self.num_workers)

    def watch_rows(self) -> None:
        """Debug mode: wrap each Python handler in a check that it wrote only its entities' rows."""
        import dataclasses

        from seer._debug import RowWatch

        watch = RowWatch(self.num_entities)

        def guarded(spec):
            handler, what = spec.handler, f"the handler of event kind {spec.name!r}"

            def run(ctx, events):
                with watch.lock:
                    before = watch.take(self.model.state)
                    handler(ctx, events)
                    watch.check(self.model.state, before, ctx.events["entity"], what)
            return dataclasses.replace(spec, handler=run)

        self.kinds = [spec if spec.native else guarded(spec) for spec in self.kinds]

    def watch_native_rows(self) -> None:
        """Debug mode: hand the C runtime the per-entity state arrays, so that a
        native handler that changes another entity's row fails the step
        (``seer_rt_set_debug_rows``; native handlers then run one at a time)."""
        from seer._debug import RowWatch, MAX_NATIVE_ARRAYS

        arrays = {name: arr for name, arr in RowWatch(self.num_entities).per_entity(self.state).items()
                  if arr.flags.c_contiguous and arr.nbytes}
        arrays = dict(list(arrays.items())[:MAX_NATIVE_ARRAYS])
        shadows = [np.empty(arr.nbytes, np.uint8) for arr in arrays.values()]
        bufs = [ffi.from_buffer(arr) for arr in arrays.values()]
        sbufs = [ffi.from_buffer(sh) for sh in shadows]
        live = ffi.new("void *[]", [ffi.cast("void *", b) for b in bufs] or [ffi.NULL])
        shadow = ffi.new("void *[]", [ffi.cast("void *", b) for b in sbufs] or [ffi.NULL])
        rows = ffi.new("uint64_t[]", [arr.nbytes // self.num_entities for arr in arrays.values()] or [0])
        rc = lib.seer_rt_set_debug_rows(self.rt, len(arrays), live, shadow, rows)
        if rc != lib.SEER_OK:
            raise MemoryError(f"cannot set up debug mode's row checks (status {rc})")
        # the C runtime reads these between and during steps: they live as long as the setting
        self.debug_rows = arrays
        self._debug_keep = (shadows, bufs, sbufs, live, shadow, rows)

    def check_handling(self, what: str) -> None:
        """Calls that only a running handler may make."""
        if self.closed:
            raise ClosedError(f"{what}: this Runtime is closed")
        if not self.guard.in_callback():
            raise MisuseError(f"{what} called outside a handler: a HandlerContext is valid only inside the "
                              f"handler call it was passed to")

    def dispatch(self, worker: int, kind: int, events, n: int) -> int:
        ctx = self.contexts[worker]
        # A copy, not a view: the worker's C buffer is reused by its next
        # round and freed by close(), and a handler may keep what it got.
        batch = np.frombuffer(ffi.buffer(events, n * EVENT_DTYPE.itemsize), EVENT_DTYPE).copy()
        spec = self.kinds[kind]
        ctx.events = batch
        local = self.local
        local.handling = True
        i = 0
        try:
            if spec.batched:
                spec.handler(ctx, batch)
            else:
                for i in range(n):
                    ctx.events = batch[i : i + 1]
                    spec.handler(ctx, batch[i])
        except BaseException as exc:  # handed to the caller of step()
            exc.__seer_batch__ = (batch.copy(), i, spec.batched)
            self.errors.setdefault(worker, exc)
            return i + 1
        finally:
            ctx.events = None
            local.handling = False
        return 0


    def close(self, wait: float = CLOSE_WAIT_S) -> None:
        """Close from any thread but a handler's.  A step running in another
        thread is interrupted (it raises :class:`ClosedError`) and waited
        for, so the C runtime is never freed under it; a step that does not
        stop within ``wait`` seconds (a handler that never returns) frees it
        when it does."""
        if self.closed:
            return
        guard = self.guard
        if not guard.begin_close(self.interrupt, self._free, wait):
            self.closed = True
            warnings.warn(f"seer.Runtime.close(): {guard.busy_with} in another thread did not stop within "
                          f"{wait} s of the interrupt (a handler that never returns?); the runtime is closed "
                          f"and its memory is freed when that call returns", RuntimeWarning, stacklevel=3)
            return
        try:
            self.closed = True
            self._free()
        finally:
            guard.end_close()

    def interrupt(self) -> None:
        with self.free_lock:
            if self.rt != ffi.NULL:
                lib.seer_rt_interrupt(self.rt)

    def _free(self) -> None:
        """Free the C runtime (idempotent).  Runs holding the guard, from
        close() or from the leave() of the call that close() interrupted."""
        self.closed = True  # first: nothing may reach rt from here on
        if self.rt == ffi.NULL:
            return
        self.stop_pool()
        self.take_pool_stats()
        with self.free_lock:
            rt, self.rt = self.rt, ffi.NULL
            lib.seer_rt_free(rt)
        self.queue._owner = self.queue._clock = None  # a plain queue again



class TraceBuffers:
    """The per-worker buffers a traced runtime's C workers record into, and
    their move into a :class:`~seer.trace.Trace` after each step."""

    def __init__(self, core: _Core, capacity: int):
        self.buffers = []
        for w in range(core.num_workers):
            ev = np.zeros(capacity, TRACE_EVENT_DTYPE)
            win = np.zeros(max(1024, capacity // 16), TRACE_WINDOW_DTYPE)
            lib.seer_rt_set_trace(core.rt, w, ffi.cast("seer_trace_event *", ffi.from_buffer(ev)),
                                  len(ev), ffi.cast("seer_trace_window *", ffi.from_buffer(win)), len(win))
            self.buffers.append((ev, win))

    def take(self, rt, trace: Trace, entity_ids: np.ndarray | None) -> None:
        """Move what the workers recorded into ``trace``; ``entity_ids`` renames the entities."""
        n_ev, n_win, dropped = ffi.new("int64_t *"), ffi.new("int64_t *"), ffi.new("int64_t *")
        for w, (ev, win) in enumerate(self.buffers):
            lib.seer_rt_take_trace(rt, w, n_ev, n_win, dropped)
            events = ev[: n_ev[0]].copy()
            if entity_ids is not None:
                events["entity"] = entity_ids[events["entity"]]
            trace.add(events, win[: n_win[0]].copy(), int(dropped[0]))


def _spin(workers: int) -> int:
    """Spins (a load and a pause each) before a waiting worker sleeps: long
    while each thread has a core, short when the pool is larger than the
    cores (a spinner would hold the core that the thread it waits for
    needs).  Long is a fraction of a millisecond, about what libgomp spins:
    well beyond what a futex wake-up costs, so a pool does not sleep, and
    pay that wake-up, between the phases of one step or between the steps
    of a tight loop; a much shorter spin paid it at every step of a mid-sized
    env on 2 workers (the A/B is in commit 25a3c87; bench/bench_uav_intra_env.py
    measures the pool sizes now, bench/results/uav_intra_env.md)."""
    return 30000 if workers <= usable_cores() else 20


def _finalize(core: _Core) -> None:
    try:
        core.close()
    except MisuseError:  # collected from inside a handler: leave it to exit
        pass


@ffi.def_extern()
def seer_py_dispatch(userdata, worker, kind, events, n):
    try:
        return ffi.from_handle(userdata).dispatch(worker, kind, events, n)
    except BaseException:  # never let an exception escape into C
        traceback.print_exc()
