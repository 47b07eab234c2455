"""``seer tune``: measure pool sizes on this machine and train the STPA model."""

from __future__ import annotations

import os
import sys

from seer.cli.args import OUTPUT_HELP, directory_arg, int_arg, output_path_arg, sizes_arg, write_output

HELP = "measure pool sizes on this machine and train the STPA model"
DESCRIPTION = ("Sweep pool sizes 1..max(2 x cores, 4) over synthetic workloads and the "
               "built-in envs, append the measurements to the dataset in the cache "
               "directory, train the selector (comparing model families on held-out "
               "workloads) and save it there as JSON; workers=\"auto\" then uses it.")


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
    p.add_argument("--seed", type=int_arg(0), default=1, help="seed of the workload sampler (>= 0)")
    p.add_argument("--no-envs", action="store_true", help="leave the built-in envs out")
    p.add_argument("--no-shipped-data", action="store_true", help="train on this machine's measurements only")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", default=None, type=output_path_arg,
                   help=f"write the result as JSON here; {OUTPUT_HELP}")
    p.add_argument("--md", default=None, type=output_path_arg,
                   help=f"write a markdown report here; {OUTPUT_HELP}")
    p.set_defaults(func=cmd_tune, parser=p)
