"""seer.vector's Ray backend: the VectorEnv contract (identical results to the
thread backend), env-pool stepping, batched rollouts, dead shard actors, and
Ray as an optional extra.

The contract tests shared with the other backends (SAME_STEP autoreset, calls
on some copies, Gymnasium's wrappers, send/recv) run in test_vector.py over
the ``vector_backend`` fixture; ``ray_cluster`` (one local Ray node per
module) is in tests/conftest.py."""

import functools
import multiprocessing
import os
import signal
import sys
import time

import cloudpickle
import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import seer.vector
from seer.errors import ClosedError, WorkerError
from seer.vector import EnvCopyError

from toy_envs import ToyEnv, assert_same, rollout  # noqa: E402  (tests/toy_envs.py, pickled by value)

cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the policies below travel to the shards

toy = functools.partial(ToyEnv, n_agents=3, max_steps=5, die={1: 2, 2: 4})
RAY = dict(backend="ray", num_cpus_per_shard=0.5)


class Alternating:
    """Copies with 2, 3, 2, ... agents of different spaces (counted per process)."""

    def __init__(self):
        self.n = 0

    def __call__(self):
        self.n += 1
        return ToyEnv(n_agents=2 if self.n % 2 else 3, hetero=True)


def linear_policy(obs):
    """Deterministic Discrete(3) actions from the observations."""
    return (np.abs(obs[:, 0] * 7 + obs[:, 1]).astype(np.int64)) % 3


# ---- the contract: identical to the thread backend ---------------------------------------------


@pytest.mark.parametrize("shards", [2, 3])
def test_identical_to_thread_backend(ray_cluster, shards):
    with seer.vector.make(toy, 5, backend="thread", workers=1) as envs:
        ref = rollout(envs, 14, seed=3)
    with seer.vector.make(toy, 5, num_shards=shards, **RAY) as envs:
        assert envs.backend == "ray" and envs.num_shards == shards and envs.num_envs == 15
        assert isinstance(envs, seer.vector.RayVectorEnv)
        assert [s.start for s in envs.shard_rows] == ([0, 9] if shards == 2 else [0, 6, 12])
        assert envs.single_observation_space == ToyEnv().observation_space("a0")
        assert len(set(envs.worker_pids())) == shards and os.getpid() not in envs.worker_pids()
        assert_same(ref, rollout(envs, 14, seed=3))
        obs, _ = envs.reset(seed=100)  # copy c gets seed + c, wherever it runs
        single, _ = toy().reset(seed=104)
        assert np.array_equal(obs[envs.rows_of(4)], np.stack(list(single.values())))


def test_uav_swarm_and_process_shards(ray_cluster):
    uav = pytest.importorskip("seer.envs.uav_swarm_v0")
    fn = functools.partial(uav.parallel_env, scenario="small", workers=1, max_cycles=5)
    with seer.vector.make(fn, 3, backend="thread", workers=1) as envs:
        ref = rollout(envs, 7)
    with seer.vector.make(fn, 3, num_shards=2, **RAY) as envs:
        assert envs.num_envs == 24 and envs.single_action_space.shape == (3,)
        assert "copy_path='native'" in repr(envs)  # the shards step their copies in C
        assert_same(ref, rollout(envs, 7))
    with seer.vector.make(fn, 3, num_shards=2, shard_backend="process", inline=True, workers=1, **RAY) as envs:
        assert envs.copy_path == "native"
        assert_same(ref, rollout(envs, 7))


def test_unpicklable_env_fn_is_named_before_any_shard_starts(ray_cluster):
    import threading

    from seer.errors import InvalidArgumentError

    lock = threading.Lock()
    with pytest.raises(InvalidArgumentError, match=r"cannot be pickled .*Ray sends it to each shard actor"):
        seer.vector.make(lambda: lock and toy(), 2, num_shards=1, **RAY)


def test_disabled_autoreset_across_shards(ray_cluster):
    # SAME_STEP autoreset on Ray: test_vector.py's contract tests (the vector_backend fixture)
    fn = functools.partial(ToyEnv, n_agents=2, max_steps=2)
    with seer.vector.make(fn, 3, num_shards=2, autoreset_mode=AutoresetMode.DISABLED, **RAY) as envs:
        envs.reset(seed=0)
        a = np.zeros(6, np.int64)
        envs.step(a)
        obs, _, _, trunc, _ = envs.step(a)
        assert trunc.all()
        with pytest.raises(RuntimeError, match="DISABLED"):
            envs.step(a)
        mask = np.array([False, False, False, False, True, False])  # copy 2, in shard 1
        obs2, infos = envs.reset(seed=9, options={"reset_mask": mask})
        assert (obs2[4:6, 1] == 0).all() and np.array_equal(obs2[:4], obs[:4])
        assert infos["_reset"].tolist() == [False] * 4 + [True, False]


def test_call_attrs_errors_and_pad_mismatch(ray_cluster):
    fn = functools.partial(ToyEnv, render_mode="rgb_array", max_steps=50)
    with seer.vector.make(fn, 4, num_shards=2, **RAY) as envs:
        envs.reset(seed=0)
        assert envs.get_attr("max_steps") == (50,) * 4
        envs.set_attr("max_steps", [7, 8, 9, 10])
        assert envs.get_attr("max_steps") == (7, 8, 9, 10)
        assert envs.call("observation_space", "a0") == (envs.single_observation_space,) * 4
        pids = envs.get_attr("pid")
        assert pids[:2] == (envs.worker_pids()[0],) * 2 and pids[2:] == (envs.worker_pids()[1],) * 2
        envs.step(np.zeros(12, np.int64))
        assert all(f[0, 0, 0] == 1 for f in envs.render())
        with pytest.raises(EnvCopyError, match="no_such_method"):
            envs.call("no_such_method")
        envs.set_attr("fail_next", [False, False, True, False])
        with pytest.raises(EnvCopyError) as info:
            envs.step(np.zeros(12, np.int64))
        err = info.value
        assert err.copy == 2 and "env copy 2 (rows 6..8) raised in step" in str(err)
        assert "shard 1 (Ray actor" in str(err) and f"pid {envs.worker_pids()[1]}" in str(err)
        assert "toy failure on demand" in err.traceback
        with pytest.raises(RuntimeError, match=r"copies \[2\] failed"):
            envs.step(np.zeros(12, np.int64))
        mask = np.zeros(12, bool)
        mask[6] = True
        envs.reset(options={"reset_mask": mask})
        obs, *_ = envs.step(np.zeros(12, np.int64))
        assert obs[6, 1] == 1 and obs[0, 1] == 3
        with pytest.raises(ValueError, match="action of row 4"):
            envs.step(np.array([0] * 4 + [5] + [0] * 7))
    with seer.vector.make(fn, 4, num_shards=2, restart_failed=True, **RAY) as envs:  # a copy restarts in its shard
        envs.reset(seed=0)
        envs.set_attr("fail_next", [False, False, False, True])
        with pytest.warns(RuntimeWarning, match="copy 3 failed and was restarted"):
            _, _, _, trunc, infos = envs.step(np.zeros(12, np.int64))
        assert trunc.tolist() == [False] * 9 + [True] * 3 and infos["restarted"][9:].all()
        assert envs.restarts == [0, 0, 0, 1]
    # copies with 2, 3, 2 agents of different spaces: shard 1 (copy 2) pads to other spaces than the whole
    with pytest.raises(ValueError, match="shard 1 .* lays its rows out differently"):
        seer.vector.make(Alternating(), 3, num_shards=2, pad=True, **RAY)
    with pytest.raises(ValueError, match="num_shards=3"):
        seer.vector.make(toy, 2, num_shards=3, **RAY)
    with pytest.raises(TypeError, match="ray backend only"):
        seer.vector.make(toy, 2, backend="thread", num_shards=2)


# ---- async stepping and the env pool ------------------------------------------------------------


def test_step_async_timeout_and_env_pool(ray_cluster, tmp_path):
    gate = tmp_path / "gate"  # shard 1's copies wait in their step until it exists
    fn = functools.partial(ToyEnv, max_steps=50)
    with seer.vector.make(fn, 4, num_shards=2, **RAY) as envs:
        obs, _ = envs.reset(seed=0)
        envs.set_attr("gate", [None, None, str(gate), str(gate)])
        envs.step_async(np.zeros(12, np.int64))  # returns while shard 1 waits
        with pytest.raises(gymnasium.error.AlreadyPendingCallError):
            envs.step_async(np.zeros(12, np.int64))
        # shard 0 finishes at its own pace (a loaded machine may take a while); shard 1 never does
        for _ in range(600):
            with pytest.raises(multiprocessing.TimeoutError, match=r"still busy") as info:
                envs.step_wait(timeout=0.05)
            if "shards [1] still busy" in str(info.value):
                break
        assert "shards [1] still busy" in str(info.value)
        gate.touch()
        obs, *_ = envs.step_wait(timeout=30)
        assert (obs[:, 1] == 1).all()
        gate.unlink()
        # env pool: the shard that can finish comes back first, its rows named in infos
        envs.send(np.zeros(12, np.int64))
        with pytest.raises(gymnasium.error.AlreadyPendingCallError):
            envs.step(np.zeros(12, np.int64))
        o, r, te, tr, infos = envs.recv(min_shards=1)
        assert infos["shards"].tolist() == [0] and infos["rows"].tolist() == list(range(6))
        assert o.shape == (6, 4) and (o[:, 1] == 2).all() and infos["mask"].shape == (6,)
        assert infos["t"].tolist() == [2, 0, 0, 2, 0, 0] and infos["_t"].tolist() == [True, False, False] * 2
        assert envs.pending_shards == [1]
        envs.send(np.ones(12, np.int64), shards=[0])  # every row given: only shard 0's are used
        gate.touch()
        o, r, te, tr, infos = envs.recv(min_shards=2, timeout=30)
        assert infos["shards"].tolist() == [0, 1] and infos["rows"].tolist() == list(range(12))
        assert (o[:6, 1] == 3).all() and (o[6:, 1] == 2).all() and (o[:6, 3] == 4).all()
        gate.unlink()
        envs.send(np.zeros(6, np.int64), shards=[1])
        with pytest.raises(multiprocessing.TimeoutError):
            envs.recv(timeout=0.01)
        gate.touch()
        o, r, te, tr, infos = envs.recv(timeout=30)
        assert infos["shards"].tolist() == [1] and (o[:, 1] == 3).all()
        with pytest.raises(gymnasium.error.NoAsyncCallError):
            envs.recv()
        envs.set_attr("gate", None)
        obs, *_ = envs.step(np.zeros(12, np.int64))  # back to lockstep
        assert (obs[:, 1] == 4).all()


# ---- rollouts -----------------------------------------------------------------------------------


def test_rollout_equals_stepping(ray_cluster):
    def by_steps(envs, n):
        obs, _ = envs.reset(seed=5)
        cols = {k: [] for k in ("obs", "actions", "rewards", "terminations", "truncations", "mask", "alive")}
        for _ in range(n):
            a = linear_policy(obs)
            cols["obs"].append(obs)
            cols["actions"].append(a)
            obs, r, te, tr, inf = envs.step(a)
            for k, v in zip(("rewards", "terminations", "truncations", "mask", "alive"),
                            (r, te, tr, inf["mask"], inf["alive"])):
                cols[k].append(v)
        return {k: np.stack(v) for k, v in cols.items()}, obs

    with seer.vector.make(toy, 5, backend="thread", workers=1) as envs:
        ref, ref_last = by_steps(envs, 12)
        ref_next = envs.step(linear_policy(ref_last))[0]
        rollout_ref = rollout(envs, 9, seed=3)
    with seer.vector.make(toy, 5, num_shards=2, **RAY) as envs:
        envs.reset(seed=5)
        batch = envs.rollout(linear_policy, 12, infos=True)
        assert batch["obs"].shape == (12, 15, 4) and batch["actions"].shape == (12, 15)
        for k, v in ref.items():
            assert batch[k].dtype == v.dtype and np.array_equal(batch[k], v), k
        assert np.array_equal(batch["last_obs"], ref_last)
        assert len(batch["infos"]) == 12 and batch["infos"][0]["t"].tolist() == [1, 0, 0] * 5
        obs, *_ = envs.step(linear_policy(batch["last_obs"]))  # stepping goes on from the rollout
        assert np.array_equal(obs, ref_next)
        with pytest.raises(ValueError, match="the policy returned actions of shape"):
            envs.rollout(lambda o: np.zeros(3, np.int64), 4)
        with pytest.raises(RuntimeError, match="the policy raised in shard 0"):
            envs.rollout(lambda o: 1 / 0, 2)
        envs.reset(seed=5)
        again = envs.rollout(linear_policy, 12)
        assert np.array_equal(again["rewards"], ref["rewards"]) and "infos" not in again
        be = envs._backend
        boxes = [f"/dev/shm/{shm.name.lstrip('/')}" for shm in be._boxes.values()]
        # the row buffers, the lane and the batches are in shared memory (the shards are on this node): a
        # batch's arrays are views of its block, written in place by the shards
        assert "bufs" in be._boxes and "lane" in be._boxes and be.direct == {0, 1} and be.lane.open == {0, 1}
        assert all(os.path.exists(p) for p in boxes)
        held = {k: v.copy() for k, v in again.items()}
        envs.reset(seed=6)
        other = envs.rollout(linear_policy, 12)  # another block: `again` is still held
        assert not np.array_equal(other["obs"], held["obs"])
        for k, v in held.items():
            assert np.array_equal(again[k], v), k
        names = set(be._boxes)
        del again, other
        envs.reset(seed=5)
        assert np.array_equal(envs.rollout(linear_policy, 12)["rewards"], ref["rewards"])
        assert set(be._boxes) <= names  # a block whose arrays are all gone serves the next rollout
    assert not any(os.path.exists(p) for p in boxes)  # close() unlinked them
    with seer.vector.make(toy, 5, num_shards=2, shared_memory=False, **RAY) as envs:  # Ray's object store
        envs.reset(seed=5)
        batch = envs.rollout(linear_policy, 12)
        assert np.array_equal(batch["obs"], ref["obs"]) and not envs._backend._boxes and not envs._backend.direct
        assert_same(rollout_ref, rollout(envs, 9, seed=3))


def test_shards_count_the_time_they_spend_in_rollouts(ray_cluster):
    """_Shard.rollout_time: the rollout calls a shard served and its seconds in them, through the lane or
    Ray's calls alike (bench_ray.py takes them from the driver's time to measure what a call costs on top)."""
    import ray

    def slow_policy(obs):
        time.sleep(0.002)
        return linear_policy(obs)

    for shared in (True, False):
        with seer.vector.make(toy, 4, num_shards=2, shared_memory=shared, **RAY) as envs:
            envs.reset(seed=1)
            before = [ray.get(a.rollout_time.remote()) for a in envs.actors]
            t0 = time.perf_counter()
            envs.rollout(slow_policy, 10)
            envs.rollout(slow_policy, 5)
            wall = time.perf_counter() - t0
            after = [ray.get(a.rollout_time.remote()) for a in envs.actors]
            for (n0, s0), (n1, s1) in zip(before, after):
                assert n1 - n0 == 2, shared
                assert 15 * 0.002 <= s1 - s0 <= wall, (shared, s1 - s0, wall)


# ---- the lane: step and rollout calls through shared memory --------------------------------------


def test_lane_replies_too_large_for_their_area_come_through_ray(ray_cluster, monkeypatch):
    import seer.vector.ray.lane as lane_mod

    with seer.vector.make(toy, 5, backend="thread", workers=1) as envs:
        ref = rollout(envs, 9, seed=3)
        envs.reset(seed=5)
        ref_batch = {k: v for k, v in envs.step(linear_policy(envs.reset(seed=5)[0]))[4].items()}
    monkeypatch.setattr(lane_mod, "MSG_BYTES", 128)  # only the smallest replies fit
    monkeypatch.setattr(lane_mod, "CMD_BYTES", 256)  # a rollout's command does not: it goes as a Ray call
    with seer.vector.make(toy, 5, num_shards=2, **RAY) as envs:
        be = envs._backend
        assert be.lane.open == {0, 1} and be.lane.msg_bytes == 128
        assert_same(ref, rollout(envs, 9, seed=3))
        envs.reset(seed=5)
        infos = envs.step(linear_policy(envs.reset(seed=5)[0]))[4]
        assert infos.keys() == ref_batch.keys() and all(np.array_equal(infos[k], v) for k, v in ref_batch.items())
        assert be.lane.seq[0] > 9  # the steps went through the lane
        envs.reset(seed=5)
        batch = envs.rollout(linear_policy, 4, infos=True)
        assert len(batch["infos"]) == 4


def test_a_forged_lane_call_is_refused_and_named(ray_cluster):
    import seer.vector.ray.lane as lane_mod

    with seer.vector.make(toy, 4, num_shards=2, **RAY) as envs:
        envs.reset(seed=0)
        envs.step(np.zeros(12, np.int64))
        lane = envs._backend.lane
        line = lane.line(1)
        # another process of this user bumps shard 1's call number without the MAC: nothing is run
        lane.flags.store(line + lane_mod.CMDLEN, 0)
        lane.flags.store(line + lane_mod.REQ, lane.seq[1] + 1)
        lane.flags.ring(line + lane_mod.WBELL)
        for _ in range(200):  # the shard looks at it (and stops serving) before the driver's next call
            if lane.flags.load(line + lane_mod.EXITED):
                break
            time.sleep(0.05)
        with pytest.raises(WorkerError, match=r"(?s)shard 1 .* failed while running env copies 2..3.*lane stopped "
                                              r"serving calls.*refused call"):
            envs.step(np.zeros(12, np.int64))
        assert envs.closed


# ---- dead shards --------------------------------------------------------------------------------


def dead(ray, actor, timeout=10.0):
    """Wait until a killed actor is gone: ray.kill only asks for it, and a
    call sent right after may still be served."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            ray.get(actor.ping.remote(), timeout=timeout)
        except ray.exceptions.RayActorError:
            return
        time.sleep(0.05)
    raise AssertionError("the killed actor still answers")


def kill_between_calls(ray, envs, s, pid, timeout=30.0):
    """SIGKILL shard ``s``'s process ``pid`` between two calls and wait
    until Ray has restarted its actor (it answers from another pid)."""
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if ray.get(envs.actors[s].ping.remote(), timeout=5) != pid:
                return
        except ray.exceptions.RayError:
            time.sleep(0.05)
    raise AssertionError(f"Ray did not restart shard {s}'s actor within {timeout:g} s")


def test_killed_shard_is_named_and_nothing_hangs(ray_cluster):
    ray = ray_cluster
    envs = seer.vector.make(toy, 4, num_shards=2, **RAY)
    envs.reset(seed=0)
    envs.step(np.zeros(12, np.int64))
    actors = envs.actors
    pid = envs.worker_pids()[1]
    ray.kill(actors[1])
    dead(ray, actors[1])
    # Ray calls the actor dead a moment before its process ends; until then the process still serves the lane's
    # steps (its copies are intact): the step below is the first one after the process is gone
    deadline = time.monotonic() + 30
    while os.path.exists(f"/proc/{pid}") and open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z":
        assert time.monotonic() < deadline, "the killed shard's process did not end"
        time.sleep(0.02)
    with pytest.raises(WorkerError) as info:  # never a hang: the suite's timeout would end it
        envs.step(np.zeros(12, np.int64))
    msg = str(info.value)
    assert "shard 1 (Ray actor" in msg and "env copies 2..3 (rows 6..11)" in msg and "restart_failed=True" in msg
    assert isinstance(info.value.__cause__, ray.exceptions.RayActorError)
    assert envs.closed
    with pytest.raises(ClosedError, match="shard 1"):
        envs.step(np.zeros(12, np.int64))
    envs.close()
    dead(ray, actors[0])  # close() killed the other shard too (ray.kill takes effect a moment later)
    assert ray.is_initialized()  # make() did not start Ray: close() leaves it up


def test_dead_shard_restarts_with_restart_failed(ray_cluster):
    ray = ray_cluster
    fn = functools.partial(ToyEnv, max_steps=50)
    envs = seer.vector.make(fn, 4, num_shards=2, restart_failed=True, **RAY)
    try:
        envs.reset(seed=0)
        envs.step(np.zeros(12, np.int64))
        old = envs.worker_pids()
        envs.set_attr("sleep", [0.5, 0.5, 0.0, 0.0])
        envs.step_async(np.zeros(12, np.int64))
        time.sleep(0.1)
        os.kill(old[0], signal.SIGKILL)  # dies in the middle of a step
        with pytest.warns(RuntimeWarning, match="shard 0 .* died while stepping env copies 0..1"):
            obs, rew, term, trunc, infos = envs.step_wait(timeout=30)
        assert infos["restarted"].tolist() == [True] * 6 + [False] * 6
        assert trunc.tolist() == [True] * 6 + [False] * 6  # the episodes of its live agents are cut
        assert not infos["mask"][:6].any() and infos["mask"][6:].all() and (obs[6:, 1] == 2).all()
        assert envs.restarts == [1, 1, 0, 0]
        new = envs.worker_pids()
        assert new[0] != old[0] and new[1] == old[1]
        obs, *_ = envs.step(np.zeros(12, np.int64))  # NEXT_STEP: the restarted copies reset ...
        assert (obs[:6, 1] == 0).all() and (obs[6:, 1] == 3).all()
        for c in (0, 1):  # ... with the process backend's restart seeds: last seed + num_copies * restarts
            single, _ = fn().reset(seed=c + 4)
            assert np.array_equal(obs[envs.rows_of(c)], np.stack(list(single.values())))
        # dies between calls: Ray restarts it before the next call, which notices the new incarnation
        kill_between_calls(ray, envs, 0, new[0])
        with pytest.warns(RuntimeWarning, match="Ray restarted it"):
            batch = envs.rollout(linear_policy, 2)
        assert batch["truncations"][0].tolist() == [True] * 6 + [False] * 6 and not batch["mask"][:, :6].any()
        assert (batch["last_obs"][6:, 1] == 5).all() and envs.restarts == [2, 2, 0, 0]
        obs, *_ = envs.step(np.zeros(12, np.int64))
        assert (obs[:6, 1] == 0).all() and (obs[6:, 1] == 6).all()
    finally:
        envs.close()


class RestartingActor:
    """An actor handle whose first ``fails`` ``start`` calls fail as a call
    does while Ray is still restarting the actor (ActorUnavailableError)."""

    def __init__(self, ray, handle, fails):
        self._handle, self.fails, self.start_calls = handle, fails, 0

        @ray.remote(num_cpus=0)
        def restarting():
            raise ray.exceptions.ActorUnavailableError(
                "The actor is temporarily unavailable: IOError: The actor is restarting", None)
        self._restarting = restarting

    def __getattr__(self, name):
        method = getattr(self._handle, name)
        if name != "start":
            return method
        outer = self

        class Start:
            @staticmethod
            def remote(*args):
                outer.start_calls += 1
                return outer._restarting.remote() if outer.start_calls <= outer.fails else method.remote(*args)
        return Start


def test_restart_waits_while_ray_says_the_actor_is_restarting(ray_cluster):
    # The CI flake this fixes: the restart's first call reached the actor while Ray was
    # still restarting it, and a transient "actor is restarting" ended the vector env.
    ray = ray_cluster
    envs = seer.vector.make(functools.partial(ToyEnv, max_steps=50), 4, num_shards=2, restart_failed=True, **RAY)
    try:
        envs.reset(seed=0)
        envs.step(np.zeros(12, np.int64))
        old = envs.worker_pids()
        kill_between_calls(ray, envs, 0, old[0])
        flaky = envs._backend.actors[0] = RestartingActor(ray, envs.actors[0], fails=2)  # the driver's handle
        with pytest.warns(RuntimeWarning, match="Ray restarted it"):
            obs, rew, term, trunc, infos = envs.step(np.zeros(12, np.int64))
        assert flaky.start_calls == 3  # two calls met "restarting", the third one took the restart on
        assert infos["restarted"].tolist() == [True] * 6 + [False] * 6 and envs.restarts == [1, 1, 0, 0]
        obs, *_ = envs.step(np.zeros(12, np.int64))
        assert (obs[:6, 1] == 0).all() and (obs[6:, 1] == 3).all()
    finally:
        envs.close()


@pytest.mark.timeout(120)
def test_unresponsive_shard_raises_worker_error_naming_it(ray_cluster):
    envs = seer.vector.make(functools.partial(ToyEnv, max_steps=50), 4, num_shards=2, worker_timeout=1.0, **RAY)
    a = np.zeros(12, np.int64)
    try:
        envs.reset(seed=0)
        envs.step(a)
        envs.set_attr("sleep", [20.0, 20.0, 0.0, 0.0])  # shard 0 hangs in its copies' step
        t0 = time.monotonic()
        with pytest.raises(WorkerError, match=r"shard 0 \(Ray actor .* did not answer within worker_timeout=1 s "
                                              r"while stepping") as info:
            envs.step(a)
        assert time.monotonic() - t0 < 10.0
        assert "shard 1" not in str(info.value) and "restart_failed=True" in str(info.value)
        with pytest.raises(ClosedError, match="can no longer be used"):
            envs.step(a)
    finally:
        t0 = time.monotonic()
        envs.close()
        assert time.monotonic() - t0 < 15.0


@pytest.mark.timeout(120)
def test_unresponsive_shard_is_killed_and_restarted_with_restart_failed(ray_cluster):
    envs = seer.vector.make(functools.partial(ToyEnv, max_steps=50), 4, num_shards=2, worker_timeout=1.0,
                            restart_failed=True, **RAY)
    a = np.zeros(12, np.int64)
    try:
        envs.reset(seed=0)
        envs.step(a)
        old = envs.worker_pids()
        envs.set_attr("sleep", [60.0, 60.0, 0.0, 0.0])
        with pytest.warns(RuntimeWarning, match=r"shard 0 .* did not answer within worker_timeout=1 s and was killed"):
            obs, rew, term, trunc, infos = envs.step(a)
        assert infos["restarted"].tolist() == [True] * 6 + [False] * 6
        assert envs.worker_pids()[0] != old[0] and envs.worker_pids()[1] == old[1]
        envs.step(a)  # the new copies do not sleep
    finally:
        envs.close()


def test_process_shards_take_worker_timeout(ray_cluster):
    with pytest.raises(ValueError, match=r"worker_timeout=-1 is invalid"):
        seer.vector.make(toy, 2, worker_timeout=-1, **RAY)
    with seer.vector.make(toy, 4, num_shards=2, shard_backend="process", worker_timeout=None, **RAY) as envs:
        ref = rollout(envs, 6, seed=1)
    with seer.vector.make(toy, 4, backend="thread", workers=1) as envs:
        assert_same(ref, rollout(envs, 6, seed=1))


# ---- Ray is optional ----------------------------------------------------------------------------


def test_missing_ray_says_which_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    with pytest.raises(ImportError, match=r'pip install "seer-marl\[ray\]"'):
        seer.vector.make(toy, 2, backend="ray")


def test_close_shuts_ray_down_only_if_make_started_it(ray_cluster, monkeypatch):
    ray = ray_cluster
    from seer.vector.ray import cluster as _ray

    calls = []
    real = ray.is_initialized
    seen = []

    def is_initialized():  # pretend Ray is down when make() looks
        if not seen:
            seen.append(1)
            calls.append("check")
            return False
        return real()

    monkeypatch.setattr(ray, "is_initialized", is_initialized)
    monkeypatch.setattr(ray, "init", lambda *a, **k: calls.append("init"))
    monkeypatch.setattr(ray, "shutdown", lambda: calls.append("shutdown"))
    envs = seer.vector.make(toy, 2, num_shards=1, **RAY)
    assert calls == ["check", "init"]
    envs.close()
    assert calls == ["check", "init", "shutdown"] and _ray._OWNED == {"started": False, "users": 0}


def test_turn_based_games_and_copy_subsets(ray_cluster):
    pytest.importorskip("pettingzoo.classic")
    from pettingzoo.classic import connect_four_v3

    def play(envs):
        out = []
        obs, infos = envs.reset(seed=1)
        for _ in range(40):
            a = envs.sample_actions()
            assert all(infos["action_mask"][r, a[r]] for r in np.flatnonzero(infos["alive"]))
            obs, rew, term, trunc, infos = envs.step(a)
            out.append((obs, rew, term, infos["mask"], infos["alive"], infos["action_mask"]))
        return out

    with seer.vector.make(connect_four_v3.env, 3, backend="thread") as envs:
        ref = play(envs)
    with seer.vector.make(connect_four_v3.env, 3, num_shards=2, **RAY) as envs:
        for a, b in zip(ref, play(envs)):
            for x, y in zip(a, b):
                np.testing.assert_array_equal(x, y)
        assert envs.get_attr("render_mode", copies=[2, 0]) == (None, None)
        with pytest.raises(AttributeError, match="no_such_attribute"):
            envs.get_attr("no_such_attribute", copies=[2])

