"""The ``seer bench`` command's body: run the plan with a progress bar, print, write JSON and plot.

Only the CLI imports it (``seer.cli``'s ``bench`` subcommand, lazily), so the
library never loads the benchmark harness.
"""

from __future__ import annotations

import json
import sys

from seer._io import atomic_write_text
from seer._text import for_terminal, markup_safe
from seer.bench.harness import plan, run
from seer.bench.report import document, plot, table, warnings_lines
from seer.errors import EnvLoadError, UnknownEnvError


def main(args) -> int:
    from rich.console import Console
    from rich.progress import Progress

    # Wide enough for the table when writing to a file or a CI log.
    console = Console(emoji=False) if sys.stdout.isatty() else Console(width=170, emoji=False)
    try:
        with Progress(console=console, transient=True) as bar:
            task = bar.add_task("seer bench", total=len(plan(args.quick)))
            doc = run(args.quick, lambda label: bar.update(task, advance=1,
                                                           description=f"seer bench: done {markup_safe(label)}"),
                      conditions=getattr(args, "conditions", None) or ("quiet", "loaded"))
    except (UnknownEnvError, EnvLoadError) as exc:  # an env the comparison needs is missing here
        print(f"seer bench: error: {for_terminal(exc)}", file=sys.stderr)
        return 1
    for t in table(doc):
        console.print(t)
    for line in warnings_lines(doc):
        console.print(f"[bold yellow]{markup_safe(line)}[/]", highlight=False)
    if args.json:
        atomic_write_text(args.json, json.dumps(doc, indent=2), what="--json file")
        console.print(f"wrote {markup_safe(args.json)}")
    if getattr(args, "md", None):
        atomic_write_text(args.md, document(doc), what="--md file")
        console.print(f"wrote {markup_safe(args.md)}")
    if args.plot:
        plot(doc, args.plot)
        console.print(f"wrote {markup_safe(args.plot)}")
    return 0
