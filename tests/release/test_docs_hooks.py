"""docs/_hooks.py: a ``<!-- recorded-table: FILE N -->`` line in a docs page
becomes the N-th table of that bench/results record as the benchmark wrote
it, and a marker naming a record or table that is not there fails the build
with a message naming it (so renaming a record cannot leave the performance
page quietly empty)."""

from __future__ import annotations

import importlib.util
import pathlib

import pytest

pytest.importorskip("mkdocs", reason="the docs extra builds the site: pip install -e '.[docs]'")

ROOT = pathlib.Path(__file__).resolve().parents[2]


def load_hooks():
    spec = importlib.util.spec_from_file_location("seer_docs_hooks", ROOT / "docs" / "_hooks.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


hooks = load_hooks()

RECORD = """# a record

Machine: somewhere.

| a | b |
|---|---|
| 1 | 2 |

Between the tables.

| c |
|---|
| 3 |
"""


@pytest.fixture
def tree(tmp_path):
    results = tmp_path / "bench" / "results"
    results.mkdir(parents=True)
    (results / "r.md").write_text(RECORD)
    (tmp_path / "elsewhere.md").write_text(RECORD)
    return tmp_path


def test_the_nth_table_of_the_record_as_written(tree):
    assert hooks.recorded_table("bench/results/r.md", 1, root=tree) == "| a | b |\n|---|---|\n| 1 | 2 |"
    assert hooks.recorded_table("bench/results/r.md", 2, root=tree) == "| c |\n|---|\n| 3 |"


@pytest.mark.parametrize("path, n, message", [
    ("bench/results/gone.md", 1, "no such record"),
    ("bench/results/r.md", 3, "from 1 to 2"),
    ("bench/results/r.md", 0, "from 1 to 2"),
    ("elsewhere.md", 1, "under bench/results"),
    ("bench/results/../../elsewhere.md", 1, "under bench/results"),
])
def test_a_missing_record_or_table_fails_naming_it(tree, path, n, message):
    from mkdocs.exceptions import PluginError

    with pytest.raises(PluginError, match=message) as info:
        hooks.recorded_table(path, n, root=tree)
    assert path in str(info.value)


def test_the_marker_line_is_replaced_and_the_rest_of_the_page_kept():
    page = "Intro.\n\n<!-- recorded-table: bench/results/runtime.md 1 -->\n\nAfter.\n"
    out = hooks.on_page_markdown(page, None, None, None)
    assert out.startswith("Intro.\n\n| workload |") and out.endswith("\n\nAfter.\n")
    assert "recorded-table" not in out


def test_every_marker_in_the_docs_names_a_table_that_exists():
    marks = [(p, m) for p in sorted((ROOT / "docs").rglob("*.md")) for m in hooks.TABLE_MARK.finditer(p.read_text())]
    assert marks, "the performance page includes the recorded tables"
    for page, m in marks:
        table = hooks.recorded_table(m.group(1), int(m.group(2)))
        assert table.startswith("|") and "\n|" in table, (page.name, m.group(0))
