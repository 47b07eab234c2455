"""``seer tune``: measure pool sizes on this machine and train the STPA model."""

from __future__ import annotations

import argparse
import os
import sys

from seer.cli.args import MAX_SEED, OUTPUT_HELP, directory_arg, int_arg, output_path_arg, sizes_arg, write_output
from seer._text import for_terminal, markup_safe
from seer.errors import UntrustedPathError

HELP = "measure pool sizes on this machine and train the STPA model"
DESCRIPTION = ("Sweep pool sizes 1..max(2 x cores, 4) over synthetic workloads and the "
               "registered envs (single, and through seer.vector's thread backend), quiet and "
               "beside a busy process, append the measurements to the dataset in the cache "
               "directory, train the selector (comparing model families on held-out "
               "workloads and envs) and save it there as JSON; workers=\"auto\" then uses it. "
               "--evaluate reports the held-out figures quiet, under load and on one core.")


#: The evaluation's machine states (seer.stpa.tune.CONDITIONS; named here so the parser loads no STPA code).
CONDITION_NAMES = ("quiet", "loaded", "1core")
QUICK_VECTOR = [("uav_swarm_v0", "small", 8)]


def share_arg(text: str) -> float:
    """An argparse type: a number in [0, 1]."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number: expected a share in [0, 1]") from None
    if not 0.0 <= v <= 1.0:
        raise argparse.ArgumentTypeError(f"{text!r} is out of range: expected a share in [0, 1]")
    return v


def conditions_arg(text: str) -> list[str]:
    """An argparse type: comma-separated names of :data:`CONDITION_NAMES`."""
    names = [t.strip() for t in text.split(",") if t.strip()]
    bad = [n for n in names if n not in CONDITION_NAMES]
    if not names or bad:
        raise argparse.ArgumentTypeError(f"{text!r} is invalid: expected comma-separated names among "
                                         f"{', '.join(CONDITION_NAMES)}")
    return list(dict.fromkeys(names))


def vector_workloads(specs=None) -> list:
    """STPA workloads of registered envs run through ``seer.vector``'s thread
    backend (the CLI layer builds them: ``seer.stpa`` sits below
    ``seer.vector``); ``specs`` are (env id, scenario, copies), default
    :data:`seer.stpa.workloads.VECTOR_SPECS`.  An env that is not registered
    is left out."""
    from seer import registry
    from seer.errors import EnvLoadError, UnknownEnvError
    from seer.stpa import workloads as W

    out = []
    for env_id, scenario, copies in (W.VECTOR_SPECS if specs is None else specs):
        try:
            mod = registry.load(env_id)
        except (UnknownEnvError, EnvLoadError):
            continue

        def env_fn(_mod=mod, _sc=scenario):
            return _mod.parallel_env(scenario=_sc)

        def make(workers, _fn=env_fn, _n=copies):
            import seer.vector

            return W.vector_stepper(seer.vector.make(_fn, _n, backend="thread", workers=workers))

        import seer.vector

        native = 1.0 if seer.vector.native_path_available(env_fn) else 0.0
        static = {"entities": float(copies), "kinds": 2.0, "native_kind_share": native, "lookahead": 1.0}
        out.append(W.stepper_workload(f"vector-{env_id}-{scenario}-x{copies}", env_id,
                                      {"scenario": scenario, "copies": copies}, make, static))
    return out


def cmd_tune(args) -> int:
    from rich.console import Console

    from seer.stpa import train, tune

    console = Console(emoji=False)  # ":x:" in a path is text, not an emoji
    if args.cache_dir:
        os.environ["SEER_CACHE_DIR"] = str(args.cache_dir)
    evaluate_only = args.evaluate_only
    extra = [] if args.no_envs or args.no_vector else vector_workloads(QUICK_VECTOR if args.quick else None)
    try:
        result = tune.run_tune(
            quick=args.quick, cache=args.cache_dir, do_sweep=not evaluate_only and not args.no_sweep,
            do_train=not evaluate_only and not args.no_train, do_evaluate=args.evaluate or evaluate_only,
            n_train=args.workloads, n_eval=args.eval_workloads, reps=args.reps, seed=args.seed,
            envs=not args.no_envs, include_shipped=not args.no_shipped_data, sizes=args.sizes,
            progress=not args.no_progress, console=console, eval_repeats=args.eval_repeats,
            log=lambda msg: console.print(markup_safe(msg)),  # names and exception messages: text, not markup
            extra_workloads=extra, loaded_share=args.loaded_share, conditions=args.conditions)
    except train.TooLittleDataError as exc:
        print(f"seer tune: error: {for_terminal(exc)} (run a sweep, or drop --no-shipped-data)", file=sys.stderr)
        return 1
    except UntrustedPathError as exc:  # a cache another user could write to: nothing measured or written
        print(f"seer tune: error: {for_terminal(exc)}", file=sys.stderr)
        return 1
    tune.print_summary(result, console)
    command = "seer " + " ".join(args.argv)  # argv starts with the subcommand
    if args.json:
        tune.write_json({**result, "command": command}, args.json, what="--json file")
        console.print(f"wrote {markup_safe(args.json)}")
    if args.md:
        write_output(console, args.md, tune.render_markdown(result, command), "--md file")
    return 0


def add_tune_parser(sub) -> None:
    p = sub.add_parser("tune", help=HELP, description=DESCRIPTION)
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
    p.add_argument("--seed", type=int_arg(0, MAX_SEED), default=1, help=f"seed of the workload sampler (0..{MAX_SEED})")
    p.add_argument("--no-envs", action="store_true", help="leave the registered envs out (single and vector)")
    p.add_argument("--no-vector", action="store_true", help="leave the seer.vector workloads out")
    p.add_argument("--loaded-share", type=share_arg, default=None,
                   help="share of the synthetic training workloads measured again beside a busy process "
                        "(every env workload is; default 0.5, --quick 0.25; 0: none)")
    p.add_argument("--conditions", type=conditions_arg, default=list(CONDITION_NAMES),
                   help="machine states --evaluate runs under, comma-separated: quiet (all cores), loaded (one "
                        "busy process pinned to one core), 1core (affinity narrowed to one CPU); default all three")
    p.add_argument("--no-shipped-data", action="store_true", help="train on this machine's measurements only")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", default=None, type=output_path_arg,
                   help=f"write the result as JSON here; {OUTPUT_HELP}")
    p.add_argument("--md", default=None, type=output_path_arg,
                   help=f"write a markdown report here; {OUTPUT_HELP}")
    p.set_defaults(func=cmd_tune, parser=p)
