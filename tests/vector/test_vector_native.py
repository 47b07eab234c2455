"""seer.vector's native path (built-in envs stepped in C, rows in and out):
the same rows, masks, episode ends and autoresets as the PettingZoo path,
bit for bit, on both backends, for uav_swarm_v0 (native autoreset) and
wireless_v0 (resets through Python); failures name the copy."""

import functools
import sys

import cloudpickle
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import seer.vector
from seer.envs.uav_swarm import model as M
from seer.envs import uav_swarm_v0, wireless_v0

cloudpickle.register_pickle_by_value(sys.modules[__name__])


class PlainUav(uav_swarm_v0.UavSwarmEnv):
    """The same env without the native path: seer.vector steps it through
    the PettingZoo API (dicts)."""

    seer_native_copy = None


def make(native: bool, **kw):
    cls = uav_swarm_v0.UavSwarmEnv if native else PlainUav
    return cls(workers=1, **kw)


def run(native, backend, mode, steps, seed=3, views=False, **kw):
    env_kw = dict(scenario="small", max_cycles=25)
    env_kw.update(kw)
    opts = {"context": "spawn"} if backend == "process" else {}
    v = seer.vector.make(functools.partial(make, native, **env_kw), 4, backend=backend, workers=2,
                         autoreset_mode=mode, **opts)
    try:
        if backend == "thread":
            assert v._backend.runner.vec.native.all() == native
        rng = np.random.default_rng(seed)
        out = [v.reset(seed=seed)[0].tobytes()]
        ends, ended_at = 0, []
        for k in range(steps):
            # strong random actions: UAVs collide and leave, episodes end early
            act = rng.uniform(-1, 1, v.action_space.shape).astype(np.float32)
            if views and k % 2 == 0:  # the vector's own rows, no copies, no infos
                obs, rew, term, trunc, mask, alive = v._step_views(act)
                info = {"mask": mask, "alive": alive}
            else:
                obs, rew, term, trunc, info = v.step(act)
            ends += int(v._ended.sum())
            ended_at.append(v._ended.copy())
            out.append(obs.tobytes() + rew.tobytes() + term.tobytes() + trunc.tobytes()
                       + info["mask"].tobytes() + info["alive"].tobytes())
            if "final_obs" in info:
                rows = np.flatnonzero(info["_final_obs"])
                out.append(rows.tobytes() + np.stack(info["final_obs"][rows]).tobytes())
            if mode == AutoresetMode.DISABLED and v._ended.any():  # the caller resets the copies that ended
                out.append(v.reset(options={"reset_mask": np.repeat(v._ended, v.agents_per_copy)})[0].tobytes())
        if env_kw["max_cycles"] > steps:  # copies ended at different steps, not all at once
            assert any(e.any() and not e.all() for e in ended_at)
        return out, ends
    finally:
        v.close()


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP, AutoresetMode.DISABLED])
@pytest.mark.parametrize("max_cycles,steps", [(25, 80), (10_000, 250)], ids=["truncations", "losses"])
def test_native_rows_equal_the_pettingzoo_path_bit_for_bit(mode, max_cycles, steps):
    native, ends = run(True, "thread", mode, steps, max_cycles=max_cycles)
    plain, ends_plain = run(False, "thread", mode, steps, max_cycles=max_cycles)
    assert ends == ends_plain and ends >= 4  # episodes ended (all truncated, or all UAVs lost) and were reset
    assert len(native) == len(plain)
    for k, (a, b) in enumerate(zip(native, plain)):
        assert a == b, f"step {k} differs"


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.DISABLED])
def test_step_views_are_the_rows_of_step(mode, monkeypatch):
    # _step_views (seer's TorchRL rollout; every other step here) hands the rows step() copies, both
    # through the one-call native step, DISABLED autoreset included
    from seer.vector._thread import ThreadBackend

    one_call = []
    step_all = ThreadBackend._step_all_native
    monkeypatch.setattr(ThreadBackend, "_step_all_native", lambda self: one_call.append(1) or step_all(self))
    views, ends = run(True, "thread", mode, 60, views=True)
    assert len(one_call) == 60
    rows, ends_rows = run(True, "thread", mode, 60)
    assert ends == ends_rows and ends >= 4
    assert views == rows


def test_native_path_in_worker_processes_matches_threads():
    a, _ = run(True, "process", AutoresetMode.NEXT_STEP, 40)
    b, _ = run(True, "thread", AutoresetMode.NEXT_STEP, 40)
    assert a == b


def test_the_env_object_follows_native_steps():
    """The native path bypasses env.step, yet the env's agents, render and
    step counter show where it is."""
    v = seer.vector.make(functools.partial(make, True, scenario="small", max_cycles=1000), 2, backend="thread",
                         workers=1)
    try:
        v.reset(seed=1)
        act = np.zeros(v.action_space.shape, np.float32)
        for _ in range(7):
            v.step(act)
        env = v._backend.runner.envs[0]
        assert env._out.episode[M.EP_STEPS] == 7
        alive = v._alive[:8]
        assert env.agents == [a for a, ok in zip(env.possible_agents, alive) if ok]
        # env.step from the PettingZoo side goes on from the same state
        o, r, *_ = env.step({a: np.zeros(3, np.float32) for a in env.agents})
        assert env._out.episode[M.EP_STEPS] == 8
    finally:
        v.close()


def test_a_failing_native_copy_is_named_with_the_runtime_error(monkeypatch):
    # a queue far too small for a step's messages: the copy's runtime fails
    monkeypatch.setattr(M.UavModel, "queue_capacity", lambda self: self.cfg.num_uavs + 8)
    v = seer.vector.make(functools.partial(make, True, scenario="small"), 3, backend="thread", workers=2)
    try:
        v.reset(seed=0)
        with pytest.raises(seer.vector.EnvCopyError) as info:
            for _ in range(5):
                v.step(np.zeros(v.action_space.shape, np.float32))
        err = info.value
        failed = [c for c, _ in err.errors]
        assert err.copy == min(failed) and set(failed) <= {0, 1, 2}
        assert f"env copy {err.copy} (rows {8 * err.copy}..{8 * err.copy + 7})" in str(err)
        assert all("QueueFullError" in tb for _, tb in err.errors)
        with pytest.raises(RuntimeError, match="failed"):  # no silent stepping on
            v.step(np.zeros(v.action_space.shape, np.float32))
    finally:
        v.close()


def test_copies_built_with_workers_auto_get_one_worker_each():
    """A copy's own pool would fight the vector env's workers for the cores."""
    v = seer.vector.make(functools.partial(uav_swarm_v0.parallel_env, scenario="small"), 2, backend="thread",
                         workers=2)
    try:
        assert [e.workers for e in v._backend.runner.envs.values()] == [1, 1]
        assert v.workers == 2
    finally:
        v.close()
    from seer.stpa import capture, default_pool_limit

    with capture() as rec, default_pool_limit(1):
        env = uav_swarm_v0.parallel_env(scenario="small")
    assert env.workers == 1 and rec[0].source == "limited"
    env.close()


def test_bad_actions_are_named_and_nothing_steps_when_c_checks_them():
    v = seer.vector.make(functools.partial(make, True, scenario="small", max_cycles=1000), 2, backend="thread",
                         workers=2)
    try:
        assert v._native_check  # the values are checked in C, inside the step's one call
        v.reset(seed=0)
        act = np.zeros(v.action_space.shape, np.float32)
        v.step(act)
        before = [e._out.episode.copy() for e in v._backend.runner.envs.values()]
        for bad, what in ((np.nan, "nan"), (1.5, "1.5")):
            act[11, 2] = bad
            with pytest.raises(ValueError, match=rf"row 11 \(copy 1, agent 'uav_3'\) is \[0.0, 0.0, {what}\]"):
                v.step(act)
        after = [e._out.episode.copy() for e in v._backend.runner.envs.values()]
        assert all((a == b).all() for a, b in zip(before, after))  # no copy stepped
        act[11, 2] = 0.0
        alive = v._alive.copy()
        dead = int(np.flatnonzero(~alive)[0]) if not alive.all() else None
        if dead is not None:  # a dead row's action is ignored, whatever it holds
            act[dead] = np.nan
        v.step(act)
    finally:
        v.close()


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_a_failing_native_copy_restarts_and_its_rows_say_so(monkeypatch, mode):
    # every copy's queue is too small: each step fails, restart_failed replaces the copy
    monkeypatch.setattr(M.UavModel, "queue_capacity", lambda self: self.cfg.num_uavs + 8)
    v = seer.vector.make(functools.partial(make, True, scenario="small"), 2, backend="thread", workers=2,
                         restart_failed=True, autoreset_mode=mode)
    try:
        v.reset(seed=0)
        with pytest.warns(RuntimeWarning, match="restarted"):
            for _ in range(5):
                *_, infos = v.step(np.zeros(v.action_space.shape, np.float32))
                if "restarted" in infos:
                    break
        assert "restarted" in infos, "no copy was restarted"
        failed = [c for c in range(2) if infos["restarted"][8 * c]]
        assert failed and all(infos["restarted"][8 * c:8 * c + 8].all() for c in failed)
        assert sum(v.restarts) >= len(failed)
    finally:
        v.close()


# ---- wireless_v0: a native step, resets through Python ------------------------------------------


class PlainWireless(wireless_v0.WirelessEnv):
    """wireless_v0 without the native path (the PettingZoo API, dicts)."""

    seer_native_copy = None


def make_wireless(native: bool, **kw):
    cls = wireless_v0.WirelessEnv if native else PlainWireless
    return cls(workers=1, **kw)


def run_wireless(native, backend, mode, steps, seed=4, **kw):
    env_kw = dict(scenario="small", max_cycles=9)
    env_kw.update(kw)
    opts = {"context": "spawn"} if backend == "process" else {}
    v = seer.vector.make(functools.partial(make_wireless, native, **env_kw), 3, backend=backend, workers=2,
                         autoreset_mode=mode, **opts)
    try:
        if backend == "thread":
            vec = v._backend.runner.vec
            assert vec.native.all() == native and not vec.autoreset.any()  # resets run in Python
        rng = np.random.default_rng(seed)
        out = [v.reset(seed=seed)[0].tobytes()]
        ends = 0
        for _ in range(steps):
            act = rng.integers(0, v.action_space.nvec.max(), v.action_space.shape)
            obs, rew, term, trunc, info = v.step(act)
            ends += int(v._ended.sum())
            out.append(obs.tobytes() + rew.tobytes() + term.tobytes() + trunc.tobytes()
                       + info["mask"].tobytes() + info["alive"].tobytes())
            if "final_obs" in info:
                rows = np.flatnonzero(info["_final_obs"])
                out.append(rows.tobytes() + np.stack(info["final_obs"][rows]).tobytes())
        return out, ends
    finally:
        v.close()


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
@pytest.mark.parametrize("full_buffer", [False, True], ids=["events", "full_buffer"])
def test_wireless_native_rows_equal_the_pettingzoo_path_bit_for_bit(mode, full_buffer):
    native, ends = run_wireless(True, "thread", mode, 40, full_buffer=full_buffer)
    plain, ends_plain = run_wireless(False, "thread", mode, 40, full_buffer=full_buffer)
    assert ends == ends_plain and ends >= 9  # every copy was truncated (and reset) at least three times
    assert len(native) == len(plain)
    for k, (a, b) in enumerate(zip(native, plain)):
        assert a == b, f"step {k} differs"


def test_wireless_native_path_in_worker_processes_matches_threads():
    a, _ = run_wireless(True, "process", AutoresetMode.NEXT_STEP, 25)
    b, _ = run_wireless(True, "thread", AutoresetMode.NEXT_STEP, 25)
    assert a == b


def test_wireless_env_object_follows_native_steps():
    v = seer.vector.make(functools.partial(make_wireless, True, scenario="small", max_cycles=6), 2,
                         backend="thread", workers=1)
    try:
        v.reset(seed=2)
        act = np.zeros(v.action_space.shape, np.int64)
        for _ in range(4):
            v.step(act)
        env = v._backend.runner.envs[0]
        assert env.steps == 4 and env.agents == env.possible_agents
        # env.step from the PettingZoo side goes on from the same state, up to the end of the episode
        env.step({a: 0 for a in env.agents})
        *_, trunc, _ = env.step({a: 0 for a in env.agents})
        assert all(trunc.values()) and env.steps == 6 and env.agents == []
        # a step after the episode's end answers empty dicts, as PettingZoo's own envs do
        assert env.step({}) == ({}, {}, {}, {}, {}) and env.steps == 6
    finally:
        v.close()


def test_auto_workers_probe_works_with_autoreset_disabled():
    """The probe of workers="auto" steps past the copies' episodes (TorchRL's and BenchMARL's
    vector envs run with autoreset disabled): it must not fail and fall back to the heuristic."""
    import warnings

    from seer.errors import StpaFallbackWarning
    from seer.envs import uav_swarm_v0

    with warnings.catch_warnings():
        warnings.simplefilter("error", StpaFallbackWarning)
        envs = seer.vector.make(lambda: uav_swarm_v0.parallel_env(scenario="small", workers=1, max_cycles=3), 3,
                                backend="thread", workers="auto", autoreset_mode="disabled")
    try:
        envs.reset(seed=0)
        for _ in range(3):
            envs.step(np.zeros(envs.action_space.shape, np.float32))
        with pytest.raises(RuntimeError, match="autoreset_mode is DISABLED"):  # the env itself still refuses
            envs.step(np.zeros(envs.action_space.shape, np.float32))
    finally:
        envs.close()


class OneWideUav(uav_swarm_v0.UavSwarmEnv):
    """uav_0 observes one more number than the others (a subclass that answers its spaces itself)."""

    def observation_space(self, agent):
        space = super().observation_space(agent)
        if agent != "uav_0":
            return space
        return type(space)(-np.inf, np.inf, (space.shape[0] + 1,), space.dtype)


def test_a_native_envs_copies_are_laid_out_from_its_spec_and_a_subclass_from_its_agents():
    from gymnasium.spaces import Box

    from seer.vector._layout import build_layout, describe_copy, equal_spaces

    env = uav_swarm_v0.parallel_env(scenario="large", workers=1)
    spec = describe_copy(env)
    assert len(spec.obs_spaces) == len(env.possible_agents) == 256
    assert all(s is spec.obs_spaces[0] for s in spec.obs_spaces)
    assert spec.obs_spaces[0] == env.observation_space("uav_7") and spec.act_spaces[0] == env.action_space("uav_7")
    # the layout's space is not an agent's own: seeding it leaves the agents' samples alone
    spec.act_spaces[0].seed(1)
    assert spec.act_spaces[0] is not env.action_space("uav_7")
    # nor the spaces of agents first asked for later (copies of a seeded space would sample alike)
    assert not np.array_equal(env.action_space("uav_8").sample(), env.action_space("uav_9").sample())
    env.action_space("uav_7").seed(5)
    first = [env.action_space("uav_7").sample() for _ in range(5)]
    env.action_space("uav_7").seed(5)
    spec.act_spaces[0].sample()
    assert all(np.array_equal(a, b) for a, b in zip(first, [env.action_space("uav_7").sample() for _ in range(5)]))
    # the copies' spaces are distinct objects of equal spaces: one space for all rows
    layout = build_layout([describe_copy(env), spec], pad=False, same_step=True)
    assert layout.obs_space == env.observation_space("uav_0") and layout.obs_pads is None
    env.close()

    wide = OneWideUav(scenario="small", workers=1)
    spec = describe_copy(wide)
    assert spec.obs_spaces[0].shape[0] == spec.obs_spaces[1].shape[0] + 1
    with pytest.raises(seer.SpaceMismatchError, match="'uav_0'"):
        build_layout([spec], pad=False, same_step=True)
    assert build_layout([spec], pad=True, same_step=True).obs_space.shape == spec.obs_spaces[0].shape
    wide.close()

    memo, a, b = {}, Box(0, 1, (3,)), Box(0, 1, (3,))
    assert equal_spaces(a, b, memo) and not equal_spaces(a, Box(0, 2, (3,)), memo) and len(memo) == 2
