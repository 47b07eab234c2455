"""`seer.Runtime`: a model's event streams, run in conservative windows on a worker pool.

The class users hold; what its workers and the C dispatch reach is
`seer._runtime_core` (`_Core`), the errors of a failed step are built in
`seer._step_errors`, and its ``with``-blocks are in `seer._runtime_blocks`.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import time
import weakref

import numpy as np

from seer._checks import MAX_WORKERS, check_seed, check_workers
from seer._host import usable_cores
from seer._runtime_blocks import _Exclusive, _NativeStep, _PoolStatsBlock
from seer._runtime_core import TraceBuffers, _Core, _finalize
from seer._seer_c import ffi, lib
from seer._debug import debug_address, resolve_debug
from seer._step_errors import step_error
from seer.capi import pointer_address
from seer.errors import ClosedError, InvalidArgumentError, PastEventError
from seer.context import HandlerContext
from seer.model import Model, validate_model
from seer.pool_stats import PoolStats
from seer.queue import EventQueue, _as_array, check_permutation
from seer.trace import Trace

__all__ = ["Runtime", "StepStats", "PoolStats", "HandlerContext", "check_seed", "usable_cores"]

#: Most trace records a worker buffers (``trace_capacity``): 2**28 of them
#: take 12 GiB with their window records.
MAX_TRACE_CAPACITY = 1 << 28


@dataclasses.dataclass(frozen=True)
class StepStats:
    """What one :meth:`Runtime.step` did."""

    events: int
    windows: int
    horizon: float


def _handler_address(spec, debug: bool) -> int:
    """A native handler's address; in debug mode a seer.numba handler's variant with bounds checks."""
    address = debug_address(spec.handler.owner) if debug else None
    return spec.handler.address if address is None else address


class Runtime:
    """Runs a :class:`seer.Model`'s event streams on a pool of worker threads.

    ``step(horizon)`` processes every event before ``horizon`` in windows
    ``[T, min(T + lookahead, horizon))``.  Within a window the entities with
    events run in parallel, each one's events one at a time in
    ``(time, source, seq)`` order.  Results are identical for any number of
    workers.

    Args:
        model: The model to run.
        workers: Pool size, an integer in [1, 1024].  For STPA's choice,
            pass ``seer.stpa.resolve_workers("auto", model)``, or build the
            runtime with ``seer.stpa.make_runtime(model, "auto")`` (which
            also tunes the pool on the real steps).
        capacity: Events the queue holds (default: 64 per entity, at least 4096).
        trace: Record per-event and per-window timings (see :attr:`trace`).
        trace_capacity: Per-worker events recorded between two reads of the trace.
        seed: Seed of the first :meth:`reset` (done by the constructor).
        python_batch: Most entities a worker takes per round for Python
            handlers (1..256).  Large batches amortize the Python call; 1
            spreads slow per-entity handlers over the pool.
        debug: Check what handlers write: a Python handler that writes a
            row of a per-entity state array (first axis of length
            ``num_entities``) of an entity it was not handed fails the step
            with :class:`~seer.errors.HandlerError` caused by
            :class:`~seer.errors.EntityWriteError` (naming kind, entity,
            array and row); ``shared_state`` arrays too, whose other rows
            a handler reads through ``ctx.snapshot``.  Python handlers run
            one at a time then, and :mod:`seer.numba` handlers run a variant
            compiled with bounds checks (cached apart), so an out-of-range
            index is a :class:`~seer.errors.HandlerError`, not a fault.  None (default): on when
            the environment sets ``SEER_DEBUG=1``.  Off, nothing is checked
            and nothing costs.  Read back as :attr:`debug`.

    Attributes:
        trace_entity_ids: For a model that keeps its agents in renamed
            entities (``uav_swarm_v0`` keeps big swarms in slots ordered in
            space): an int array, entity index -> the id the trace records,
            read each time the trace is collected (after every step), so an
            array the model renames in place between steps stays right.
            None (the default): the trace records entity indices.

    Example:
        >>> from seer.synthetic import SyntheticModel
        >>> with Runtime(SyntheticModel(num_entities=8), workers=2) as rt:
        ...     stats = rt.step(1.0)
        >>> stats.events > 0
        True
    """

    def __init__(self, model: Model, workers: int = 1, *, capacity: int | None = None,
                 trace: bool = False, trace_capacity: int = 1 << 20, seed: int = 0, python_batch: int = 256,
                 debug: bool | None = None):
        validate_model(model)
        debug = resolve_debug(debug)
        check_seed(seed)
        if isinstance(workers, str):
            # choosing a pool size is STPA's job, a layer above the runtime
            raise InvalidArgumentError(
                f"workers={workers!r} is invalid: Runtime takes an integer in [1, {MAX_WORKERS}]; for STPA's "
                f"choice pass workers=seer.stpa.resolve_workers({workers!r}, model), or build the runtime with "
                f"seer.stpa.make_runtime(model, {workers!r})")
        workers = check_workers(workers, auto=False)
        if capacity is None:
            capacity = max(4096, 64 * model.num_entities)
        if not isinstance(python_batch, numbers.Integral) or isinstance(python_batch, bool) or not 1 <= python_batch <= 256:
            raise ValueError(f"python_batch={python_batch!r} is invalid: expected an integer in [1, 256]")
        if (not isinstance(trace_capacity, numbers.Integral) or isinstance(trace_capacity, bool)
                or not 1 <= trace_capacity <= MAX_TRACE_CAPACITY):
            # 0 would record nothing and count every event as dropped
            raise InvalidArgumentError(f"trace_capacity={trace_capacity!r} is invalid: expected an integer in "
                                       f"[1, {MAX_TRACE_CAPACITY}] (events each worker records between two reads "
                                       f"of the trace)")
        self.model = model
        self.workers = int(workers)
        self.queue = EventQueue(model.num_entities, capacity, num_kinds=len(model.kinds))
        self._core = core = _Core(model, self.queue, self.workers)
        #: whether this runtime checks what its handlers write (see ``debug`` above)
        self.debug = debug
        if debug:
            core.watch_rows()
        self._finalizer = weakref.finalize(self, _finalize, core)
        for k, spec in enumerate(model.kinds):
            fn = ffi.cast("seer_handler_fn", _handler_address(spec, debug)) if spec.native else ffi.NULL
            lib.seer_rt_set_handler(core.rt, k, fn)
        lib.seer_rt_set_dispatch(core.rt, lib.seer_py_dispatch, core.handle)
        lib.seer_rt_set_python_batch(core.rt, int(python_batch))
        if model.native_model is not None:
            # a cffi pointer of any module's ffi, or an address
            lib.seer_rt_set_model(core.rt, ffi.cast("void *", pointer_address(model.native_model, "model.native_model")))
        if debug and any(spec.native for spec in model.kinds):
            core.debug_rows = {}  # bind_state hands the arrays to C
        core.bind_state()
        self._trace_buffers = None
        self._trace = Trace(kind_names=[k.name for k in model.kinds], workers=self.workers)
        self.trace_entity_ids: np.ndarray | None = None
        if trace:
            self._trace_buffers = TraceBuffers(core, int(trace_capacity))
        core.start_pool()
        self._tuner = None
        self._needs_reset: str | None = None
        self.now = 0.0
        self.reset(seed)

    # ---- lifecycle ----------------------------------------------------------

    def _check_open(self) -> None:
        if self._core.closed:
            raise ClosedError("this Runtime is closed")

    def exclusive(self, what: str) -> "_Exclusive":
        """Hold the runtime for a call, as :meth:`step` does: for C code that
        steps or resets it through :attr:`native_handle` (the built-in envs).

        ``with rt.exclusive("step()"): ...`` raises :class:`MisuseError` if
        another thread holds the runtime or the caller is one of its
        handlers, and :class:`ClosedError` if it is closed.
        """
        return _Exclusive(self._core, what)

    def native_step(self, what: str = "step()") -> "_NativeStep":
        """One step of C code that steps this runtime itself (through
        :attr:`native_handle`), timed for the :attr:`tuner`.

        Holds the runtime as :meth:`exclusive` does, checks that it can step
        (:meth:`check_steppable`), and gives the body's wall time to
        :meth:`report_step_time` when the body ends without an exception, so
        ``workers="auto"`` keeps tuning the pool on the env's real steps.

        Example::

            with rt.native_step():
                rc = lib.my_env_step(env)   # calls seer_rt_step(rt, horizon)
                if rc != lib.SEER_OK:
                    rt.fail(rc)             # raises: nothing is reported
                rt.now = horizon
        """
        return _NativeStep(self, what)

    def reset(self, seed: int = 0) -> None:
        """Empty the queue, restart every random stream from ``seed`` and let
        the model set its initial state and events."""
        check_seed(seed)
        core = self._core
        core.guard.enter("reset()")
        try:
            self._check_open()
            with core.free_lock:  # an interrupt from another thread writes the error record reset clears
                lib.seer_rt_reset(core.rt, int(seed))
            core.errors.clear()
            self._needs_reset = None
            self.now = 0.0
            self.seed = int(seed)
            self.model.reset(self, int(seed))
        finally:
            core.guard.leave()

    def close(self) -> None:
        """Stop and join the worker threads.  Idempotent.

        From another thread while a step runs: that step is interrupted
        (it raises :class:`ClosedError`) and close returns once it has
        stopped.  From inside a handler: :class:`MisuseError`.
        """
        self._core.close()
        if self._core.closed:
            self._finalizer.detach()

    @property
    def closed(self) -> bool:
        return self._core.closed

    def interrupt(self) -> None:
        """Make a step running in another thread stop at its workers' next
        event and raise :class:`ClosedError` (what :meth:`close` does first;
        objects built on a runtime call it from their own ``close``).  The
        runtime then needs :meth:`reset`."""
        self._core.interrupt()

    def __enter__(self) -> "Runtime":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- events -------------------------------------------------------------

    def schedule(self, entities, times, kinds, payloads=None) -> None:
        """Push external events (actions, initial events); source -1.

        Not from a handler (use ``ctx.emit``): external events are numbered
        in push order, which inside a step would depend on thread timing.

        Raises:
            PastEventError: A time is before :attr:`now` (the entities'
                clocks have passed it; nothing is pushed).
            ClosedError: The runtime is closed, or its last step failed
                (call :meth:`reset` first: the failed step left events and
                clocks half-way through a window).
            MisuseError: Called from a handler, or while another thread
                steps the runtime.
        """
        core = self._core
        core.guard.enter("schedule()")
        try:
            self.check_steppable("scheduling")
            tim = _as_array("times", times, np.float64, None, integer=False)
            now = self.now
            if tim.size and not tim.min() >= now:  # NaN is left to push_many's message
                past = np.flatnonzero(tim < now)
                if past.size:
                    i = int(past[0])
                    raise PastEventError(
                        f"schedule(): time {tim[i]} at index {i} is before the runtime's current time {now}: "
                        f"expected times >= {now} (rt.now; every entity's clock may already be there)")
            self.queue.push_many(entities, tim, kinds, payloads)
        finally:
            core.guard.leave()

    def relabel(self, new_of_old) -> None:
        """Rename the entities between two steps: entity ``e`` becomes
        ``new_of_old[e]``, the target and the source of each of its pending
        events, and takes along its random stream (``ctx.uniform``), the
        numbering of the events it emits and its clock.  So a model that
        renames its own per-entity state the same way runs on exactly as if
        its entities had always had their new names, except that the
        simultaneous events of one entity break ties by the new names of
        their sources.  Renaming entities that interact into neighbouring
        indices is what keeps a big model's rows in cache (``uav_swarm_v0``
        orders its UAVs in space this way; the C API's ``seer_rt_relabel``).

        The runtime knows entities by index only: the model's state, its
        snapshot arrays and any entity ids inside payloads are the caller's
        to rename (``new[new_of_old[e]] = old[e]``).

        Args:
            new_of_old: A permutation of ``range(model.num_entities)``.

        Raises:
            InvalidArgumentError: ``new_of_old`` is not a permutation (the
                message names the first bad value); nothing changed.
            MisuseError: Called from inside a handler, or while another
                thread steps the runtime.
            ClosedError: The runtime is closed.

        Example:
            >>> from seer.synthetic import SyntheticModel
            >>> with Runtime(SyntheticModel(num_entities=3, fanout=0), workers=1) as rt:
            ...     rt.relabel([2, 0, 1])  # entity 0 is entity 2 from now on
            ...     rt.step(1.0).events > 0
            True
        """
        core = self._core
        core.guard.enter("relabel()")
        try:
            self._check_open()
            perm = check_permutation(new_of_old, self.model.num_entities)
            rc = lib.seer_rt_relabel(core.rt, ffi.from_buffer("int32_t[]", perm))
            if rc == lib.SEER_E_NOMEM:
                raise MemoryError("relabel(): out of memory (nothing changed)")
            if rc != lib.SEER_OK:
                raise InvalidArgumentError(f"relabel() failed with code {rc}")
        finally:
            core.guard.leave()

    def step(self, horizon: float) -> StepStats:
        """Process every event with ``time < horizon``, then return.

        Raises:
            HandlerError: A handler failed (names entity, kind and time; the
                original exception is chained).  Call :meth:`reset` to go on.
            CausalityError: An event to another entity was closer than the lookahead.
        """
        if not isinstance(horizon, numbers.Real) or isinstance(horizon, bool) or not math.isfinite(horizon):
            raise ValueError(f"horizon={horizon!r} is invalid: expected a finite float")
        core = self._core
        core.guard.enter("step()")
        try:
            self.check_steppable()
            if horizon < self.now:
                raise ValueError(f"horizon={horizon} is before the runtime's current time {self.now}")
            core.follow_state()
            events0 = lib.seer_rt_events_total(core.rt)
            windows0 = lib.seer_rt_windows_total(core.rt)
            t0 = time.perf_counter()
            rc = lib.seer_rt_step(core.rt, float(horizon))
            seconds = time.perf_counter() - t0
            self.collect_trace()
            if rc != lib.SEER_OK:
                self.fail(rc)
            self.now = float(horizon)
            stats = StepStats(
                events=int(lib.seer_rt_events_total(core.rt) - events0),
                windows=int(lib.seer_rt_windows_total(core.rt) - windows0),
                horizon=float(horizon),
            )
            if self._tuner is not None:
                self.report_step_time(seconds)
            return stats
        finally:
            core.guard.leave()

    # ---- the pool size ------------------------------------------------------------

    def resize(self, workers: int) -> None:
        """Run the next steps on a pool of ``workers`` threads.

        Between steps only.  Results do not change: they are identical for
        every pool size, so a pool may be resized at any step of an episode
        (STPA's tuner does, to time neighbouring sizes on the real steps).
        The old pool's threads are joined before the new ones start.

        Args:
            workers: The new pool size, an integer in [1, 1024].

        Raises:
            ValueError: ``workers`` is not such an integer.
            InvalidArgumentError: The runtime records a trace (``trace=True``),
                whose buffers are per worker.
            MisuseError: Called from a handler, or while another thread steps.
            ClosedError: The runtime is closed.

        Example:
            >>> from seer.synthetic import SyntheticModel
            >>> with Runtime(SyntheticModel(num_entities=8), workers=1) as rt:
            ...     a = rt.step(1.0).events
            ...     rt.resize(2)
            ...     b = rt.step(2.0).events
            >>> rt.workers
            2
        """
        workers = check_workers(workers, auto=False)
        core = self._core
        core.guard.enter("resize()")
        try:
            self._check_open()
            if self._trace_buffers is not None:
                raise InvalidArgumentError(f"resize({workers}): this Runtime records a trace (trace=True), whose "
                                           f"buffers are per worker; it keeps its pool of {self.workers}")
            if workers != self.workers:
                core.resize(workers)
                self.workers = workers
        finally:
            core.guard.leave()

    def pool_stats(self) -> "_PoolStatsBlock":
        """Measure where the pool's time goes, per worker, over a ``with`` block.

        ``with rt.pool_stats() as stats:`` turns the runtime's per-worker
        accounting on; when the block ends, ``stats`` (a :class:`PoolStats`)
        holds each worker's time in steps, in window bookkeeping and at
        window barriers, with the windows and steps run: the barrier waits
        show load imbalance or a busy core.  Steps run
        by C code through :attr:`native_handle` (the built-in envs) count
        too.  Between steps only, like :meth:`step`.

        Raises:
            MisuseError: A ``pool_stats()`` block is already open on this
                runtime; or entered or left from a handler, or while another
                thread steps.
            ClosedError: Entered on a closed runtime.

        Example:
            >>> from seer.synthetic import SyntheticModel
            >>> with Runtime(SyntheticModel(num_entities=64), workers=2) as rt:
            ...     with rt.pool_stats() as stats:
            ...         for t in (1.0, 2.0):
            ...             _ = rt.step(t)
            >>> stats.steps, [w.worker for w in stats.workers]
            (2, [0, 1])
        """
        return _PoolStatsBlock(self._core)

    @property
    def tuner(self):
        """What picks the pool size between steps, or None (the size stays).

        A tuner is any object with ``next_workers(seconds, workers, steps)
        -> int``: after each step the runtime passes it the step's wall time,
        the pool size it ran on and 1, and resizes to the answer
        (``seer.stpa.PoolTuner`` is STPA's).  A tuner with a ``hold_s``
        attribute is called less often: the runtime adds up steps until
        their time reaches ``hold_s`` (read after each call; 0: every step)
        and passes the total and the count, so that a settled tuner costs
        a float addition per step.  Set None to stop tuning.
        """
        return self._tuner

    @tuner.setter
    def tuner(self, tuner) -> None:
        if tuner is not None and not callable(getattr(tuner, "next_workers", None)):
            raise TypeError(f"tuner must have a next_workers(seconds, workers, steps) method or be None, "
                            f"got {type(tuner).__name__}")
        self._check_open()
        self._tuner = tuner
        self._held_s, self._held_n, self._hold_s = 0.0, 0, float(getattr(tuner, "hold_s", 0.0) or 0.0)

    def report_step_time(self, seconds: float) -> None:
        """Give the :attr:`tuner` one step's wall time, and take its pool size.

        :meth:`step` does it itself; C code that steps the runtime through
        :attr:`native_handle` (the built-in envs' whole steps) times its step
        and calls this after it, outside its own handlers.
        """
        tuner = self._tuner
        if tuner is None:
            return
        self._held_s += seconds
        self._held_n += 1
        if self._held_s < self._hold_s:
            return
        held_s, held_n = self._held_s, self._held_n
        self._held_s, self._held_n = 0.0, 0
        workers = tuner.next_workers(float(held_s), self.workers, held_n)
        self._hold_s = float(getattr(tuner, "hold_s", 0.0) or 0.0)
        if workers != self.workers:
            self.resize(workers)

    # ---- for native steps (a model's own C code calls seer_rt_step) --------------

    @property
    def native_handle(self):
        """The ``seer_runtime *`` for C code that steps this runtime itself
        (the built-in envs' whole-step functions); it stays valid until
        :meth:`close`."""
        self._check_open()
        return self._core.rt

    @property
    def native_address(self) -> int:
        """:attr:`native_handle` as an integer, for a plug-in's own ``ffi``
        (``ffi.cast("seer_runtime *", rt.native_address)``)."""
        return int(ffi.cast("uintptr_t", self.native_handle))

    def check_open(self) -> None:
        """Raise :class:`~seer.errors.ClosedError` if the runtime is closed."""
        self._check_open()

    def mark_reset(self, seed: int) -> None:
        """Record a reset that C code did itself (``seer_rt_reset`` plus the
        model's initial events, as the built-in envs' reset functions do)."""
        self._core.errors.clear()
        self._needs_reset = None
        self.now = 0.0
        self.seed = int(seed)

    def check_steppable(self, doing: str = "stepping") -> None:
        """Raise if the runtime is closed or its last step failed."""
        self._check_open()
        if self._needs_reset:
            raise ClosedError(f"the last step failed ({self._needs_reset}); call reset() before {doing} again")

    def events_total(self) -> int:
        """Events handled since the runtime was built."""
        guard = self._core.guard
        guard.enter("events_total()")  # close() from another thread may free rt at any time
        try:
            self._check_open()
            return int(lib.seer_rt_events_total(self._core.rt))
        finally:
            guard.leave()

    def fail(self, rc: int):
        """Raise the error of a failed step (``rc`` from ``seer_rt_step``); the
        runtime then needs :meth:`reset`."""
        core = self._core
        if rc == lib.SEER_E_CLOSED:
            self._needs_reset = "it was interrupted"
            if core.guard.closed_by_other:
                raise core.guard.closed_error()
            raise ClosedError("this Runtime's step was interrupted (Runtime.interrupt() from another thread); "
                              "call reset() before stepping again")
        self._check_open()
        err = step_error(core)
        self._needs_reset = str(err).partition("\n")[0]  # its traceback was the step's to show
        raise err from getattr(err, "_seer_cause", None)

    def step_quick(self, horizon: float) -> None:
        """:meth:`step` for a caller that already knows ``horizon`` is a
        finite float not before :attr:`now` (seer.vector's thread backend,
        once per vector step): the same errors, no :class:`StepStats`."""
        core = self._core
        core.guard.enter("step()")
        try:
            if self._needs_reset or core.closed:
                self.check_steppable()
            core.follow_state()
            if self._tuner is None:
                rc = lib.seer_rt_step(core.rt, horizon)
            else:
                t0 = time.perf_counter()
                rc = lib.seer_rt_step(core.rt, horizon)
                seconds = time.perf_counter() - t0
            if self._trace_buffers is not None:
                self.collect_trace()
            if rc != lib.SEER_OK:
                self.fail(rc)
            self.now = horizon
            if self._tuner is not None:
                self.report_step_time(seconds)
        finally:
            core.guard.leave()


    def collect_trace(self) -> None:
        """Move what the workers recorded into :attr:`trace` (``step`` does it)."""
        if self._trace_buffers is None:
            return
        guard = self._core.guard
        guard.enter("collect_trace()")
        try:
            self._check_open()
            self._trace_buffers.take(self._core.rt, self._trace, self.trace_entity_ids)
        finally:
            guard.leave()

    @property
    def tracing(self) -> bool:
        """Whether this runtime records a trace (built with ``trace=True``)."""
        return self._trace_buffers is not None

    @property
    def trace(self) -> Trace:
        """Everything recorded so far (empty unless built with ``trace=True``)."""
        return self._trace

    @property
    def now(self) -> float:
        """Simulated time the runtime has stepped to (the last step's
        horizon; 0 after a reset).  C code that steps the runtime itself
        sets it after each step."""
        return self._core.now

    @now.setter
    def now(self, value: float) -> None:
        self._core.now = value

    def __repr__(self) -> str:
        return (f"Runtime({type(self.model).__name__}, workers={self.workers}, entities={self.model.num_entities}, "
                f"now={self.now}{', closed' if self.closed else ''})")

