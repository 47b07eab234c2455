"""seer.wrap: a PettingZoo ParallelEnv run through SEER."""

import numpy as np
import pytest
from pettingzoo.test import parallel_api_test
from pettingzoo.utils import parallel_to_aec

import seer
from seer.errors import ClosedError, HandlerError

from toy_envs import ToyEnv


def test_foreign_env_keeps_the_parallel_api_and_its_numbers():
    from mpe2 import simple_spread_v3

    wrapped = seer.wrap(simple_spread_v3.parallel_env(N=3, max_cycles=20))
    parallel_api_test(wrapped, num_cycles=30)
    raw = simple_spread_v3.parallel_env(N=3, max_cycles=20)
    wrapped = seer.wrap(simple_spread_v3.parallel_env(N=3, max_cycles=20), workers=2)
    o1, _ = raw.reset(seed=4)
    o2, _ = wrapped.reset(seed=4)
    assert wrapped.possible_agents == raw.possible_agents and wrapped.agents == raw.agents
    assert wrapped.observation_space("agent_0") == raw.observation_space("agent_0")
    rng = np.random.default_rng(0)
    for _ in range(25):
        if not raw.agents:
            break
        acts = {a: int(rng.integers(5)) for a in raw.agents}
        r1 = raw.step(acts)
        r2 = wrapped.step(acts)
        for d1, d2 in zip(r1, r2):
            assert d1.keys() == d2.keys()
        assert all(np.array_equal(r1[0][a], r2[0][a]) for a in r1[0])
        assert r1[1] == r2[1]
    assert wrapped.state().shape == raw.state().shape
    wrapped.close()
    with pytest.raises(ClosedError):
        wrapped.step({})


def test_actions_are_validated_with_agent_and_value():
    env = seer.wrap(ToyEnv())
    env.reset(seed=0)
    with pytest.raises(ValueError, match="missing for agents"):
        env.step({"a0": 0})
    with pytest.raises(ValueError, match=r"'zz'"):
        env.step({"a0": 0, "a1": 0, "a2": 0, "zz": 1})
    with pytest.raises(ValueError, match=r"action of 'a1' is 7: expected an integer in \[0, 2\]"):
        env.step({"a0": 0, "a1": 7, "a2": 0})
    with pytest.raises(TypeError, match="dict"):
        env.step([0, 0, 0])
    env.step({"a0": 0, "a1": 1, "a2": 2})
    env = seer.wrap(ToyEnv(continuous=True))
    env.reset(seed=0)
    with pytest.raises(ValueError, match="NaN"):
        env.step({"a0": np.array([np.nan, 0.0]), "a1": np.zeros(2), "a2": np.zeros(2)})
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        env.step({"a0": np.zeros(3), "a1": np.zeros(2), "a2": np.zeros(2)})


def test_env_failure_is_a_handler_error_with_the_traceback_and_env_goes_on():
    env = seer.wrap(ToyEnv(), trace=True)
    env.reset(seed=0)
    acts = {"a0": 0, "a1": 0, "a2": 0}
    env.step(acts)
    env.unwrapped.fail_next = True
    with pytest.raises(HandlerError, match="toy failure on demand") as info:
        env.step(acts)
    assert info.value.entity == 0 and "Traceback" in str(info.value)
    env.reset(seed=1)
    obs, *_ = env.step(acts)
    assert obs["a0"][1] == 1
    assert len(env.trace.events) >= 2  # one event per step


def test_aec_env_and_bad_arguments():
    env = seer.wrap(parallel_to_aec(ToyEnv()))
    obs, _ = env.reset(seed=0)
    assert set(obs) == {"a0", "a1", "a2"}
    env.step({"a0": 0, "a1": 0, "a2": 0})
    with pytest.raises(ValueError, match="workers=0"):
        seer.wrap(ToyEnv(), workers=0)
    with pytest.raises(TypeError, match="ParallelEnv"):
        seer.wrap(object())


def test_builtin_env_is_delegated_to():
    uav = pytest.importorskip("seer.envs.uav_swarm_v0")
    inner = uav.parallel_env(scenario="small", workers=1, max_cycles=5)
    env = seer.wrap(inner)
    assert env.builtin and env.runtime is inner.runtime and env.workers == 1
    ref = uav.parallel_env(scenario="small", workers=1, max_cycles=5)
    o1, _ = env.reset(seed=3)
    o2, _ = ref.reset(seed=3)
    acts = {a: np.full(3, 0.5, np.float32) for a in env.agents}
    r1, r2 = env.step(acts), ref.step(acts)
    assert all(np.array_equal(r1[0][a], r2[0][a]) for a in r1[0])
    with pytest.raises(ValueError, match="action of 'uav_0'"):
        env.step({**acts, "uav_0": np.full(3, 2.0, np.float32)})
    with pytest.raises(ValueError, match="workers=2 differs"):
        seer.wrap(uav.parallel_env(scenario="small", workers=1), workers=2)
    env.close()
    ref.close()
