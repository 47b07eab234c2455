"""The env registry (entry point group ``seer.envs``): the built-ins are
registered and load; outside envs registered the same way show up in
``seer info`` and run under ``seer trace``; unknown, broken and non-env
entries fail with errors that name them."""

import importlib.metadata
import json
import subprocess
import sys
import textwrap

import pytest

import seer
from seer import cli, registry
from seer._version import DISTRIBUTION, installed_distribution
from seer.errors import EnvLoadError, SeerError, UnknownEnvError

TOY = '''
import gymnasium
import numpy as np
from pettingzoo import ParallelEnv

SCENARIOS = {"tiny": 2, "big": 4}


class ToyEnv(ParallelEnv):
    metadata = {"name": "toy_v0"}

    def __init__(self, scenario="tiny"):
        self.possible_agents = [f"a{i}" for i in range(SCENARIOS[scenario])]
        self.agents = []
        self.t = 0

    def observation_space(self, agent):
        return gymnasium.spaces.Box(0.0, 10.0, (1,), np.float32)

    def action_space(self, agent):
        return gymnasium.spaces.Discrete(2)

    def reset(self, seed=None, options=None):
        self.agents, self.t = list(self.possible_agents), 0
        return {a: np.zeros(1, np.float32) for a in self.agents}, {a: {} for a in self.agents}

    def step(self, actions):
        self.t += 1
        done = self.t >= 2  # short episodes: the traced run must reset on its own
        obs = {a: np.full(1, self.t, np.float32) for a in self.agents}
        rew = {a: float(actions[a]) for a in self.agents}
        term = {a: False for a in self.agents}
        trunc = {a: done for a in self.agents}
        infos = {a: {} for a in self.agents}
        if done:
            self.agents = []
        return obs, rew, term, trunc, infos


def parallel_env(**kwargs):
    return ToyEnv(**kwargs)
'''

PLUGINS = {
    "toy_v0": ("seer_test_toy_env", TOY),
    "broken_v0": ("seer_test_broken_env", "raise ImportError('needs libfoo, which is not installed')\n"),
    "notenv_v0": ("seer_test_not_an_env", "SCENARIOS = {'x': 1}\n"),
    "exits_v0": ("seer_test_exits_env", "raise SystemExit(3)\n"),
    "boom_v0": ("seer_test_boom_env", "def parallel_env(**kwargs):\n    raise SystemExit('boom at build')\n"),
    "ansi_v0": ("seer_test_ansi_env", "raise ImportError('\\x1b]0;owned\\x07\\x1b[2J [/bold] needs libansi')\n"),
    "badscen_v0": ("seer_test_bad_scenarios", "SCENARIOS = 42\n\ndef parallel_env(**kwargs):\n    return None\n"),
    "raisingscen_v0": ("seer_test_raising_scenarios", textwrap.dedent("""
        class Table(dict):
            def __iter__(self):
                raise SystemExit("scenarios exit")

        SCENARIOS = Table(a=1)

        def parallel_env(**kwargs):
            return None
        """)),
}


@pytest.fixture
def plugins(tmp_path, monkeypatch):
    """The real entry points plus the PLUGINS, whose modules live in tmp_path."""
    for module, source in PLUGINS.values():
        (tmp_path / f"{module}.py").write_text(textwrap.dedent(source))
    monkeypatch.syspath_prepend(str(tmp_path))
    real = importlib.metadata.entry_points
    extra = [importlib.metadata.EntryPoint(name=name, value=module, group=registry.GROUP)
             for name, (module, _) in PLUGINS.items()]

    def entry_points(**params):
        found = real(**params)
        if params.get("group") == registry.GROUP:
            return importlib.metadata.EntryPoints(list(found) + extra)
        return found

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    registry.available(refresh=True)
    yield
    monkeypatch.undo()
    for module, _ in PLUGINS.values():
        sys.modules.pop(module, None)
    registry.available(refresh=True)  # later tests see the real registry again


# ---- the built-ins ---------------------------------------------------------------------------------

def test_builtins_are_declared_as_entry_points():
    # Straight from the package metadata, so a missing pyproject table fails here.
    eps = {ep.name: ep.value for ep in importlib.metadata.entry_points(group="seer.envs")}
    assert eps.get("uav_swarm_v0") == "seer.envs.uav_swarm_v0"
    assert eps.get("wireless_v0") == "seer.envs.wireless_v0"


@pytest.mark.parametrize("name, scenario", [("uav_swarm_v0", "small"), ("wireless_v0", "small")])
def test_builtins_are_registered_and_load(name, scenario):
    entry = registry.available()[name]
    assert (entry.name, entry.module, entry.distribution, entry.version) == (
        name, f"seer.envs.{name}", DISTRIBUTION, seer.__version__)
    mod = registry.load(name)
    assert mod is entry.load() and callable(mod.parallel_env) and callable(mod.env)
    assert scenario in registry.scenarios(mod) and callable(mod.make_traced)
    env = mod.parallel_env(scenario=scenario, workers=1)
    try:
        obs, _ = env.reset(seed=0)
        assert set(obs) == set(env.agents)
    finally:
        env.close()


def test_available_is_sorted_and_a_copy():
    names = list(registry.available())
    assert names == sorted(names)
    registry.available().clear()
    assert list(registry.available()) == names


# ---- unknown and bad entries ----------------------------------------------------------------------

def test_an_unknown_name_lists_the_registered_ones():
    with pytest.raises(UnknownEnvError) as exc:
        registry.load("nope_v0")
    msg = str(exc.value)
    assert "'nope_v0' is not registered" in msg and "'uav_swarm_v0'" in msg and "'wireless_v0'" in msg
    assert "seer.envs" in msg
    assert isinstance(exc.value, KeyError) and isinstance(exc.value, ValueError)
    assert isinstance(exc.value, SeerError) and seer.UnknownEnvError is UnknownEnvError
    assert exc.value.name == "nope_v0" and {"uav_swarm_v0", "wireless_v0"} <= set(exc.value.available)


def test_a_non_string_name_is_unknown_not_a_crash():
    with pytest.raises(UnknownEnvError, match="None is not registered"):
        registry.load(None)


def test_a_broken_module_names_the_entry_point_and_chains_the_cause(plugins):
    with pytest.raises(EnvLoadError) as exc:
        registry.load("broken_v0")
    msg = str(exc.value)
    assert "'broken_v0'" in msg and "'seer_test_broken_env'" in msg and "no distribution" in msg
    assert "failed to import: ImportError: needs libfoo" in msg
    assert isinstance(exc.value.__cause__, ImportError) and isinstance(exc.value, ImportError)
    assert exc.value.env == "broken_v0" and exc.value.name == "seer_test_broken_env"
    assert seer.EnvLoadError is EnvLoadError


def test_a_module_without_parallel_env_is_refused(plugins):
    with pytest.raises(EnvLoadError, match=r"'notenv_v0'.*is not an env module: 'seer_test_not_an_env' has no "
                                           r"callable parallel_env"):
        registry.load("notenv_v0")


def test_the_distribution_is_named_in_load_errors(monkeypatch):
    dist = installed_distribution()
    ep = next(ep for ep in dist.entry_points if ep.group == registry.GROUP)
    name = dist.metadata["Name"]
    entry = registry.EnvEntry("ghost_v0", "seer_test_no_such_module", name, dist.version,
                              importlib.metadata.EntryPoint("ghost_v0", "seer_test_no_such_module", ep.group))
    with pytest.raises(EnvLoadError, match=f"distribution {name} {dist.version}.*ModuleNotFoundError"):
        entry.load()


# ---- outside envs ----------------------------------------------------------------------------------

def test_an_outside_env_is_listed_and_loads(plugins):
    entries = registry.available()
    assert {"toy_v0", "broken_v0", "notenv_v0", "uav_swarm_v0", "wireless_v0"} <= set(entries)
    assert entries["toy_v0"].module == "seer_test_toy_env" and entries["toy_v0"].distribution is None
    mod = registry.load("toy_v0")
    assert registry.scenarios(mod) == ["tiny", "big"]
    assert mod.parallel_env(scenario="big").possible_agents == ["a0", "a1", "a2", "a3"]


def test_the_scan_is_cached_until_refreshed(plugins, monkeypatch):
    assert "toy_v0" in registry.available()
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda **params: importlib.metadata.EntryPoints([]))
    assert "toy_v0" in registry.available()  # cached: no rescan per call
    assert registry.available(refresh=True) == {}
    with pytest.raises(UnknownEnvError, match=r"expected one of \[\]"):
        registry.load("toy_v0")


def test_a_name_registered_twice_warns_and_the_first_wins(monkeypatch):
    eps = [importlib.metadata.EntryPoint("dup_v0", "first_mod", registry.GROUP),
           importlib.metadata.EntryPoint("dup_v0", "second_mod", registry.GROUP)]
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda **params: importlib.metadata.EntryPoints(eps))
    try:
        twice = "'dup_v0' is registered twice.*'first_mod'.*is used.*'second_mod'.*is ignored"
        with pytest.warns(RuntimeWarning, match=twice):
            entries = registry.available(refresh=True)
        assert entries["dup_v0"].module == "first_mod"
    finally:
        monkeypatch.undo()
        registry.available(refresh=True)


def test_seer_info_json_lists_every_registered_env(plugins, capsys):
    assert cli.main(["info", "--no-workloads", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    envs = {e["name"]: e for e in doc["envs"]}
    assert envs["toy_v0"] == {"name": "toy_v0", "module": "seer_test_toy_env", "distribution": None,
                              "version": None, "scenarios": ["tiny", "big"], "error": None}
    assert envs["uav_swarm_v0"]["distribution"] == installed_distribution().metadata["Name"]
    assert "xlarge" in envs["uav_swarm_v0"]["scenarios"]
    assert "needs libfoo" in envs["broken_v0"]["error"] and envs["broken_v0"]["scenarios"] is None
    assert "parallel_env" in envs["notenv_v0"]["error"]
    assert doc["auto"] is None and "usable_cores" in doc["hardware"]


def test_seer_info_table_lists_the_envs(plugins, capsys):
    assert cli.main(["info", "--no-workloads"]) == 0
    out = capsys.readouterr().out
    assert "registered envs" in out and "toy_v0" in out and "seer_test_toy_env" in out and "unavailable" in out


def test_seer_info_json_to_a_file(tmp_path, capsys):
    out = tmp_path / "info.json"
    assert cli.main(["info", "--no-workloads", "--json", str(out)]) == 0
    assert {e["name"] for e in json.loads(out.read_text())["envs"]} >= {"uav_swarm_v0", "wireless_v0"}
    assert "registered envs" in capsys.readouterr().out


def test_seer_trace_runs_an_outside_env_through_wrap(plugins, tmp_path, capsys):
    out = tmp_path / "toy.json"
    assert cli.main(["trace", "toy_v0", "--scenario", "big", "-n", "5", "-w", "1", "-o", str(out)]) == 0
    events = [e for e in json.loads(out.read_text())["traceEvents"] if e["ph"] == "X"]
    assert events
    assert "toy_v0: 5 steps, 5 events" in capsys.readouterr().out  # one event per wrapped step


@pytest.mark.parametrize("args, needles", [
    (["broken_v0"], ["workload 'broken_v0' is not available here", "entry point 'broken_v0'", "needs libfoo"]),
    (["notenv_v0"], ["is not an env module", "parallel_env"]),
    (["toy_v0", "--scenario", "huge"], ["--scenario 'huge' is unknown for toy_v0", "['tiny', 'big']"]),
    (["toy_v0", "--entities", "8"], ["--entities applies only to", "make_traced()", "toy_v0"]),
    (["toy_v0", "--work", "8"], ["--work applies only to the synthetic workloads"]),
    (["nope_v0"], ["workload 'nope_v0' is neither a synthetic workload", "'toy_v0'", "'uav_swarm_v0'"]),
])
def test_seer_trace_misuse_of_registered_envs(plugins, tmp_path, capsys, args, needles):
    with pytest.raises(SystemExit) as exc:
        cli.main(["trace", *args, "-o", str(tmp_path / "t.json")])
    assert exc.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("seer trace: error: ")
    for needle in needles:
        assert needle in last, (needle, last)
    assert not (tmp_path / "t.json").exists()


def test_scenario_is_refused_for_a_module_without_scenarios(tmp_path, monkeypatch, capsys):
    (tmp_path / "seer_test_plain_env.py").write_text("from seer_test_toy_env import parallel_env\n")
    (tmp_path / "seer_test_toy_env.py").write_text(textwrap.dedent(TOY))
    monkeypatch.syspath_prepend(str(tmp_path))
    eps = [importlib.metadata.EntryPoint("plain_v0", "seer_test_plain_env", registry.GROUP)]
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda **params: importlib.metadata.EntryPoints(eps))
    registry.available(refresh=True)
    try:
        with pytest.raises(SystemExit):
            cli.main(["trace", "plain_v0", "--scenario", "tiny", "-o", str(tmp_path / "t.json")])
        assert "declares no SCENARIOS" in capsys.readouterr().err
    finally:
        monkeypatch.undo()
        for m in ("seer_test_plain_env", "seer_test_toy_env"):
            sys.modules.pop(m, None)
        registry.available(refresh=True)


def test_unknown_env_from_the_console_is_one_line_listing_the_registered_names(tmp_path):
    out = subprocess.run([sys.executable, "-m", "seer.cli", "trace", "nope_v0", "-o", str(tmp_path / "t.json")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("seer trace: error: workload 'nope_v0'")
    assert "'uav_swarm_v0'" in last and "'wireless_v0'" in last


# ---- plug-ins that must not take `seer info` or SEER's own envs down --------------------------------

@pytest.mark.parametrize("name, needle", [
    ("exits_v0", "'exits_v0' = 'seer_test_exits_env' of group 'seer.envs' (no distribution) failed to import: "
                 "SystemExit: 3"),
    ("badscen_v0", "is not a usable env module: seer_test_bad_scenarios.SCENARIOS is int: expected a mapping"),
    ("raisingscen_v0", "reading seer_test_raising_scenarios.SCENARIOS failed: SystemExit: scenarios exit"),
])
def test_a_plugin_that_exits_or_declares_bad_scenarios_is_an_env_load_error(plugins, name, needle):
    with pytest.raises(EnvLoadError) as exc:
        registry.load(name)
    assert needle in str(exc.value) and exc.value.env == name


def test_seer_info_lists_the_others_beside_plugins_that_exit(plugins, capsys):
    assert cli.main(["info", "--no-workloads", "--json"]) == 0
    envs = {e["name"]: e for e in json.loads(capsys.readouterr().out)["envs"]}
    assert "SystemExit: 3" in envs["exits_v0"]["error"] and "SCENARIOS is int" in envs["badscen_v0"]["error"]
    assert "SystemExit: scenarios exit" in envs["raisingscen_v0"]["error"]
    assert envs["toy_v0"]["scenarios"] == ["tiny", "big"] and envs["wireless_v0"]["error"] is None
    assert cli.main(["info", "--no-workloads"]) == 0  # the tables too
    out = capsys.readouterr().out
    assert "exits_v0" in out and "toy_v0" in out and "wireless_v0" in out


def _stale_seer(module, name):
    # An earlier install's metadata (e.g. the pre-rename distribution ``seer``) on this machine.
    return module == f"seer.envs.{name}"


def _install_metadata(folder, name, version, entry_points):
    """A distribution's metadata in ``folder`` (put on sys.path: importlib.metadata finds it first)."""
    info = folder / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(entry_points)


@pytest.fixture
def stale_install(tmp_path, monkeypatch):
    """Metadata of an earlier install under the pre-rename name, first on the path."""
    _install_metadata(tmp_path, "seer", "0.0.9", "[seer.envs]\nwireless_v0 = seer.envs.wireless_v0\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    monkeypatch.undo()
    registry.available(refresh=True)


def test_stale_metadata_of_an_earlier_install_names_the_running_distribution(stale_install):
    with pytest.warns(RuntimeWarning, match=r"distribution seer 0.0.9\) registers SEER's own module too and is "
                                            r"ignored \(metadata of an earlier install\? 'pip uninstall seer'"):
        entries = registry.available(refresh=True)
    assert (entries["wireless_v0"].distribution, entries["wireless_v0"].version) == (DISTRIBUTION, seer.__version__)
    assert ("wireless_v0", "0.0.9") in {(e.name, e.version) for e, _ in registry.ignored()}


@pytest.fixture
def impostor(tmp_path, monkeypatch):
    """An installed outside distribution, first on the path, that registers SEER's own ``wireless_v0``."""
    _install_metadata(tmp_path, "evil-envs", "6.6", "[seer.envs]\nwireless_v0 = seer_test_evil_wireless\n")
    marker = tmp_path / "imported"
    (tmp_path / "seer_test_evil_wireless.py").write_text(
        f"import pathlib\npathlib.Path({str(marker)!r}).touch()\n\ndef parallel_env(**kwargs):\n    return None\n")
    monkeypatch.syspath_prepend(str(tmp_path))  # installed there: importlib.metadata finds it first
    assert [ep.dist.metadata["Name"] for ep in importlib.metadata.entry_points(group=registry.GROUP)
            if ep.name == "wireless_v0"][0] == "evil-envs"
    yield marker
    monkeypatch.undo()
    sys.modules.pop("seer_test_evil_wireless", None)
    registry.available(refresh=True)


def test_an_outside_distribution_cannot_replace_seers_own_env(impostor, capsys):
    with pytest.warns(RuntimeWarning, match=r"env 'wireless_v0' is SEER's own: .*distribution evil-envs 6.6.* is "
                                            r"ignored \(SEER's 'seer.envs.wireless_v0' is used\)"):
        entries = registry.available(refresh=True)
    assert entries["wireless_v0"].module == "seer.envs.wireless_v0"
    assert registry.load("wireless_v0").__name__ == "seer.envs.wireless_v0" and not impostor.exists()
    [(entry, why)] = [(e, why) for e, why in registry.ignored() if not _stale_seer(e.module, e.name)]
    assert entry.distribution == "evil-envs" and "register the outside env under another name" in why
    assert cli.main(["info", "--no-workloads", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {e["name"]: e["module"] for e in doc["envs"]}["wireless_v0"] == "seer.envs.wireless_v0"
    assert [(e["name"], e["distribution"]) for e in doc["envs_ignored"]
            if not _stale_seer(e["module"], e["name"])] == [("wireless_v0", "evil-envs")]
    assert not impostor.exists()


def test_a_plugins_message_reaches_the_terminal_as_text(plugins, tmp_path, capsys):
    assert cli.main(["info", "--no-workloads"]) == 0  # no MarkupError from its "[/bold]"
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "ansi_v0" in out and "\\x1b" in out and "[/bold]" in out  # shown as text (the table may wrap it)
    with pytest.raises(SystemExit) as exc:
        cli.main(["trace", "ansi_v0", "-o", str(tmp_path / "t.json")])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "\x1b" not in err and "\x07" not in err
    assert "\\x1b]0;owned\\x07\\x1b[2J [/bold] needs libansi" in err


def test_seer_trace_of_a_plugin_that_fails_to_build_is_its_error_not_a_traceback(plugins, tmp_path, capsys):
    assert cli.main(["trace", "boom_v0", "-o", str(tmp_path / "t.json")]) == 1
    err = capsys.readouterr().err
    assert err.strip() == "seer trace: error: boom_v0 failed to start: SystemExit: boom at build"
    assert not (tmp_path / "t.json").exists()
