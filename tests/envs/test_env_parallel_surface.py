"""PettingZoo's whole ParallelEnv surface on SEER's envs and on seer.wrap:
space dicts, the global state, fixed agent sets (black_death=True) and the
step after an episode's end, as a trainer (skrl, BenchMARL, MAPPO code) uses them."""

import warnings

import numpy as np
import pytest
import supersuit
from pettingzoo.butterfly import knights_archers_zombies_v11
from pettingzoo.test import parallel_api_test, parallel_seed_test

import seer
import seer.vector
from seer.envs import uav_swarm_v0, wireless_v0

pytestmark = pytest.mark.timeout(240)


def _uav(**kw):
    return uav_swarm_v0.parallel_env(scenario="small", workers=1, **kw)


def _wireless(**kw):
    return wireless_v0.parallel_env(scenario="small", workers=1, **kw)


def _outward(agents):
    """uav_0 and uav_1 fly off in +x (out of bounds by step 40); the others hover."""
    return {a: np.array([1.0, 0, 0] if a in ("uav_0", "uav_1") else [0.0, 0, 0], np.float32) for a in agents}


def _api_warnings(env, cycles):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        parallel_api_test(env, num_cycles=cycles)
    return [str(w.message) for w in seen if "pettingzoo" in w.filename]


@pytest.mark.parametrize("make", [_uav, _wireless], ids=["uav", "wireless"])
@pytest.mark.parametrize("black_death", [False, True])
def test_pettingzoo_api_and_seed_tests_pass(make, black_death):
    env = make(black_death=black_death)
    assert _api_warnings(env, 150) == []
    env.close()
    parallel_seed_test(lambda: make(black_death=black_death))


@pytest.mark.parametrize("make", [_uav, _wireless], ids=["uav", "wireless"])
def test_space_dicts_are_the_per_agent_spaces(make):
    env = make()
    assert list(env.observation_spaces) == env.possible_agents == list(env.action_spaces)
    for a in env.possible_agents:
        assert env.observation_spaces[a] is env.observation_space(a)
        assert env.action_spaces[a] is env.action_space(a)
    env.close()


@pytest.mark.parametrize("make", [_uav, _wireless], ids=["uav", "wireless"])
def test_state_is_every_agents_observation_concatenated(make):
    env = make(black_death=True)
    obs, _ = env.reset(seed=3)
    for _ in range(5):
        st = env.state()
        assert env.state_space.contains(st)
        np.testing.assert_array_equal(st, np.concatenate([obs[a] for a in env.possible_agents]))
        st[:] = 7  # a copy: the env's own rows stay
        assert not np.array_equal(env.state(), st)
        obs, *_ = env.step({a: env.action_space(a).sample() for a in env.agents})
    env.close()


def test_black_death_keeps_lost_uavs_with_zero_rows_until_the_episode_ends():
    plain, fixed = _uav(max_cycles=60), _uav(max_cycles=60, black_death=True)
    plain.reset(seed=0)
    obs, infos = fixed.reset(seed=0)
    assert all(i == {"active": True} for i in infos.values())
    lost_at = {}
    for t in range(60):
        p_obs, p_rew, p_term, p_trunc, _ = plain.step(_outward(plain.agents))
        obs, rew, term, trunc, infos = fixed.step(_outward(fixed.agents))
        assert list(obs) == list(rew) == list(term) == list(infos) == fixed.possible_agents
        for a in p_term:
            if p_term[a]:
                lost_at[a] = t
        last = t == 59
        if not last:
            assert fixed.agents == fixed.possible_agents
            assert not any(term.values()) and not any(trunc.values())
        for a in fixed.possible_agents:
            if a in p_obs:  # live before this step: the same numbers as the plain env
                np.testing.assert_array_equal(obs[a], p_obs[a])
                assert rew[a] == p_rew[a]
            else:  # lost at an earlier step
                assert not obs[a].any() and rew[a] == 0.0
            assert infos[a]["active"] == (a not in lost_at)
    assert lost_at == {"uav_1": 29, "uav_0": 38}
    assert rew["uav_1"] == 0.0 and p_rew.get("uav_1") is None
    # the episode's end: every agent done, the lost ones terminated, the rest truncated
    assert fixed.agents == [] and plain.agents == []
    assert term == {a: a in lost_at for a in fixed.possible_agents}
    assert trunc == {a: a not in lost_at for a in fixed.possible_agents}
    st = fixed.state().reshape(8, -1)
    assert not st[[0, 1]].any() and st[2:].any()
    assert fixed.step({}) == ({}, {}, {}, {}, {})
    plain.close()
    fixed.close()


def test_black_death_ignores_actions_of_lost_uavs_but_checks_the_live_ones():
    env = _uav(max_cycles=60, black_death=True)
    env.reset(seed=0)
    for _ in range(31):
        env.step(_outward(env.agents))
    bad = _outward(env.agents)
    bad["uav_1"] = np.array([np.nan, 5, 5])  # uav_1 is lost: nobody looks at its action
    env.step(bad)
    bad["uav_3"] = np.array([2.0, 0, 0], np.float32)
    with pytest.raises(ValueError, match="uav_3"):
        env.step(bad)
    with pytest.raises(ValueError, match="uav_4"):  # a live UAV still needs an action
        env.step({a: v for a, v in _outward(env.agents).items() if a != "uav_4"})
    env.close()


def test_black_death_argument_is_checked():
    with pytest.raises(ValueError, match="black_death='yes'"):
        _uav(black_death="yes")
    with pytest.raises(ValueError, match="black_death=1"):
        _wireless(black_death=1)


@pytest.mark.parametrize("make", [_uav, _wireless], ids=["uav", "wireless"])
def test_step_after_the_end_answers_empty_dicts_and_before_reset_raises(make):
    env = make(max_cycles=3)
    with pytest.raises(seer.MisuseError, match="reset"):
        env.step({})
    env.reset(seed=0)
    for _ in range(3):
        env.step({a: env.action_space(a).sample() for a in env.agents})
    assert env.agents == []
    assert env.step({}) == ({}, {}, {}, {}, {})
    env.close()


def test_supersuit_black_death_runs_on_the_swarm_to_the_end():
    env = supersuit.black_death_v3(_uav(max_cycles=60))
    env.reset(seed=0)
    steps = 0
    while env.agents:
        obs, rew, term, trunc, _ = env.step(_outward(env.agents))
        steps += 1
        assert steps <= 61
    assert steps == 61  # SuperSuit steps once more with no live agents: answered with empty dicts
    assert not obs["uav_0"].any() and rew["uav_0"] == 0.0


def test_wrap_black_death_matches_the_envs_own():
    wrapped = seer.wrap(_uav(max_cycles=60), black_death=True)
    own = _uav(max_cycles=60, black_death=True)
    assert wrapped.black_death and wrapped.state_space == own.state_space
    for seed in (0, 5):
        a, b = wrapped.reset(seed=seed), own.reset(seed=seed)
        while own.agents:
            assert wrapped.agents == own.agents
            acts = _outward(own.agents)
            a, b = wrapped.step(acts), own.step(acts)
            for x, y in zip(a, b):
                assert x.keys() == y.keys()
                for k in x:
                    if isinstance(x[k], np.ndarray):
                        np.testing.assert_array_equal(x[k], y[k])
                    else:
                        assert x[k] == y[k], k
            np.testing.assert_array_equal(wrapped.state(), own.state())
        assert wrapped.agents == []
    assert _api_warnings(wrapped, 100) == []
    wrapped.close()
    own.close()


def test_wrap_black_death_on_a_foreign_env_keeps_gone_agents():
    env = seer.wrap(knights_archers_zombies_v11.parallel_env(max_cycles=300), black_death=True)
    assert _api_warnings(env, 300) == []
    assert env.state().shape == env.state_space.shape
    env.reset(seed=4)
    for i, a in enumerate(env.possible_agents):
        env.action_space(a).seed(i)
    inner = env.unwrapped
    gone = set()
    while env.agents:
        acts = {a: env.action_space(a).sample() for a in env.agents}
        obs, rew, term, trunc, infos = env.step(acts)
        assert set(obs) == set(rew) == set(infos) == set(env.possible_agents)
        for a in gone:  # left at an earlier step
            assert not obs[a].any() and rew[a] == 0.0 and not infos[a]["active"]
        if env.agents:
            assert not any(term.values()) and not any(trunc.values())
            gone |= set(env.possible_agents) - set(inner.agents)
    assert gone  # this seed loses two knights before the end
    assert all(term[a] or trunc[a] for a in env.possible_agents)
    env.close()


def test_vector_exposes_each_copys_state():
    envs = seer.vector.make(lambda: _uav(black_death=True), 3, backend="thread")
    envs.reset(seed=0)
    for _ in range(4):
        obs, *_ = envs.step(envs.action_space.sample())
    states = envs.call("state")
    spaces = envs.get_attr("state_space")
    assert len(states) == 3
    for c, st in enumerate(states):
        assert spaces[c].contains(st)
        # the copy's rows are its agents' observations: the state is them, concatenated
        np.testing.assert_array_equal(st, obs[envs.rows_of(c)].reshape(-1))
    envs.close()


def test_vector_rows_are_the_same_with_black_death_and_stay_native():
    # seer.vector's rows are fixed with a mask already: black_death changes the dict API only
    made = {}
    for bd in (False, True):
        envs = seer.vector.make(lambda bd=bd: _uav(max_cycles=40, black_death=bd), 3, backend="thread", workers=1)
        assert envs._backend.native_copies == [True, True, True]  # the whole step stays in C
        obs, _ = envs.reset(seed=2)
        out = [obs]
        for _ in range(45):  # past the episode's end: autoreset
            acts = np.zeros(envs.action_space.shape, np.float32)
            acts[envs.row_agents.index("uav_1")::8, 0] = 1.0
            obs, rew, term, trunc, infos = envs.step(acts)
            out += [obs, rew, term, trunc, infos["mask"], infos["alive"]]
        made[bd] = out
        envs.close()
    for a, b in zip(made[False], made[True]):
        np.testing.assert_array_equal(a, b)
    masks = np.array(made[True][5::6])
    assert not masks.all()  # uav_1's rows were masked after its loss
