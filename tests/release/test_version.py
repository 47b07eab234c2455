"""One version, one distribution name: ``seer --version``, ``seer.__version__``,
the installed package metadata and pyproject.toml agree, and the name users
``pip install`` is ``seer-marl`` (the distribution ``seer`` on PyPI is another
project)."""

import pathlib
import subprocess
import sys
import tomllib

import pytest

import seer
from seer import cli
from seer._version import DISTRIBUTION, installed_distribution

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_seer_version_flag_prints_the_package_version(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"seer {seer.__version__} (distribution seer-marl)"


def test_the_console_script_answers_version():
    # the `seer` command as installed: the console_scripts entry point of the metadata
    (script,) = [ep for ep in installed_distribution().entry_points if ep.group == "console_scripts"]
    assert script.name == "seer"
    code = f"import sys; from {script.module} import {script.attr} as m; sys.exit(m(['--version']))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[:2] == ["seer", seer.__version__]


def test_pyproject_takes_name_and_version_from_the_package():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert meta["project"]["name"] == DISTRIBUTION == "seer-marl"
    assert "version" in meta["project"]["dynamic"] and "version" not in meta["project"]
    assert meta["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "seer._version.__version__"}


def test_the_installed_metadata_is_this_version():
    dist = installed_distribution()
    assert dist is not None, "no installed distribution provides the seer package"
    assert dist.version == seer.__version__


def test_the_plugin_example_requires_the_renamed_distribution():
    meta = tomllib.loads((ROOT / "examples" / "seer_consensus" / "pyproject.toml").read_text())
    reqs = meta["build-system"]["requires"] + meta["project"]["dependencies"]
    names = {r.split(">")[0].split("=")[0].split("[")[0].strip() for r in reqs}
    assert "seer-marl" in names and "seer" not in names
