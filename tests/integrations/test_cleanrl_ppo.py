"""examples/cleanrl_ppo_uav.py: the torch PPO runs on uav_swarm_v0 (and on
mpe2's Discrete simple_spread) and learns only from agents that acted."""

import importlib.util
import math
import pathlib

import pytest

pytest.importorskip("torch")
ROOT = pathlib.Path(__file__).resolve().parents[2]


def load():
    spec = importlib.util.spec_from_file_location("cleanrl_ppo_uav_example", ROOT / "examples" / "cleanrl_ppo_uav.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def check(history):
    prev = 0
    for row in history:
        for key in ("pg_loss", "v_loss", "entropy", "approx_kl"):
            assert math.isfinite(row[key]), (key, row)
        # the loss saw exactly the transitions of agents that acted in the rollout
        assert row["transitions"] == row["agent_steps"] - prev
        prev = row["agent_steps"]


def test_trains_on_uav_swarm_with_deaths():
    out = load().main(["--iterations", "3", "--num-steps", "32", "--num-copies", "2", "--max-cycles", "12",
                       "--workers", "1"])
    check(out["history"])
    h = out["history"]
    # crashes happen under a random policy: fewer transitions than rows x steps
    assert h[-1]["agent_steps"] < 3 * 32 * 16 and h[-1]["episode_return"] is not None


def test_plain_loop_gives_the_same_numbers():
    args = ["--iterations", "2", "--num-steps", "16", "--num-copies", "2", "--max-cycles", "10", "--workers", "1"]
    a = load().main(args)["history"]
    b = load().main(args + ["--plain"])["history"]
    assert [r["agent_steps"] for r in a] == [r["agent_steps"] for r in b]
    assert [r["v_loss"] for r in a] == pytest.approx([r["v_loss"] for r in b], rel=1e-5)


def test_discrete_actions_on_simple_spread():
    pytest.importorskip("mpe2")
    out = load().main(["--env", "simple_spread", "--iterations", "2", "--num-steps", "16", "--num-copies", "2",
                       "--workers", "1"])
    check(out["history"])
