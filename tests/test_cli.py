"""The `seer` command: info, trace, tune, and the hook that adds `bench`."""

import json
import shutil
import subprocess
import sys
import types

import pytest

from seer import cli
from seer.stpa import selector as S


def test_parser_has_the_subcommands():
    ap = cli.build_parser()
    sub = next(a for a in ap._actions if a.__class__.__name__ == "_SubParsersAction")
    assert {"info", "trace", "tune"} <= set(sub.choices)


def test_bench_registers_itself_when_seer_bench_exists(monkeypatch):
    fake = types.ModuleType("seer.bench")

    def add_bench_parser(sub):
        p = sub.add_parser("bench", help="benchmarks")
        p.set_defaults(func=lambda args: 7)

    fake.add_bench_parser = add_bench_parser
    monkeypatch.setitem(sys.modules, "seer.bench", fake)
    assert cli.main(["bench"]) == 7


def test_no_command_prints_help(capsys):
    assert cli.main([]) == 1
    assert "tune" in capsys.readouterr().out


def test_info_without_probes(capsys):
    assert cli.main(["info", "--no-workloads"]) == 0
    out = capsys.readouterr().out
    assert "usable_cores" in out and "STPA model search path" in out


def test_info_with_a_fake_sys_root(tmp_path, capsys):
    cpu = tmp_path / "devices" / "system" / "cpu"
    cpu.mkdir(parents=True)
    (cpu / "online").write_text("0-7\n")
    assert cli.main(["info", "--no-workloads", "--sys-root", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "logical_cores" in out and "8" in out


def test_info_shows_what_auto_picks(capsys):
    assert cli.main(["info"]) == 0
    out = capsys.readouterr().out
    assert 'what workers="auto" picks' in out and "synthetic native" in out


@pytest.mark.parametrize("workload", ["synthetic-native", "synthetic-python", "synthetic-mixed"])
def test_trace_writes_chrome_json(tmp_path, capsys, workload):
    out = tmp_path / "t.json"
    assert cli.main(["trace", workload, "-n", "3", "-w", "2", "--entities", "32", "--work", "10",
                     "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    events = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert events and {"ts", "dur", "tid", "name"} <= set(events[0])
    printed = capsys.readouterr().out
    assert "https://ui.perfetto.dev" in printed and str(out) in printed


def test_trace_of_an_env(tmp_path, capsys):
    pytest.importorskip("seer.envs.uav_swarm_v0")
    out = tmp_path / "uav.json"
    rc = cli.main(["trace", "uav_swarm_v0", "--scenario", "small", "-n", "2", "-w", "1", "-o", str(out)])
    assert rc == 0 and json.loads(out.read_text())["traceEvents"]


def test_tune_cli_smoke(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("SEER_CACHE_DIR", raising=False)
    cache = tmp_path / "cache"
    rc = cli.main(["tune", "--cache-dir", str(cache), "--workloads", "2", "--eval-workloads", "1", "--reps", "1",
                   "--sizes", "1,2", "--no-envs", "--no-shipped-data", "--no-progress", "--evaluate",
                   "--eval-repeats", "2",
                   "--json", str(tmp_path / "r.json"), "--md", str(tmp_path / "r.md")])
    assert rc == 0
    assert (cache / "stpa_dataset.jsonl").is_file() and (cache / "stpa_model.joblib").is_file()
    res = json.loads((tmp_path / "r.json").read_text())
    assert res["command"].startswith("seer tune") and res["evaluation"]["workloads"]
    assert len(res["evaluation_runs"]) == 2 and res["evaluation_pooled"]["runs"] == 2
    md = (tmp_path / "r.md").read_text()
    assert "STPA evaluation" in md and "Repeated evaluation runs" in md and "Pooled over the 2 runs" in md
    out = capsys.readouterr().out
    assert "held-out" in out and "model families" in out
    S.clear_cache()


def test_tune_rejects_bad_sizes(tmp_path, capsys):
    assert cli.main(["tune", "--cache-dir", str(tmp_path), "--sizes", "2,3", "--no-progress"]) == 2
    assert "--sizes" in capsys.readouterr().err


def test_console_script_runs():
    exe = shutil.which("seer")
    if exe is None:
        pytest.skip("the seer console script is not installed")
    out = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "trace" in out.stdout and "tune" in out.stdout
