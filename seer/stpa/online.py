"""STPA online refinement: measure the chosen pool size against its neighbours on
the real workload, with a bounded cost, and keep the fastest.

Two forms.  :class:`PoolTuner` does it on the real steps of a running
runtime (``runtime.tuner = PoolTuner(runtime.workers)``): results are the
same for every pool size, so trying a neighbouring size costs only the
time those few steps take; the envs' ``workers="auto"`` attach one.
:func:`online_refine` does it before the run, on throwaway runtimes.

Usage with a model (the runtime built afterwards resets the model, so the
trial steps do not change its results)::

    from seer.stpa import online_refine
    workers = online_refine(model)               # starts from workers="auto"
    rt = seer.Runtime(model, workers=workers)

Usage with anything else (an env, a vector env): pass a function that runs
a few steps with a given pool size and returns the seconds per step::

    def seconds_per_step(w):
        env = uav_swarm_v0.parallel_env(scenario="large", workers=w)
        env.reset(seed=0)
        acts = {a: env.action_space(a).sample() for a in env.agents}
        env.step(acts)                             # warm-up
        t0 = time.perf_counter()
        for _ in range(5):
            env.step({a: acts[a] for a in env.agents})
        env.close()
        return (time.perf_counter() - t0) / 5

    workers = online_refine(seconds_per_step, workers=2)
"""

from __future__ import annotations

import math
import numbers
import statistics
import time
from typing import Callable

from seer._checks import check_workers
from seer.errors import InvalidArgumentError
from seer.model import Model
from seer.runtime import Runtime
from seer.stpa.hardware import machine_features
from seer.stpa.load import ForeignLoad
from seer.stpa.model import candidate_sizes
from seer.stpa.selector import current_pool_limit, resolve_workers


def _model_timer(model, steps: int, step_length: float | None, capacity: int | None) -> Callable[[int], float]:
    sl = step_length if step_length is not None else getattr(model, "step_length", None)
    if sl is None:
        L = float(model.lookahead)
        sl = 8 * L if math.isfinite(L) else 1.0
    prepare = getattr(model, "prepare_step", None)

    def seconds_per_step(w: int) -> float:
        with Runtime(model, workers=w, capacity=capacity) as rt:
            if callable(prepare):
                prepare()
            rt.step(rt.now + sl)  # warm-up
            best = math.inf
            for _ in range(steps):
                if callable(prepare):
                    prepare()
                t0 = time.perf_counter()
                rt.step(rt.now + sl)
                best = min(best, time.perf_counter() - t0)
        return best

    return seconds_per_step


class PoolTuner:
    """Times the pool sizes next to the current one on the real steps, and keeps the fastest.

    A runtime's :attr:`~seer.Runtime.tuner`: after each step it is given the
    step's wall time and answers the pool size for the next one.  It starts
    at ``start`` (STPA's choice), then compares it with a neighbouring size
    in interleaved visits (``start, n, start, n, ...``, ``visits`` each; a visit is
    ``settle_steps`` untimed steps after the resize, then timed steps until
    ``visit_s`` seconds or ``visit_steps`` steps), each size scored by its
    median visit (not its fastest: under foreign load the fastest of a few
    visits rewards the size whose timings scatter most).  A neighbour
    faster by ``min_gain`` is taken and the next one in that direction
    tried; otherwise the other neighbour; then it settles.  While settled it checks again (load changes) after
    ``recheck_s`` seconds of steps, then twice as long each time up to
    ``recheck_max_s``, and never sooner than :attr:`RECHECK_FACTOR` times
    what the last round of comparisons took: a round's extra cost stays a
    small share of the stepping time, for short steps and long ones alike.
    It compares again sooner when its steps run :attr:`WATCH_FACTOR` times
    slower or faster than it measured the kept size (:attr:`alarms` counts
    those), as soon as the last round's cost floor allows, and when the load
    of other processes on its cores moves by :attr:`LOAD_SHIFT` cores for two
    readings :attr:`LOAD_PERIOD_S` apart (:attr:`load_alarms`; a learner or a
    second job starting or stopping), after at least :attr:`LOAD_FACTOR`
    times the last round's step time: a pool size that stopped paying when
    the load came (or that the load's leaving made pay) is found again
    within about a second, also where the steps themselves run no slower
    (one worker beside a busy process on two cores).

    With ``above_cores`` it tries at most one size above the usable cores
    (or above ``start``, where the selector's probe already measured a
    larger pool faster), and takes (and keeps) it only ``above_gain`` faster: threads
    beyond the cores gain only CPU share from other processes.  Runtimes
    with Python handlers must not (:func:`attach_tuner` says so): their
    threads beyond the cores convoy on the GIL, and under foreign load run
    many times slower in some visits and fast in others, so a few visits can
    pick a disaster.  Never above ``max_workers``.  With ``max_workers=1`` there
    is nothing to try and it costs nothing.

    Args:
        start: The pool size the runtime was built with.
        max_workers: Largest size it may choose (default: no cap beyond the
            cores rule above).
        min_gain: How much faster (relative) a neighbour must be to be taken.
        above_gain: The same for a size above the usable cores.
        above_cores: Whether a size above the usable cores may be tried.
        visits: Visits per size in one comparison.
        settle_steps: Steps after a resize that are not timed (the new
            threads' start-up).
        visit_s: Seconds of steps after which a visit ends (or after
            ``visit_steps``, whichever comes first).
        visit_steps: Steps after which a visit ends (or after ``visit_s``).
        recheck_s: Seconds of steps between settling and the next check
            (the step times it was given, not the wall clock); the wait
            doubles after each check.
        recheck_max_s: The longest wait between checks.  Some changes raise
            no alarm: a host whose other tenants (VMs beside this one, its
            memory traffic) make a second thread pay for a while leaves a
            one-worker step as fast as it was, so only a check finds that
            two pay again.  A round costs a few dozen visit-long blocks, so
            checks 8 s of steps apart keep its cost well under 1%.
        delay_s: Seconds of steps before the first round (0: at once).
        cores: Usable cores (default: this process's).
        load: A :class:`~seer.stpa.load.ForeignLoad` to watch, True (one on
            this process's CPUs), False (none), or None (default: one where
            ``cores`` is this process's, none where ``cores`` was given: a
            tuner of other cores than these has no load to read).

    Attributes:
        workers: The size it keeps (the one it settled on, or the base of
            the comparison running now).
        settled: Whether no comparison runs now.
        alarms: Rounds started because the steps ran slower (or faster) than measured.
        load_alarms: Rounds started because other processes' load moved.
        history: One dict per finished comparison: ``step``, ``base``,
            ``candidate``, their median seconds per step, and ``moved``.

    Example:
        >>> import seer
        >>> from seer.synthetic import SyntheticModel
        >>> with seer.Runtime(SyntheticModel(num_entities=64), workers=1) as rt:
        ...     rt.tuner = PoolTuner(rt.workers, max_workers=2)
        ...     for k in range(40):
        ...         _ = rt.step(float(k + 1))
        >>> rt.tuner.workers in (1, 2)
        True
    """

    #: A settled tuner waits at least this many times its last round's step time.
    RECHECK_FACTOR = 20.0
    #: A settled tuner compares again at once when two visit-long blocks of
    #: steps ran this many times slower than its size measured (a pool beyond
    #: the cores that the scheduler turned against, or load that came).
    WATCH_FACTOR = 1.5
    #: Seconds of wall time between two readings of other processes' load.
    LOAD_PERIOD_S = 0.25
    #: Cores by which other processes' load must move (two readings running) to compare again.
    LOAD_SHIFT = 0.35
    #: A load alarm waits at least this many times its last round's step time.
    LOAD_FACTOR = 4.0

    def __init__(self, start: int, *, max_workers: int | None = None, min_gain: float = 0.03,
                 above_gain: float = 0.10, above_cores: bool = True, visits: int = 4,
                 settle_steps: int = 1, visit_s: float = 0.005, visit_steps: int = 32, recheck_s: float = 1.0,
                 recheck_max_s: float = 8.0, delay_s: float = 0.5, cores: int | None = None, load=None):
        optional = {"max_workers": max_workers, "cores": cores}
        for name, v, lo in (("start", start, 1), ("visits", visits, 1), ("settle_steps", settle_steps, 0),
                            ("visit_steps", visit_steps, 1),
                            *((k, v, 1) for k, v in optional.items() if v is not None)):
            if not isinstance(v, numbers.Integral) or isinstance(v, bool) or v < lo:
                raise ValueError(f"{name}={v!r} is invalid: expected an integer >= {lo}")
        for name, v in (("min_gain", min_gain), ("above_gain", above_gain), ("visit_s", visit_s), ("recheck_s", recheck_s),
                        ("recheck_max_s", recheck_max_s), ("delay_s", delay_s)):
            if not isinstance(v, numbers.Real) or isinstance(v, bool) or not 0 <= v < math.inf:
                raise ValueError(f"{name}={v!r} is invalid: expected a finite number >= 0")
        self._load = _load_watch(load, own_cores=cores is None)
        cores = int(machine_features()["usable_cores"]) if cores is None else int(cores)
        start = int(start)
        hi = max(start, cores) + (1 if above_cores else 0)
        self.hi = hi if max_workers is None else min(hi, max_workers)
        self.cores = cores
        self.workers = min(start, self.hi)
        self.min_gain, self.above_gain = float(min_gain), float(above_gain)
        self.visits, self.settle_steps = visits, settle_steps
        self.visit_s, self.visit_steps = float(visit_s), visit_steps
        self.recheck_s, self.recheck_max_s = float(recheck_s), float(recheck_max_s)
        self.history: list[dict] = []
        self.steps = 0
        self._base_s = self.recheck_s  # the next wait, before the round-cost floor
        self._round_s = 0.0  # step time spent in the round running now
        self._since_s = 0.0  # step time since it settled
        self._kept_s: float | None = None  # the kept size's median visit, last measured
        self._slow_blocks = 0
        self.alarms = 0
        self.load_alarms = 0
        self._load_t = -math.inf
        self._load_base: float | None = None
        self._load_skip, self._load_far = 1, 0
        self._tried: set[int] = set()
        self._direction = 0
        self.delay_s = float(delay_s)
        # The first round waits for delay_s of steps: a short run would pay
        # for the comparison and never gain from it.
        self._schedule = None
        self._visit_sum, self._visit_n = 0.0, 0
        self._wait_s = self.delay_s
        if self.delay_s == 0.0:
            self._begin_round()
        self._skip = settle_steps  # the runtime's first steps warm its caches and threads

    @property
    def settled(self) -> bool:
        return self._schedule is None

    def _begin_round(self) -> None:
        """A new round of comparisons from :attr:`workers`."""
        self._tried = {self.workers}
        self._direction = 0
        self._schedule = None
        self._next_comparison()

    def _next_comparison(self) -> None:
        base = self.workers
        steps = (self._direction,) if self._direction else (1, -1)
        options = [base + d for d in steps if 1 <= base + d <= self.hi and base + d not in self._tried]
        if not options:
            self._settle()
            return
        cand = options[0]
        self._tried.add(cand)
        self._candidate = cand
        self._schedule = [base, cand] * self.visits
        self._samples: dict[int, list[float]] = {base: [], cand: []}
        self._visit_sum, self._visit_n = 0.0, 0

    def _finish_comparison(self) -> None:
        base, cand = self.workers, self._candidate
        b = statistics.median(self._samples[base])
        c = statistics.median(self._samples[cand])
        if cand > max(self.cores, base):
            moved = c < b * (1.0 - self.above_gain)
        elif base > self.cores >= cand:  # staying above the cores takes the same clear gain as going there
            moved = not b < c * (1.0 - self.above_gain)
        else:
            moved = c < b * (1.0 - self.min_gain)
        self.history.append({"step": self.steps, "base": base, "candidate": cand, "base_s": b, "candidate_s": c,
                             "moved": moved})
        self._kept_s = statistics.median(self._samples[cand if moved else base])
        if moved:
            self._direction = cand - base
            self.workers = cand
            self._base_s = self.recheck_s  # a new size: look again soon
        elif self._direction:
            self._settle()
        if moved or not self._direction:
            self._next_comparison()

    def _settle(self) -> None:
        self._schedule = None
        self._wait_s = max(self._base_s, self.RECHECK_FACTOR * self._round_s)
        self._base_s = min(2 * self._base_s, self.recheck_max_s)
        self._since_s = 0.0
        self._visit_sum, self._visit_n, self._slow_blocks = 0.0, 0, 0
        # The next reading spans the round (other pool sizes): it is no baseline.
        self._load_base, self._load_skip, self._load_far = None, 1, 0

    def _watch(self, seconds: float, steps: int) -> bool:
        """While settled: whether the steps have run :attr:`WATCH_FACTOR` times
        slower (or faster) than the kept size measured, for two visit-long blocks running."""
        if self._kept_s is None:
            return False
        self._visit_sum += seconds
        self._visit_n += steps
        if self._visit_sum < self.visit_s and self._visit_n < self.visit_steps:
            return False
        mean = self._visit_sum / self._visit_n
        off = mean > self.WATCH_FACTOR * self._kept_s or mean * self.WATCH_FACTOR < self._kept_s
        self._visit_sum, self._visit_n = 0.0, 0
        self._slow_blocks = self._slow_blocks + 1 if off else 0
        return self._slow_blocks >= 2

    def _load_moved(self) -> bool:
        """While settled: whether other processes' load on the cores has moved
        by :attr:`LOAD_SHIFT` from what it was after settling, for two readings running."""
        if self._load is None:
            return False
        now = time.monotonic()
        if now - self._load_t < self.LOAD_PERIOD_S:
            return False
        self._load_t = now
        foreign = self._load.read()
        if foreign is None:
            return False
        if self._load_skip:
            self._load_skip -= 1
            return False
        if self._load_base is None:
            self._load_base = foreign
            return False
        self._load_far = self._load_far + 1 if abs(foreign - self._load_base) >= self.LOAD_SHIFT else 0
        return self._load_far >= 2

    @property
    def hold_s(self) -> float:
        """Step time the runtime may add up before calling again: none inside
        a round (each step counts for its visit), a visit's length once
        settled (what the watch reads in blocks anyway)."""
        return 0.0 if self._schedule is not None else self.visit_s

    def next_workers(self, seconds: float, workers: int, steps: int = 1) -> int:
        """Take the wall time of ``steps`` steps on ``workers`` (their total);
        return the size for the next step."""
        self.steps += steps
        ok = math.isfinite(seconds) and seconds >= 0 and steps >= 1
        if self._schedule is None:
            self._since_s += seconds if ok else 0.0
            if self._skip:
                self._skip = max(0, self._skip - steps)
            elif ok and workers == self.workers:
                # Both floors keep rounds a small share of the stepping time.
                if self._watch(seconds, steps) and self._since_s >= self.RECHECK_FACTOR * self._round_s:
                    self.alarms += 1
                    self._since_s = self._wait_s
                elif self._load_moved() and self._since_s >= self.LOAD_FACTOR * self._round_s:
                    self.load_alarms += 1
                    self._base_s = self.recheck_s  # new conditions: look again soon after this round too
                    self._since_s = self._wait_s
            if self._since_s >= self._wait_s:
                self._round_s = 0.0
                self._begin_round()
        elif workers == self._schedule[0]:  # else resized by someone else: not a sample of this visit
            self._round_s += seconds if ok else 0.0
            if self._skip:
                self._skip = max(0, self._skip - steps)
            elif ok:
                self._visit_sum += seconds
                self._visit_n += steps
                if self._visit_sum >= self.visit_s or self._visit_n >= self.visit_steps:
                    self._samples[workers].append(self._visit_sum / self._visit_n)
                    self._visit_sum, self._visit_n = 0.0, 0
                    self._schedule.pop(0)
                    if not self._schedule:
                        self._finish_comparison()
        wanted = self._schedule[0] if self._schedule else self.workers
        if wanted != workers:
            self._skip = self.settle_steps
        return wanted

    def settle(self, seconds_per_step: Callable[[int], float], max_steps: int = 100) -> int:
        """Drive the tuner without a runtime until it settles: ``seconds_per_step(w)``
        runs or times steps on ``w`` workers (``seer tune``'s evaluation, and
        callers that can only measure a size in a block of steps).

        Returns:
            The size it settled on (or keeps after ``max_steps`` answers).
        """
        if self.settled and not self.history:  # no first round yet: now, without the delay
            self._begin_round()
        w = self.workers
        for _ in range(max_steps):
            if self.settled:
                break
            w = self.next_workers(float(seconds_per_step(w)), w)
        return self.workers

    def __repr__(self) -> str:
        state = "settled" if self.settled else f"comparing {self.workers} with {self._candidate}"
        return f"PoolTuner(workers={self.workers}, {state}, steps={self.steps}, max={self.hi})"


def _load_watch(load, *, own_cores: bool):
    if load is None:
        load = own_cores
    if load is True:
        watch = ForeignLoad()
        return watch if watch.available else None
    if load is False:
        return None
    if not callable(getattr(load, "read", None)):
        raise ValueError(f"load={load!r} is invalid: expected a seer.stpa.load.ForeignLoad, True, False or None")
    return load


def attach_tuner(runtime, *, max_workers: int | None = None) -> PoolTuner | None:
    """Let ``runtime``'s pool size follow its measured steps: what ``workers="auto"`` does after choosing.

    Sets ``runtime.tuner`` to a :class:`PoolTuner` that starts at the
    runtime's pool size (and tries a size above the usable cores only where
    every handler is native), unless there is nothing to try (``max_workers=1``)
    or the runtime records a trace (whose buffers are per worker, so its
    pool stays).

    Args:
        runtime: A :class:`seer.Runtime` built with STPA's choice.
        max_workers: Cap (default: :func:`~seer.stpa.current_pool_limit`, so
            copies built inside ``default_pool_limit(1)`` are never tuned up).

    Returns:
        The tuner, or None where none was attached.
    """
    if runtime.tracing:
        return None
    limit = current_pool_limit() if max_workers is None else max_workers
    native = all(k.native for k in runtime.model.kinds)
    tuner = PoolTuner(runtime.workers, max_workers=limit, above_cores=native)
    if tuner.hi <= 1:  # one size only: nothing to try
        return None
    runtime.tuner = tuner
    return tuner


def make_runtime(model, workers: int | str = "auto", *, capacity: int | None = None, trace: bool = False,
                 choose: Callable[[], int] | None = None, max_workers: int | None = None,
                 debug: bool | None = None):
    """A :class:`seer.Runtime` for ``model`` whose ``workers`` may be ``"auto"``: what an env that owns a runtime
    does with its own ``workers=`` argument.

    An integer is used as given.  ``"auto"`` takes the pool size from
    ``choose()`` if given (an env's own selector, e.g. one that times whole
    env steps), else from :func:`resolve_workers`, then attaches a
    :class:`PoolTuner` (:func:`attach_tuner`) that checks the choice against
    the neighbouring sizes on the real steps; an env that steps the runtime
    from C reports those steps with :meth:`seer.Runtime.native_step`.

    Args:
        model: The :class:`seer.Model` to run.
        workers: ``"auto"`` or an integer in [1, 1024].
        capacity: The runtime's queue capacity (default: the runtime's).
        trace: Record a trace (its pool then stays at the chosen size).
        choose: For ``"auto"``: returns the starting pool size.
        max_workers: Cap for ``"auto"``'s choice and tuner.
        debug: The runtime's debug mode (see :class:`seer.Runtime`; None: ``SEER_DEBUG``).

    Example:
        >>> import seer
        >>> from seer.synthetic import SyntheticModel
        >>> rt = seer.stpa.make_runtime(SyntheticModel(16), workers=2)
        >>> rt.workers
        2
        >>> rt.close()
    """
    auto = check_workers(workers) == "auto"
    if auto and choose is not None:
        picked = choose()
        if not isinstance(picked, numbers.Integral) or isinstance(picked, bool) or not 1 <= picked <= 1024:
            raise InvalidArgumentError(f"choose() returned {picked!r}: expected an integer pool size in [1, 1024]")
        workers = int(picked)
    workers = resolve_workers(workers, model, capacity=capacity, max_workers=max_workers)
    runtime = Runtime(model, workers=workers, capacity=capacity, trace=trace, debug=debug)
    if auto:
        attach_tuner(runtime, max_workers=max_workers)
    return runtime


def online_refine(target, workers: int | str = "auto", *, max_workers: int | None = None, steps: int = 3,
                  step_length: float | None = None, capacity: int | None = None, budget_s: float = 1.0,
                  min_gain: float = 0.03, details: bool = False):
    """Hill-climb from ``workers`` to the fastest measured neighbouring pool size.

    Args:
        target: A :class:`seer.Model` (trial runtimes are built on it; each
            does a warm-up step and ``steps`` timed steps of ``step_length``,
            default the model's ``step_length`` or 8 lookaheads), or a callable
            ``f(workers) -> seconds per step``.
        workers: Where to start: ``"auto"`` (the selector's choice; needs a
            model target) or an integer.
        max_workers: Largest size tried (default: max(2 x usable cores, 4)).
        budget_s: Wall-time bound: no new size is tried after this many
            seconds (the one being measured finishes).
        min_gain: A neighbour must be this much faster (relative) to move.
        details: Also return ``{workers: seconds per step}`` of what was measured.

    Returns:
        The best measured pool size (and the measurements with ``details``).
    """
    if isinstance(target, Model):
        measure = _model_timer(target, steps, step_length, capacity)
        workers = resolve_workers(workers, target, capacity=capacity)
    elif callable(target):
        measure = target
        if workers == "auto":
            raise ValueError('workers="auto" needs a seer.Model target; pass a starting integer with a callable')
        workers = check_workers(workers, auto=False)
    else:
        raise TypeError(f"target must be a seer.Model or a callable f(workers) -> seconds, got {type(target).__name__}")
    hi = max_workers if max_workers is not None else max(candidate_sizes(machine_features()["usable_cores"]))
    workers = min(workers, hi)
    t_start = time.perf_counter()
    seen: dict[int, float] = {workers: float(measure(workers))}
    best = workers
    direction = 0
    while time.perf_counter() - t_start < budget_s:
        options = [best + d for d in ((direction,) if direction else (-1, 1)) if 1 <= best + d <= hi and best + d not in seen]
        if not options:
            break
        moved = False
        for w in options:
            if time.perf_counter() - t_start >= budget_s:
                break
            seen[w] = float(measure(w))
            if seen[w] < seen[best] * (1.0 - min_gain):
                direction = w - best
                best = w
                moved = True
                break
        if not moved:
            break
    return (best, seen) if details else best
