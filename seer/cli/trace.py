"""``seer trace``: run a synthetic workload or a registered env traced, and write Chrome trace JSON."""

from __future__ import annotations

import sys
import time

from seer import registry
from seer.errors import OutputPathError
from seer._text import for_terminal
from seer.cli.args import (MAX_ENTITIES, MAX_STEP_LENGTH, MAX_WORKERS, OUTPUT_HELP, bounded_float_arg, int_arg,
                           output_path_arg)
from seer.errors import EnvLoadError, UnknownEnvError

#: The workloads of `seer trace` besides the registered envs.
SYNTHETIC_WORKLOADS = ("synthetic-native", "synthetic-python", "synthetic-mixed")

HELP = "run a workload or a registered env traced and write Chrome trace JSON"
DESCRIPTION = ("Run a synthetic workload or a registered env with trace=True for N steps "
               "and write the trace in Chrome's Trace Event Format (opens in "
               "https://ui.perfetto.dev).")


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
    try:
        return registry.load(args.workload)
    except UnknownEnvError as exc:
        args.parser.error(f"workload {args.workload!r} is neither a synthetic workload "
                          f"({', '.join(SYNTHETIC_WORKLOADS)}) nor a registered env: {for_terminal(exc)}")
    except EnvLoadError as exc:
        args.parser.error(f"workload {args.workload!r} is not available here: {for_terminal(exc)}")


def _check_trace_args(args) -> None:
    """Refuse option combinations the chosen workload would silently ignore, and unknown scenarios."""
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


def _too_big(args) -> str:
    size = f"--entities {args.entities}" if args.entities_given else "its default size"
    return (f"{args.workload} with {size} needs more memory than is available here: run it with fewer "
            f"entities (--entities) or a smaller --scenario")


def _failed(args, what: str, exc: BaseException) -> int:
    print(f"seer trace: error: {for_terminal(args.workload)} {what}: {type(exc).__name__}: {for_terminal(exc)}",
          file=sys.stderr)
    return 1


def cmd_trace(args) -> int:
    _check_trace_args(args)
    args.entities_given = args.entities is not None
    if args.entities is None:
        args.entities = 256
    out = args.output
    try:
        rt, step, close = _traced_runner(args)
    except ImportError as exc:
        args.parser.error(f"workload {args.workload!r} is not available here: {for_terminal(exc)}")
    except ValueError as exc:  # the workload's own check of a value (e.g. too many UEs)
        args.parser.error(for_terminal(exc))
    except MemoryError:  # e.g. an env's per-pair tables at 100,000 entities
        args.parser.error(_too_big(args))
    except (Exception, SystemExit) as exc:  # a plug-in env that fails to build: its error, not a traceback
        return _failed(args, "failed to start", exc)
    try:
        t0 = time.perf_counter()
        try:
            events = sum(step() for _ in range(args.steps))
        except MemoryError:  # the finally below closes the runtime
            args.parser.error(_too_big(args))
        except (Exception, SystemExit) as exc:
            return _failed(args, "failed while running", exc)
        el = time.perf_counter() - t0
        trace = rt.trace
        try:
            trace.to_chrome(out)
        except OutputPathError as exc:  # the path changed while the workload ran
            args.parser.error(for_terminal(exc))
        except OSError as exc:
            print(f"seer trace: error: cannot write {for_terminal(out)}: {for_terminal(exc.strerror or exc)}",
                  file=sys.stderr)
            return 1
        summ = trace.summary()
    finally:
        close()
    print(f"{for_terminal(args.workload)}: {args.steps} steps, {events} events, {summ['windows']} windows on {rt.workers} "
          f"workers in {el * 1e3:.1f} ms (traced)")
    print(f"busy {summ['busy_ns'] / 1e6:.2f} ms, idle {summ['idle_ns'] / 1e6:.2f} ms, in Python "
          f"{summ['python_ns'] / 1e6:.2f} ms, empty polls {summ['empty_polls']}, dropped records {summ['dropped']}")
    print(f"wrote Chrome trace JSON: {for_terminal(out)} ({out.stat().st_size / 1024:.0f} KiB)")
    print("open it in Perfetto: https://ui.perfetto.dev -> 'Open trace file' (or chrome://tracing -> Load)")
    return 0


def add_trace_parser(sub) -> None:
    p = sub.add_parser("trace", help=HELP, description=DESCRIPTION)
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
    p.add_argument("--entities", type=int_arg(1, MAX_ENTITIES), default=None,
                   help=f"entities of a synthetic workload (default 256), UAVs of uav_swarm_v0, or UEs of "
                        f"wireless_v0 (default: the scenario's), 1..{MAX_ENTITIES}; for an env, only if its module "
                        f"offers make_traced()")
    p.add_argument("--scenario", default=None,
                   help="scenario of an env (one of its module's SCENARIOS, listed by `seer info`; "
                        "uav_swarm_v0: small, default, large, xlarge; wireless_v0: small, medium, large, "
                        "xlarge)")
    p.add_argument("--fanout", type=int_arg(0, 1024), default=None, help="synthetic: messages per tick (default 1)")
    p.add_argument("--work", type=int_arg(0, 10**9), default=None,
                   help="synthetic: work iterations per event (default 1000)")
    p.add_argument("--step-length", type=bounded_float_arg(MAX_STEP_LENGTH), default=None,
                   help=f"synthetic: simulated time per step, at most {MAX_STEP_LENGTH:g} (default 1.0)")
    p.set_defaults(func=cmd_trace, parser=p)
