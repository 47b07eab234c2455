"""The `seer` command: info, trace, tune, and the hook that adds `bench`;
misuse ends in a one-line error with exit status 2 (never a traceback); output
files are written atomically, never through a symlink, never into a folder
that does not exist."""

import json
import os
import shutil
import stat
import subprocess
import sys

import pytest

from seer import _io, cli
from seer.stpa import model as M
from seer.stpa import selector as S


def test_parser_has_the_subcommands():
    ap = cli.build_parser()
    sub = next(a for a in ap._actions if a.__class__.__name__ == "_SubParsersAction")
    assert {"info", "trace", "tune", "bench"} <= set(sub.choices)


def test_bench_runs_seer_bench_which_only_the_command_imports(monkeypatch):
    import seer.bench.command

    monkeypatch.setattr(seer.bench.command, "main", lambda args: 7)
    assert cli.main(["bench"]) == 7
    # Neither the library nor the other subcommands load the benchmark harness.
    code = ("import sys, seer, seer.cli, seer.vector; from seer.envs import uav_swarm_v0; "
            "print(sorted(m for m in sys.modules if m.startswith('seer.bench')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


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


@pytest.mark.parametrize("env", ["uav_swarm_v0", "wireless_v0"])
def test_trace_of_a_registered_env(tmp_path, capsys, env):
    out = tmp_path / f"{env}.json"
    rc = cli.main(["trace", env, "--scenario", "small", "-n", "2", "-w", "1", "--entities", "6", "-o", str(out)])
    assert rc == 0 and json.loads(out.read_text())["traceEvents"]
    assert capsys.readouterr().out.startswith(f"{env}: 2 steps")


def test_info_json_lists_the_registered_envs(capsys):
    assert cli.main(["info", "--no-workloads", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)  # nothing but the JSON on stdout
    envs = {e["name"]: e for e in doc["envs"]}
    assert envs["uav_swarm_v0"]["module"] == "seer.envs.uav_swarm_v0"
    from seer.envs import wireless_v0

    assert envs["wireless_v0"]["scenarios"] == list(wireless_v0.SCENARIOS)
    assert {"small", "medium", "large", "xlarge"} <= set(envs["wireless_v0"]["scenarios"])
    assert doc["model_search_path"] and doc["auto"] is None


def test_tune_cli_smoke(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("SEER_CACHE_DIR", raising=False)
    cache = tmp_path / "cache"
    rc = cli.main(["tune", "--cache-dir", str(cache), "--workloads", "2", "--eval-workloads", "1", "--reps", "1",
                   "--sizes", "1,2", "--no-envs", "--no-shipped-data", "--no-progress", "--evaluate",
                   "--eval-repeats", "2", "--loaded-share", "0.5", "--conditions", "quiet,1core",
                   "--json", str(tmp_path / "r.json"), "--md", str(tmp_path / "r.md")])
    assert rc == 0
    assert (cache / "stpa_dataset.jsonl").is_file() and (cache / "stpa_model.json").is_file()
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700  # created by tune: private
    assert M.load_model(cache / "stpa_model.json").meta["rows"] == 6  # 2 workloads quiet, 1 again loaded
    res = json.loads((tmp_path / "r.json").read_text())
    assert res["command"].startswith("seer tune --cache-dir") and res["evaluation"]["workloads"]
    assert set(res["evaluations"]) == {"quiet", "1core"}
    assert len(res["evaluation_runs"]) == 2 and res["evaluation_pooled"]["runs"] == 2
    md = (tmp_path / "r.md").read_text()
    assert "STPA evaluation" in md and "quiet (pooled over 2 runs)" in md and "1core (pooled over 2 runs)" in md
    out = capsys.readouterr().out
    assert "held-out" in out and "model families" in out and "per machine state" in out
    S.clear_cache()


def test_tune_rejects_bad_sizes(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["tune", "--cache-dir", str(tmp_path), "--sizes", "2,3", "--no-progress"])
    assert exc.value.code == 2
    assert "--sizes: '2,3' is invalid: expected pool sizes including 1" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())  # refused before measuring anything


# ---- misuse: one clear line, exit status 2, no traceback ---------------------------------------

def run_seer(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "seer.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=120, cwd=cwd)


def assert_usage_error(out, *needles):
    assert out.returncode == 2, (out.returncode, out.stdout, out.stderr)
    assert "Traceback" not in out.stderr + out.stdout
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("seer ") and ": error: " in last, out.stderr
    for needle in needles:
        assert needle in last, (needle, last)


@pytest.mark.parametrize("args, needles", [
    (["-n", "0"], ["-n/--steps", "0 is out of range", "[1, 1000000]"]),
    (["-n", "-1"], ["-n/--steps", "-1 is out of range"]),
    (["-n", "ten"], ["-n/--steps", "'ten' is not an integer"]),
    (["-w", "0"], ["-w/--workers", "0 is out of range", "[1, 1024]"]),
    (["-w", "5000"], ["-w/--workers", "5000 is out of range"]),
    (["uav_swarm_v0", "--scenario", "nope"], ["--scenario 'nope' is unknown for uav_swarm_v0", "'small'"]),
    (["wireless_v0", "--scenario", "nope"], ["--scenario 'nope' is unknown for wireless_v0", "'medium'"]),
    (["uav_swarm", "-n", "1"], ["workload 'uav_swarm' is neither a synthetic workload", "synthetic-native",
                                "'uav_swarm_v0'", "'wireless_v0'"]),
])
def test_trace_misuse_is_a_usage_error(tmp_path, args, needles):
    out = run_seer("trace", *args, "-o", tmp_path / "t.json")
    assert_usage_error(out, *needles)
    assert not (tmp_path / "t.json").exists()  # nothing written


def test_trace_into_a_directory_is_a_usage_error(tmp_path):
    out = run_seer("trace", "-n", "1", "-o", tmp_path)
    assert_usage_error(out, "-o/--output", str(tmp_path), "is a directory")


def test_trace_to_a_name_too_long_for_the_filesystem_is_a_usage_error(tmp_path):
    target = tmp_path / ("x" * 300 + ".json")
    out = run_seer("trace", "-n", "1", "--entities", "8", "-o", target)
    assert_usage_error(out, "-o/--output", "characters)' cannot be used: File name too long")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the memory limit is set with resource.setrlimit (POSIX)")
def test_trace_of_an_env_too_large_for_the_memory_is_a_usage_error(tmp_path):
    import resource

    def limit_memory():  # 3 GiB of address space: the 65,536-UE wireless tables need more
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

    out = subprocess.run([sys.executable, "-m", "seer.cli", "trace", "wireless_v0", "--entities", "65536", "-n", "1",
                          "-o", str(tmp_path / "w.json")], capture_output=True, text=True, timeout=300,
                         preexec_fn=limit_memory)
    assert_usage_error(out, "wireless_v0 with --entities 65536 needs more memory than is available here")
    assert list(tmp_path.iterdir()) == []


def test_an_output_path_with_terminal_escapes_is_quoted_as_text(tmp_path):
    target = tmp_path / "\x1b]0;owned\x07\x1b[2J" / "t.json"
    out = run_seer("trace", "-n", "1", "-o", target)
    assert_usage_error(out, "does not exist", "\\x1b]0;owned\\x07\\x1b[2J")
    assert "\x1b" not in out.stderr and "\x07" not in out.stderr


def test_trace_into_a_missing_directory_is_refused_not_created(tmp_path):
    target = tmp_path / "no" / "such" / "t.json"
    out = run_seer("trace", "-n", "1", "-o", target)
    assert_usage_error(out, f"directory {target.parent} does not exist")
    assert not (tmp_path / "no").exists()


@pytest.mark.parametrize("args, needles", [
    (["trace", "--scenario", "small"], ["--scenario 'small' does not apply to synthetic-native"]),
    (["trace", "uav_swarm_v0", "--work", "5"], ["--work applies only to the synthetic workloads"]),
    (["trace", "--entities", "0"], ["--entities", "0 is out of range"]),
    (["trace", "--fanout", "-2"], ["--fanout", "-2 is out of range"]),
    (["trace", "--step-length", "nan"], ["--step-length", "'nan' is out of range", "a finite number in (0, 1000]"]),
    (["trace", "--step-length", "1e300"], ["--step-length", "'1e300' is out of range", "(0, 1000]"]),
    (["trace", "--step-length", "0"], ["--step-length", "'0' is out of range"]),
    (["trace", "wireless_v0", "--entities", "500000"], ["--entities", "500000 is out of range", "[1, 65536]"]),
    (["trace", "--entities", "100000"], ["--entities", "100000 is out of range", "[1, 65536]"]),
    (["bench", "--json", "a\x00b.json"], ["--json", "'a\\x00b.json' holds a NUL character"]),
    (["trace", "-n", "1" + "0" * 5000], ["-n/--steps", "(5001 characters) is not an integer", "[1, 1000000]"]),
    (["tune", "--seed", str(2**64)], ["--seed", f"{2**64} is out of range", "[0, 4294967295]"]),
    (["tune", "--sizes", "1,x"], ["--sizes", "'x' is not an integer"]),
    (["tune", "--sizes", "1,2048"], ["--sizes", "2048 is out of range"]),
    (["tune", "--workloads", "0"], ["--workloads", "0 is out of range"]),
    (["tune", "--eval-workloads", "-1"], ["--eval-workloads", "-1 is out of range"]),
    (["tune", "--reps", "0"], ["--reps", "0 is out of range"]),
    (["tune", "--eval-repeats", "0"], ["--eval-repeats", "0 is out of range"]),
    (["tune", "--seed", "-1"], ["--seed", "-1 is out of range", "[0, 4294967295]"]),
    (["tune", "--loaded-share", "1.5"], ["--loaded-share", "'1.5' is out of range", "[0, 1]"]),
    (["tune", "--conditions", "quiet,busy"], ["--conditions", "'quiet,busy' is invalid", "quiet, loaded, 1core"]),
    (["bench", "--md", "/no/such/dir/b.md"], ["--md", "does not exist"]),
    (["bench", "--conditions", "quiet,busy"], ["--conditions", "'quiet,busy' is invalid", "quiet, loaded"]),
    (["info", "--sys-root", "/no/such/sys"], ["--sys-root", "'/no/such/sys' is not an existing directory"]),
    (["info", "--json", "/no/such/dir/info.json"], ["--json", "does not exist"]),
])
def test_other_misuse_is_a_usage_error(tmp_path, capsys, args, needles):
    with pytest.raises(SystemExit) as exc:
        cli.main(args + (["-o", str(tmp_path / "t.json")] if args[0] == "trace" else []))
    assert exc.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith(f"seer {args[0]}: error: ")
    for needle in needles:
        assert needle in last, (needle, last)


def test_tune_output_paths_are_checked_before_measuring(tmp_path, capsys):
    afile = tmp_path / "afile"
    afile.write_text("x")
    for args, needle in ((["--json", str(tmp_path)], "is a directory"),
                         (["--md", str(tmp_path / "no" / "r.md")], "does not exist"),
                         (["--cache-dir", str(afile)], "is not a directory")):
        with pytest.raises(SystemExit) as exc:
            cli.main(["tune", "--no-progress", *args])
        assert exc.value.code == 2
        assert needle in capsys.readouterr().err


def test_tune_with_too_little_data_says_so(tmp_path, capsys):
    rc = cli.main(["tune", "--cache-dir", str(tmp_path / "c"), "--no-sweep", "--no-shipped-data", "--no-progress"])
    assert rc == 1
    assert "seer tune: error: too little data to train" in capsys.readouterr().err


@pytest.mark.parametrize("args, needle", [
    (["--json", "{tmp}"], "is a directory"),
    (["--json", "{tmp}/missing/r.json"], "does not exist"),
    (["--plot", "{tmp}/plot.txt"], "does not end in a figure format"),
    (["--plot", "{tmp}"], "is a directory"),
])
def test_bench_output_paths_are_checked_before_running(tmp_path, capsys, args, needle):
    with pytest.raises(SystemExit) as exc:
        cli.main(["bench", "--quick", *(a.format(tmp=tmp_path) for a in args)])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert needle in err and "seer bench: error: argument " + args[0] in err


# ---- output files: atomic, never through a symlink ------------------------------------------------

def test_trace_refuses_to_write_through_a_symlink(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    link = tmp_path / "t.json"
    link.symlink_to(victim)
    out = run_seer("trace", "-n", "1", "--entities", "8", "-o", link)
    assert_usage_error(out, str(link), "is a symbolic link", "refusing to write through it")
    assert victim.read_text() == "precious" and link.is_symlink()
    # The policy is in the help text.
    assert "symbolic link" in " ".join(run_seer("trace", "--help").stdout.split())


def test_a_dangling_symlink_is_refused_too(tmp_path):
    link = tmp_path / "t.json"
    link.symlink_to(tmp_path / "would-be-created")
    out = run_seer("trace", "-n", "1", "--entities", "8", "-o", link)
    assert_usage_error(out, "is a symbolic link")
    assert not (tmp_path / "would-be-created").exists()


def test_to_chrome_refuses_a_symlink_and_a_missing_folder(tmp_path):
    import seer
    from seer.synthetic import SyntheticModel

    with seer.Runtime(SyntheticModel(8), workers=1, trace=True) as rt:
        rt.step(1.0)
        trace = rt.trace
    victim = tmp_path / "victim"
    victim.write_text("precious")
    (tmp_path / "link.json").symlink_to(victim)
    with pytest.raises(_io.OutputPathError, match="symbolic link"):
        trace.to_chrome(tmp_path / "link.json")
    with pytest.raises(_io.OutputPathError, match="does not exist"):
        trace.to_chrome(tmp_path / "missing" / "t.json")
    assert victim.read_text() == "precious" and not (tmp_path / "missing").exists()
    doc = trace.to_chrome(tmp_path / "t.json")
    assert json.loads((tmp_path / "t.json").read_text()) == doc


def test_trace_output_is_replaced_atomically(tmp_path):
    out = tmp_path / "t.json"
    out.write_text("old")
    assert cli.main(["trace", "-n", "2", "--entities", "16", "--work", "10", "-o", str(out)]) == 0
    assert json.loads(out.read_text())["traceEvents"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.json"]  # no temporary file left


def test_atomic_writer_keeps_the_old_file_when_writing_fails(tmp_path):
    target = tmp_path / "r.json"
    target.write_text("old")
    with pytest.raises(RuntimeError, match="disk on fire"):
        with _io.atomic_writer(target) as f:
            f.write("half")
            raise RuntimeError("disk on fire")
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


def test_atomic_write_honours_the_umask(tmp_path):
    old = os.umask(0o027)
    try:
        _io.atomic_write_text(tmp_path / "a.txt", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "a.txt").stat().st_mode) == 0o640


def test_seer_trace_onto_a_private_file_keeps_it_private(tmp_path, capsys):
    out = tmp_path / "t.json"
    out.write_text("old")
    os.chmod(out, 0o600)
    old = os.umask(0o022)
    try:
        assert cli.main(["trace", "-n", "1", "-w", "1", "--entities", "8", "-o", str(out)]) == 0
        _io.atomic_write_text(tmp_path / "new.txt", "x")  # a new file: the umask decides, as before
    finally:
        os.umask(old)
    assert stat.S_IMODE(out.stat().st_mode) == 0o600 and json.loads(out.read_text())["traceEvents"]
    assert stat.S_IMODE((tmp_path / "new.txt").stat().st_mode) == 0o644
    os.chmod(out, 0o640)
    _io.atomic_write_text(out, "y")
    assert stat.S_IMODE(out.stat().st_mode) == 0o640 and out.read_text() == "y"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new.txt", "t.json"]


def test_ensure_private_dir(tmp_path):
    old = os.umask(0o022)
    try:
        _io.ensure_private_dir(tmp_path / "x" / "y")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "x").stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "x" / "y").stat().st_mode) == 0o700
    (tmp_path / "f").write_text("")
    with pytest.raises(NotADirectoryError, match="not a directory"):
        _io.ensure_private_dir(tmp_path / "f" / "sub")


def test_console_script_runs():
    exe = shutil.which("seer")
    if exe is None:
        pytest.skip("the seer console script is not installed")
    out = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "trace" in out.stdout and "tune" in out.stdout


# ---- what SEER did not write is printed as text -------------------------------------------------------

def test_seer_info_shows_markup_and_escapes_in_paths_and_model_metadata_as_text(tmp_path):
    from seer.stpa import lookup

    cache = tmp_path / "[/bold]cache[red]"  # a folder "[" holding "bold]cache[red]"
    cache.mkdir(parents=True)
    doc = json.loads(lookup.shipped_model_path().read_text())
    doc["meta"]["trained"] = "\x1b]0;owned\x07\x1b[2J[/bold]"
    doc["meta"]["machines"] = ["\x1b[31mred\x1b[0m\u202e"]
    model = tmp_path / "[/]model.json"
    model.write_text(json.dumps(doc))
    env = dict(os.environ, SEER_CACHE_DIR=str(cache), SEER_STPA_MODEL=str(model), COLUMNS="400")
    out = subprocess.run([sys.executable, "-m", "seer.cli", "info", "--no-workloads"], capture_output=True,
                         text=True, timeout=120, env=env)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    text = out.stdout
    for ch in ("\x1b", "\x07", "\u202e"):
        assert ch not in text, repr(ch)
    assert str(cache) in text and str(model) in text
    assert "trained \\x1b]0;owned\\x07\\x1b[2J[/bold]" in text and "\\x1b[31mred\\x1b[0m\\u202e" in text


def test_bench_tables_show_a_note_as_text():
    import io

    from rich.console import Console

    from seer.bench.report import table

    note = "skipped: [/bold] \x1b[2J ImportError"
    doc = {"rows": [{"domain": "uav", "scenario": "[red]", "entities": 8, "system": "x", "kind": "y", "workers": 1,
                     "mean_ms": 0, "p50_ms": 0, "p99_ms": 0, "steps": 0, "note": note}],
           "reductions": [], "auto_vs_fixed": []}
    buf = io.StringIO()
    console = Console(file=buf, width=300)
    for t in table(doc):
        console.print(t)
    assert "[/bold] \\x1b[2J ImportError" in buf.getvalue() and "[red]" in buf.getvalue()
    assert "\x1b" not in buf.getvalue()
