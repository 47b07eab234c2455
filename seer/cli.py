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
import math
import os
import sys
import time
import warnings
from pathlib import Path

from seer._io import OutputPathError, atomic_write_text, check_output_path

BENCH_MODULES = ("seer.bench", "seer.benchmark")
WORKLOADS = ("synthetic-native", "synthetic-python", "synthetic-mixed", "uav_swarm_v0", "wireless_v0")
#: The env workloads of `seer trace`, and the module holding each one's SCENARIOS.
ENV_SCENARIOS = {"uav_swarm_v0": "seer.envs._uav_model", "wireless_v0": "seer.envs.wireless_model"}
#: Largest pool a seer.Runtime accepts.
MAX_WORKERS = 1024
#: Figure formats --plot accepts (matplotlib picks the writer from the suffix).
PLOT_FORMATS = ("png", "pdf", "svg", "jpg", "jpeg", "webp", "tif", "tiff", "eps", "ps")
OUTPUT_HELP = ("written atomically; an existing symbolic link at this path is refused (not followed), and "
               "its directory must exist")


# ---- argument types: bad values end as `seer CMD: error: argument X: ...` (exit 2) ---------

def int_arg(lo: int, hi: int | None = None):
    """An argparse type: an integer in ``[lo, hi]``."""
    expected = f"an integer in [{lo}, {hi}]" if hi is not None else f"an integer >= {lo}"

    def parse(text: str) -> int:
        try:
            v = int(text, 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer: expected {expected}") from None
        if v < lo or (hi is not None and v > hi):
            raise argparse.ArgumentTypeError(f"{v} is out of range: expected {expected}")
        return v

    return parse


def positive_float_arg(text: str) -> float:
    """An argparse type: a finite number > 0."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number: expected a finite number > 0") from None
    if not (math.isfinite(v) and v > 0):
        raise argparse.ArgumentTypeError(f"{text!r} is out of range: expected a finite number > 0")
    return v


def output_path_arg(text: str) -> Path:
    """An argparse type: where a new file may be written (see :func:`seer._io.check_output_path`)."""
    try:
        return check_output_path(text, what="output file")
    except OutputPathError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def plot_path_arg(text: str) -> Path:
    """An argparse type: an output path ending in a figure format, with matplotlib installed."""
    path = output_path_arg(text)
    fmt = path.suffix[1:].lower()
    if fmt not in PLOT_FORMATS:
        raise argparse.ArgumentTypeError(f"{text!r} does not end in a figure format: expected a name ending in "
                                         f"{', '.join('.' + f for f in PLOT_FORMATS)}")
    if importlib.util.find_spec("matplotlib") is None:
        raise argparse.ArgumentTypeError("writing a plot needs matplotlib: pip install 'seer[bench]'")
    return path


def sizes_arg(text: str) -> list[int]:
    """An argparse type: comma-separated pool sizes, 1 included (sorted, without repeats)."""
    parse = int_arg(1, MAX_WORKERS)
    try:
        sizes = sorted({parse(part.strip()) for part in text.split(",")})
    except argparse.ArgumentTypeError as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is invalid ({exc}): expected comma-separated pool sizes "
                                         f"in [1, {MAX_WORKERS}] including 1, e.g. 1,2,4") from None
    if 1 not in sizes:
        raise argparse.ArgumentTypeError(f"{text!r} is invalid: expected pool sizes including 1 "
                                         f"(the reference every speedup is measured against), e.g. 1,2,4")
    return sizes


def directory_arg(text: str) -> Path:
    """An argparse type: a directory, existing or to be created (not an existing file)."""
    p = Path(text)
    if not text.strip():
        raise argparse.ArgumentTypeError(f"{text!r} is empty: expected a directory")
    if p.exists() and not p.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} exists and is not a directory: expected a directory")
    return p


def existing_dir_arg(text: str) -> Path:
    """An argparse type: an existing directory."""
    p = Path(text)
    if not p.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is not an existing directory")
    return p


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
    hw = stpa.hardware_features(args.sys_root or "/sys")
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
    # No default through the type: a machine without /sys still runs `seer info`.
    p.add_argument("--sys-root", default=None, type=existing_dir_arg,
                   help="sysfs root to read the CPU topology from (default /sys)")
    p.add_argument("--no-workloads", action="store_true", help="skip the example choices (no probes run)")
    p.set_defaults(func=cmd_info, parser=p)


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
        params = wm.make_params(args.scenario or "large", num_ue=args.entities if args.entities_given else None)
        core = WS.WirelessSeer(params, args.workers, trace=True)
        core.reset(0)
        actions = np.zeros(params.num_ue, np.int64)

        def step():
            e0 = core.events
            core.step(actions)
            return core.events - e0

        return core.runtime, step, core.close
    raise ValueError(f"unknown workload {args.workload!r}: expected one of {list(WORKLOADS)}")


def _check_trace_args(args) -> None:
    """Refuse option combinations the chosen workload would silently ignore, and unknown scenarios."""
    err = args.parser.error
    synthetic = args.workload.startswith("synthetic")
    if synthetic and args.scenario is not None:
        err(f"--scenario {args.scenario!r} does not apply to {args.workload}: scenarios belong to the env "
            f"workloads {list(ENV_SCENARIOS)}")
    if not synthetic:
        given = [opt for opt, v in (("--fanout", args.fanout), ("--work", args.work),
                                    ("--step-length", args.step_length)) if v is not None]
        if given:
            err(f"{', '.join(given)} {'applies' if len(given) == 1 else 'apply'} only to the synthetic "
                f"workloads, not to {args.workload}")
        if args.scenario is not None:
            try:
                scenarios = importlib.import_module(ENV_SCENARIOS[args.workload]).SCENARIOS
            except ImportError as exc:
                err(f"workload {args.workload!r} is not available here: {exc}")
            if args.scenario not in scenarios:
                err(f"--scenario {args.scenario!r} is unknown for {args.workload}: expected one of "
                    f"{sorted(scenarios)}")
    args.fanout = 1 if args.fanout is None else args.fanout
    args.work = 1000 if args.work is None else args.work
    args.step_length = 1.0 if args.step_length is None else args.step_length


def cmd_trace(args) -> int:
    _check_trace_args(args)
    args.entities_given = args.entities is not None
    if args.entities is None:
        args.entities = 256
    out = args.output
    try:
        rt, step, close = _traced_runner(args)
    except ImportError as exc:
        args.parser.error(f"workload {args.workload!r} is not available here: {exc}")
    except ValueError as exc:  # the workload's own check of a value (e.g. too many UEs)
        args.parser.error(str(exc))
    try:
        t0 = time.perf_counter()
        events = sum(step() for _ in range(args.steps))
        el = time.perf_counter() - t0
        trace = rt.trace
        try:
            trace.to_chrome(out)
        except OutputPathError as exc:  # the path changed while the workload ran
            args.parser.error(str(exc))
        except OSError as exc:
            print(f"seer trace: error: cannot write {out}: {exc.strerror or exc}", file=sys.stderr)
            return 1
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
    p.add_argument("-o", "--output", default="seer-trace.json", type=output_path_arg,
                   help=f"where to write the JSON (default seer-trace.json); {OUTPUT_HELP}")
    p.add_argument("-n", "--steps", type=int_arg(1, 1_000_000), default=10, help="steps to run (default 10)")
    p.add_argument("-w", "--workers", type=int_arg(1, MAX_WORKERS), default=2,
                   help=f"pool size, 1..{MAX_WORKERS} (default 2)")
    p.add_argument("--entities", type=int_arg(1, 1 << 20), default=None,
                   help="entities of a synthetic workload (default 256), UAVs of uav_swarm_v0, or UEs of "
                        "wireless_v0 (default: the scenario's)")
    p.add_argument("--scenario", default=None,
                   help="scenario of an env workload (uav_swarm_v0: small, default, large, xlarge; "
                        "wireless_v0: small, medium, large, xlarge)")
    p.add_argument("--fanout", type=int_arg(0, 1024), default=None, help="synthetic: messages per tick (default 1)")
    p.add_argument("--work", type=int_arg(0, 10**9), default=None,
                   help="synthetic: work iterations per event (default 1000)")
    p.add_argument("--step-length", type=positive_float_arg, default=None,
                   help="synthetic: simulated time per step (default 1.0)")
    p.set_defaults(func=cmd_trace, parser=p)


# ---- seer tune -------------------------------------------------------------------------------

def cmd_tune(args) -> int:
    from rich.console import Console

    from seer.stpa import train, tune

    console = Console()
    if args.cache_dir:
        os.environ["SEER_CACHE_DIR"] = str(args.cache_dir)
    evaluate_only = args.evaluate_only
    try:
        result = tune.run_tune(
            quick=args.quick, cache=args.cache_dir, do_sweep=not evaluate_only and not args.no_sweep,
            do_train=not evaluate_only and not args.no_train, do_evaluate=args.evaluate or evaluate_only,
            n_train=args.workloads, n_eval=args.eval_workloads, reps=args.reps, seed=args.seed,
            envs=not args.no_envs, include_shipped=not args.no_shipped_data, sizes=args.sizes,
            progress=not args.no_progress, console=console, eval_repeats=args.eval_repeats, log=console.print)
    except train.TooLittleDataError as exc:
        print(f"seer tune: error: {exc} (run a sweep, or drop --no-shipped-data)", file=sys.stderr)
        return 1
    tune.print_summary(result, console)
    command = "seer tune " + " ".join(args.argv)
    if args.json:
        tune.write_json({**result, "command": command}, args.json, what="--json file")
        console.print(f"wrote {args.json}")
    if args.md:
        atomic_write_text(args.md, tune.render_markdown(result, command), what="--md file")
        console.print(f"wrote {args.md}")
    return 0


def add_tune_parser(sub) -> None:
    p = sub.add_parser("tune", help="measure pool sizes on this machine and train the STPA model",
                       description="Sweep pool sizes 1..max(2 x cores, 4) over synthetic workloads and the "
                                   "built-in envs, append the measurements to the dataset in the cache "
                                   "directory, train the selector (comparing model families on held-out "
                                   "workloads) and save it there as JSON; workers=\"auto\" then uses it.")
    p.add_argument("--quick", action="store_true", help="a small sweep (~1-2 minutes on 2 cores)")
    p.add_argument("--evaluate", action="store_true",
                   help="after training, evaluate on held-out workloads against the best measured size")
    p.add_argument("--evaluate-only", action="store_true", help="only evaluate the model workers=\"auto\" uses now")
    p.add_argument("--no-sweep", action="store_true", help="train on the existing dataset without measuring")
    p.add_argument("--no-train", action="store_true", help="only measure and append to the dataset")
    p.add_argument("--cache-dir", type=directory_arg, default=None,
                   help="where the dataset and model live (default: $SEER_CACHE_DIR or the per-user cache dir); "
                        "created with mode 0700 when missing")
    p.add_argument("--workloads", type=int_arg(1, 100_000), default=None,
                   help="synthetic training workloads to sample")
    p.add_argument("--eval-workloads", type=int_arg(1, 100_000), default=None,
                   help="synthetic held-out workloads to sample")
    p.add_argument("--reps", type=int_arg(1, 1000), default=None, help="repetitions per measurement (best is kept)")
    p.add_argument("--eval-repeats", type=int_arg(1, 1000), default=1,
                   help="evaluation runs (each re-measures the oracle; results are also pooled)")
    p.add_argument("--sizes", type=sizes_arg, default=None,
                   help="pool sizes to sweep, including 1, e.g. 1,2,4 (default 1..max(2 x cores, 4))")
    p.add_argument("--seed", type=int_arg(0), default=1, help="seed of the workload sampler (>= 0)")
    p.add_argument("--no-envs", action="store_true", help="leave the built-in envs out")
    p.add_argument("--no-shipped-data", action="store_true", help="train on this machine's measurements only")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", default=None, type=output_path_arg,
                   help=f"write the result as JSON here; {OUTPUT_HELP}")
    p.add_argument("--md", default=None, type=output_path_arg,
                   help=f"write a markdown report here; {OUTPUT_HELP}")
    p.set_defaults(func=cmd_tune, parser=p)


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


def _subparser(ap: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    sub = next(a for a in ap._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[name]


def main(argv=None) -> int:
    """Run the ``seer`` command; usage errors exit with status 2 (argparse's ``SystemExit``)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = build_parser()
    args = ap.parse_args(argv)
    if not getattr(args, "func", None):
        ap.print_help()
        return 1
    args.argv = argv
    if getattr(args, "parser", None) is None:  # a subcommand registered elsewhere (seer bench)
        args.parser = _subparser(ap, args.command)
    try:
        return int(args.func(args) or 0)
    except OutputPathError as exc:  # an output path that became unusable while the command ran
        args.parser.error(str(exc))


if __name__ == "__main__":
    sys.exit(main())
