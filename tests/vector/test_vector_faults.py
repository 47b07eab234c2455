"""seer.vector faults: a copy raising, a worker killed, restarts, and clean
closing (no process and nothing in /dev/shm left behind)."""

import functools
import os
import signal
import time

import numpy as np
import pytest

import seer.vector
from seer.errors import ClosedError, WorkerError
from seer.vector import EnvCopyError

from toy_envs import ToyEnv  # noqa: E402  (tests/toy_envs.py, pickled by value)

toy = functools.partial(ToyEnv, max_steps=50)
A = np.zeros(12, np.int64)


def shm_name(envs):
    return envs._backend.shared.name


def gone(pids, timeout=2.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        left = []
        for pid in pids:
            try:
                os.kill(pid, 0)
                left.append(pid)
            except ProcessLookupError:
                pass
        if not left:
            return True
        time.sleep(0.02)
    return False


def assert_clean(pids, name):
    assert gone(pids), f"worker processes {pids} outlived close()"
    assert not os.path.exists(f"/dev/shm/{name.lstrip('/')}"), f"{name} left in /dev/shm"


@pytest.mark.parametrize("backend", ["thread", "process"])
def test_copy_raising_reports_its_index_and_traceback(backend):
    kw = {"inline": False} if backend == "process" else {}
    envs = seer.vector.make(toy, 4, backend=backend, workers=2, **kw)
    pids = envs.worker_pids()
    name = shm_name(envs) if backend == "process" else None
    try:
        envs.reset(seed=0)
        envs.step(A)
        envs.set_attr("fail_next", [False, False, True, False])
        with pytest.raises(EnvCopyError) as info:
            envs.step(A)
        err = info.value
        assert err.copy == 2 and err.entity is None  # a copy is no runtime entity
        assert "env copy 2 (rows 6..8) raised in step" in str(err)
        assert "toy failure on demand" in err.traceback and "Traceback" in err.traceback
        if backend == "process":
            # the traceback comes from the worker that owns copy 2, and says so
            assert f"worker 1 (pid {pids[1]})" in str(err)
            assert f"(pid {pids[1]})" in err.traceback
        with pytest.raises(RuntimeError, match=r"copies \[2\] failed"):
            envs.step(A)
        mask = np.zeros(12, bool)
        mask[6] = True
        envs.reset(options={"reset_mask": mask})  # resetting the failed copy is enough
        obs, *_ = envs.step(A)
        assert obs[6, 1] == 1 and obs[0, 1] == 3
    finally:
        envs.close()
    if backend == "process":
        assert_clean(pids, name)


@pytest.mark.parametrize("backend", ["thread", "process"])
def test_restart_failed_copy_goes_on(backend):
    with seer.vector.make(toy, 4, backend=backend, workers=2, restart_failed=True) as envs:
        envs.reset(seed=0)
        envs.step(A)
        envs.set_attr("fail_next", [False, True, False, False])
        with pytest.warns(RuntimeWarning, match="copy 1 failed and was restarted"):
            obs, rew, term, trunc, infos = envs.step(A)
        assert infos["restarted"].tolist() == [False] * 3 + [True] * 3 + [False] * 6
        assert trunc.tolist() == [False] * 3 + [True] * 3 + [False] * 6  # its episode was cut
        assert not infos["mask"][3:6].any() and infos["mask"][[0, 6, 9]].all()
        assert envs.restarts == [0, 1, 0, 0]
        obs, rew, term, trunc, infos = envs.step(A)  # NEXT_STEP: the restarted copy resets
        assert (obs[3:6, 1] == 0).all() and (obs[0:3, 1] == 3).all()
        assert "restarted" not in infos
        obs, *_ = envs.step(A)
        assert (obs[3:6, 1] == 1).all()


@pytest.mark.parametrize("inline", [False, True])
def test_killed_worker_is_named_within_a_second_and_nothing_hangs(inline):
    envs = seer.vector.make(toy, 4, backend="process", workers=2, inline=inline)
    pids, name = envs.worker_pids(), shm_name(envs)
    assert len(pids) == (1 if inline else 2)
    envs.reset(seed=0)
    envs.step(A)
    victim = envs.get_attr("pid")[2]
    assert victim == pids[-1]
    assert (envs.get_attr("pid")[0] == os.getpid()) == inline
    os.kill(victim, signal.SIGKILL)
    t0 = time.monotonic()
    with pytest.raises(WorkerError) as info:
        envs.step(A)
    assert time.monotonic() - t0 < 1.0
    msg = str(info.value)
    assert f"worker 1 (pid {victim}) killed by signal SIGKILL (9)" in msg and "copies 2..3" in msg
    assert "restart_failed=True" in msg
    assert envs.closed
    with pytest.raises(ClosedError, match="SIGKILL"):
        envs.step(A)
    envs.close()  # idempotent
    assert_clean(pids, name)


def test_killed_worker_is_restarted_with_restart_failed():
    envs = seer.vector.make(toy, 4, backend="process", workers=2, restart_failed=True, inline=False)
    pids, name = envs.worker_pids(), shm_name(envs)
    try:
        envs.reset(seed=0)
        envs.step(A)
        os.kill(pids[0], signal.SIGKILL)
        with pytest.warns(RuntimeWarning, match="killed by signal SIGKILL"):
            obs, rew, term, trunc, infos = envs.step(A)
        assert infos["restarted"].tolist() == [True] * 6 + [False] * 6
        assert trunc[:6].all() and not trunc[6:].any()
        assert (obs[6:, 1] == 2).all()
        assert envs.restarts == [1, 1, 0, 0]
        new = envs.worker_pids()
        assert pids[0] not in new and pids[1] in new
        obs, *_ = envs.step(A)  # reset step for copies 0, 1
        assert (obs[:6, 1] == 0).all() and (obs[6:, 1] == 3).all()
        obs, *_ = envs.step(A)
        assert (obs[:6, 1] == 1).all()
        pids = envs.worker_pids()
    finally:
        envs.close()
    assert_clean(pids, name)


def test_close_ends_a_hung_step_and_frees_everything():
    fn = functools.partial(ToyEnv, sleep=60.0)
    envs = seer.vector.make(fn, 2, backend="process", workers=2)
    pids, name = envs.worker_pids(), shm_name(envs)
    envs.reset(seed=0)
    envs.step_async(np.zeros(6, np.int64))
    t0 = time.monotonic()
    envs.close()
    assert time.monotonic() - t0 < 5.0
    assert_clean(pids, name)
    with pytest.raises(ClosedError):
        envs.reset()


def test_failing_env_fn_reports_the_worker_traceback():
    def broken():
        raise OSError("no such simulator")

    with pytest.raises(WorkerError, match="no such simulator"):
        seer.vector.make(broken, 2, backend="process", workers=2, inline=False)
    with pytest.raises(OSError, match="no such simulator"):  # the caller's own share fails first
        seer.vector.make(broken, 2, backend="process", workers=2, inline=True)
    with pytest.raises(OSError, match="no such simulator"):
        seer.vector.make(broken, 2, backend="thread")


def test_unclosed_env_is_cleaned_up_when_collected():
    import gc

    envs = seer.vector.make(toy, 2, backend="process", workers=2)
    pids, name = envs.worker_pids(), shm_name(envs)
    envs.reset(seed=0)
    del envs
    gc.collect()
    assert_clean(pids, name)
