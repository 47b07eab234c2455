"""seer.vector: rows, spaces, masks, autoreset modes, seeding, determinism
across worker counts and backends, call/get_attr/set_attr/render, async
stepping and Gymnasium's vector wrappers.  The contract tests take the
``vector_backend`` fixture (tests/conftest.py): thread, process, and Ray where
installed."""

import functools
import itertools
import multiprocessing
import os
import sys
import threading

import cloudpickle
import gymnasium
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.vector import AutoresetMode
from pettingzoo.utils import parallel_to_aec

import seer.vector
from seer.vector import EnvCopyError, SpaceMismatchError

from toy_envs import ToyEnv, assert_same, rollout, toy  # tests/toy_envs.py

# functions defined here travel to worker processes by value (the tests folder is no package)
cloudpickle.register_pickle_by_value(sys.modules[__name__])


make_thread = functools.partial(seer.vector.make, backend="thread")


# ---- rows and spaces ---------------------------------------------------------------------------


def test_rows_spaces_and_metadata():
    with make_thread(toy, 4, workers=2) as envs:
        assert envs.num_copies == 4 and envs.agents_per_copy == 3 and envs.num_envs == 12
        assert envs.single_observation_space == spaces.Box(-1e6, 1e6, (4,), np.float32)
        assert envs.single_action_space == spaces.Discrete(3)
        assert envs.observation_space.shape == (12, 4)
        assert envs.action_space == spaces.MultiDiscrete([3] * 12)
        assert envs.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP
        assert "autoreset_mode" not in ToyEnv.metadata  # per instance, not the class's dict
        assert envs.metadata["name"] == "toy_v0"
        assert envs.row_agents == ["a0", "a1", "a2"] * 4
        assert envs.row_copy.tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3]
        assert envs.rows_of(2) == slice(6, 9)
        assert isinstance(envs, gymnasium.vector.VectorEnv)
        obs, infos = envs.reset(seed=3)
        assert obs.shape == (12, 4) and obs.dtype == np.float32
        assert envs.observation_space.contains(obs)
        assert infos["mask"].all() and infos["_mask"].all()
        assert infos["reset"].tolist() == [True, False, False] * 4 and infos["_reset"].tolist() == [True, False, False] * 4
        obs, rew, term, trunc, infos = envs.step(envs.action_space.sample())
        assert rew.dtype == np.float64 and rew.shape == (12,)
        assert term.dtype == np.bool_ and trunc.dtype == np.bool_
        assert infos["t"].tolist() == [1, 0, 0] * 4 and infos["_t"].tolist() == [True, False, False] * 4
        assert "SeerVectorEnv(toy_v0, num_copies=4, agents_per_copy=3, num_envs=12" in repr(envs)


def test_make_rejects_bad_arguments():
    with pytest.raises(ValueError, match="num_copies=0"):
        seer.vector.make(toy, 0)
    with pytest.raises(ValueError, match="backend='gpu'"):
        seer.vector.make(toy, 2, backend="gpu")
    with pytest.raises(ValueError, match="workers=0"):
        make_thread(toy, 2, workers=0)
    with pytest.raises(ValueError, match="autoreset_mode"):
        make_thread(toy, 2, autoreset_mode="sometimes")
    with pytest.raises(TypeError, match="callable"):
        seer.vector.make(42, 2)
    with pytest.raises(TypeError, match="process backend only"):
        seer.vector.make(toy, 2, backend="thread", yield_s=0.1)
    with pytest.raises(TypeError, match="lacks"):
        seer.vector.make(lambda: object(), 1)


def test_auto_backend_picks_threads_for_native_copies_and_processes_otherwise():
    from seer.envs import uav_swarm_v0

    cores = len(os.sched_getaffinity(0))
    with seer.vector.make(toy, 3) as envs:  # a Python env: its step holds the GIL
        assert envs.backend == ("process" if cores > 1 else "thread")
        assert f"backend={envs.backend!r}" in repr(envs)
    with seer.vector.make(toy, 1) as envs:  # one copy: nothing to run in parallel
        assert envs.backend == "thread"
    with seer.vector.make(lambda: uav_swarm_v0.parallel_env(scenario="small", workers=1), 3) as envs:
        assert envs.backend == "thread" and envs._backend.runner.vec.native.all()
    with seer.vector.make(toy, 2, yield_s=0.0) as envs:  # process-only options imply the process backend
        assert envs.backend == "process"


def test_num_copies_is_required_and_num_envs_is_not_its_alias():
    # num_envs is the result's row count (copies x agent slots), never the copies to run
    with pytest.raises(TypeError, match="num_copies"):
        make_thread(toy, num_envs=2)
    with make_thread(toy, 2) as envs:
        assert envs.num_copies == 2 and envs.num_envs == 2 * envs.agents_per_copy


def test_auto_workers():
    cores = len(os.sched_getaffinity(0))
    with make_thread(toy, 3) as envs:  # thread backend: seer.stpa decides (1 for Python handlers)
        assert envs.backend == "thread" and envs.workers == 1 and envs.inline is None
    with seer.vector.make(toy, 3, backend="process") as envs:
        assert envs.workers == min(cores, 3)
        assert envs.inline == (envs.workers > 1 and envs.workers >= cores)
        assert len(envs.worker_pids()) == envs.workers - envs.inline


def test_auto_workers_of_native_copies_come_from_stpa_and_are_kept():
    import seer.stpa
    from seer.envs import uav_swarm_v0

    fn = functools.partial(uav_swarm_v0.parallel_env, scenario="small")
    with seer.stpa.capture() as rec:
        envs = seer.vector.make(fn, 4, backend="thread")
    with envs:
        # the copies' own envs are limited to 1 worker; the vector env's choice is STPA's stepper probe
        chosen = [r for r in rec if r.source != "limited"]
        assert len(chosen) == 1 and chosen[0].source in ("model", "heuristic")
        assert chosen[0].features["probe_traced"] == 0.0 and chosen[0].features["entities"] == 4.0
        assert envs.workers == max(1, min(chosen[0].workers, 4))
        obs, _ = envs.reset(seed=3)  # the probe stepped throwaway copies, not these
        with seer.vector.make(fn, 4, backend="thread", workers=1) as ref:
            np.testing.assert_array_equal(obs, ref.reset(seed=3)[0])
    with seer.stpa.capture() as rec:
        again = seer.vector.make(fn, 4, backend="thread")
    with again:  # the same env, copies and rows: the choice is kept (the same record), nothing probed
        assert again.workers == envs.workers and [r for r in rec if r.source != "limited"] == [chosen[0]]
        assert [r for r in rec if r.source != "limited"][0] is chosen[0]


# ---- determinism and seeding -------------------------------------------------------------------


def test_results_identical_across_worker_counts_and_backends():
    fn = functools.partial(ToyEnv, n_agents=3, max_steps=5, die={1: 2, 2: 4})
    with seer.vector.make(fn, 5, backend="thread", workers=1) as envs:
        ref = rollout(envs, 14)
    for backend, workers, extra in [("thread", 2, {}), ("thread", 4, {}), ("process", 1, {}),
                                    ("process", 2, {}), ("process", 3, {"inline": True})]:
        with seer.vector.make(fn, 5, backend=backend, workers=workers, **extra) as envs:
            assert_same(ref, rollout(envs, 14))


def test_mpe2_identical_across_backends():
    from mpe2 import simple_spread_v3

    fn = functools.partial(simple_spread_v3.parallel_env, N=3, max_cycles=10)
    with seer.vector.make(fn, 3, backend="thread", workers=1) as envs:
        ref = rollout(envs, 13, seed=11)
    with seer.vector.make(fn, 3, backend="process", workers=2) as envs:
        assert_same(ref, rollout(envs, 13, seed=11))


def test_copy_c_is_seeded_with_seed_plus_c():
    from mpe2 import simple_spread_v3

    with make_thread(toy, 4, workers=2) as envs:
        obs, _ = envs.reset(seed=100)
        for c in range(4):
            single, _ = toy().reset(seed=100 + c)
            assert np.array_equal(obs[envs.rows_of(c)], np.stack(list(single.values())))
        assert len({float(obs[3 * c, 0]) for c in range(4)}) == 4  # distinct copies
        obs2, _ = envs.reset(seed=[103, 102, 101, 100])
        assert np.array_equal(obs2[envs.rows_of(0)], obs[envs.rows_of(3)])
        obs3, _ = envs.reset(seed=[100, 100, 100, 101, 101, 101, 102, 102, 102, 103, 103, 103])  # per row
        assert np.array_equal(obs3, obs)
        with pytest.raises(ValueError, match="a copy has one seed"):
            envs.reset(seed=list(range(12)))
        with pytest.raises(ValueError, match="expected num_copies=4"):
            envs.reset(seed=[1, 2])
        with pytest.raises(ValueError, match="non-negative"):
            envs.reset(seed=-1)
    fn = functools.partial(simple_spread_v3.parallel_env, N=3)
    with make_thread(fn, 2) as envs:
        obs, _ = envs.reset(seed=5)
        single = fn()
        o, _ = single.reset(seed=6)
        assert np.array_equal(obs[3:6], np.stack([o[a] for a in single.possible_agents]))


# ---- masks and autoreset -----------------------------------------------------------------------


def test_dead_and_padded_rows_are_masked():
    sizes = itertools.cycle([3, 2])
    fn = lambda: ToyEnv(n_agents=next(sizes), max_steps=4, die={0: 2})  # noqa: E731
    with make_thread(fn, 2) as envs:
        assert envs.agents_per_copy == 3 and envs.num_envs == 6
        assert envs.row_agents == ["a0", "a1", "a2", "a0", "a1", None]
        obs, infos = envs.reset(seed=0)
        assert infos["mask"].tolist() == [True, True, True, True, True, False]
        assert not obs[5].any()
        a = np.ones(6, np.int64)
        _, rew, term, trunc, infos = envs.step(a)
        assert infos["mask"].tolist() == [True] * 5 + [False]
        assert rew[5] == 0 and not term[5] and not trunc[5]
        obs, rew, term, trunc, infos = envs.step(a)  # a0 dies in both copies
        assert term.tolist() == [True, False, False, True, False, False]
        assert infos["mask"].tolist() == [True] * 5 + [False]
        assert infos["alive"].tolist() == [False, True, True, False, True, False]
        assert obs[0, 1] == 2  # the dying agent's last observation
        obs, rew, term, trunc, infos = envs.step(a)
        assert infos["mask"].tolist() == [False, True, True, False, True, False]
        assert not obs[0].any() and rew[0] == 0 and not term[0] and not trunc[0]  # dead: zeros, reported once
        obs, rew, term, trunc, infos = envs.step(a)  # step 4: truncation ends both copies
        assert trunc.tolist() == [False, True, True, False, True, False]
        assert infos["alive"].sum() == 0
        obs, rew, term, trunc, infos = envs.step(a)  # NEXT_STEP: the reset step
        assert not infos["mask"].any() and not rew.any() and not term.any() and not trunc.any()
        assert infos["alive"].tolist() == [True] * 5 + [False]
        assert (obs[:5, 1] == 0).all()  # fresh episodes
        assert infos["reset"][[0, 3]].all()


def test_same_step_autoreset_reports_final_obs_and_info(vector_backend):
    fn = functools.partial(ToyEnv, n_agents=2, max_steps=2)
    with seer.vector.make(fn, 2, autoreset_mode="SAME_STEP", **vector_backend) as envs:
        assert envs.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP
        envs.reset(seed=0)
        a = np.zeros(4, np.int64)
        _, _, _, trunc, infos = envs.step(a)
        assert "final_obs" not in infos and not trunc.any()
        obs, rew, term, trunc, infos = envs.step(a)
        assert trunc.all() and infos["mask"].all() and infos["alive"].all()
        assert (obs[:, 1] == 0).all()  # already reset
        assert infos["_final_obs"].all()
        assert [float(o[1]) for o in infos["final_obs"]] == [2.0] * 4
        assert infos["final_info"]["t"].tolist() == [2, 0, 2, 0]
        assert infos["final_info"]["_t"].tolist() == [True, False, True, False]
        assert infos["reset"].tolist() == [True, False, True, False]
        obs, rew, term, trunc, infos = envs.step(a)
        assert infos["mask"].all() and (obs[:, 1] == 1).all() and "final_obs" not in infos


def test_disabled_autoreset_and_reset_mask():
    fn = functools.partial(ToyEnv, n_agents=2, max_steps=2)
    with make_thread(fn, 3, autoreset_mode=AutoresetMode.DISABLED) as envs:
        with pytest.raises(RuntimeError, match="before reset"):
            envs.step(np.zeros(6, np.int64))
        with pytest.raises(ValueError, match="first reset"):
            envs.reset(options={"reset_mask": np.ones(6, bool)})
        envs.reset(seed=0)
        a = np.zeros(6, np.int64)
        envs.step(a)
        obs, _, _, trunc, _ = envs.step(a)
        assert trunc.all()
        with pytest.raises(RuntimeError, match="DISABLED"):
            envs.step(a)
        mask = np.array([False, False, True, False, False, False])  # one row resets its whole copy
        obs2, infos = envs.reset(seed=9, options={"reset_mask": mask})
        assert (obs2[2:4, 1] == 0).all() and np.array_equal(obs2[[0, 1, 4, 5]], obs[[0, 1, 4, 5]])
        assert infos["_reset"].tolist() == [False, False, True, False, False, False]
        with pytest.raises(RuntimeError, match="DISABLED"):
            envs.step(a)
        envs.reset(options={"reset_mask": np.ones(6, bool)})
        envs.step(a)
        for bad in (np.ones(5, bool), np.ones(6, int), np.zeros(6, bool)):
            with pytest.raises((ValueError, TypeError), match="reset_mask"):
                envs.reset(options={"reset_mask": bad})


# ---- actions and spaces ------------------------------------------------------------------------


def test_action_validation_names_the_row():
    with make_thread(toy, 2) as envs:
        envs.reset(seed=0)
        with pytest.raises(ValueError, match=r"shape \(5,\): expected \(6,\)"):
            envs.step(np.zeros(5, np.int64))
        with pytest.raises(ValueError, match="integer actions"):
            envs.step(np.zeros(6))
        bad = np.zeros(6, np.int64)
        bad[4] = 3
        with pytest.raises(ValueError, match=r"row 4 \(copy 1, agent 'a1'\) is 3: expected an integer in \[0, 2\]"):
            envs.step(bad)
        envs.step(np.zeros(6, np.int64))  # still usable
    fn = functools.partial(ToyEnv, continuous=True)
    with make_thread(fn, 2) as envs:
        envs.reset(seed=0)
        a = np.zeros((6, 2), np.float32)
        a[2, 1] = np.nan
        with pytest.raises(ValueError, match=r"row 2 \(copy 0, agent 'a2'\)"):
            envs.step(a)
        a[2, 1] = 1.5
        with pytest.raises(ValueError, match=r"\[-1.0, 1.0\]"):
            envs.step(a)
        envs.step(np.clip(a, -1, 1))
    with make_thread(fn, 1, validate_actions=False) as envs:
        envs.reset(seed=0)
        with pytest.raises(EnvCopyError, match="copy 0"):  # the env's own check fires instead
            envs.step(np.full((3, 2), 5.0, np.float32))


def test_heterogeneous_spaces_need_pad():
    fn = functools.partial(ToyEnv, hetero=True)
    with pytest.raises(SpaceMismatchError, match="pass pad=True"):
        make_thread(fn, 2)
    with make_thread(fn, 2, pad=True) as envs:
        assert envs.single_observation_space.shape == (6,)
        assert envs.single_action_space == spaces.Discrete(5)
        obs, _ = envs.reset(seed=1)
        assert (obs[0, 4:] == 0).all() and (obs[1, 5:] == 0).all()
        a = np.array([4, 4, 4, 1, 1, 1])  # beyond a0's / a1's n: action 0 (SuperSuit's rule)
        obs, *_ = envs.step(a)
        assert obs[:3, 3].tolist() == [1.0, 1.0, 5.0] and obs[3:, 3].tolist() == [2.0, 2.0, 2.0]
    fn = functools.partial(ToyEnv, hetero=True, continuous=True)
    with make_thread(fn, 1, pad=True) as envs:
        assert envs.single_action_space.shape == (4,)
        envs.reset(seed=1)
        a = np.full((3, 4), 0.5, np.float32)
        obs, *_ = envs.step(a)  # each agent gets its own leading part
        assert obs[:, 3].tolist() == [2.0, 2.5, 3.0]
        a[0, 3] = 7.0  # padding cells are ignored, not validated against bounds
        envs.step(a)
        a[0, 1] = 7.0
        with pytest.raises(ValueError, match="row 0"):
            envs.step(a)


def test_aec_env_is_accepted():
    with make_thread(lambda: parallel_to_aec(toy()), 2) as envs:
        obs, _ = envs.reset(seed=0)
        assert obs.shape == (6, 4)
        envs.step(np.ones(6, np.int64))


# ---- copies ------------------------------------------------------------------------------------


def test_call_get_attr_set_attr_render():
    for backend in ("thread", "process"):
        fn = functools.partial(ToyEnv, render_mode="rgb_array", max_steps=50)
        with seer.vector.make(fn, 3, backend=backend, workers=2, msg_bytes=256) if backend == "process" else \
                make_thread(fn, 3, workers=2) as envs:
            envs.reset(seed=0)
            assert envs.get_attr("max_steps") == (50, 50, 50)
            envs.set_attr("max_steps", [7, 8, 9])
            assert envs.get_attr("max_steps") == (7, 8, 9)
            envs.set_attr("max_steps", 6)
            assert envs.call("observation_space", "a0") == (envs.single_observation_space,) * 3
            assert envs.call("max_steps") == (6, 6, 6)  # not callable: its value
            envs.step(np.zeros(9, np.int64))
            frames = envs.render()
            assert len(frames) == 3 and all(f.shape == (2, 2, 3) and f[0, 0, 0] == 1 for f in frames)
            big = envs.call("render")  # over msg_bytes: comes back through the pipe
            assert len(big) == 3
            with pytest.raises(ValueError, match="num_copies=3"):
                envs.set_attr("max_steps", [1, 2])
            with pytest.raises(EnvCopyError, match="no_such_method"):
                envs.call("no_such_method")
            envs.step(np.zeros(9, np.int64))  # a failed call leaves the env usable


def test_call_get_attr_set_attr_on_some_copies(vector_backend):
    with seer.vector.make(functools.partial(ToyEnv, max_steps=50), 3, **vector_backend) as envs:
        envs.reset(seed=0)
        envs.set_attr("max_steps", [7, 9], copies=[2, 0])   # in the caller's order
        assert envs.get_attr("max_steps") == (9, 50, 7)
        assert envs.get_attr("max_steps", copies=[1, 2]) == (50, 7)
        envs.set_attr("max_steps", 4, copies=[1])
        assert envs.call("__getattribute__", "max_steps", copies=[1]) == (4,)
        for bad in ([0, 0], [3], [-1], [], ["a"], [True]):
            with pytest.raises(ValueError, match="copies="):
                envs.get_attr("max_steps", copies=bad)
        with pytest.raises(ValueError, match=r"expected 2 \(one per copy in copies\)"):
            envs.set_attr("max_steps", [1, 2, 3], copies=[0, 1])
        # a missing attribute: an EnvCopyError that is also an AttributeError (hasattr-style probes)
        with pytest.raises(AttributeError, match="no_such_attribute") as info:
            envs.get_attr("no_such_attribute", copies=[1])
        assert isinstance(info.value, EnvCopyError) and info.value.copy == 1
        with pytest.raises(EnvCopyError) as info:
            envs.call("step", {"a0": "not an action"}, copies=[0])   # not an AttributeError
        assert not isinstance(info.value, AttributeError)
        envs.step(np.zeros(9, np.int64))  # failed calls leave the env usable


def test_step_async_and_wait_with_timeout(tmp_path):
    # Every copy waits at a closed gate: step_async returns anyway, and step_wait times out
    # until the test opens it (an order of events, not a duration).
    gate = tmp_path / "gate"
    fn = functools.partial(ToyEnv, gate=str(gate))
    with seer.vector.make(fn, 2, backend="process", workers=2, inline=False) as envs:
        envs.reset(seed=0)
        envs.step_async(np.zeros(6, np.int64))  # returns while both copies wait in their step
        with pytest.raises(gymnasium.error.AlreadyPendingCallError):
            envs.step_async(np.zeros(6, np.int64))
        with pytest.raises(multiprocessing.TimeoutError):
            envs.step_wait(timeout=0.01)
        gate.touch()
        obs, *_ = envs.step_wait(timeout=30)
        assert (obs[:, 1] == 1).all()
        with pytest.raises(gymnasium.error.NoAsyncCallError):
            envs.step_wait()
    gate.unlink()
    with seer.vector.make(fn, 2, backend="process", workers=2, inline=True) as envs:
        envs.reset(seed=0)
        envs.step_async(np.zeros(6, np.int64))  # the caller's share runs in step_wait, after the gate opens
        gate.touch()
        obs, *_ = envs.step_wait(timeout=30)
        assert (obs[:, 1] == 1).all()
    with make_thread(toy, 2) as envs:
        envs.reset(seed=0)
        envs.step_async(np.zeros(6, np.int64))
        obs, *_ = envs.step_wait(timeout=1.0)
        assert (obs[:, 1] == 1).all()


def test_copy_false_returns_the_live_buffer():
    with make_thread(toy, 2, copy=False) as envs:
        obs, _ = envs.reset(seed=0)
        obs2, *_ = envs.step(np.zeros(6, np.int64))
        assert obs2 is obs or np.shares_memory(obs, obs2)


# ---- Gymnasium's vector wrappers as clients ----------------------------------------------------


def test_gymnasium_vector_wrappers(vector_backend):
    from gymnasium.wrappers import vector as vw

    fn = functools.partial(ToyEnv, continuous=True, max_steps=4, die={2: 2})
    envs = seer.vector.make(fn, 2, **vector_backend)
    envs = vw.RecordEpisodeStatistics(envs)
    envs = vw.NormalizeObservation(envs)
    envs = vw.NormalizeReward(envs)
    envs = vw.ClipAction(envs)
    envs = vw.DictInfoToList(envs)
    try:
        obs, infos = envs.reset(seed=0)
        assert isinstance(infos, list) and len(infos) == 6
        episodes = []
        for _ in range(11):
            obs, rew, term, trunc, infos = envs.step(np.full((6, 2), 3.0))  # ClipAction brings it to 1
            assert np.isfinite(obs).all() and np.isfinite(rew).all()
            episodes += [i["episode"] for i in infos if "episode" in i]
        # a0/a1 truncate at 4, in both copies, twice (steps 4 and 9); a2 dies at its episode's step 2
        # (steps 2 and 7).  Dead rows read zero rewards and no termination, so the wrapper's returns are
        # exact but the length of the episode after an early death counts two dead steps (4, 5).
        lengths = sorted(int(e["l"]) for e in episodes)
        assert lengths == [2] * 2 + [4] * 10
        returns = sorted(float(e["r"]) for e in episodes)
        assert returns[-1] > returns[0]
    finally:
        envs.close()


def test_thread_backend_spreads_copies_over_the_runtime_pool():
    # Each copy's step waits at a barrier of four (the wait releases the GIL, as SEER's native
    # event streams do): a step completes only if the 4 workers run the 4 copies at once.
    barrier = threading.Barrier(4, timeout=60)
    fn = functools.partial(ToyEnv, barrier=barrier, max_steps=100)
    with seer.vector.make(fn, 4, backend="thread", workers=4) as envs:
        envs.reset(seed=0)
        for _ in range(3):
            obs, *_ = envs.step(np.zeros(12, np.int64))
    assert (obs[:, 1] == 3).all() and not barrier.broken


# ---- SEER's own envs ---------------------------------------------------------------------------


def test_uav_swarm_through_both_backends():
    uav = pytest.importorskip("seer.envs.uav_swarm_v0")
    fn = functools.partial(uav.parallel_env, scenario="small", workers=1, max_cycles=5)
    with seer.vector.make(fn, 3, backend="thread", workers=1) as envs:
        assert envs.num_envs == 24 and envs.single_action_space.shape == (3,)
        ref = rollout(envs, 7)
    with seer.vector.make(fn, 3, backend="thread", workers=2) as envs:
        assert_same(ref, rollout(envs, 7))
    with seer.vector.make(fn, 3, backend="process", workers=2) as envs:
        assert_same(ref, rollout(envs, 7))


def test_send_recv_on_every_backend(vector_backend):
    fn = functools.partial(ToyEnv, max_steps=50)
    with seer.vector.make(fn, 2, **vector_backend) as envs:
        obs, _ = envs.reset(seed=0)
        envs.send(np.zeros(6, np.int64))
        with pytest.raises(gymnasium.error.AlreadyPendingCallError):
            envs.step(np.zeros(6, np.int64))
        got = set()
        while len(got) < envs.num_shards:
            o, r, te, tr, infos = envs.recv()
            got |= set(infos["shards"].tolist())
            assert (o[:, 1] == 1).all() and len(infos["rows"]) == len(o)
        obs, *_ = envs.step(np.zeros(6, np.int64))  # back to lockstep
        assert (obs[:, 1] == 2).all()
