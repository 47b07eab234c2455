"""STPA online refinement: measure the chosen pool size against its neighbours on
the real workload, with a bounded cost, and keep the fastest.

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
import time
from typing import Callable

from seer._checks import check_workers
from seer.model import Model
from seer.runtime import Runtime
from seer.stpa.hardware import machine_features
from seer.stpa.model import candidate_sizes
from seer.stpa.selector import resolve_workers


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
