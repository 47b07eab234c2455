"""seer.integrations.rllib: the vectorized multi-agent env RLlib's runner
sees (agents leave its dicts when they die), and PPO sampling/training
through SeerMultiAgentEnvRunner."""

import functools
import importlib
import math
import sys

import numpy as np
import pytest

from _integration_toy import DyingAgents

pytest.importorskip("ray.rllib")
pytest.importorskip("torch")

from seer.integrations.rllib import (  # noqa: E402
    SeerMultiAgentEnv,
    SeerMultiAgentEnvRunner,
    SeerVectorMultiAgentEnv,
    shared_policy,
)

toy = functools.partial(DyingAgents, n_agents=3, max_steps=4, die={1: 2})


def test_vector_env_dicts_follow_the_agents():
    env = SeerVectorMultiAgentEnv(toy, 2, backend="thread", workers=1)
    try:
        obs, infos = env.reset(seed=0)
        assert len(obs) == 2 and sorted(obs[0]) == ["a0", "a1", "a2"]
        act = [{a: np.zeros(2, np.float32) for a in o} for o in obs]
        seen = []
        for _ in range(6):
            obs, rew, term, trunc, infos = env.step(act)
            seen.append((sorted(obs[0]), term[0], trunc[0], rew[0]))
            act = [{a: np.zeros(2, np.float32) for a in o} for o in obs]
        # step 2: a1 terminates (its last observation), then it is gone
        assert seen[1][0] == ["a0", "a1", "a2"] and seen[1][1]["a1"] and not seen[1][1]["__all__"]
        assert seen[2][0] == ["a0", "a2"] and "a1" not in seen[2][3]
        # step 4: the others are truncated and the copy ends; step 5: the copy's new episode
        assert seen[3][2]["__all__"] and seen[3][2]["a0"] and not seen[3][1]["__all__"]
        assert seen[4][0] == ["a0", "a1", "a2"] and not seen[4][1]["__all__"]
        assert [len(e.possible_agents) for e in env.envs] == [3, 3]
    finally:
        env.close()


def test_single_copy_multi_agent_env():
    env = SeerMultiAgentEnv({"env_fn": toy})
    obs, _ = env.reset(seed=1)
    assert set(obs) == {"a0", "a1", "a2"} and env.observation_spaces["a0"].shape == (4,)
    for _ in range(2):
        obs, rew, term, trunc, _ = env.step({a: np.zeros(2, np.float32) for a in env.agents})
    assert term["a1"] and env.agents == ["a0", "a2"] and not term["__all__"]
    with pytest.raises(ValueError, match="env_fn"):
        SeerMultiAgentEnv({"env_fn": 3})


@pytest.fixture(scope="module")
def algo():
    import ray
    import torch
    from ray.rllib.algorithms.ppo import PPOConfig

    torch.set_num_threads(1)
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, configure_logging=False)
    cfg = (PPOConfig()
           .environment(SeerMultiAgentEnv, env_config={"env_fn": toy, "seer": {"backend": "thread", "workers": 1}})
           .env_runners(env_runner_cls=SeerMultiAgentEnvRunner, num_env_runners=0, num_envs_per_env_runner=2,
                        rollout_fragment_length=8)
           .multi_agent(**shared_policy())
           .rl_module(model_config={"fcnet_hiddens": [16]})
           .training(train_batch_size_per_learner=48, minibatch_size=24, num_epochs=1))
    a = cfg.build_algo()
    yield a
    a.stop()
    if started:
        ray.shutdown()


def test_sampled_episodes_hold_no_dead_agent_steps(algo):
    eps = algo.env_runner.sample(num_episodes=4, explore=True)
    assert len(eps) >= 4
    for ep in eps:
        lens = {aid: len(sa) for aid, sa in ep.agent_episodes.items()}
        assert lens == {"a0": 4, "a1": 2, "a2": 4}, lens   # a1 died at step 2: two steps, not four
        assert ep.agent_episodes["a1"].is_terminated


def test_ppo_trains(algo):
    result = algo.train()
    learner = result["learners"]["shared"]
    losses = [v for k, v in learner.items() if "loss" in k and isinstance(v, (int, float, np.floating))]
    assert losses and all(math.isfinite(float(v)) for v in losses)


def test_missing_rllib_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray.rllib", None)
    monkeypatch.delitem(sys.modules, "seer.integrations.rllib", raising=False)
    with pytest.raises(ImportError, match=r"pip install 'seer-marl\[rllib\]'"):
        importlib.import_module("seer.integrations.rllib")
