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


def cmd_bench(args) -> int:
    from seer.bench.command import main

    return main(args)


def add_bench_parser(sub) -> None:
    p = sub.add_parser("bench", help="SEER's headline comparisons on this machine", description=DESCRIPTION)
    p.add_argument("--quick", action="store_true", help="small scenarios and short runs (under a minute)")
    p.add_argument("--json", metavar="PATH", type=output_path_arg,
                   help=f"write every number, with the machine's features, as JSON; {OUTPUT_HELP}")
    p.add_argument("--md", metavar="PATH", type=output_path_arg,
                   help=f"write the tables (step latency, reductions, auto against the best fixed pool size, "
                        f"warnings) as markdown; {OUTPUT_HELP}")
    p.add_argument("--plot", metavar="PATH", type=plot_path_arg,
                   help=f"write a PNG (or .pdf, .svg) of step latency against entities; {OUTPUT_HELP}")
    p.set_defaults(func=cmd_bench, parser=p)
