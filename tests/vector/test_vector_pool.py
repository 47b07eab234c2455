"""Env-pool stepping of the process backend (send / recv): a slow worker's
copies never hold up the others, results equal lockstep stepping, other ops
wait, and a worker killed mid-request is seen at once."""

import functools
import multiprocessing
import os
import signal

import gymnasium
import numpy as np
import pytest

import seer.vector
from seer.errors import WorkerError

from toy_envs import ToyEnv  # noqa: E402  (tests/toy_envs.py, pickled by value)

toy = functools.partial(ToyEnv, max_steps=50)


@pytest.mark.parametrize("inline", [False, True])
def test_the_fast_worker_comes_back_first(inline, tmp_path):
    gate = tmp_path / "gate"
    with seer.vector.make(toy, 4, backend="process", workers=2, inline=inline) as envs:
        assert isinstance(envs, seer.vector.ProcessVectorEnv)
        assert envs.num_shards == 2 and list(envs.shard_copies) == [range(0, 2), range(2, 4)]
        envs.reset(seed=0)
        envs.set_attr("gate", [None, None, str(gate), str(gate)])  # worker 1's copies wait at a closed gate
        envs.send(np.zeros(12, np.int64))  # returns while worker 1 waits
        with pytest.raises(gymnasium.error.AlreadyPendingCallError):
            envs.step(np.zeros(12, np.int64))
        o, r, te, tr, infos = envs.recv(min_shards=1)  # worker 1 cannot have finished: worker 0 alone
        assert infos["shards"].tolist() == [0] and infos["rows"].tolist() == list(range(6))
        assert o.shape == (6, 4) and (o[:, 1] == 1).all()
        assert envs.pending_shards == [1]
        # worker 0 goes round again while worker 1 still waits
        envs.send(np.ones(6, np.int64), shards=[0])
        gate.touch()
        o, r, te, tr, infos = envs.recv(min_shards=2, timeout=30)
        assert infos["shards"].tolist() == [0, 1]
        assert (o[:6, 1] == 2).all() and (o[6:, 1] == 1).all() and (o[:6, 3] == 3).all()  # acc: (0 + 1) + (1 + 1)
        gate.unlink()
        envs.send(np.zeros(6, np.int64), shards=[1])
        with pytest.raises(multiprocessing.TimeoutError, match=r"workers \[1\] still busy"):
            envs.recv(timeout=0.01)
        gate.touch()
        o, *_, infos = envs.recv(timeout=30)
        assert infos["shards"].tolist() == [1] and (o[:, 1] == 2).all()
        with pytest.raises(gymnasium.error.NoAsyncCallError):
            envs.recv()
        envs.set_attr("gate", None)
        obs, *_ = envs.step(np.zeros(12, np.int64))  # back to lockstep
        assert (obs[:, 1] == 3).all()


def test_env_pool_rows_equal_lockstep_rows():
    """The same actions through send/recv and through step: the same rows."""
    fn = functools.partial(ToyEnv, max_steps=7, die={"a1": 3})
    rng = np.random.default_rng(0)
    acts = [rng.integers(0, 3, 12) for _ in range(20)]
    with seer.vector.make(fn, 4, backend="process", workers=2) as a, \
            seer.vector.make(fn, 4, backend="process", workers=2) as b:
        a.reset(seed=5)
        b.reset(seed=5)
        for act in acts:
            want = a.step(act)
            b.send(act)
            got = b.recv(min_shards=2)
            assert got[4]["rows"].tolist() == list(range(12))
            for x, y in zip(want[:4], got[:4]):
                assert np.array_equal(x, y)
            assert np.array_equal(want[4]["mask"], got[4]["mask"])
            assert np.array_equal(want[4]["alive"], got[4]["alive"])


def test_a_worker_killed_during_a_request_is_named(tmp_path):
    never = str(tmp_path / "never-opened")
    with seer.vector.make(toy, 4, backend="process", workers=2, inline=False) as envs:
        envs.reset(seed=0)
        envs.set_attr("gate", [None, None, never, never])  # worker 1 is certainly mid-request
        envs.send(np.zeros(12, np.int64))
        pid = envs.worker_pids()[1]
        os.kill(pid, signal.SIGKILL)
        # Reported as the death it is, not as the timeout (how soon is measured in bench/, not here).
        with pytest.raises(WorkerError, match=r"worker 1 \(pid \d+\) killed by signal SIGKILL"):
            envs.recv(min_shards=2, timeout=30)


def test_restart_failed_restarts_a_killed_worker_during_a_request():
    with seer.vector.make(toy, 4, backend="process", workers=2, inline=False, restart_failed=True) as envs:
        envs.reset(seed=0)
        envs.set_attr("sleep", [0.0, 0.0, 5.0, 5.0])
        envs.send(np.zeros(12, np.int64))
        os.kill(envs.worker_pids()[1], signal.SIGKILL)
        with pytest.warns(RuntimeWarning, match="restarted"):
            o, r, te, tr, infos = envs.recv(min_shards=2, timeout=30)
        assert infos["restarted"].tolist() == [False] * 6 + [True] * 6
        assert tr[6:].all() and envs.restarts == [0, 0, 1, 1]
        obs, *_ = envs.step(np.zeros(12, np.int64))  # the new worker steps on (its copies' NEXT_STEP reset)
        obs, *_ = envs.step(np.zeros(12, np.int64))
        assert (obs[6:, 1] == 1).all()
