"""The ``seer`` command: ``seer info``, ``seer trace``, ``seer tune``, ``seer bench`` and ``seer new-env``.

Each subcommand lives in a module of this package with an
``add_<name>_parser(sub)`` function that registers its argparse subparser
and sets ``func`` to the function that runs it; argument types are in
:mod:`seer.cli.args`.  Envs are found only through :mod:`seer.registry`
(entry point group ``seer.envs``).
"""

from __future__ import annotations

import argparse
import sys

from seer.errors import OutputPathError
from seer._version import DISTRIBUTION, __version__
from seer.cli.bench import add_bench_parser
from seer.cli.info import add_info_parser
from seer.cli.new_env import add_new_env_parser
from seer.cli.trace import add_trace_parser
from seer.cli.tune import add_tune_parser


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="seer", description="SEER: event-driven runtime for multi-agent RL envs.")
    ap.add_argument("--version", action="version", version=f"seer {__version__} (distribution {DISTRIBUTION})")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")
    add_info_parser(sub)
    add_trace_parser(sub)
    add_tune_parser(sub)
    add_bench_parser(sub)
    add_new_env_parser(sub)
    return ap


def main(argv=None) -> int:
    """Run the ``seer`` command; usage errors exit with status 2 (argparse's ``SystemExit``)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = build_parser()
    args = ap.parse_args(argv)
    if not getattr(args, "func", None):
        ap.print_help()
        return 1
    args.argv = argv
    try:
        return int(args.func(args) or 0)
    except OutputPathError as exc:  # an output path that became unusable while the command ran
        args.parser.error(str(exc))
