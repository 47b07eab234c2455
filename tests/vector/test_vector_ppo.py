"""examples/ppo_uav.py runs (a short version) on both envs it supports.

That the return rises is shown by a longer run, documented in
bench/results/vector.md; here only that training runs and yields finite
numbers."""

import importlib.util
import math
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]  # tests/vector/ -> the repo


def load_example():
    spec = importlib.util.spec_from_file_location("ppo_uav_example", ROOT / "examples" / "ppo_uav.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def check(history, iterations):
    assert len(history) == iterations
    for row in history:
        for key in ("pg_loss", "v_loss", "entropy", "approx_kl", "agent_steps_per_s"):
            assert math.isfinite(row[key]), (key, row)
        assert row["agent_steps"] > 0
    assert history[-1]["episode_return"] is not None and math.isfinite(history[-1]["episode_return"])


def test_ppo_on_uav_swarm():
    pytest.importorskip("seer.envs.uav_swarm_v0")
    out = load_example().main(["--iterations", "2", "--num-steps", "16", "--num-copies", "2", "--max-cycles", "8",
                               "--workers", "2", "--backend", "thread"])
    check(out["history"], 2)
    assert "uav_swarm_v0" in out["env"] and "backend='thread'" in out["env"]


def test_ppo_on_simple_spread():
    pytest.importorskip("mpe2")
    out = load_example().main(["--env", "simple_spread", "--iterations", "2", "--num-steps", "16",
                               "--num-copies", "2", "--max-cycles", "8", "--workers", "2"])
    check(out["history"], 2)
    assert "simple_spread_v3" in out["env"] and "backend='process'" in out["env"]
