"""The ``seer`` command: ``seer info``, ``seer trace``, ``seer tune`` (and
``seer bench`` when :mod:`seer.bench` provides it).

Subcommands are argparse subparsers registered by ``add_<name>_parser(sub)``
functions; each sets ``func`` to the function that runs it.  ``seer bench``
lives in another module: when ``seer.bench`` exists and has
``add_bench_parser(sub)``, it is imported and registered too.  Envs are found
only through :mod:`seer.registry` (entry point group ``seer.envs``).
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
#: The workloads of `seer trace` besides the registered envs.
SYNTHETIC_WORKLOADS = ("synthetic-native", "synthetic-python", "synthetic-mixed")
#: Registered envs whose choice `seer info` shows next to the synthetic workloads.
INFO_ENVS = (("uav_swarm_v0", {"scenario": "large"}), ("wireless_v0", {"scenario": "large"}))
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


def _selection_row(name: str, sel) -> dict:
    return {"workload": name, "workers": sel.workers, "source": sel.source, "probe_ms": sel.probe_s * 1e3,
            "speedup": {str(w): math.exp(s) for w, s in sel.scores.items()}, "reason": sel.reason}


def _auto_choices() -> list[dict]:
    """What workers="auto" picks for the example workloads (runs their probes)."""
    from seer import registry, stpa
    from seer.errors import SeerError

    rows = []
    for name, make in _info_workloads():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rows.append(_selection_row(name, stpa.select_for_model(make(), use_cache=False)))
    for env_name, kwargs in INFO_ENVS:
        label = f"{env_name} {kwargs}"
        try:
            mod = registry.load(env_name)
            with warnings.catch_warnings(), stpa.capture() as rec:
                warnings.simplefilter("ignore")
                env = mod.parallel_env(workers="auto", **kwargs)
                env.close()
        except SeerError as exc:  # not registered, or it does not import: say which
            rows.append({"workload": label, "workers": None, "source": "unavailable", "reason": str(exc)})
            continue
        except Exception as exc:  # an env that fails to build is skipped, not fatal to `seer info`
            rows.append({"workload": label, "workers": None, "source": "unavailable",
                         "reason": f"{type(exc).__name__}: {exc}"})
            continue
        if rec:
            rows.append(_selection_row(label, rec[-1]))
    return rows


def env_registry_rows() -> list[dict]:
    """The registered envs (``seer.envs`` entry points), each loaded to read its scenarios.

    Example:
        >>> [r["name"] for r in env_registry_rows()]
        ['uav_swarm_v0', 'wireless_v0']
    """
    from seer import registry
    from seer.errors import EnvLoadError

    rows = []
    for name, entry in registry.available().items():
        row = {"name": name, "module": entry.module, "distribution": entry.distribution,
               "version": entry.version, "scenarios": None, "error": None}
        try:
            row["scenarios"] = registry.scenarios(entry.load())
        except EnvLoadError as exc:  # listed with the reason: a broken plug-in must not hide the others
            row["error"] = str(exc)
        rows.append(row)
    return rows


def info_doc(sys_root=None, workloads: bool = True) -> dict:
    """Everything ``seer info`` shows, as JSON-ready data."""
    import seer
    from seer import stpa

    hw = stpa.hardware_features(sys_root or "/sys")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model, reasons = stpa.active_model()
    doc = {"seer": seer.__version__, "python": sys.version.split()[0], "cpu_count": os.cpu_count(),
           "hardware": hw,
           "model_search_path": [{"label": label, "path": str(path), "exists": path.is_file()}
                                 for label, path in stpa.model_search_path()],
           "model": None, "model_unusable": list(reasons), "warnings": [str(w.message) for w in caught],
           "envs": env_registry_rows(), "auto": _auto_choices() if workloads else None}
    if model is not None:
        meta = model.meta
        doc["model"] = {"path": str(model.path), "family": model.family, "trained": meta.get("trained"),
                        "rows": meta.get("rows"), "workloads": meta.get("workloads"),
                        "cores_seen": meta.get("cores_seen") or [], "machines": meta.get("machines"),
                        "sklearn": meta.get("sklearn")}
    return doc


def _print_info(doc: dict, console) -> None:
    from rich.table import Table

    hw = doc["hardware"]
    console.print(f"[bold]SEER {doc['seer']}[/bold]  Python {doc['python']}  os.cpu_count()={doc['cpu_count']}")
    tab = Table(title="hardware features")
    tab.add_column("feature")
    tab.add_column("value")
    for k, v in hw.items():
        tab.add_row(k, f"{v:.3g}" if isinstance(v, float) else str(v))
    console.print(tab)

    console.print("[bold]STPA model search path[/bold] (first usable wins):")
    for p in doc["model_search_path"]:
        console.print(f"  {p['label']}: {p['path']} {'(exists)' if p['exists'] else '(missing)'}")
    for w in doc["warnings"]:
        console.print(f"  [yellow]warning:[/yellow] {w}")
    m = doc["model"]
    if m is None:
        console.print(f"[yellow]no usable STPA model[/yellow] ({'; '.join(doc['model_unusable'])}): "
                      "workers=\"auto\" uses the heuristic; run `seer tune`")
    else:
        console.print(f"loaded: [bold]{m['path']}[/bold] family={m['family']} trained {m['trained']} on "
                      f"{m['rows']} measurements of {m['workloads']} workloads, cores seen "
                      f"{m['cores_seen']}, machines {m['machines']}, scikit-learn {m['sklearn']}")
        if m["cores_seen"] and hw["usable_cores"] not in m["cores_seen"]:
            console.print(f"[yellow]note:[/yellow] the model saw {m['cores_seen']} usable cores, this machine "
                          f"has {hw['usable_cores']}: run `seer tune` to learn this machine")

    tab = Table(title="registered envs (entry point group seer.envs)")
    for col in ("env", "module", "distribution", "scenarios"):
        tab.add_column(col)
    for e in doc["envs"]:
        dist = f"{e['distribution']} {e['version']}" if e["distribution"] else "-"
        scen = (f"[red]unavailable:[/red] {e['error']}" if e["error"]
                else ", ".join(e["scenarios"]) if e["scenarios"] is not None else "-")
        tab.add_row(e["name"], e["module"], dist, scen)
    console.print(tab)
    if not doc["envs"]:
        console.print("[yellow]no env is registered[/yellow]: seer's own envs come from its package metadata; "
                      "reinstall seer (pip install -e .)")

    if doc["auto"] is None:
        return
    tab = Table(title='what workers="auto" picks')
    for col in ("workload", "workers", "source", "probe ms", "predicted speedup by pool size"):
        tab.add_column(col)
    for r in doc["auto"]:
        if r["workers"] is None:
            tab.add_row(r["workload"], "-", f"unavailable ({r['reason']})", "", "")
            continue
        sc = ", ".join(f"{w}: {x:.2f}x" for w, x in r["speedup"].items()) or r["reason"]
        tab.add_row(r["workload"], str(r["workers"]), r["source"], f"{r['probe_ms']:.0f}", sc)
    console.print(tab)


def cmd_info(args) -> int:
    import json

    from rich.console import Console

    doc = info_doc(args.sys_root, workloads=not args.no_workloads)
    if args.json == "-":
        print(json.dumps(doc, indent=2, default=str))
        return 0
    console = Console()
    _print_info(doc, console)
    if args.json is not None:
        atomic_write_text(args.json, json.dumps(doc, indent=2, default=str) + "\n", what="--json file")
        console.print(f"wrote {args.json}")
    return 0


def json_target_arg(text: str):
    """An argparse type: ``-`` (standard output) or an output path."""
    return "-" if text == "-" else output_path_arg(text)


def add_info_parser(sub) -> None:
    p = sub.add_parser("info", help="machine, the STPA model, the registered envs and what workers=\"auto\" picks",
                       description="Show this machine's hardware features, which STPA model is loaded, the "
                                   "registered envs (entry point group seer.envs), and what workers=\"auto\" "
                                   "picks for a few workloads.")
    # No default through the type: a machine without /sys still runs `seer info`.
    p.add_argument("--sys-root", default=None, type=existing_dir_arg,
                   help="sysfs root to read the CPU topology from (default /sys)")
    p.add_argument("--no-workloads", action="store_true", help="skip the example choices (no probes run)")
    p.add_argument("--json", nargs="?", const="-", default=None, metavar="PATH", type=json_target_arg,
                   help=f"print everything as JSON instead of tables, or with PATH write it there; "
                        f"{OUTPUT_HELP}")
    p.set_defaults(func=cmd_info, parser=p)


# ---- seer trace ------------------------------------------------------------------------------

def _traced_runner(args):
    """(runtime, step function, close) of the chosen workload with tracing on."""
    if args.workload in SYNTHETIC_WORKLOADS:
        from seer.runtime import Runtime
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
    mod = args.env_module
    if callable(getattr(mod, "make_traced", None)):
        return mod.make_traced(args.scenario, args.entities if args.entities_given else None, args.workers)
    return _wrapped_runner(mod, args)


def _wrapped_runner(mod, args):
    """An env module without ``make_traced``: its ParallelEnv through seer.wrap(trace=True), one
    event per step, with actions sampled from its spaces (seeded, so runs repeat)."""
    from seer.wrap import wrap

    env = mod.parallel_env(**({} if args.scenario is None else {"scenario": args.scenario}))
    try:
        wrapped = wrap(env, workers=args.workers, trace=True)
    except BaseException:
        env.close()
        raise
    if wrapped.builtin:
        wrapped.close()
        # Its runtime exists already, built without trace=True: only the env can build a traced one.
        raise ValueError(f"{args.workload} runs on its own SEER runtime and its module offers no "
                         f"make_traced() hook: seer trace cannot turn tracing on for it")
    state = {"episode": 0}
    wrapped.reset(seed=0)
    for i, agent in enumerate(wrapped.possible_agents):
        wrapped.action_space(agent).seed(i)

    def step():
        if not wrapped.agents:
            state["episode"] += 1
            wrapped.reset(seed=state["episode"])
        wrapped.step({a: wrapped.action_space(a).sample() for a in wrapped.agents})
        return 1

    return wrapped.runtime, step, wrapped.close


def _load_env_workload(args):
    """The registered env module that ``args.workload`` names; unknown or broken ends in a usage error."""
    from seer import registry
    from seer.errors import EnvLoadError, UnknownEnvError

    try:
        return registry.load(args.workload)
    except UnknownEnvError as exc:
        args.parser.error(f"workload {args.workload!r} is neither a synthetic workload "
                          f"({', '.join(SYNTHETIC_WORKLOADS)}) nor a registered env: {exc}")
    except EnvLoadError as exc:
        args.parser.error(f"workload {args.workload!r} is not available here: {exc}")


def _check_trace_args(args) -> None:
    """Refuse option combinations the chosen workload would silently ignore, and unknown scenarios."""
    from seer import registry

    err = args.parser.error
    synthetic = args.workload in SYNTHETIC_WORKLOADS
    args.env_module = None
    if synthetic and args.scenario is not None:
        err(f"--scenario {args.scenario!r} does not apply to {args.workload}: scenarios belong to the "
            f"registered envs (seer info lists them)")
    if not synthetic:
        given = [opt for opt, v in (("--fanout", args.fanout), ("--work", args.work),
                                    ("--step-length", args.step_length)) if v is not None]
        if given:
            err(f"{', '.join(given)} {'applies' if len(given) == 1 else 'apply'} only to the synthetic "
                f"workloads, not to {args.workload}")
        mod = args.env_module = _load_env_workload(args)
        if args.scenario is not None:
            scenarios = registry.scenarios(mod)
            if scenarios is None:
                err(f"--scenario {args.scenario!r} does not apply to {args.workload}: its module "
                    f"{mod.__name__} declares no SCENARIOS")
            if args.scenario not in scenarios:
                err(f"--scenario {args.scenario!r} is unknown for {args.workload}: expected one of {scenarios}")
        if args.entities is not None and not callable(getattr(mod, "make_traced", None)):
            err(f"--entities applies only to the synthetic workloads and to envs whose module offers "
                f"make_traced(); {mod.__name__} ({args.workload}) does not")
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
    p = sub.add_parser("trace", help="run a workload or a registered env traced and write Chrome trace JSON",
                       description="Run a synthetic workload or a registered env with trace=True for N steps "
                                   "and write the trace in Chrome's Trace Event Format (opens in "
                                   "https://ui.perfetto.dev).")
    # No choices=: the registered envs are known only after scanning the entry points,
    # which _check_trace_args does for the one name given.
    p.add_argument("workload", nargs="?", default="synthetic-native", metavar="WORKLOAD",
                   help=f"{', '.join(SYNTHETIC_WORKLOADS)} (default synthetic-native), or a registered env "
                        f"such as uav_swarm_v0 or wireless_v0 (`seer info` lists them)")
    p.add_argument("-o", "--output", default="seer-trace.json", type=output_path_arg,
                   help=f"where to write the JSON (default seer-trace.json); {OUTPUT_HELP}")
    p.add_argument("-n", "--steps", type=int_arg(1, 1_000_000), default=10, help="steps to run (default 10)")
    p.add_argument("-w", "--workers", type=int_arg(1, MAX_WORKERS), default=2,
                   help=f"pool size, 1..{MAX_WORKERS} (default 2)")
    p.add_argument("--entities", type=int_arg(1, 1 << 20), default=None,
                   help="entities of a synthetic workload (default 256), UAVs of uav_swarm_v0, or UEs of "
                        "wireless_v0 (default: the scenario's); for an env, only if its module offers "
                        "make_traced()")
    p.add_argument("--scenario", default=None,
                   help="scenario of an env (one of its module's SCENARIOS, listed by `seer info`; "
                        "uav_swarm_v0: small, default, large, xlarge; wireless_v0: small, medium, large, "
                        "xlarge)")
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
