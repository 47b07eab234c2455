"""``seer new-env``: the package it writes installs and passes its own tests as generated
(both engines); bad names, existing folders and taken env ids are usage errors."""

import importlib.util
import os
import pathlib
import subprocess
import sys
import time

import pytest

from seer.cli import main


def _run(cmd, cwd, timeout):
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n{proc.stdout[-4000:]}\n" \
                                 f"{proc.stderr[-4000:]}"
    return proc.stdout


@pytest.mark.timeout(1500)
@pytest.mark.parametrize("engine", ["c", "numba"])
def test_the_generated_package_installs_and_passes_its_own_tests(engine, tmp_path):
    if engine == "numba":
        pytest.importorskip("numba", reason="--engine numba needs the numba extra")
    name = f"scaffold_{engine}_{os.getpid()}"  # unique: another run may have its own installed
    t0 = time.perf_counter()
    out = _run([sys.executable, "-m", "seer.cli", "new-env", name, "--engine", engine, "-C", str(tmp_path)],
               tmp_path, 60)
    root = tmp_path / name
    assert f"the env {name}_v0" in out and (root / "pyproject.toml").is_file()
    assert (root / "README.md").read_text().count("pip install --no-build-isolation") == 1
    try:
        _run([sys.executable, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps", str(root)],
             tmp_path, 600)
        installed = time.perf_counter()
        tests = _run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], root, 900)
        done = time.perf_counter()
        assert " passed" in tests and "failed" not in tests and "error" not in tests, tests
        if importlib.util.find_spec("ray") is not None:  # only the Ray test may skip, and only without Ray
            assert "skipped" not in tests, tests
        # the env is SEER's now: a fresh process finds it through the registry
        found = _run([sys.executable, "-c", "import seer.registry; print(sorted(seer.registry.available()))"],
                     tmp_path, 120)
        assert f"'{name}_v0'" in found
        print(f"seer new-env {engine}: {installed - t0:.1f} s to installed, {done - t0:.1f} s to passing tests")
    finally:
        subprocess.run([sys.executable, "-m", "pip", "uninstall", "-y", "-q", name.replace("_", "-")],
                       capture_output=True, timeout=300)


def _usage_error(argv, capsys) -> str:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    return capsys.readouterr().err


@pytest.mark.parametrize("bad", ["9lives", "My-Env", "with space", "class", "seer", "tail_", "json"])
def test_a_name_that_is_no_package_name_is_a_usage_error(bad, tmp_path, capsys):
    err = _usage_error(["new-env", bad, "-C", str(tmp_path)], capsys)
    assert f"NAME {bad!r} is invalid" in err
    assert list(tmp_path.iterdir()) == []


def test_an_existing_folder_is_never_overwritten(tmp_path, capsys):
    mine = tmp_path / "epidemic"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    err = _usage_error(["new-env", "epidemic", "-C", str(tmp_path)], capsys)
    assert "already exists" in err and "never overwrites" in err
    assert [p.name for p in mine.iterdir()] == ["notes.txt"] and (mine / "notes.txt").read_text() == "mine"


def test_a_name_that_is_importable_already_is_refused(tmp_path, capsys):
    err = _usage_error(["new-env", "pytest_timeout", "-C", str(tmp_path)], capsys)
    assert "'pytest_timeout' is taken" in err and not (tmp_path / "pytest_timeout").exists()


def test_an_env_id_that_is_registered_already_is_refused(tmp_path, capsys):
    err = _usage_error(["new-env", "uav_swarm", "-C", str(tmp_path)], capsys)
    assert "'uav_swarm_v0' is registered already" in err
    assert not (tmp_path / "uav_swarm").exists()


def test_names_and_files_of_a_numba_package(tmp_path, capsys):
    assert main(["new-env", "sir_v2", "--engine", "numba", "-C", str(tmp_path)]) == 0
    root = tmp_path / "sir_v2"
    files = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
    assert files == ["README.md", "pyproject.toml", "src/sir_v2/__init__.py", "src/sir_v2/_kernels.py",
                     "src/sir_v2/sir_v2.py", "tests/test_sir_v2.py"]
    text = (root / "src/sir_v2/sir_v2.py").read_text()
    assert "class SirEnv(seer.NativeEnv)" in text and "{{" not in text
    assert 'sir_v2 = "sir_v2.sir_v2"' in (root / "pyproject.toml").read_text()
    assert "{{" not in "".join(pathlib.Path(root, f).read_text() for f in files)
