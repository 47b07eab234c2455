"""mkdocs hook: serve the figures that the benchmarks record in bench/results
(the env frames, the learning curves, the latency plot) as site files, so the
pages show the recorded images rather than copies of them."""

from __future__ import annotations

import pathlib

from mkdocs.structure.files import File

ROOT = pathlib.Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"


def on_files(files, config):
    for png in sorted(RESULTS.rglob("*.png")):
        rel = png.relative_to(ROOT).as_posix()  # bench/results/frames/uav_swarm_v0.png
        files.append(File(rel, src_dir=str(ROOT), dest_dir=config["site_dir"],
                          use_directory_urls=config["use_directory_urls"]))
    return files


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
