"""`seer bench`'s harness (seer.bench): rows, reductions, table and plot on tiny budgets,
and the helpers every benchmark shares."""

import dataclasses
import json
import math

import numpy as np
import pytest

from seer.bench import command, common, harness, report


@pytest.fixture(scope="module")
def doc():
    rows = harness.uav_rows("small", steps=5, budget_s=0.2) + harness.wireless_rows("small", 5, 0.2)
    return {"machine": common.machine_info(), "rows": [dataclasses.asdict(r) for r in rows],
            "reductions": harness.reductions(rows), "paper_reduction_pct": harness.PAPER_REDUCTION}


def test_every_seer_and_reference_row_was_timed(doc):
    timed = {(r["domain"], r["system"]) for r in doc["rows"] if r["steps"] > 0}
    for domain in ("uav", "wireless"):
        for system in ("SEER (auto)", "SEER (1 worker)", "time-stepped reference"):
            assert (domain, system) in timed
    for r in doc["rows"]:
        assert r["steps"] > 0 or r["note"], r  # a skipped peer always says why
        if r["steps"]:
            assert 0 < r["p50_ms"] <= r["p99_ms"]


def test_reductions_compare_seer_auto_with_every_other_system(doc):
    red = doc["reductions"]
    assert {d["domain"] for d in red} == {"uav", "wireless"}
    for d in red:
        seer_row = next(r for r in doc["rows"] if r["domain"] == d["domain"] and r["system"] == "SEER (auto)")
        other = next(r for r in doc["rows"] if r["domain"] == d["domain"] and r["system"] == d["against"])
        assert d["reduction_pct"] == pytest.approx(100 * (1 - seer_row["mean_ms"] / other["mean_ms"]))
        assert d["paper_reduction_pct"] in (16.2, 64.9)
    json.dumps(doc)  # everything is JSON-serialisable


def test_table_and_plot(doc, tmp_path):
    from rich.console import Console

    console = Console(record=True, width=200)
    for t in report.table(doc):
        console.print(t)
    text = console.export_text()
    assert "SEER (auto)" in text and "time-stepped reference" in text
    pytest.importorskip("matplotlib", reason="the plot needs the bench extra")
    path = tmp_path / "latency.png"
    report.plot(doc, str(path))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_envs_come_from_the_registry_and_a_missing_one_is_a_one_line_error(monkeypatch, capsys):
    import argparse

    from seer import registry
    from seer.errors import UnknownEnvError

    asked = []

    def load(name):
        asked.append(name)
        raise UnknownEnvError(f"env {name!r} is not registered: expected one of []", name=name)

    monkeypatch.setattr(registry, "load", load)
    args = argparse.Namespace(quick=True, json=None, plot=None)
    assert command.main(args) == 1
    assert asked == ["uav_swarm_v0"]  # the first block needs it; nothing ran before
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == "seer bench: error: env 'uav_swarm_v0' is not registered: expected one of []"


def test_shared_helpers(tmp_path):
    info = common.machine_info(("numpy", "no-such-dist"))
    assert info["usable_cores"] >= 1 and info["packages"]["numpy"] == np.__version__
    assert info["no_such_dist"] is None and info["packages"]["no-such-dist"] is None
    stats = common.latency_stats(np.array([0.001, 0.002, 0.003]), "ms")
    assert stats["p50_ms"] == pytest.approx(2.0) and stats["mean_ms"] == pytest.approx(2.0)
    assert math.isnan(common.latency_stats([], "us")["p99_us"])
    with pytest.raises(ValueError, match="unit='h'"):
        common.latency_stats([1.0], "h")
    assert common.markdown_table(["a", "b"], [[1, "x"]]) == "| a | b |\n|---|---|\n| 1 | x |"
    common.write_report({"x": 1}, tmp_path / "r.json", tmp_path / "r.md", "# r\n")
    assert json.loads((tmp_path / "r.json").read_text()) == {"x": 1}
    assert (tmp_path / "r.md").read_text() == "# r\n"
