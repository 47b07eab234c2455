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
        for system in [s for s, _, _ in harness.own_systems()]:
            assert (domain, system) in timed
    # auto's choice sits beside the best fixed size of the same run
    assert {(d["domain"], d["scenario"]) for d in harness.auto_vs_fixed(doc["rows"])} == {("uav", "small"),
                                                                                         ("wireless", "small")}
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
    args = argparse.Namespace(quick=True, json=None, plot=None, md=None)
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


def test_the_helpers_the_bench_scripts_share(tmp_path, capsys):
    calls = []
    assert common.steps_per_s(calls.append, "abc", 4, warmup=2) > 0
    assert calls == list("ab" + "abca")  # the warm-up calls, then the timed ones, both cycling from the first input
    # a bench script's folder for its results is made on demand; seer bench's output folders are not
    with pytest.raises(ValueError, match="does not exist"):
        common.write_report({"x": 1}, tmp_path / "missing" / "r.json")
    common.write_report({"x": 1}, tmp_path / "new" / "r.json", tmp_path / "new2" / "r.md", "# r\n", make_dirs=True)
    assert json.loads((tmp_path / "new" / "r.json").read_text()) == {"x": 1}
    assert (tmp_path / "new2" / "r.md").read_text() == "# r\n"
    doc = common.rounds_main("a bench", lambda rounds: {"rounds": rounds}, lambda d: f"# {d['rounds']} rounds",
                             rounds=5, argv=["--rounds", "2", "--json", str(tmp_path / "b.json")])
    assert doc == {"rounds": 2} and capsys.readouterr().out == "# 2 rounds\n"
    assert json.loads((tmp_path / "b.json").read_text()) == {"rounds": 2} and not (tmp_path / "b.md").exists()


# ---- auto against the best fixed pool size -------------------------------------------------------

def _row(domain, scenario, system, workers, mean_ms, kind="seer"):
    return {"domain": domain, "scenario": scenario, "entities": 8, "system": system, "kind": kind,
            "workers": workers, "mean_ms": mean_ms, "p50_ms": mean_ms, "p99_ms": mean_ms, "steps": 100, "note": ""}


@pytest.fixture
def measured():
    """A fake measured table: auto matched the best on uav small, lost 33% on uav large, and lost
    7% on wireless small with the very pool size that won (noise between two rounds of one size)."""
    rows = [
        _row("uav", "small", "SEER (auto)", 1, 0.100), _row("uav", "small", "SEER (1 worker)", 1, 0.101),
        _row("uav", "small", "SEER (2 workers)", 2, 0.150),
        _row("uav", "small", "time-stepped reference", 1, 2.0, "same model"),
        _row("uav", "large", "SEER (auto)", 2, 0.300), _row("uav", "large", "SEER (1 worker)", 1, 0.200),
        _row("uav", "large", "SEER (2 workers)", 2, 0.290),
        _row("wireless", "small", "SEER (auto)", 1, 0.107), _row("wireless", "small", "SEER (1 worker)", 1, 0.100),
        _row("wireless", "small", "SEER (2 workers)", 2, 0.180),
    ]
    return {"machine": common.machine_info(), "rows": rows, "reductions": [],
            "auto_vs_fixed": harness.auto_vs_fixed(rows), "paper_reduction_pct": harness.PAPER_REDUCTION}


def test_auto_is_shown_beside_the_best_fixed_size(measured):
    by = {(d["domain"], d["scenario"]): d for d in measured["auto_vs_fixed"]}
    assert set(by) == {("uav", "small"), ("uav", "large"), ("wireless", "small")}
    small, large, wl = by["uav", "small"], by["uav", "large"], by["wireless", "small"]
    assert (small["auto_workers"], small["best_fixed_workers"]) == (1, 1)
    assert small["auto_frac_of_best"] == pytest.approx(1.01) and small["warning"] == ""
    assert (large["auto_workers"], large["best_fixed_workers"]) == (2, 1)
    assert large["auto_frac_of_best"] == pytest.approx(0.2 / 0.3)
    assert large["fixed_mean_ms"] == {"1": 0.2, "2": 0.29}  # the reference is not a pool size
    assert large["warning"].startswith("warning: uav large: auto (2 workers) reached 66.7% of the best fixed pool "
                                       "size's throughput (1 worker)")
    assert "50% slower" in large["warning"]
    assert wl["warning"] and "the same pool size" in wl["warning"]


def test_the_tables_carry_the_auto_and_best_columns_and_the_warning_lines(measured):
    from rich.console import Console

    console = Console(record=True, width=250)
    tables = report.table(measured)
    assert len(tables) == 3
    console.print(tables[2])
    text = console.export_text()
    assert "auto chose" in text and "best fixed" in text and "auto / best throughput" in text
    assert "0.667" in text and "1.010" in text
    lines = report.warnings_lines(measured)
    assert len(lines) == 2 and lines[0].startswith("warning: uav large") and lines[1].startswith("warning: wireless")
    md = report.document(measured)
    assert "| uav | large | quiet | 2 | 1 | 0.300 | 0.200 | 0.667 (warning) |" in md
    assert "| uav | small | quiet | 1 | 1 | 0.100 | 0.101 | 1.010 |" in md
    assert lines[0] in md and lines[1] in md


def test_the_command_prints_the_warning_lines(monkeypatch, measured, capsys, tmp_path):
    import argparse

    monkeypatch.setattr(command, "run", lambda quick, progress, conditions: measured)
    args = argparse.Namespace(quick=True, json=None, plot=None, md=tmp_path / "b.md")
    assert command.main(args) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "warning: uav large: auto (2 workers)" in out
    assert "workers=\"auto\" against the best fixed pool size" in (tmp_path / "b.md").read_text()


def test_own_rows_are_timed_quiet_and_beside_a_busy_process(monkeypatch):
    from seer.stpa import load

    started = []
    real = load.background_load

    def recording(processes=1, cpus=None):
        started.append(processes)
        return real(processes, cpus)

    monkeypatch.setattr(load, "background_load", recording)
    rows = harness.uav_rows("small", steps=4, budget_s=0.2, conditions=("loaded", "quiet"))
    assert started == [0, 1]  # quiet first, then beside one busy process
    own = {(r.condition, r.system) for r in rows if r.kind == "seer"}
    systems = [s for s, _, _ in harness.own_systems(reference=False)]
    assert {("quiet", s) for s in systems} | {("loaded", s) for s in systems} <= own
    loaded = [r for r in rows if r.condition == "loaded"]
    assert loaded and all(r.kind == "seer" and r.steps > 0 for r in loaded)  # no reference, no peers under load
    checks = harness.auto_vs_fixed(rows)
    assert sorted(d["condition"] for d in checks) == ["loaded", "quiet"]
    others = [r for r in rows if r.kind != "seer" and r.ok]
    assert len(harness.reductions(rows)) == len(others)  # against quiet auto only: the others ran quiet
    md = report.markdown({"rows": [dataclasses.asdict(r) for r in rows], "reductions": []})
    assert "| uav | small | loaded |" in md and "| uav | small | quiet |" in md
    with pytest.raises(ValueError, match=r"conditions=\['busy'\] is invalid"):
        harness.check_conditions(["busy"])


def test_fixed_sizes_go_up_to_the_usable_cores():
    assert harness.fixed_sizes(1) == [1]
    assert harness.fixed_sizes(2) == [1, 2]
    assert harness.fixed_sizes(6) == [1, 2, 4, 6]
    assert harness.fixed_sizes(16) == [1, 2, 4, 8, 16]
    labels = [s[0] for s in harness.own_systems(2)]
    assert labels == ["SEER (auto)", "SEER (1 worker)", "SEER (2 workers)", "time-stepped reference"]
