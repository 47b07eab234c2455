"""The code users copy from the docs runs: every ```python block of README.md
and docs/**/*.md, a page's blocks in order in one fresh interpreter (as a
reader pastes them one after another), against the installed SEER.

A block preceded by ``<!-- doctest: skip (why) -->`` is not run (a multi-node
cluster, a training run of minutes); a page that says
``<!-- doctest: requires MOD ... -->`` runs only where those modules import
(the trainers' extras: CI installs them, so their pages run there).
"""

from __future__ import annotations

import importlib.util
import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```python\n(.*?)^```$", re.S | re.M)
SKIP = re.compile(r"<!--\s*doctest:\s*skip\b[^>]*-->\s*$")
REQUIRES = re.compile(r"<!--\s*doctest:\s*requires\s+([^>]*?)\s*-->")


def blocks(text: str) -> list[str]:
    """The page's python blocks that are meant to run, in order."""
    out = []
    for m in FENCE.finditer(text):
        before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        if not SKIP.search(before):
            out.append(m.group(1))
    return out


def test_the_block_reader_honours_skip_markers():
    page = "a\n```python\nx = 1\n```\n<!-- doctest: skip (a cluster) -->\n```python\nboom()\n```\n"
    assert blocks(page) == ["x = 1\n"]


@pytest.mark.timeout(600)
@pytest.mark.parametrize("page", [p for p in PAGES if blocks(p.read_text())], ids=lambda p: str(p.relative_to(ROOT)))
def test_the_page_code_runs(page, tmp_path):
    text = page.read_text()
    for want in REQUIRES.findall(text):
        for mod in want.split():
            if importlib.util.find_spec(mod) is None:
                pytest.skip(f"{page.name} needs {mod} (an optional extra)")
    script = "\n\n".join(blocks(text))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg"}
    # run away from the source tree, where the installed package is what imports
    run = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=540)
    assert run.returncode == 0, f"{page.relative_to(ROOT)}:\n{run.stderr[-6000:]}"
