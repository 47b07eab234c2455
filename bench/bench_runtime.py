"""Runtime benchmarks: synthetic native and Python-handler workloads.

    python bench/bench_runtime.py --json bench/results/runtime.json --md bench/results/runtime.md

Measures, in one run on this machine:
  * scaling: steps/s of a native workload with ~20 us of handler work per
    entity per step, and of a Python-handler workload, at 1, 2 and 4 workers;
  * overhead: wall time per event of an (almost) empty native handler, which
    only reschedules itself, so what is measured is the runtime's own path
    (take entity, hand out event, run handler, recycle node, publish emit);
  * tracing: the cost of tracing when off, against a build with tracing
    compiled out (-DSEER_NO_TRACE), and the cost when on.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import time

import numpy as np

from seer.bench.common import add_report_args, latency_stats, machine_info, write_report

import seer
from seer.synthetic import PythonSyntheticModel, SyntheticModel


def time_runtime(model, workers, steps, dt=1.0, warmup=3, trace=False):
    """Per-step wall times (s) and events per step."""
    with seer.Runtime(model, workers=workers, trace=trace, capacity=1 << 20) as rt:
        t = 0.0
        for _ in range(warmup):
            t += dt
            rt.step(t)
        lat, events = [], 0
        gc.disable()
        try:
            for _ in range(steps):
                t += dt
                t0 = time.perf_counter()
                events += rt.step(t).events
                lat.append(time.perf_counter() - t0)
        finally:
            gc.enable()
    return np.array(lat), events / steps


def summarize(lat: np.ndarray, events_per_step: float) -> dict:
    return {
        "steps_per_s": float(1.0 / lat.mean()),
        **latency_stats(lat, "ms"),
        "events_per_step": events_per_step,
        "ns_per_event": float(lat.mean() / max(events_per_step, 1) * 1e9),
    }


def calibrate_ns_per_iter() -> float:
    """Wall ns of one iteration of the synthetic handler's arithmetic."""
    kw = dict(fanout=0, period=0.1, delay=1.0)
    base, ev = time_runtime(SyntheticModel(64, work=0, **kw), 1, 10)
    heavy, _ = time_runtime(SyntheticModel(64, work=20000, **kw), 1, 10)
    return float((np.median(heavy) - np.median(base)) / (ev * 20000) * 1e9)


def bench_scaling(ns_per_iter, quick):
    out = {}
    steps = 10 if quick else 40
    # 256 entities x 4 events per step x 5 us = 20 us of handler work per entity per step.
    work = max(1, int(round(5000 / ns_per_iter)))
    for name, make in {
        "native_20us_per_entity": lambda: SyntheticModel(256, fanout=1, work=work, period=0.25, delay=0.25),
        "python_handlers": lambda: PythonSyntheticModel(256, fanout=1, work=0, period=0.25, delay=0.25),
    }.items():
        rows = {}
        for workers in (1, 2, 4):
            best = None
            for _ in range(3):  # best of 3: the machine is shared
                lat, ev = time_runtime(make(), workers, steps)
                if best is None or lat.mean() < best[0].mean():
                    best = (lat, ev)
            rows[workers] = summarize(*best)
        for workers in (2, 4):
            rows[workers]["speedup_vs_1"] = rows[1]["mean_ms"] / rows[workers]["mean_ms"]
        out[name] = {"work_iters": work if "native" in name else 0, "by_workers": rows}
    return out


def bench_overhead(quick):
    # 1024 entities x 100 self-rescheduling events per step, one window per step.
    steps = 5 if quick else 20
    rows = {}
    for workers in (1, 2):
        best = None
        for _ in range(3):
            lat, ev = time_runtime(SyntheticModel(1024, fanout=0, work=0, period=0.01, delay=1.0), workers, steps)
            if best is None or lat.mean() < best[0].mean():
                best = (lat, ev)
        rows[workers] = summarize(*best)
    return rows


def bench_bookkeeping(quick, entities=4096, rounds=3):
    """Window bookkeeping shared by the pool (each worker reports what it
    left pending, copies its share of the snapshots and readies its share
    of the lanes), rounds in one runtime, 2 workers.  Workload: many short
    windows with little work each (each entity ticks every 10 ms with a
    1-message fan-out 10 ms away; lookahead 10 ms, 100 windows per step),
    where bookkeeping that grows with the entity count shows.  Fractions are
    worker 0's, of the step's wall time (``Runtime.pool_stats``)."""
    steps = 3 if quick else 10
    model = SyntheticModel(entities, fanout=1, work=20, period=0.01, delay=0.01)
    out = {"entities": entities, "workers": 2, "steps_per_round": steps, "rounds": rounds}
    rows = []
    with seer.Runtime(model, workers=2, capacity=1 << 20) as rt:
        t = 0.0
        for _ in range(2):
            t += 1.0
            rt.step(t)
        for _ in range(rounds):
            with rt.pool_stats() as st:
                t0 = time.perf_counter()
                events = 0
                for _ in range(steps):
                    t += 1.0
                    events += rt.step(t).events
                wall = time.perf_counter() - t0
            rows.append({
                "ms_per_step": wall / steps * 1e3, "windows_per_step": st.windows / steps,
                "ns_per_event": wall / max(events, 1) * 1e9,
                "bookkeeping_us_per_window": st.workers[0].bookkeeping_s / max(st.windows, 1) * 1e6,
                "bookkeeping_fraction": st.bookkeeping_fraction,
                "barrier_fraction": st.barrier_fraction})
    out["median"] = {k: float(np.median([r[k] for r in rows])) for k in rows[0]}
    out["rounds_raw"] = rows
    return out


def _drive_c(ffi, lib, work, steps, entities=256, period=0.05):
    """Step the native synthetic model straight through the C API (so two
    builds of the core extension can be compared with the same driver; the
    handlers come from their own module, seer._synth_c, in both)."""
    from seer.synthetic import PLUGIN

    sffi = PLUGIN.ffi
    q = lib.seer_queue_new(entities, 2, 1 << 18)
    rt = lib.seer_rt_new(q, 1, 1.0, 2000)
    value, snap, handled = np.zeros(entities), np.zeros(entities), np.zeros(entities, np.int64)
    m = sffi.new("seer_synth *")
    m.value = sffi.cast("double *", sffi.from_buffer(value))
    m.snap = sffi.cast("double *", sffi.from_buffer(snap))
    m.handled = sffi.cast("int64_t *", sffi.from_buffer(handled))
    m.num_entities, m.fanout, m.work, m.period, m.delay = entities, 0, work, period, 1.0
    m.fail_entity, m.fail_time = -1, float("inf")
    lib.seer_rt_set_handler(rt, 0, ffi.cast("seer_handler_fn", PLUGIN.function("seer_synth_tick")))
    lib.seer_rt_set_handler(rt, 1, ffi.cast("seer_handler_fn", PLUGIN.function("seer_synth_msg")))
    lib.seer_rt_set_model(rt, ffi.cast("void *", int(sffi.cast("uintptr_t", m))))
    lib.seer_rt_add_snapshot(rt, ffi.from_buffer(value), ffi.from_buffer(snap), value.nbytes)
    lib.seer_rt_reset(rt, 0)
    ent = np.arange(entities, dtype=np.int32)
    times = (ent % 7) * (period / 7)
    kinds = np.zeros(entities, np.int32)
    bad = ffi.new("int64_t *")
    lib.seer_queue_push_many(q, ffi.from_buffer("int32_t[]", ent), ffi.from_buffer("double[]", times),
                             ffi.from_buffer("int32_t[]", kinds), ffi.NULL, ffi.NULL, ffi.NULL, entities, bad)
    lib.seer_rt_step(rt, 2.0)  # warm up
    t0 = time.perf_counter()
    for k in range(steps):
        lib.seer_rt_step(rt, 3.0 + k)
    dt = time.perf_counter() - t0
    lib.seer_rt_free(rt)
    lib.seer_queue_free(q)
    return dt / steps


def bench_tracing(ns_per_iter, quick):
    """Tracing off vs compiled out, and on vs off, for events of ~1 us."""
    from seer._build import make_builder
    from seer._seer_c import ffi, lib

    tmp = tempfile.mkdtemp(prefix="seer-notrace-")
    make_builder("_seer_notrace", defines=("SEER_NO_TRACE",), absolute=True).compile(tmpdir=tmp, verbose=False)
    sys.path.insert(0, tmp)
    import _seer_notrace  # noqa: E402

    work = max(1, int(round(1000 / ns_per_iter)))
    steps = 20 if quick else 60
    off, out = [], []
    for _ in range(5 if quick else 9):  # interleaved, so drift hits both alike
        off.append(_drive_c(ffi, lib, work, steps))
        out.append(_drive_c(_seer_notrace.ffi, _seer_notrace.lib, work, steps))
    on_lat, _ = time_runtime(SyntheticModel(256, fanout=0, work=work, period=0.05, delay=1.0), 1, steps, trace=True)
    off_lat, _ = time_runtime(SyntheticModel(256, fanout=0, work=work, period=0.05, delay=1.0), 1, steps)
    return {
        "work_iters": work,
        "step_ms_tracing_compiled_out": statistics.median(out) * 1e3,
        "step_ms_tracing_off": statistics.median(off) * 1e3,
        "tracing_off_cost_pct": (statistics.median(off) / statistics.median(out) - 1) * 100,
        "tracing_on_cost_pct": (np.median(on_lat) / np.median(off_lat) - 1) * 100,
    }


def render(results) -> str:
    lines = ["| workload | workers | steps/s | mean ms | p50 ms | p99 ms | events/step | ns/event | speedup vs 1 |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, block in results["scaling"].items():
        for w, r in block["by_workers"].items():
            lines.append(f"| {name} | {w} | {r['steps_per_s']:.1f} | {r['mean_ms']:.3f} | {r['p50_ms']:.3f} | "
                         f"{r['p99_ms']:.3f} | {r['events_per_step']:.0f} | {r['ns_per_event']:.1f} | "
                         f"{r.get('speedup_vs_1', 1.0):.2f}x |")
    for w, r in results["overhead_empty_handler"].items():
        lines.append(f"| native_empty_handler | {w} | {r['steps_per_s']:.1f} | {r['mean_ms']:.3f} | {r['p50_ms']:.3f} | "
                     f"{r['p99_ms']:.3f} | {r['events_per_step']:.0f} | {r['ns_per_event']:.1f} | |")
    t = results["tracing"]
    lines += ["", f"Tracing (events of ~1 us, 1 worker): off costs {t['tracing_off_cost_pct']:+.2f}% against a build "
              f"with tracing compiled out ({t['step_ms_tracing_off']:.3f} vs {t['step_ms_tracing_compiled_out']:.3f} "
              f"ms/step); on costs {t['tracing_on_cost_pct']:+.1f}%."]
    b = results.get("bookkeeping")
    if b:
        r = b["median"]
        lines += ["", f"Window bookkeeping ({b['entities']} entities, {b['workers']} workers, medians of "
                  f"{b['rounds']} rounds of {b['steps_per_round']} steps; fractions of worker 0's step time):", "",
                  "| ms/step | windows/step | ns/event | worker 0 bookkeeping us/window | "
                  "bookkeeping fraction (worker 0) | barrier waits (worker 0) |",
                  "|---|---|---|---|---|---|",
                  f"| {r['ms_per_step']:.3f} | {r['windows_per_step']:.0f} | {r['ns_per_event']:.1f} | "
                  f"{r['bookkeeping_us_per_window']:.2f} | {r['bookkeeping_fraction'] * 100:.1f}% | "
                  f"{r['barrier_fraction'] * 100:.1f}% |"]
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_report_args(ap)
    ap.add_argument("--quick", action="store_true", help="fewer steps (smoke run)")
    args = ap.parse_args(argv)
    from seer.bench.common import parallel_capacity

    cap_start = parallel_capacity()
    ns_per_iter = calibrate_ns_per_iter()
    results = {
        "machine": machine_info(),
        "command": "python bench/bench_runtime.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "ns_per_work_iter": ns_per_iter,
        "scaling": bench_scaling(ns_per_iter, args.quick),
        "overhead_empty_handler": bench_overhead(args.quick),
        "tracing": bench_tracing(ns_per_iter, args.quick),
        "bookkeeping": bench_bookkeeping(args.quick),
    }
    import os as _os

    results["machine"]["loadavg_at_end"] = _os.getloadavg()
    results["parallel_capacity"] = {"start": cap_start, "end": parallel_capacity()}
    table = render(results)
    print(table)
    m = results["machine"]
    write_report(results, args.json, args.md,
                 f"# Runtime benchmark\n\nCommand: `{results['command']}`\n\n"
                 f"Machine: {m['cpu']}, {m['usable_cores']} usable cores, Python {m['python']}, "
                 f"numpy {m['numpy']}, {m['platform']}; load average at start "
                 f"{tuple(round(x, 2) for x in m['loadavg_at_start'])}, at end "
                 f"{tuple(round(x, 2) for x in m['loadavg_at_end'])}; parallel capacity (seer.bench.common."
                 f"parallel_capacity: cores two busy processes get, 2.0 when both are free) at start "
                 f"{results['parallel_capacity']['start']:.2f}, at end {results['parallel_capacity']['end']:.2f}"
                 f"\n\n"
                 f"Handler work: one iteration of the synthetic arithmetic = {ns_per_iter:.2f} ns.\n\n"
                 f"{table}\n")
    return results


if __name__ == "__main__":
    main()
