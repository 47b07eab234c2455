"""The ``seer`` command: ``seer info``, ``seer trace``, ``seer tune`` (and
``seer bench`` when :mod:`seer.bench` provides it).

Subcommands are argparse subparsers registered by ``add_<name>_parser(sub)``
functions; each sets ``func`` to the function that runs it.  ``seer bench``
lives in another module: when ``seer.bench`` exists and has
``add_bench_parser(sub)``, it is imported and registered too.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
import time
import warnings
from pathlib import Path

BENCH_MODULES = ("seer.bench", "seer.benchmark")
WORKLOADS = ("synthetic-native", "synthetic-python", "synthetic-mixed", "uav_swarm_v0", "wireless_v0")


# ---- seer info -------------------------------------------------------------------------------

def _info_workloads():
    from seer.stpa.workloads import MixedSyntheticModel
    from seer.synthetic import PythonSyntheticModel, SyntheticModel

    yield "synthetic native, 32 entities, ~0.1 us/event", lambda: SyntheticModel(32, fanout=1, work=100, period=0.1, delay=0.1)
    yield "synthetic native, 1024 entities, ~5 us/event", lambda: SyntheticModel(1024, fanout=2, work=5000, period=0.1, delay=0.1)
    yield "synthetic Python handlers, 512 entities", lambda: PythonSyntheticModel(512, fanout=1, work=2, period=0.1, delay=0.1)
    yield "synthetic mixed (native ticks, Python messages), 256 entities", lambda: MixedSyntheticModel(
        256, fanout=2, work=2000, period=0.1, delay=0.1, py_work=1)


def cmd_info(args) -> int:
    from rich.console import Console
    from rich.table import Table

    import seer
    from seer import stpa

    console = Console()
    hw = stpa.hardware_features(args.sys_root)
    console.print(f"[bold]SEER {seer.__version__}[/bold]  Python {sys.version.split()[0]}  os.cpu_count()={os.cpu_count()}")
    tab = Table(title="hardware features")
    tab.add_column("feature")
    tab.add_column("value")
    for k, v in hw.items():
        tab.add_row(k, f"{v:.3g}" if isinstance(v, float) else str(v))
    console.print(tab)

    console.print("[bold]STPA model search path[/bold] (first usable wins):")
    for label, path in stpa.model_search_path():
        console.print(f"  {label}: {path} {'(exists)' if path.is_file() else '(missing)'}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model, reasons = stpa.active_model()
    for w in caught:
        console.print(f"  [yellow]warning:[/yellow] {w.message}")
    if model is None:
        console.print(f"[yellow]no usable STPA model[/yellow] ({'; '.join(reasons)}): "
                      "workers=\"auto\" uses the heuristic; run `seer tune`")
    else:
        meta = model.meta
        console.print(f"loaded: [bold]{model.path}[/bold] family={model.family} trained {meta.get('trained')} on "
                      f"{meta.get('rows')} measurements of {meta.get('workloads')} workloads, cores seen "
                      f"{meta.get('cores_seen')}, machines {meta.get('machines')}, scikit-learn {meta.get('sklearn')}")
        cores = meta.get("cores_seen") or []
        if cores and hw["usable_cores"] not in cores:
            console.print(f"[yellow]note:[/yellow] the model saw {cores} usable cores, this machine has "
                          f"{hw['usable_cores']}: run `seer tune` to learn this machine")

    if args.no_workloads:
        return 0
    tab = Table(title='what workers="auto" picks')
    for col in ("workload", "workers", "source", "probe ms", "predicted speedup by pool size"):
        tab.add_column(col)
    for name, make in _info_workloads():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sel = stpa.select_for_model(make(), use_cache=False)
        import math

        sc = ", ".join(f"{w}: {math.exp(s):.2f}x" for w, s in sel.scores.items()) or sel.reason
        tab.add_row(name, str(sel.workers), sel.source, f"{sel.probe_s * 1e3:.0f}", sc)
    for mod_name, kwargs in (("uav_swarm_v0", {"scenario": "large"}), ("wireless_v0", {"scenario": "large"})):
        try:
            mod = importlib.import_module(f"seer.envs.{mod_name}")
            with warnings.catch_warnings(), stpa.capture() as rec:
                warnings.simplefilter("ignore")
                env = mod.parallel_env(workers="auto", **kwargs)
                env.close()
        except Exception as exc:  # an env that does not import is skipped
            tab.add_row(f"{mod_name} {kwargs}", "-", f"unavailable ({type(exc).__name__})", "", "")
            continue
        if rec:
            import math

            sel = rec[-1]
            sc = ", ".join(f"{w}: {math.exp(s):.2f}x" for w, s in sel.scores.items()) or sel.reason
            tab.add_row(f"{mod_name} {kwargs}", str(sel.workers), sel.source, f"{sel.probe_s * 1e3:.0f}", sc)
    console.print(tab)
    return 0


def add_info_parser(sub) -> None:
    p = sub.add_parser("info", help="machine, hardware features, the STPA model and what workers=\"auto\" picks",
                       description="Show this machine's hardware features, which STPA model is loaded, and what "
                                   "workers=\"auto\" picks for a few workloads.")
    p.add_argument("--sys-root", default="/sys", help="sysfs root to read the CPU topology from (default /sys)")
    p.add_argument("--no-workloads", action="store_true", help="skip the example choices (no probes run)")
    p.set_defaults(func=cmd_info)


# ---- seer trace ------------------------------------------------------------------------------

def _traced_runner(args):
    """(runtime, step function) of a built-in workload with tracing on."""
    import numpy as np

    from seer.runtime import Runtime

    if args.workload.startswith("synthetic"):
        from seer.stpa.workloads import MixedSyntheticModel
        from seer.synthetic import PythonSyntheticModel, SyntheticModel

        cls = {"synthetic-native": SyntheticModel, "synthetic-python": PythonSyntheticModel,
               "synthetic-mixed": MixedSyntheticModel}[args.workload]
        model = cls(args.entities, fanout=args.fanout, work=args.work, period=0.1, delay=0.1)
        rt = Runtime(model, workers=args.workers, trace=True)
        state = {"t": 0.0}

        def step():
            state["t"] += args.step_length
            return rt.step(state["t"]).events

        return rt, step, rt.close
    if args.workload == "uav_swarm_v0":
        M = importlib.import_module("seer.envs._uav_model")
        cfg = M.make_config(args.scenario or "default", args.entities if args.entities_given else None)
        sim = M.SeerSim(cfg, workers=args.workers, trace=True)
        sim.reset(0)

        def step():
            sim.advance()
            return sim.last_events

        return sim.runtime, step, sim.close
    if args.workload == "wireless_v0":
        wm = importlib.import_module("seer.envs.wireless_model")
        WS = importlib.import_module("seer.envs._wireless_seer")
        params = wm.make_params(args.scenario or "large")
        core = WS.WirelessSeer(params, args.workers, trace=True)
        core.reset(0)
        actions = np.zeros(params.num_ue, np.int64)

        def step():
            e0 = core.events
            core.step(actions)
            return core.events - e0

        return core.runtime, step, core.close
    raise ValueError(f"unknown workload {args.workload!r}: expected one of {list(WORKLOADS)}")


def cmd_trace(args) -> int:
    args.entities_given = args.entities is not None
    if args.entities is None:
        args.entities = 256
    try:
        rt, step, close = _traced_runner(args)
    except ImportError as exc:
        print(f"seer trace: workload {args.workload!r} is not available here: {exc}", file=sys.stderr)
        return 2
    try:
        t0 = time.perf_counter()
        events = sum(step() for _ in range(args.steps))
        el = time.perf_counter() - t0
        trace = rt.trace
        out = Path(args.output)
        out.parent.mkdir(parents=True, exist_ok=True)
        trace.to_chrome(out)
        summ = trace.summary()
    finally:
        close()
    print(f"{args.workload}: {args.steps} steps, {events} events, {summ['windows']} windows on {rt.workers} "
          f"workers in {el * 1e3:.1f} ms (traced)")
    print(f"busy {summ['busy_ns'] / 1e6:.2f} ms, idle {summ['idle_ns'] / 1e6:.2f} ms, in Python "
          f"{summ['python_ns'] / 1e6:.2f} ms, empty polls {summ['empty_polls']}, dropped records {summ['dropped']}")
    print(f"wrote Chrome trace JSON: {out} ({out.stat().st_size / 1024:.0f} KiB)")
    print("open it in Perfetto: https://ui.perfetto.dev -> 'Open trace file' (or chrome://tracing -> Load)")
    return 0


def add_trace_parser(sub) -> None:
    p = sub.add_parser("trace", help="run a built-in workload traced and write Chrome trace JSON",
                       description="Run a built-in workload with trace=True for N steps and write the trace "
                                   "in Chrome's Trace Event Format (opens in https://ui.perfetto.dev).")
    p.add_argument("workload", nargs="?", default="synthetic-native", choices=WORKLOADS)
    p.add_argument("-o", "--output", default="seer-trace.json", help="where to write the JSON (default seer-trace.json)")
    p.add_argument("-n", "--steps", type=int, default=10, help="steps to run (default 10)")
    p.add_argument("-w", "--workers", type=int, default=2, help="pool size (default 2)")
    p.add_argument("--entities", type=int, default=None,
                   help="entities of a synthetic workload (default 256), or UAVs of uav_swarm_v0")
    p.add_argument("--scenario", default=None, help="scenario of an env workload")
    p.add_argument("--fanout", type=int, default=1, help="synthetic: messages per tick (default 1)")
    p.add_argument("--work", type=int, default=1000, help="synthetic: work iterations per event (default 1000)")
    p.add_argument("--step-length", type=float, default=1.0, help="synthetic: simulated time per step (default 1.0)")
    p.set_defaults(func=cmd_trace)


# ---- seer tune -------------------------------------------------------------------------------

def cmd_tune(args) -> int:
    from rich.console import Console

    from seer.stpa import tune

    console = Console()
    if args.cache_dir:
        os.environ["SEER_CACHE_DIR"] = str(args.cache_dir)
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else None
    if sizes is not None and (1 not in sizes or any(s < 1 for s in sizes)):
        print(f"seer tune: --sizes {args.sizes!r} is invalid: expected positive integers including 1", file=sys.stderr)
        return 2
    evaluate_only = args.evaluate_only
    result = tune.run_tune(
        quick=args.quick, cache=args.cache_dir, do_sweep=not evaluate_only and not args.no_sweep,
        do_train=not evaluate_only and not args.no_train, do_evaluate=args.evaluate or evaluate_only,
        n_train=args.workloads, n_eval=args.eval_workloads, reps=args.reps, seed=args.seed, envs=not args.no_envs,
        include_shipped=not args.no_shipped_data, sizes=sizes, progress=not args.no_progress, console=console,
        eval_repeats=args.eval_repeats, log=console.print)
    tune.print_summary(result, console)
    command = "seer tune " + " ".join(args.argv)
    if args.json:
        tune.write_json({**result, "command": command}, Path(args.json))
        console.print(f"wrote {args.json}")
    if args.md:
        Path(args.md).parent.mkdir(parents=True, exist_ok=True)
        Path(args.md).write_text(tune.render_markdown(result, command))
        console.print(f"wrote {args.md}")
    return 0


def add_tune_parser(sub) -> None:
    p = sub.add_parser("tune", help="measure pool sizes on this machine and train the STPA model",
                       description="Sweep pool sizes 1..max(2 x cores, 4) over synthetic workloads and the "
                                   "built-in envs, append the measurements to the dataset in the cache "
                                   "directory, train the selector (comparing model families on held-out "
                                   "workloads) and save it there; workers=\"auto\" then uses it.")
    p.add_argument("--quick", action="store_true", help="a small sweep (~1-2 minutes on 2 cores)")
    p.add_argument("--evaluate", action="store_true",
                   help="after training, evaluate on held-out workloads against the best measured size")
    p.add_argument("--evaluate-only", action="store_true", help="only evaluate the model workers=\"auto\" uses now")
    p.add_argument("--no-sweep", action="store_true", help="train on the existing dataset without measuring")
    p.add_argument("--no-train", action="store_true", help="only measure and append to the dataset")
    p.add_argument("--cache-dir", type=Path, default=None,
                   help="where the dataset and model live (default: $SEER_CACHE_DIR or the per-user cache dir)")
    p.add_argument("--workloads", type=int, default=None, help="synthetic training workloads to sample")
    p.add_argument("--eval-workloads", type=int, default=None, help="synthetic held-out workloads to sample")
    p.add_argument("--reps", type=int, default=None, help="repetitions per measurement (best is kept)")
    p.add_argument("--eval-repeats", type=int, default=1,
                   help="evaluation runs (each re-measures the oracle; results are also pooled)")
    p.add_argument("--sizes", default=None, help="pool sizes to sweep, e.g. 1,2,4 (default 1..max(2 x cores, 4))")
    p.add_argument("--seed", type=int, default=1, help="seed of the workload sampler")
    p.add_argument("--no-envs", action="store_true", help="leave the built-in envs out")
    p.add_argument("--no-shipped-data", action="store_true", help="train on this machine's measurements only")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", default=None, help="write the result as JSON here")
    p.add_argument("--md", default=None, help="write a markdown report here")
    p.set_defaults(func=cmd_tune)


# ---- main ----------------------------------------------------------------------------------------

def _optional_module(name: str):
    """The module ``name`` if it exists and imports, else None."""
    if name in sys.modules:
        return sys.modules[name]
    try:
        if importlib.util.find_spec(name) is None:
            return None
        return importlib.import_module(name)
    except (ImportError, ValueError):
        return None


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="seer", description="SEER: event-driven runtime for multi-agent RL envs.")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")
    add_info_parser(sub)
    add_trace_parser(sub)
    add_tune_parser(sub)
    # `seer bench` belongs to another module (seer.bench or seer.benchmark):
    # register it when one exists and provides add_bench_parser(sub).
    for name in BENCH_MODULES:
        bench = _optional_module(name)
        if bench is not None and hasattr(bench, "add_bench_parser"):
            bench.add_bench_parser(sub)
            break
    return ap


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = build_parser()
    args = ap.parse_args(argv)
    if not getattr(args, "func", None):
        ap.print_help()
        return 1
    args.argv = argv
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
