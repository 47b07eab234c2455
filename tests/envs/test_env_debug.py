"""The built-in envs take ``debug=`` (SEER's debug mode, Runtime(debug=True)):
their handlers pass its checks, and a debug run steps exactly as a normal one."""

import numpy as np
import pytest

from seer.envs import uav_swarm_v0, wireless_v0

pytestmark = pytest.mark.timeout(300)


def _run(make, debug, workers, steps=40):
    env = make(workers=workers, debug=debug)
    try:
        assert env.runtime.debug is debug
        obs, _ = env.reset(seed=5)
        rng = np.random.default_rng(1)
        out = [np.stack([obs[a] for a in env.agents]).tobytes()]
        for _ in range(steps):
            if not env.agents:
                break
            acts = {a: _sample(env, a, rng) for a in env.agents}
            obs, rew, term, trunc, _ = env.step(acts)
            out.append((sorted(obs), np.stack(list(obs.values())).tobytes() if obs else b"", sorted(rew.items())))
        return out
    finally:
        env.close()


def _sample(env, agent, rng):
    space = env.action_space(agent)
    return rng.uniform(space.low, space.high) if hasattr(space, "low") else int(rng.integers(space.n))


@pytest.mark.parametrize("make", [lambda **k: uav_swarm_v0.parallel_env(scenario="small", **k),
                                  lambda **k: wireless_v0.parallel_env(scenario="small", **k)],
                         ids=["uav_swarm_v0", "wireless_v0"])
def test_a_debug_run_of_a_built_in_env_is_a_normal_run(make, monkeypatch):
    monkeypatch.delenv("SEER_DEBUG", raising=False)
    normal = _run(make, False, 1)
    assert _run(make, True, 1) == normal
    assert _run(make, True, 2) == normal


def test_seer_debug_reaches_the_built_in_envs(monkeypatch):
    monkeypatch.setenv("SEER_DEBUG", "1")
    env = uav_swarm_v0.parallel_env(scenario="small", workers=1)
    try:
        assert env.runtime.debug is True
    finally:
        env.close()
