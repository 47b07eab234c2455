"""The sdist carries what a build from source needs: every C source and header
of the core and of the built-in envs, the public headers, the cffi build
scripts, the licence and the changelog, and nothing compiled."""

import pathlib
import shutil
import subprocess
import sys
import tarfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SKIP = shutil.ignore_patterns(".git", "*.so", "*.o", "__pycache__", "*.egg-info", "build", "dist", ".pytest_cache",
                              ".hypothesis", ".benchmarks", "site", "results")


@pytest.fixture(scope="module")
def sdist_names(tmp_path_factory):
    src = tmp_path_factory.mktemp("src") / "seer"
    shutil.copytree(ROOT, src, ignore=SKIP)
    out = tmp_path_factory.mktemp("dist")
    # setuptools' own PEP 517 hook, as `python -m build --sdist` calls it
    code = f"from setuptools import build_meta; print(build_meta.build_sdist({str(out)!r}))"
    run = subprocess.run([sys.executable, "-c", code], cwd=src, capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr[-4000:]
    name = run.stdout.strip().splitlines()[-1]
    assert name.startswith("seer_marl-") and name.endswith(".tar.gz"), name
    with tarfile.open(out / name) as tar:
        top = name[: -len(".tar.gz")]
        return {m.name[len(top) + 1:] for m in tar.getmembers() if m.isfile()}


@pytest.mark.timeout(300)
def test_the_sdist_ships_every_c_source_and_header(sdist_names):
    wanted = {p.relative_to(ROOT).as_posix() for d in ("csrc", "seer/envs", "seer/include")
              for p in (ROOT / d).rglob("*") if p.suffix in (".c", ".h") and "build" not in p.parts}
    assert wanted, "no C sources found in the tree"
    assert not wanted - sdist_names, f"missing from the sdist: {sorted(wanted - sdist_names)}"


@pytest.mark.timeout(300)
def test_the_sdist_ships_build_scripts_licence_and_changelog(sdist_names):
    need = {"setup.py", "pyproject.toml", "LICENSE", "CHANGELOG.md", "README.md", "seer/_build.py",
            "seer/_build_synth.py", "seer/_cdef.py", "seer/envs/_build.py", "seer/_version.py"}
    assert not need - sdist_names, f"missing from the sdist: {sorted(need - sdist_names)}"


@pytest.mark.timeout(300)
def test_the_sdist_holds_nothing_compiled(sdist_names):
    compiled = sorted(n for n in sdist_names if n.endswith((".so", ".o", ".pyc")))
    assert not compiled, compiled
