"""mkdocs hooks: the pages show what the benchmarks recorded in bench/results,
not copies of it that would go stale when a benchmark is re-run.

* The figures there (the env frames, the learning curves, the latency plot)
  are served as site files.
* A line ``<!-- recorded-table: bench/results/NAME.md N -->`` becomes the
  N-th table (from 1) of that record; a missing record or table fails the
  build.  On GitHub the line is an invisible comment.
"""

from __future__ import annotations

import pathlib
import re

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

ROOT = pathlib.Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"


def on_files(files, config):
    for png in sorted(RESULTS.rglob("*.png")):
        rel = png.relative_to(ROOT).as_posix()  # bench/results/frames/uav_swarm_v0.png
        files.append(File(rel, src_dir=str(ROOT), dest_dir=config["site_dir"],
                          use_directory_urls=config["use_directory_urls"]))
    return files


TABLE_MARK = re.compile(r"^<!--\s*recorded-table:\s*(\S+)\s+(\d+)\s*-->[ \t]*$", re.M)


def recorded_table(path: str, n: int, root: pathlib.Path = ROOT) -> str:
    """The ``n``-th markdown table (from 1) of the record ``path`` under bench/results."""
    results = (root / "bench" / "results").resolve()
    record = (root / path).resolve()
    if results not in record.parents:
        raise PluginError(f"recorded-table {path!r}: expected a file under bench/results/")
    if not record.is_file():
        raise PluginError(f"recorded-table {path!r}: no such record")
    tables, rows = [], []
    for line in record.read_text(encoding="utf-8").splitlines() + [""]:
        if line.startswith("|"):
            rows.append(line)
        elif rows:
            tables.append("\n".join(rows))
            rows = []
    if not 1 <= n <= len(tables):
        raise PluginError(f"recorded-table {path!r} {n}: expected a table number from 1 to {len(tables)}")
    return tables[n - 1]


def on_page_markdown(markdown, page, config, files):
    return TABLE_MARK.sub(lambda m: recorded_table(m.group(1), int(m.group(2))), markdown)


def _accept_singular_example_sections() -> None:
    # SEER's docstrings write Google style's "Example:" (as Napoleon reads it);
    # griffe knows only "Examples:", and would render the >>> lines as markdown.
    try:
        from griffe._internal.docstrings import google
    except ImportError:  # another griffe layout: it then renders them as text
        return
    kinds = getattr(google, "_section_kind", None)
    if isinstance(kinds, dict) and "examples" in kinds:
        kinds.setdefault("example", kinds["examples"])


_accept_singular_example_sections()
