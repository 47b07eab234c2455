"""seer.NativeEnv as an env author uses it: a step in Python on SEER's runtime, a
Numba copy step, no runtime at all; PettingZoo's API test, determinism across
worker counts, seer.vector's native path, errors and ``seer trace``'s hook."""

import numpy as np
import pytest
from gymnasium import spaces
from pettingzoo.test import parallel_api_test

import seer
import seer.vector
from seer.vector.native import NativeSpec

N, MAX_STEPS = 5, 4


def _spec(n=N):
    return NativeSpec(agents=[f"agent_{i}" for i in range(n)], observation=spaces.Box(-100, 100, (2,), np.float32),
                      action=spaces.Discrete(3))


class CounterModel(seer.Model):
    """Agent i's value moves by its action - 1 (an "act" event), and by i+1 on each tick."""

    def __init__(self, n):
        self.num_entities = n
        self.lookahead = 0.5
        self.state = {"value": np.zeros(n)}
        self.kinds = [seer.EventKind("act", self._act, batched=False),
                      seer.EventKind("tick", self._tick, batched=False)]

    def _act(self, ctx, ev):
        self.state["value"][ev["entity"]] += int(ev["payload"]) - 1

    def _tick(self, ctx, ev):
        i = int(ev["entity"])
        self.state["value"][i] += i + 1
        ctx.emit(i, float(ev["time"]) + 1.0, 1, 0)

    def reset(self, runtime, seed):
        n = self.num_entities
        self.state["value"][:] = seed % 7
        runtime.schedule(np.arange(n, dtype=np.int32), np.full(n, 0.5), np.ones(n, np.int32))


class PyCounterEnv(seer.NativeEnv):
    """The whole env an author writes with a Python step."""

    metadata = {"name": "py_counter_v0", "render_modes": ["ansi"]}

    def __init__(self, num_agents=N, workers=1, trace=False, **options):  # render_mode, black_death, ...
        super().__init__(_spec(num_agents), CounterModel(num_agents), workers=workers, trace=trace, **options)
        self.t = 0

    def reset_rows(self, seed):
        self.t = 0
        self._observe()

    def step_rows(self):
        rt, rows = self.runtime, self.rows
        live = np.flatnonzero(rows.mask)
        rt.schedule(live.astype(np.int32), np.full(len(live), float(self.t)), np.zeros(len(live), np.int32),
                    rows.act[live])
        self.t += 1
        rt.step(float(self.t))
        self._observe()
        rows.rew[:] = self.runtime.model.state["value"]
        rows.term[0] = self.t == 2  # agent_0 leaves after two steps
        rows.trunc[:] = self.t >= MAX_STEPS

    def _observe(self):
        self.rows.obs[:, 0] = self.runtime.model.state["value"]
        self.rows.obs[:, 1] = self.t

    def render_frame(self):
        return " ".join(f"{v:g}" for v in self.rows.obs[:, 0])


def _rollout(make, steps=9, seed=3):
    env = make()
    rng = np.random.default_rng(0)
    out = [env.reset(seed=seed)]
    for _ in range(steps):
        if not env.agents:
            out.append(env.reset())
            continue
        out.append(env.step({a: int(rng.integers(3)) for a in env.agents}))
    env.close()
    return repr(out)


def test_a_python_step_passes_pettingzoos_api_test_and_derives_its_spaces_from_the_spec():
    env = PyCounterEnv()
    parallel_api_test(env, num_cycles=20)
    assert env.observation_space("agent_3") == _spec().observation
    assert repr(env) == "py_counter_v0(agents=5, step=python)"  # parallel_api_test reset it
    assert env.action_spaces.keys() == set(env.possible_agents)
    obs, _ = env.reset(seed=2)
    assert obs["agent_1"].tolist() == [2.0, 0.0]
    obs, rew, term, trunc, _ = env.step({a: 2 for a in env.agents})
    # action 2 adds 1; the tick at 0.5 adds i + 1
    assert obs["agent_1"].tolist() == [2.0 + 1 + 2, 1.0] and rew["agent_1"] == 5.0
    _, _, term, _, _ = env.step({a: 1 for a in env.agents})
    assert term["agent_0"] and not term["agent_1"] and "agent_0" not in env.agents
    assert env.state().shape == env.state_space.shape and env.state()[:2].tolist() == [0.0, 0.0]
    env.close()


def test_each_agent_has_spaces_of_its_own_that_stay_the_same_objects():
    env = PyCounterEnv()
    spec = _spec()
    first = env.action_space("agent_1")
    assert env.action_space("agent_1") is first and env.action_spaces["agent_1"] is first
    assert env.observation_spaces["agent_2"] is env.observation_space("agent_2")
    assert env.action_space("agent_2") is not first and env.action_space("agent_2") == spec.action
    assert env.observation_space(np.str_("agent_1")) is env.observation_space("agent_1")
    # seeding one agent's space leaves the others' samples alone
    env.action_space("agent_0").seed(7)
    env.action_space("agent_1").seed(7)
    before = [env.action_space("agent_1").sample() for _ in range(20)]
    env.action_space("agent_1").seed(7)
    env.action_space("agent_0").seed(8)
    assert [env.action_space("agent_1").sample() for _ in range(20)] == before
    env.action_space("agent_4").seed(7)  # a space first asked for later is a copy like the others
    assert [env.action_space("agent_4").sample() for _ in range(20)] == before
    with pytest.raises(seer.InvalidArgumentError, match="'agent_9' is unknown"):
        env.observation_space("agent_9")
    assert "agent_9" not in env.observation_spaces
    env.close()


def test_bad_actions_name_the_agent_and_misuse_says_what_to_do():
    env = PyCounterEnv()
    with pytest.raises(seer.MisuseError, match="reset"):
        env.step({a: 0 for a in env.possible_agents})
    env.reset(seed=0)
    with pytest.raises(ValueError, match="agent_2"):
        env.step({**{a: 0 for a in env.agents}, "agent_2": 7})
    with pytest.raises(ValueError, match="missing"):
        env.step({"agent_0": 1})
    with pytest.raises(ValueError, match="'nobody' is unknown"):
        env.action_space("nobody")
    env.step({a: 1 for a in env.agents})
    env.step({a: 1 for a in env.agents})  # agent_0 leaves here
    env.step({a: 1 for a in env.possible_agents})  # its action is ignored, as PettingZoo's converters do
    env.close()
    strict = PyCounterEnv(strict_actions=True)
    strict.reset(seed=0)
    strict.step({a: 1 for a in strict.agents})
    strict.step({a: 1 for a in strict.agents})
    with pytest.raises(ValueError, match="not live.*strict_actions=True"):
        strict.step({a: 1 for a in strict.possible_agents})
    strict.close()
    env.close()
    for call in (lambda: env.reset(seed=0), lambda: env.step({}), env.render):
        with pytest.raises(seer.ClosedError, match="py_counter_v0"):
            call()
    with pytest.raises(seer.InvalidArgumentError, match="render_mode='rgb_array'"):
        PyCounterEnv(render_mode="rgb_array")


def test_render_hook_and_runtime():
    with PyCounterEnv(render_mode="ansi", workers=2) as env:
        env.reset(seed=1)
        assert env.render() == "1 1 1 1 1"
        assert env.runtime.workers == env.workers == 2
        with env.runtime.pool_stats() as stats:
            env.step({a: 1 for a in env.agents})
        assert stats.steps == 1


def test_black_death_keeps_every_agent_until_the_episode_ends():
    env = PyCounterEnv(black_death=True)
    parallel_api_test(env, num_cycles=20)
    _, infos = env.reset(seed=0)
    assert infos["agent_0"] == {"active": True}
    acts = {a: 1 for a in env.possible_agents}
    env.step(acts)
    obs, rew, term, trunc, infos = env.step(acts)  # agent_0 is lost in this step: its real last result
    assert env.agents == env.possible_agents and not any(term.values()) and not any(trunc.values())
    assert infos["agent_0"] == {"active": False} and infos["agent_1"] == {"active": True} and rew["agent_0"] != 0
    obs, rew, term, trunc, infos = env.step({**acts, "agent_0": 99})  # a lost agent's action is ignored
    assert obs["agent_0"].tolist() == [0.0, 0.0] and rew["agent_0"] == 0.0 and rew["agent_1"] != 0
    obs, rew, term, trunc, infos = env.step(acts)  # the last step: lost ones terminated, the others truncated
    assert term == {a: a == "agent_0" for a in env.possible_agents}
    assert trunc == {a: a != "agent_0" for a in env.possible_agents} and env.agents == []
    with pytest.raises(seer.InvalidArgumentError, match="black_death='yes'"):
        PyCounterEnv(black_death="yes")
    env.close()


def test_a_second_thread_is_refused_while_a_step_runs():
    import threading

    class Slow(PyCounterEnv):
        def step_rows(self):
            entered.set()
            assert release.wait(30)
            return super().step_rows()

    entered, release = threading.Event(), threading.Event()
    env = Slow()
    env.reset(seed=0)
    acts = {a: 1 for a in env.agents}
    worker = threading.Thread(target=env.step, args=(acts,))
    worker.start()
    try:
        assert entered.wait(30)
        with pytest.raises(seer.MisuseError, match="another thread"):
            env.step(acts)
        with pytest.raises(seer.MisuseError, match="another thread"):
            env.reset(seed=1)
    finally:
        release.set()
        worker.join(30)
    assert env.step(acts)[0]["agent_1"][1] == 2.0  # the first step ran once, this is the second
    env.close()


def test_python_step_is_identical_for_every_worker_count():
    assert _rollout(lambda: PyCounterEnv(workers=1)) == _rollout(lambda: PyCounterEnv(workers=3))


def test_make_traced_is_the_seer_trace_hook():
    runtime, step, close = PyCounterEnv.make_traced(entities=4, workers=2)
    try:
        assert sum(step() for _ in range(6)) > 0
        assert runtime.trace.summary()["events"] > 0
    finally:
        close()
    with pytest.raises(seer.InvalidArgumentError, match="entities='x'"):
        PyCounterEnv.make_traced(entities="x")


class NoRuntimeEnv(seer.NativeEnv):
    """model=None: a reference engine that writes the rows itself."""

    metadata = {"name": "plain_v0"}

    def __init__(self):
        super().__init__(_spec(3))

    def reset_rows(self, seed):
        self.rows.obs[:, 0] = seed

    def step_rows(self):
        self.rows.obs[:, 0] += self.rows.act
        self.rows.ended[0] = self.rows.obs[0, 0] > 10


def test_without_a_runtime_the_rows_still_make_the_env():
    env = NoRuntimeEnv()
    assert env.runtime is None and env.seer_native_copy() is None
    parallel_api_test(env, num_cycles=30)
    obs, _ = env.reset(seed=9)
    obs, *_ = env.step({a: 2 for a in env.agents})
    assert obs["agent_0"][0] == 11 and env.agents == []
    assert env.step({}) == ({}, {}, {}, {}, {})  # after the end, as PettingZoo's own envs answer


def test_reset_rows_is_required_and_the_spec_must_be_a_native_spec():
    class Bare(seer.NativeEnv):
        def __init__(self):
            super().__init__(_spec())

    with pytest.raises(NotImplementedError, match="reset_rows"):
        Bare().reset(seed=0)
    with pytest.raises(seer.InvalidArgumentError, match="NativeSpec"):
        seer.NativeEnv(spaces.Discrete(2))


# ---- a Numba copy step ------------------------------------------------------------------------

def _numba_env_class():
    snb = pytest.importorskip("seer.numba")
    pytest.importorskip("numba")
    return _build_numba_env(snb)


_NUMBA_ENV = None


def _build_numba_env(snb):
    global _NUMBA_ENV
    if _NUMBA_ENV is not None:
        return _NUMBA_ENV
    state = snb.State(value="f8[:]", I="i8[:]")  # I: steps, runtime address, fail at step (-1: never)

    @state.handler
    def act(ctx, ev, s):
        s.value[ev.entity] += ev.payload - 1
        return 0

    @snb.njit
    def observe(s, obs):
        for i in range(s.value.shape[0]):
            obs[i, 0] = s.value[i]
            obs[i, 1] = s.I[0]

    @state.copy_step(_spec())
    def copy_step(rows, op, s):
        n = s.value.shape[0]
        if op != 1:
            return -12  # SEER_E_UNSUPPORTED: seer.vector resets through reset()
        if s.I[0] == s.I[2]:
            raise ValueError("the step the test asked to fail")
        for i in range(n):  # every agent is live until the episode ends (rows.mask is an output)
            rc = snb.rt_push(rows.api, s.I[1], i, float(s.I[0]), 0, rows.act[i])
            if rc != 0:
                return rc
        rc = snb.rt_step(rows.api, s.I[1], float(s.I[0] + 1))
        if rc != 0:
            return rc
        s.I[0] += 1
        observe(s, rows.obs)
        for i in range(n):
            rows.rew[i] = s.value[i]
            rows.mask[i] = 1
            rows.term[i] = 0
            rows.trunc[i] = s.I[0] >= 4
            rows.alive[i] = s.I[0] < 4
        rows.ended[0] = s.I[0] >= 4
        return 0

    class NumbaModel(seer.Model):
        def __init__(self, n):
            self.num_entities, self.lookahead = n, 0.5
            self.state = {"value": np.zeros(n)}
            self.kinds = [seer.EventKind("act", seer.Native(act))]
            self.I = np.array([0, 0, -1], np.int64)
            self.native_model = state.bind({"value": self.state["value"], "I": self.I})

        def reset(self, runtime, seed):
            pass

    class NumbaCounterEnv(seer.NativeEnv):
        metadata = {"name": "numba_counter_v0"}

        def __init__(self, workers=1, fail_at=-1, trace=False):
            super().__init__(_spec(), NumbaModel(N), workers=workers, trace=trace)
            self.model = self.runtime.model
            self.model.I[1:] = self.runtime.native_address, fail_at

        def reset_rows(self, seed):
            snb.rt_reset(seer.capi.api_address(), self.model.I[1], seed)
            self.model.state["value"][:] = seed % 5
            self.model.I[0] = 0
            observe(self.model.native_model.tuple(), self.rows.obs)

        def copy_step(self):
            return copy_step, self.model.native_model

    _NUMBA_ENV = NumbaCounterEnv
    return NumbaCounterEnv


@pytest.mark.timeout(600)
def test_a_numba_copy_step_passes_the_api_test_and_is_identical_for_every_worker_count():
    cls = _numba_env_class()
    parallel_api_test(cls(), num_cycles=20)
    assert _rollout(lambda: cls(workers=1)) == _rollout(lambda: cls(workers=2))
    env = cls()
    obs, _ = env.reset(seed=3)
    obs, rew, term, trunc, _ = env.step({a: 2 for a in env.agents})
    assert obs["agent_4"].tolist() == [4.0, 1.0] and rew["agent_4"] == 4.0
    assert "native" in repr(env)
    env.close()


@pytest.mark.timeout(600)
def test_seer_vector_takes_the_numba_copy_step_and_agrees_with_the_single_env():
    cls = _numba_env_class()
    envs = seer.vector.make(lambda: cls(), 2, backend="thread", workers=1)
    try:
        assert envs._backend.runner.vec.native.all()
        obs, _ = envs.reset(seed=3)
        out = envs.step(np.full(envs.action_space.shape, 2, np.int64))
    finally:
        envs.close()
    single = cls()
    single.reset(seed=3)
    o, *_ = single.step({a: 2 for a in single.agents})
    assert np.array_equal(out[0][:N], np.stack(list(o.values())))
    single.close()


@pytest.mark.timeout(600)
def test_a_copy_stepped_by_seer_vector_answers_state_and_agents_from_the_vectors_rows():
    cls = _numba_env_class()
    envs = seer.vector.make(lambda: cls(), 2, backend="thread", workers=1)
    try:
        envs.reset(seed=3)
        for k in range(4):  # the copies' episodes end at their 4th step
            obs, *_ = envs.step(np.full(envs.action_space.shape, k % 3, np.int64))
            states, agents = envs.call("state"), envs.get_attr("agents")
            for c in range(2):
                np.testing.assert_array_equal(states[c], obs[envs.rows_of(c)].reshape(-1))
                assert agents[c] == ([] if k == 3 else [f"agent_{i}" for i in range(N)])
    finally:
        envs.close()


@pytest.mark.timeout(600)
def test_an_exception_in_the_copy_step_is_a_handler_error_and_the_env_needs_a_reset():
    cls = _numba_env_class()
    env = cls(fail_at=1)
    env.reset(seed=0)
    env.step({a: 1 for a in env.agents})
    with pytest.raises(seer.HandlerError, match="the step the test asked to fail"):
        env.step({a: 1 for a in env.agents})
    with pytest.raises(seer.ClosedError, match="reset"):
        env.step({a: 1 for a in env.agents})
    env.model.I[2] = -1
    env.reset(seed=0)
    env.step({a: 1 for a in env.agents})
    env.close()


def test_what_the_builtin_envs_use_of_the_base():
    """reset_options reach reset_rows, state() keeps truncated agents' rows at the end (and zeros
    the lost ones), a bool is no Discrete action, strict_actions holds after the end too."""

    class OptionsEnv(PyCounterEnv):
        def reset_rows(self, seed):
            super().reset_rows(seed)
            self.rows.obs[:, 1] = (self.reset_options or {}).get("start", 0)

    env = OptionsEnv(strict_actions=True)
    obs, _ = env.reset(seed=0, options={"start": 42})
    assert obs["agent_3"][1] == 42.0 and env.reset_options is None  # only during the reset
    acts = {a: 1 for a in env.possible_agents}
    with pytest.raises(ValueError, match="agent_1"):
        env.step({**acts, "agent_1": True})
    for _ in range(MAX_STEPS):
        obs, _, term, trunc, _ = env.step({a: acts[a] for a in env.agents})
    assert env.agents == [] and all(trunc.values())
    state = env.state().reshape(N, 2)
    assert not state[0].any()  # agent_0 was lost at step 2
    np.testing.assert_array_equal(state[1:], np.array([obs[a] for a in env.possible_agents[1:]]))
    with pytest.raises(ValueError, match="strict_actions=True"):
        env.step(acts)
    env.close()


@pytest.mark.parametrize("module", ["uav_swarm_v0", "wireless_v0"])
def test_the_builtin_envs_are_native_envs_whose_single_step_is_the_vectors_copy_step(module):
    import importlib

    mod = importlib.import_module(f"seer.envs.{module}")
    make = lambda: mod.parallel_env(scenario="small", workers=1, max_cycles=12)  # noqa: E731
    env = make()
    assert isinstance(env, seer.NativeEnv) and env.seer_native_copy() is not None
    envs = seer.vector.make(make, 1, backend="thread", workers=1)
    assert envs._backend.native_copies == [True]
    vobs, _ = envs.reset(seed=5)
    obs, _ = env.reset(seed=5)
    np.testing.assert_array_equal(vobs, np.array([obs[a] for a in env.possible_agents]))
    row = {a: i for i, a in enumerate(env.possible_agents)}
    for _ in range(12):
        act = np.array([env.action_space(a).sample() for a in env.possible_agents])
        vobs, vrew, *_ = envs.step(act)
        obs, rew, *_ = env.step({a: act[row[a]] for a in env.agents})
        live = [row[a] for a in obs]
        np.testing.assert_array_equal(vobs[live], np.array(list(obs.values())))
        np.testing.assert_array_equal(vrew[live], np.array(list(rew.values())))
    envs.close()
    env.close()


def test_what_a_step_hands_out_is_the_callers_to_keep():
    """Observations kept across steps (dicts, rows, slices) keep their values; every agent gets its
    own infos dict; actions of any numeric dtype, as arrays or lists, make the same step."""
    from seer.envs import uav_swarm_v0

    def run(convert, keep):
        env = uav_swarm_v0.parallel_env(scenario="default", workers=1, max_cycles=20)
        obs, _ = env.reset(seed=4)
        kept, history = [], []
        rng = np.random.default_rng(1)
        for _ in range(15):
            act = rng.uniform(-1, 1, (len(env.agents), *env.action_space(env.agents[0]).shape)).astype(np.float32)
            obs, rew, term, trunc, infos = env.step({a: convert(x) for a, x in zip(env.agents, act)})
            assert len({id(d) for d in infos.values()}) == len(infos) and not any(infos.values())
            infos[env.agents[0]]["mine"] = 1  # the caller's to change
            history.append(({a: v.copy() for a, v in obs.items()}, dict(rew)))
            if keep:
                kept.append((obs, obs[env.agents[-1]][:1], {a: v.copy() for a, v in obs.items()}))
            for d, part, snap in kept:
                assert all(np.array_equal(d[a], snap[a]) for a in snap)
                assert part[0] == snap[list(snap)[-1]][0]
            if not env.agents:
                break
        env.close()
        return history

    base = run(lambda x: x, keep=False)
    for convert in (lambda x: x.astype(np.float64), lambda x: x.tolist(), lambda x: x.copy()):
        for keep in (False, True):
            other = run(convert, keep)
            assert len(other) == len(base)
            for (o1, r1), (o2, r2) in zip(base, other):
                assert r1 == r2 and all(np.array_equal(o1[a], o2[a]) for a in o1)
