"""The examples in examples/ run and reach their own determinism checks."""

import pathlib
import subprocess
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


@pytest.mark.parametrize("name, expect", [
    ("python_handlers.py", "identical results for 1 and 2 workers"),
    ("native_handlers.py", "bit-identical state for 1 and 2 workers"),
])
def test_example_runs(name, expect):
    out = subprocess.run([sys.executable, str(EXAMPLES / name)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert expect in out.stdout
