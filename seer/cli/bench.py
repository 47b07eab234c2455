"""``seer bench``: the parser of SEER's headline comparisons; the run itself lives in :mod:`seer.bench`.

The harness is imported only when the command runs, so neither ``import
seer`` nor the other subcommands load it.
"""

from __future__ import annotations

from seer.cli.args import OUTPUT_HELP, output_path_arg, plot_path_arg

DESCRIPTION = ("SEER's headline comparisons on this machine: step latency of uav_swarm_v0 and wireless_v0 "
               "(SEER with workers=\"auto\" and with fixed pool sizes 1, 2, 4, ... up to the usable cores) "
               "against their time-stepped references and other simulators with as many agents; auto's choice "
               "is shown beside the best fixed size of the same run, with a warning where it lost by more "
               "than 5%.")


def conditions_arg(text: str) -> tuple[str, ...]:
    import argparse

    names = tuple(c.strip() for c in text.split(",") if c.strip())
    known = ("quiet", "loaded")  # seer.bench.harness.CONDITIONS, without importing the harness
    if not names or any(c not in known for c in names):
        raise argparse.ArgumentTypeError(f"{text!r} is invalid: expected a comma-separated list of {', '.join(known)}")
    return names


def cmd_bench(args) -> int:
    from seer.bench.command import main

    return main(args)


def add_bench_parser(sub) -> None:
    p = sub.add_parser("bench", help="SEER's headline comparisons on this machine", description=DESCRIPTION)
    p.add_argument("--quick", action="store_true", help="small scenarios and short runs (under a minute)")
    p.add_argument("--conditions", type=conditions_arg, default=("quiet", "loaded"), metavar="LIST",
                   help="machine states SEER's own rows are timed in, comma-separated: quiet (nothing started "
                        "beside them), loaded (beside one busy process pinned to a usable core, as a training "
                        "loop's learner; the envs are built under it, so auto's probe sees it); default: both")
    p.add_argument("--json", metavar="PATH", type=output_path_arg,
                   help=f"write every number, with the machine's features, as JSON; {OUTPUT_HELP}")
    p.add_argument("--md", metavar="PATH", type=output_path_arg,
                   help=f"write the tables (step latency, reductions, auto against the best fixed pool size, "
                        f"warnings) as markdown; {OUTPUT_HELP}")
    p.add_argument("--plot", metavar="PATH", type=plot_path_arg,
                   help=f"write a PNG (or .pdf, .svg) of step latency against entities; {OUTPUT_HELP}")
    p.set_defaults(func=cmd_bench, parser=p)
