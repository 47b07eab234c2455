"""STPA features: what a model declares and what a short traced probe of it measures.

The groups, all plain ``dict[str, float]`` (strings only where noted):

* :func:`hardware_features` (in :mod:`seer.stpa.hardware`, re-exported here)
  reads ``/sys/devices/system/cpu`` and ``/proc``.
* :func:`static_workload_features` reads what a :class:`seer.Model` declares
  (entities, kinds, native share, lookahead).
* :func:`probe` runs a few steps of the model on a one-worker traced
  :class:`seer.Runtime` and turns the trace into :func:`trace_features`
  (events per window, handler cost mean and spread, busy and idle time per
  window and worker, claim contention, GIL share, fan-out, parallelism),
  then times the same steps on two workers; first it measures the load
  (:func:`load_features`: the cores free right now, see :mod:`seer.stpa.load`).
* :func:`probe_stepper` is the probe of what only steps as a whole (a vector
  env of copies): static features, the load, and one worker timed against two.

The probe leaves the model as the runtime's ``reset`` will find it: the
:class:`seer.Runtime` constructor resets the model after choosing the pool
size, and results never depend on the pool size anyway.
"""

from __future__ import annotations

import math
import time
from typing import Mapping

import numpy as np

from seer._host import usable_cores
from seer.stpa.hardware import hardware_features

__all__ = [
    "hardware_features",
    "static_workload_features",
    "trace_features",
    "probe",
    "candidate_features",
    "load_features",
    "probe_stepper",
    "ProbeResult",
]


# ---- workload (static) ----------------------------------------------------------------------

def static_workload_features(model) -> dict[str, float]:
    """What a model declares: entities, event kinds, share of native kinds, lookahead."""
    kinds = list(model.kinds)
    native = sum(1 for k in kinds if k.native)
    L = float(model.lookahead)
    return {
        "entities": float(model.num_entities),
        "kinds": float(len(kinds)),
        "native_kind_share": native / max(len(kinds), 1),
        "lookahead": L if math.isfinite(L) else 1e9,
    }


# ---- runtime traces -------------------------------------------------------------------------

def _cv(x: np.ndarray) -> float:
    if x.size < 2:
        return 0.0
    m = float(x.mean())
    return float(x.std() / m) if m > 0 else 0.0


def trace_features(trace, native_kinds=None, *, skip_windows_upto: int = -1) -> dict[str, float]:
    """Features of a :class:`seer.Trace`.

    Per window (a window's rows are one per worker): events, busy time (in
    handlers), idle time (not in handlers, between the window's first start
    and last end: queue work and waiting on claims), empty polls of the ready
    set (claim contention), time in Python handlers (GIL held).  Per event:
    handler cost (a batched Python call's time is shared among its events).
    Per window and entity: the busy time of the busiest entity, which bounds
    the window's parallelism (``parallelism`` = busy / busiest entity).

    Args:
        trace: The trace.
        native_kinds: Per kind, whether its handler is native (for
            ``native_event_share``); default: Python handler time decides.
        skip_windows_upto: Ignore windows with an id up to this (warm-up).
    """
    win = trace.windows
    ev = trace.events
    if skip_windows_upto >= 0 and len(win):
        keep = win["window"] > skip_windows_upto
        if keep.any():
            win = win[keep]
            ev = ev[ev["window"] > skip_windows_upto]
    out = {
        "events_per_window": 0.0, "busy_us_per_window": 0.0, "busy_cv": 0.0, "idle_us_per_window": 0.0,
        "overhead_share": 0.0, "gil_share": 0.0, "python_share": 0.0, "empty_polls_per_window": 0.0,
        "cost_us": 0.0, "cost_cv": 0.0, "active_entities": 0.0, "events_per_entity_window": 0.0,
        "parallelism": 1.0, "native_event_share": 1.0, "trace_windows": 0.0,
    }
    if not len(win):
        return out
    wid = win["window"].astype(np.int64)
    uw, inv = np.unique(wid, return_inverse=True)
    nW = len(uw)
    start = np.full(nW, np.iinfo(np.int64).max)
    end = np.full(nW, np.iinfo(np.int64).min)
    np.minimum.at(start, inv, win["start_ns"])
    np.maximum.at(end, inv, win["end_ns"])
    span = (end - start).astype(np.float64)
    rows_per = np.bincount(inv, minlength=nW).astype(np.float64)
    busy = np.bincount(inv, weights=win["busy_ns"].astype(np.float64), minlength=nW)
    py = np.bincount(inv, weights=win["python_ns"].astype(np.float64), minlength=nW)
    events = np.bincount(inv, weights=win["events"].astype(np.float64), minlength=nW)
    polls = np.bincount(inv, weights=win["empty_polls"].astype(np.float64), minlength=nW)
    idle_rows = np.maximum(span[inv] - win["busy_ns"], 0.0)  # as Trace.idle_ns()
    idle = np.bincount(inv, weights=idle_rows, minlength=nW)
    total_busy, total_idle = float(busy.sum()), float(idle.sum())
    out.update(
        events_per_window=float(events.mean()),
        busy_us_per_window=float(busy.mean() / 1e3),
        busy_cv=_cv(busy),
        idle_us_per_window=float((idle / rows_per).mean() / 1e3),
        overhead_share=total_idle / max(total_busy + total_idle, 1.0),
        gil_share=float(py.sum()) / max(total_busy + total_idle, 1.0),
        python_share=float(py.sum()) / max(total_busy, 1.0),
        empty_polls_per_window=float((polls / rows_per).mean()),
        trace_windows=float(nW),
    )
    if len(ev):
        dur = (ev["end_ns"] - ev["start_ns"]).astype(np.float64)
        # A batched Python call records every event of its batch with the
        # call's interval: share the time out among them.
        start0 = int(ev["start_ns"].min())
        key = ((ev["start_ns"] - start0) * 1024 + ev["worker"].astype(np.int64)) * 1025 + ev["kind"].astype(np.int64)
        _, binv, bcount = np.unique(key, return_inverse=True, return_counts=True)
        dur = dur / bcount[binv.reshape(-1)]
        out["cost_us"] = float(dur.mean() / 1e3)
        out["cost_cv"] = _cv(dur)
        # Busiest entity per window: bounds the speedup of that window.
        ent = ev["entity"].astype(np.int64)
        evw = ev["window"].astype(np.int64)
        wins, winv_ev = np.unique(evw, return_inverse=True)
        winv_ev = winv_ev.reshape(-1)
        span_e = int(ent.max()) + 1
        pairs, pinv = np.unique(winv_ev * span_e + ent, return_inverse=True)
        per_pair = np.bincount(pinv.reshape(-1), weights=dur, minlength=len(pairs))
        winv = pairs // span_e
        wmax = np.zeros(len(wins))
        np.maximum.at(wmax, winv, per_pair)
        wsum = np.bincount(winv, weights=per_pair, minlength=len(wins))
        wcount = np.bincount(winv, minlength=len(wins)).astype(np.float64)
        par = np.where(wmax > 0, wsum / np.maximum(wmax, 1e-9), 1.0)
        weight = wsum / max(wsum.sum(), 1e-9)
        out["parallelism"] = float(max((par * weight).sum(), 1.0))
        out["active_entities"] = float(wcount.mean())
        ev_per_w = np.bincount(winv_ev, minlength=len(wins))
        out["events_per_entity_window"] = float((ev_per_w / np.maximum(wcount, 1)).mean())
        if native_kinds is not None:
            nk = np.asarray(native_kinds, bool)
            k = ev["kind"].astype(np.int64)
            ok = (k >= 0) & (k < len(nk))
            out["native_event_share"] = float(nk[k[ok]].mean()) if ok.any() else 1.0
        else:
            out["native_event_share"] = 1.0 - out["python_share"]
    return out


# ---- the probe ------------------------------------------------------------------------------

class ProbeResult(dict):
    """Features from :func:`probe` (a dict); ``ok`` is False when the probe
    failed and only static features are in it (``error`` says why)."""

    ok: bool = True
    error: str | None = None


def probe(model, *, capacity: int | None = None, budget_s: float = 0.04, max_events: int = 100_000,
          max_steps: int = 64, step_length: float | None = None, seed: int = 0,
          trace_capacity: int = 1 << 16, compare_workers: int | None = 2,
          measure_load: bool = True) -> ProbeResult:
    """Run a few steps of ``model`` on traced runtimes; return its features.

    First on one worker: the step length is ``step_length``, else the
    model's ``step_length`` attribute when it has one, else the lookahead
    (or 1.0), doubled while a step takes under a millisecond.  The first
    step is warm-up; steps run until ``budget_s`` seconds, ``max_events``
    events or ``max_steps`` steps.  Then, when ``compare_workers`` (default
    2) is set and this process may use that many cores, the same steps run
    again on a pool of that size (the events are the same for every pool
    size), within the same time budget, then once more on each (1, W, 1, W):
    the ratio of each size's best total time over the steps every run made
    is ``probe2_speedup`` (a burst of foreign load during one run does not
    decide it); then 1, W, 1, W untraced, and the ratio of each size's
    fastest run of all is ``probe2_speedup_best`` (what the selection rules
    compare: tracing hides a pool's gain on short steps, and four runs a size
    are less noisy than two); the first W-worker trace gives the pool's idle share,
    claim contention (empty polls) and load imbalance.  On a loaded machine
    (:func:`is_loaded`) each run gets 1.5x the budget and one more size is
    timed in the same rotation, one thread above the usable cores
    (``probe3_speedup``, ``probe3_workers``; on one usable core that size
    is the pool of 2 itself).

    With ``measure_load`` (default) the probe first measures the cores free
    right now (:func:`seer.stpa.load.free_cores`, ~50 ms): the
    ``free_cores`` feature, and ``cpu_pressure`` where the kernel reports it.

    A model with a ``prepare_step()`` method (the built-in envs' per-step
    hook) has it called before each step.  The model is left stepped:
    build the real runtime afterwards (its constructor resets the model),
    as ``workers="auto"`` does.
    """
    from seer.errors import SeerError

    feats = ProbeResult(static_workload_features(model))
    feats.update(load_features() if measure_load else {})
    feats["probe_traced"] = 1.0
    native_kinds = [k.native for k in model.kinds]
    sl = step_length if step_length is not None else getattr(model, "step_length", None)
    adaptive = sl is None
    if adaptive:
        L = float(model.lookahead)
        sl = L if math.isfinite(L) and L > 0 else 1.0
    if capacity is None:
        qc = getattr(model, "queue_capacity", None)
        capacity = int(qc()) if callable(qc) else max(1 << 16, 128 * model.num_entities)
    opts = dict(capacity=capacity, seed=seed, trace_capacity=trace_capacity)
    try:
        one = _run_probe(model, 1, float(sl), adaptive, budget_s, max_events, max_steps, **opts)
    except (SeerError, MemoryError, ValueError) as exc:
        feats.ok, feats.error = False, f"{type(exc).__name__}: {exc}"
        return feats
    steps = one["steps"]
    measured = [s for s in steps if s[4]]
    # Per-step features from the steps of the final length (adaptive probes grow it).
    final = [s for s in measured if abs(s[5] - measured[-1][5]) <= 1e-9 * max(1.0, abs(s[5]))] if measured else []
    feats.update(trace_features(one["trace"], native_kinds, skip_windows_upto=one["warm_window"]))
    feats.update(
        events_per_step=float(np.mean([s[2] for s in final])) if final else 0.0,
        windows_per_step=float(np.mean([s[3] for s in final])) if final else 0.0,
        step_ms=float(np.mean([s[1] for s in final]) * 1e3) if final else 0.0,
        probe_step_length=float(final[-1][5]) if final else float(sl),
        probe_steps=float(len(steps)),
        # Events created per handled event (to itself or others): handled + growth of the queue.
        emitted_per_event=float((one["handled"] + one["pending1"] - one["pending0"]) / one["handled"])
        if one["handled"] else 0.0,
        fanout=one["fanout"],
        cross_share=one["cross_share"],
        trace_dropped=float(one["trace"].dropped),
    )
    if one["handled"] == 0:
        feats.ok, feats.error = False, "the model handled no events during the probe"
        return feats
    feats.update(probe2_speedup=1.0, probe2_idle_share=0.0, probe2_empty_polls_per_window=0.0,
                 probe2_imbalance=1.0, probe2_workers=1.0)
    usable = usable_cores()
    loaded = is_loaded(usable, feats)
    # On one usable core a pool of 2 is itself the size above the cores,
    # timed only when foreign load makes a second thread's CPU share worth it.
    if compare_workers and compare_workers > 1 and (usable >= compare_workers or loaded):
        replay = [(s[0], s[4]) for s in steps]
        W = int(compare_workers)
        over = oversubscribed_size(usable, feats, W)
        if loaded:  # timings under foreign load scatter more: give each run more steps
            budget_s *= 1.5
        runs = {w: [] for w in (1, W, over) if w}
        plain = {1: [], W: []}
        runs[1].append(steps)
        try:
            # 1, W(, W'), 1, W(, W'): each pool size's best total over the steps
            # all runs made, so one burst of foreign load does not decide the ratio
            two = _run_probe(model, W, float(sl), False, budget_s, max_events, max_steps, horizons=replay, **opts)
            runs[W].append(two["steps"])
            order = ((over,) if over else ()) + (1, W) + ((over,) if over else ())
            for w in order:
                runs[w].append(_run_probe(model, w, float(sl), False, budget_s, max_events, max_steps,
                                          horizons=replay, **opts)["steps"])
            # Then 1, W, 1, W untraced: tracing adds a serial cost per step
            # (the trace is collected in Python), which hides a pool's gain on
            # short steps of a small native model almost entirely.  The model
            # was trained on the traced ratio; the rules that compare
            # measured sizes read probe2_speedup_best.
            for w in (1, W, 1, W):
                plain[w].append(_run_probe(model, w, float(sl), False, budget_s, max_events, max_steps,
                                           horizons=replay, traced=False, **opts)["steps"])
        except (SeerError, MemoryError, ValueError) as exc:
            feats.ok, feats.error = False, f"{type(exc).__name__}: {exc}"
            return feats
        # Throughput ratio over the measured steps (not a median of per-step
        # ratios: steps may alternate between heavy and empty ones).
        common = min(len(r) for by in (runs, plain) for rs in by.values() for r in rs)
        use = [i for i in range(common) if steps[i][4]] or list(range(common))

        def best_total(w, by=runs):
            return min(sum(r[i][1] for i in use) for r in by[w])

        t1, t2_sum = best_total(1), best_total(W)
        # each size's fastest of all its runs: where tracing costs, an
        # untraced one; where it does not, the best of four (less noise)
        b1, b2 = min(t1, best_total(1, plain)), min(t2_sum, best_total(W, plain))
        feats["probe2_speedup_best"] = float(b1 / b2) if b2 > 0 else 1.0
        t2 = trace_features(two["trace"], native_kinds, skip_windows_upto=two["warm_window"])
        feats.update(
            probe2_speedup=float(t1 / t2_sum) if t2_sum > 0 else 1.0,
            probe2_idle_share=t2["overhead_share"],
            probe2_empty_polls_per_window=t2["empty_polls_per_window"],
            probe2_imbalance=_imbalance(two["trace"], two["warm_window"]),
            probe2_workers=float(W),
        )
        if over:
            t3 = best_total(over)
            feats.update(probe3_speedup=float(t1 / t3) if t3 > 0 else 1.0, probe3_workers=float(over))
    return feats


#: A machine whose probe measured fewer free cores than this share of the usable ones is "loaded".
LOADED_SHARE = 0.85


def is_loaded(usable: int, feats: Mapping[str, float]) -> bool:
    """Whether the probe's free-cores reading says foreign load takes a share of the usable cores."""
    free = feats.get("free_cores")
    return free is not None and float(free) < LOADED_SHARE * usable


def oversubscribed_size(usable: int, feats: Mapping[str, float], compare_workers: int) -> int | None:
    """The pool size above the usable cores that a probe also times on a loaded machine, or None.

    On a core shared with foreign processes, one more thread than the cores
    can win back a share of the CPU (the scheduler shares time per thread),
    and only a measurement may choose more threads than cores (see
    :func:`seer.stpa.model.allowed_sizes`), so the probe measures it when
    the free-cores reading says foreign load is present.
    """
    if not is_loaded(usable, feats):
        return None
    w = usable + 1
    return w if w > compare_workers else None


def load_features() -> dict[str, float]:
    """``free_cores`` now (see :func:`seer.stpa.load.free_cores`) and, where
    the kernel reports it, ``cpu_pressure`` (recorded, not a model input)."""
    from seer.stpa.load import cpu_pressure, free_cores

    out = {"free_cores": free_cores()}
    pressure = cpu_pressure()
    if pressure is not None:
        out["cpu_pressure"] = pressure
    return out


#: Before each step it times, :func:`probe_stepper` waits this long: longer
#: than a pool spins before its workers sleep (``seer.runtime``: ~0.3 ms),
#: so every timed step of a pool of two or more pays for waking it, as the
#: steps of a training loop do (a policy runs between them).  Timed back to
#: back, a pool never sleeps and looks faster than it will run: on
#: ``uav_swarm_v0`` 'large' that made ``workers="auto"`` take 2 workers
#: where ``seer bench``, drawing actions in Python between steps, runs
#: faster on 1 (bench/results/seer_bench.md).  The PoolTuner still moves to the
#: larger pool on the real steps where a tight loop keeps it awake.
PARK_S = 0.001


def probe_stepper(make, static: Mapping[str, float], *, budget_s: float = 0.08, compare_workers: int = 2,
                  measure_load: bool = True) -> ProbeResult:
    """Features of a workload that cannot be traced through a :class:`seer.Runtime` probe.

    For what only steps as a whole: a vector env of copies (stepping the
    real one would change it), or an env whose model schedules its events
    outside ``reset``.  ``make(workers)`` builds a throwaway instance on a
    pool of ``workers`` and returns ``(step, close)``; the probe times steps
    of one worker and of ``compare_workers`` alternately (1, W, 1, W), each
    step after a pause of :data:`PARK_S` (as between the steps of a training
    loop, so a pool's wake-up counts), each size's best mean step time
    deciding ``probe2_speedup``.  Trace features keep their neutral values
    and ``probe_traced`` is 0, so the model knows which kind of probe it is
    reading.

    Args:
        make: ``make(workers) -> (step, close)``: ``step()`` advances one step.
        static: What the workload declares (``entities``, ``kinds``,
            ``native_kind_share``, ``lookahead``).
        budget_s: Time for all the timed steps together.
        compare_workers: The second pool size; skipped (speedup 1) when this
            process may use fewer cores.
    """
    feats = ProbeResult(dict(static))
    feats.update(load_features() if measure_load else {})
    feats.update(probe_traced=0.0, probe2_speedup=1.0, probe2_workers=1.0, probe2_idle_share=0.0,
                 probe2_empty_polls_per_window=0.0, probe2_imbalance=1.0)
    usable = usable_cores()
    loaded = is_loaded(usable, feats)
    sizes = [1, compare_workers] if compare_workers > 1 and (usable >= compare_workers or loaded) else [1]
    over = oversubscribed_size(usable, feats, compare_workers) if len(sizes) > 1 else None
    sizes += [over] if over else []
    best: dict[int, float] = {}
    share = budget_s * (1.5 if loaded else 1.0) / (2 * len(sizes))
    try:
        for w in sizes * 2:
            step, close = make(w)
            try:
                step()  # warm-up: first-step costs are not the steady state
                n, busy, t0 = 0, 0.0, time.perf_counter()
                while True:
                    time.sleep(PARK_S)
                    t = time.perf_counter()
                    step()
                    busy += time.perf_counter() - t
                    n += 1
                    if time.perf_counter() - t0 >= share or n >= 200:
                        break
            finally:
                close()
            best[w] = min(best.get(w, math.inf), busy / n)
    except Exception as exc:  # a stepper is user code: any failure means "no features"
        feats.ok, feats.error = False, f"{type(exc).__name__}: {exc}"
        return feats
    feats["step_ms"] = best[1] * 1e3
    if len(sizes) > 1:
        feats.update(probe2_speedup=best[1] / best[compare_workers], probe2_workers=float(compare_workers))
    if over:
        feats.update(probe3_speedup=best[1] / best[over], probe3_workers=float(over))
    return feats


def _imbalance(trace, skip_windows_upto: int) -> float:
    """Mean over windows of the busiest worker's busy time over the mean worker's."""
    win = trace.windows
    if skip_windows_upto >= 0 and len(win) and (win["window"] > skip_windows_upto).any():
        win = win[win["window"] > skip_windows_upto]
    if not len(win):
        return 1.0
    _, inv = np.unique(win["window"].astype(np.int64), return_inverse=True)
    inv = inv.reshape(-1)
    busy = win["busy_ns"].astype(np.float64)
    n = inv.max() + 1
    mx = np.zeros(n)
    np.maximum.at(mx, inv, busy)
    mean = np.bincount(inv, weights=busy, minlength=n) / np.maximum(np.bincount(inv, minlength=n), 1)
    ok = mean > 0
    return float((mx[ok] / mean[ok]).mean()) if ok.any() else 1.0


def _run_probe(model, workers: int, sl: float, adaptive: bool, budget_s: float, max_events: int, max_steps: int,
               *, capacity: int, seed: int, trace_capacity: int, horizons=None, traced: bool = True) -> dict:
    """Step a traced (or, ``traced`` False, a plain) runtime: adaptively
    (``horizons`` None) or replaying ``horizons`` [(horizon, measured)].
    Steps are (horizon, seconds, events, windows, measured, step length)."""
    from seer.runtime import Runtime

    prepare = getattr(model, "prepare_step", None)
    rt = Runtime(model, workers=workers, trace=traced, trace_capacity=trace_capacity, capacity=capacity, seed=seed)
    steps: list[tuple] = []
    handled = 0
    warm_window = -1
    try:
        pending0 = len(rt.queue)

        def one(h, measured):
            nonlocal handled, warm_window
            if callable(prepare):
                prepare()
            length = h - rt.now
            t0 = time.perf_counter()
            st = rt.step(h)
            el = time.perf_counter() - t0
            steps.append((h, el, st.events, st.windows, measured, length))
            handled += st.events
            if not measured and traced:
                w = rt.trace.windows
                warm_window = int(w["window"].max()) if len(w) else warm_window
            return el

        t_begin = time.perf_counter()
        if horizons is not None:
            # Replay, within the budget: a slow pool stops early, and the
            # caller compares the steps both runs made.
            for h, measured in horizons:
                if measured and time.perf_counter() - t_begin >= budget_s:
                    break
                one(h, measured)
        else:
            # The first step is warm-up; then, when adaptive, the step length
            # doubles while a step takes under a millisecond.
            while len(rt.queue) and len(steps) < max_steps:
                el = one(rt.now + sl, bool(steps))
                if adaptive and el < 1e-3 and sl < 1e6:
                    sl *= 2.0
                if time.perf_counter() - t_begin >= budget_s or handled >= max_events:
                    break
            if not any(s[4] for s in steps):  # a single step: measure it
                steps = [s[:4] + (True,) + s[5:] for s in steps]
                warm_window = -1
        pending1 = len(rt.queue)
        trace = rt.trace if traced else None
        fanout, cross_share = _pending_fanout(rt.queue, pending1) if horizons is None else (0.0, 0.0)
    finally:
        rt.close()
    return {"steps": steps, "trace": trace, "handled": handled, "pending0": pending0, "pending1": pending1,
            "fanout": fanout, "cross_share": cross_share, "warm_window": warm_window}


def _pending_fanout(queue, pending: int, limit: int = 1 << 16) -> tuple[float, float]:
    """Fan-out of events to other entities, from the events left in the
    probe's queue (it is thrown away after): events sent by another entity
    per event an entity sent itself, and their share of the pending events."""
    if pending <= 0:
        return 0.0, 0.0
    batch = queue.pop(math.inf, max_events=min(pending, limit))
    src, ent = batch["source"], batch["entity"]
    internal = src >= 0
    cross = int(np.count_nonzero(internal & (src != ent)))
    own = int(np.count_nonzero(internal & (src == ent)))
    total = int(np.count_nonzero(internal))
    if total == 0:
        return 0.0, 0.0
    fan = cross / own if own else cross / max(len(np.unique(src[internal])), 1)
    return float(fan), cross / total


# ---- per-candidate features -----------------------------------------------------------------

def candidate_features(workers: int, cores: int, feats: Mapping[str, float]) -> dict[str, float]:
    """Features of running the workload ``feats`` on a pool of ``workers``."""
    cores = max(int(cores), 1)
    eff = min(workers, cores)
    # Rows measured before the load feature existed read as a quiet machine.
    free = min(max(float(feats.get("free_cores", cores)), 0.25), float(cores))
    return {
        "workers": float(workers),
        "workers_per_core": workers / cores,
        "oversubscription": max(0, workers - cores) / cores,
        "workers_per_free_core": workers / free,
        "log_work_per_worker": math.log1p(float(feats.get("busy_us_per_window", 0.0)) / eff),
        "log_parallelism_per_worker": math.log(max(float(feats.get("parallelism", 1.0)), 1.0) / workers),
        "log_entities_per_worker": math.log(max(float(feats.get("active_entities", 1.0)), 1.0) / workers),
    }
