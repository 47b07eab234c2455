"""seer.integrations.torchrl: TorchRL's env checks, the agent group's masks
and per-agent dones, partial resets, and the example training."""

import functools
import importlib
import math
import pathlib
import sys

import numpy as np
import pytest

from _integration_toy import DyingAgents

pytest.importorskip("torchrl")
import torch  # noqa: E402
from torchrl.envs.utils import check_env_specs  # noqa: E402

from seer.integrations.torchrl import SeerTorchRLEnv  # noqa: E402

toy = functools.partial(DyingAgents, n_agents=3, max_steps=6, die={1: 2})


@pytest.fixture
def env():
    e = SeerTorchRLEnv(toy, 2, backend="thread", workers=1)
    yield e
    e.close()


def test_specs_pass_torchrl_checks(env):
    check_env_specs(env)
    assert env.batch_size == torch.Size([2])
    assert env.full_observation_spec["agents", "observation"].shape == (2, 3, 4)
    assert env.full_action_spec["agents", "action"].shape == (2, 3, 2)


def test_rollout_masks_dones_and_partial_resets(env):
    env.set_seed(0)
    td = env.rollout(14, break_when_any_done=False)   # two 6-step episodes per copy, reset by TorchRL
    assert td.batch_size == torch.Size([2, 14])
    mask = td["agents", "mask"][0].numpy()            # [steps, agents]: acts in this transition
    done = td["next", "agents", "done"][0, :, :, 0].numpy()
    rew = td["next", "agents", "reward"][0, :, :, 0].numpy()
    t = np.arange(14) % 6 + 1
    dead = (t > 2) & (t <= 6)
    np.testing.assert_array_equal(mask[:, 1], ~dead)   # agent 1 acts at steps 1 and 2 of each episode only
    assert mask[:, [0, 2]].all()
    assert (rew[~mask] == 0).all() and (rew[mask] > 0).all()
    np.testing.assert_array_equal(done[:, 1], t >= 2)          # set at its death, kept while it is gone
    np.testing.assert_array_equal(done[:, 0], t == 6)
    np.testing.assert_array_equal(td["next", "done"][0, :, 0].numpy(), t == 6)   # the copy ends with its last agent
    term = td["next", "agents", "terminated"][0, :, :, 0].numpy()
    trunc = td["next", "agents", "truncated"][0, :, :, 0].numpy()
    assert term[:, 1][t >= 2].all() and not trunc[:, 1].any() and trunc[:, 0][t == 6].all()
    # after TorchRL's reset the observations start again at t = 0
    assert (td["agents", "observation"][0, 6, :, 1] == 0).all()


def test_needs_disabled_autoreset_and_box_observations():
    import seer.vector

    envs = seer.vector.make(toy, 1, backend="thread", workers=1)
    try:
        with pytest.raises(ValueError, match="DISABLED"):
            SeerTorchRLEnv(envs)
    finally:
        envs.close()
    with pytest.raises(ValueError, match="autoreset_mode"):
        SeerTorchRLEnv(toy, 1, autoreset_mode="next_step")


def test_uav_swarm_rollout_and_clipped_actions():
    from seer.envs import uav_swarm_v0

    env = SeerTorchRLEnv(lambda: uav_swarm_v0.parallel_env(scenario="small", max_cycles=5, workers=1), 2,
                         backend="thread", workers=1, clip_actions=True)
    try:
        check_env_specs(env)
        td = env.rollout(12, policy=lambda td: td.set(("agents", "action"), 3 * torch.randn(2, 8, 3)),
                         break_when_any_done=False)
        assert td["agents", "observation"].shape == (2, 12, 8, 51)
        assert torch.isfinite(td["next", "agents", "reward"]).all()
    finally:
        env.close()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("batched", [True, False])
def test_fast_step_and_reset_matches_torchrl_generic_path(batched):
    # the env's own step_and_maybe_reset skips TorchRL's step_mdp: the rollout it gives (keys, values,
    # partial resets of finished copies, the state) must be TorchRL's generic one
    from torchrl.envs import EnvBase

    from seer.envs import uav_swarm_v0

    class Generic(SeerTorchRLEnv):
        step_and_maybe_reset = EnvBase.step_and_maybe_reset

    outs = []
    for cls in (Generic, SeerTorchRLEnv):
        e = cls(lambda: uav_swarm_v0.parallel_env(scenario="small", max_cycles=7, workers=1),
                2 if batched else None, batched=batched, return_state=True, backend="thread", workers=1)
        try:
            e.set_seed(3)
            torch.manual_seed(0)
            outs.append(e.rollout(20, break_when_any_done=False))
        finally:
            e.close()
    generic, fast = outs
    assert set(fast.keys(True, True)) == set(generic.keys(True, True))
    for k in generic.keys(True, True):
        assert torch.equal(fast[k], generic[k]), k
    assert fast["next", "done"].sum() >= 2  # episodes ended and were reset inside the rollout


def test_example_trains():
    path = pathlib.Path(__file__).resolve().parents[2] / "examples" / "torchrl_uav.py"
    spec = importlib.util.spec_from_file_location("torchrl_uav_example", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = mod.main(["--iterations", "2", "--num-steps", "16", "--num-copies", "2", "--max-cycles", "10",
                    "--workers", "1", "--epochs", "1"])
    assert len(out["history"]) == 2
    for row in out["history"]:
        assert row["agent_steps"] > 0 and math.isfinite(row["loss_objective"]) and math.isfinite(row["loss_critic"])


def test_example_reports_per_agent_episode_returns():
    """The example's return is the same metric as the other trainer examples':
    one agent's rewards summed over the steps it acted, ended at its own done."""
    path = pathlib.Path(__file__).resolve().parents[2] / "examples" / "torchrl_uav.py"
    spec = importlib.util.spec_from_file_location("torchrl_uav_example", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    # 1 copy, 3 steps, 2 agents: agent 0 acts every step and ends at t=2; agent 1 ends at t=0,
    # then sits out t=1 (no reward counted) and runs on.
    rew = torch.tensor([[[1.0, 2.0], [3.0, 50.0], [4.0, 5.0]]]).unsqueeze(-1)
    mask = torch.tensor([[[True, True], [True, False], [True, True]]])
    done = torch.tensor([[[False, True], [False, False], [True, False]]]).unsqueeze(-1)
    finished = []
    running = mod.episode_returns(rew, mask, done, None, finished)
    assert finished == [2.0, 8.0]
    assert running.tolist() == [[0.0, 5.0]]
    running = mod.episode_returns(rew[:, :1], mask[:, :1], torch.ones_like(done[:, :1]), running, finished)
    assert finished == [2.0, 8.0, 1.0, 7.0]


def test_missing_torchrl_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "torchrl", None)
    monkeypatch.delitem(sys.modules, "seer.integrations.torchrl", raising=False)
    with pytest.raises(ImportError, match=r"pip install 'seer-marl\[torchrl\]'"):
        importlib.import_module("seer.integrations.torchrl")


def _uav_copies(lives):
    from seer.envs import uav_swarm_v0

    return lambda: uav_swarm_v0.parallel_env(scenario="small", max_cycles=next(lives), workers=1)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("with_policy", [False, True])
@pytest.mark.parametrize("break_any", [False, True])
@pytest.mark.parametrize("copies", ["python", "python, one agent", "native"])
def test_fast_rollout_matches_torchrl_generic_rollout(batched, with_policy, break_any, copies):
    # the env's own rollout writes into preallocated buffers (native copies: every step's random actions
    # in one draw): its result (keys, values, names, resets of finished copies, early stop) and where it
    # leaves torch's generator must be TorchRL's generic loop's
    import itertools

    from torchrl.envs import EnvBase

    class Generic(SeerTorchRLEnv):
        rollout = EnvBase.rollout
        step_and_maybe_reset = EnvBase.step_and_maybe_reset
        _step_proc_data = EnvBase._step_proc_data

    def policy(td):
        obs = td["agents", "observation"]
        a = (obs[..., :act_dim].tanh() + 0.1 * torch.randn(obs.shape[:-1] + (act_dim,))).clamp(-1, 1)
        return td.set(("agents", "action"), a).set(("agents", "extra"), a.sum(-1))

    act_dim = 3 if copies == "native" else 2
    agents = 1 if copies == "python, one agent" else 3
    outs = []
    for cls in (Generic, SeerTorchRLEnv):
        lives = itertools.cycle([4, 6])  # copies end at different steps: partial resets
        env_fn = _uav_copies(lives) if copies == "native" else \
            (lambda: DyingAgents(n_agents=agents, max_steps=next(lives), die={1: 2} if agents > 1 else None))
        e = cls(env_fn, 2 if batched else None, batched=batched, backend="thread", workers=1)
        try:
            assert e.envs.copy_path == copies.split(",")[0]
            e.set_seed(3)
            torch.manual_seed(0)
            outs.append([e.rollout(15, policy if with_policy else None, break_when_any_done=break_any)
                         for _ in range(2)] + [torch.rand(4)])
        finally:
            e.close()
    assert torch.equal(outs[0].pop(), outs[1].pop())  # the generator is left where TorchRL's loop leaves it
    for generic, fast in zip(*outs):
        assert fast.batch_size == generic.batch_size and fast.names == generic.names
        assert set(fast.keys(True, True)) == set(generic.keys(True, True))
        for k in generic.keys(True, True):
            assert torch.equal(fast[k], generic[k]), k
            assert fast[k].is_contiguous()
    if not break_any:
        assert outs[0][0]["next", "done"].sum() >= 3
