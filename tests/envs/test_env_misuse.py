"""SEER's envs and the thread-backend vector env under misuse: two threads on
one object, close from another thread during a step, calls after close, bad
action dtypes.  Each ends in a SEER error within bounded time, never a hang."""

import threading
import time

import numpy as np
import pytest

import seer
import seer.vector
from seer.envs import uav_swarm_v0, wireless_v0

pytestmark = pytest.mark.timeout(120)


def _uav(workers=2):
    return uav_swarm_v0.parallel_env(scenario="large", workers=workers)


def _wireless(workers=2):
    return wireless_v0.parallel_env(scenario="large", workers=workers)


def _actions(env):
    return {a: env.action_space(a).sample() for a in env.agents}


def _race(step_a, step_b, seconds=20.0):
    """Run step_a in a thread and step_b here until step_b is refused with
    MisuseError (or step_a is); return what each side raised."""
    stop = threading.Event()
    seen = {"a": [], "b": []}

    def loop_a():
        while not stop.is_set():
            try:
                step_a()
            except seer.MisuseError as exc:
                seen["a"].append(exc)

    t = threading.Thread(target=loop_a)
    t.start()
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline and not (seen["a"] or seen["b"]):
            try:
                step_b()
            except seer.MisuseError as exc:
                seen["b"].append(exc)
    finally:
        stop.set()
        t.join(30)
    assert not t.is_alive(), "the other thread hung"
    return seen["a"] + seen["b"]


@pytest.mark.parametrize("make", [_uav, _wireless], ids=["uav", "wireless"])
def test_two_threads_stepping_one_env_are_refused(make):
    env = make()
    env.reset(seed=0)
    acts = _actions(env)

    def step():
        if not env.agents:
            env.reset(seed=1)
            return
        env.step({a: acts[a] for a in env.agents})

    refused = _race(step, step)
    assert refused, "concurrent steps were never refused"
    assert all("another call" in str(e) and "another thread" in str(e) for e in refused)
    env.reset(seed=0)  # still usable
    env.step({a: acts[a] for a in env.agents})
    env.close()


@pytest.mark.parametrize("make", [_uav, _wireless], ids=["uav", "wireless"])
def test_close_from_another_thread_during_steps_ends_the_stepper(make):
    env = make()
    env.reset(seed=0)
    acts = _actions(env)
    outcome = {}

    def stepper():
        try:
            while True:
                if not env.agents:
                    env.reset(seed=2)
                env.step({a: acts[a] for a in env.agents})
        except BaseException as exc:
            outcome["exc"] = exc

    t = threading.Thread(target=stepper)
    t.start()
    time.sleep(0.3)
    env.close()
    t.join(30)
    assert not t.is_alive()
    assert isinstance(outcome["exc"], seer.ClosedError), repr(outcome["exc"])
    with pytest.raises(seer.ClosedError):
        env.step({a: acts[a] for a in env.possible_agents})


def _vector(num_copies=4, workers=2):
    return seer.vector.make(lambda: uav_swarm_v0.parallel_env(scenario="large", workers=1), num_copies,
                            backend="thread", workers=workers)


def test_two_threads_stepping_one_thread_vector_env_are_refused():
    envs = _vector()
    envs.reset(seed=0)
    actions = np.zeros(envs.action_space.shape, np.float32)
    refused = _race(lambda: envs.step(actions), lambda: envs.step(actions))
    assert refused and all(isinstance(e, seer.MisuseError) for e in refused)
    assert "this vector env" in str(refused[0])
    obs, *_ = envs.step(actions)  # still usable
    assert obs.shape == envs.observation_space.shape
    envs.close()


def test_close_from_another_thread_during_vector_steps_ends_the_stepper():
    envs = _vector()
    envs.reset(seed=0)
    actions = np.zeros(envs.action_space.shape, np.float32)
    outcome = {}

    def stepper():
        try:
            while True:
                envs.step(actions)
        except BaseException as exc:
            outcome["exc"] = exc

    t = threading.Thread(target=stepper)
    t.start()
    time.sleep(0.3)
    start = time.monotonic()
    envs.close()
    assert time.monotonic() - start < 10
    t.join(30)
    assert not t.is_alive()
    assert isinstance(outcome["exc"], seer.ClosedError), repr(outcome["exc"])
    assert envs.closed
    with pytest.raises(seer.ClosedError):
        envs.step(actions)
    with pytest.raises(seer.ClosedError):
        envs.reset(seed=0)


@pytest.mark.parametrize("bad", [np.array([0.1 + 1j, 0, 0]), [1j, 0, 0], np.array(["a", "b", "c"])],
                         ids=["complex-array", "complex-list", "strings"])
def test_uav_refuses_non_real_actions(bad):
    with uav_swarm_v0.parallel_env(scenario="small", workers=1) as env:
        env.reset(seed=0)
        with pytest.raises(ValueError, match="action of 'uav_0'"):
            env.step({a: bad for a in env.agents})


@pytest.mark.parametrize("bad", [1 + 2j, np.complex64(1)], ids=["complex", "np-complex"])
def test_wireless_refuses_complex_actions(bad):
    env = wireless_v0.parallel_env(scenario="small", workers=1)
    env.reset(seed=0)
    acts = {a: 0 for a in env.agents}
    acts[env.agents[0]] = bad
    with pytest.raises(ValueError, match="action of 'ue_0'"):
        env.step(acts)
    env.close()


@pytest.mark.parametrize("module", [uav_swarm_v0, wireless_v0])
@pytest.mark.parametrize("engine", ["seer", "reference"])
def test_every_call_on_a_closed_env_is_a_closed_error(module, engine):
    env = module.parallel_env(scenario="small", workers=1, engine=engine, render_mode="rgb_array")
    env.reset(seed=0)
    acts = _actions(env)
    env.close()
    env.close()  # idempotent
    for call in (lambda: env.reset(seed=1), lambda: env.step(acts), env.render):
        with pytest.raises(seer.ClosedError, match="closed"):
            call()


@pytest.mark.parametrize("module", [uav_swarm_v0, wireless_v0])
def test_pettingzoo_factories(module):
    from pettingzoo import AECEnv, ParallelEnv
    from pettingzoo.utils import BaseWrapper

    par = module.parallel_env(scenario="small", workers=1)
    raw = module.raw_env(scenario="small", workers=1)
    aec = module.env(scenario="small", workers=1)
    try:
        assert isinstance(par, ParallelEnv) and not isinstance(par, AECEnv)
        assert isinstance(raw, AECEnv) and not isinstance(raw, BaseWrapper)  # unwrapped
        assert isinstance(aec, BaseWrapper) and type(aec.env) is type(raw)  # raw_env, order-enforced
        assert type(par).__name__ in module.__all__  # the ParallelEnv class keeps its name
    finally:
        for e in (par, raw, aec):
            e.close()


def test_validate_actions_ignores_agents_that_left_unless_strict():
    from gymnasium import spaces

    from seer.actions import validate_actions

    space = spaces.Discrete(3)
    possible = ["a", "b", "c"]
    validate_actions({"a": 1, "b": 2, "c": 99}, ["a", "b"], lambda a: space, possible_agents=possible)  # c left
    with pytest.raises(ValueError, match=r"\['ghost'\] that this env does not have"):
        validate_actions({"a": 1, "b": 2, "ghost": 0}, ["a", "b"], lambda a: space, possible_agents=possible)
    with pytest.raises(ValueError, match=r"not live \(strict_actions=True"):
        validate_actions({"a": 1, "b": 2, "c": 0}, ["a", "b"], lambda a: space, possible_agents=possible, strict=True)
    with pytest.raises(ValueError, match="missing for agents"):
        validate_actions({"a": 1, "c": 0}, ["a", "b"], lambda a: space, possible_agents=possible)


@pytest.mark.parametrize("strict", [False, True])
def test_uav_step_after_an_agent_left_takes_the_usual_loop(strict):
    env = uav_swarm_v0.parallel_env(scenario="small", workers=1, strict_actions=strict)
    env.reset(seed=0)
    push = {a: np.zeros(3, np.float32) for a in env.possible_agents}
    push["uav_0"] = np.ones(3, np.float32)  # full thrust: uav_0 leaves the world
    for _ in range(300):
        if "uav_0" not in env.agents:
            break
        env.step({a: push[a] for a in env.agents})
    assert "uav_0" not in env.agents and env.agents
    everyone = {a: np.zeros(3, np.float32) for a in env.possible_agents}
    if strict:
        with pytest.raises(ValueError, match="uav_0"):
            env.step(everyone)
    else:
        obs, *_ = env.step(everyone)  # {a: policy(obs[a]) for a in last_obs} still names uav_0
        assert "uav_0" not in obs
    env.close()
