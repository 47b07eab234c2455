"""`seer bench`'s harness: rows, reductions, table and plot on tiny budgets."""

import json

import pytest

from seer import benchmark


@pytest.fixture(scope="module")
def doc():
    rows = benchmark.uav_rows("small", steps=5, budget_s=0.2) + benchmark.wireless_rows("small", 5, 0.2)
    return {"machine": benchmark.machine_info(), "rows": [benchmark.dataclasses.asdict(r) for r in rows],
            "reductions": benchmark.reductions(rows), "paper_reduction_pct": benchmark.PAPER_REDUCTION}


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
    for t in benchmark.table(doc):
        console.print(t)
    text = console.export_text()
    assert "SEER (auto)" in text and "time-stepped reference" in text
    pytest.importorskip("matplotlib", reason="the plot needs the bench extra")
    path = tmp_path / "latency.png"
    benchmark.plot(doc, str(path))
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
    assert benchmark.main(args) == 1
    assert asked == ["uav_swarm_v0"]  # the first block needs it; nothing ran before
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == "seer bench: error: env 'uav_swarm_v0' is not registered: expected one of []"
