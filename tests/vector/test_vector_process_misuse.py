"""The process backend under misuse and hangs: a stopped worker (bounded by
``worker_timeout``), close() from another thread during a step, two
threads stepping at once, forged messages in shared memory, and the C flags
(csrc/seer_flags.c) on their own."""

import functools
import os
import pickle
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

import gymnasium
import numpy as np
import pytest

import seer.vector
from seer.errors import ClosedError, MisuseError, SeerError, WorkerError
from seer.vector.process import protocol  # the shared block's flags and sealed messages

from toy_envs import ToyEnv  # noqa: E402  (tests/toy_envs.py, pickled by value)
from test_vector_faults import assert_clean, shm_name  # noqa: E402

toy = functools.partial(ToyEnv, max_steps=50)
A = np.zeros(12, np.int64)
CSRC = Path(__file__).resolve().parents[2] / "csrc"  # tests/vector/ -> the repo


def make(n=4, **kw):
    kw.setdefault("inline", False)
    return seer.vector.make(toy, n, backend="process", workers=2, **kw)


def in_thread(fn):
    """Run ``fn`` in a thread; (thread, box) where box gets its result or error."""
    box = {}

    def target():
        try:
            box["result"] = fn()
        except BaseException as exc:  # noqa: BLE001  (handed to the test)
            box["error"] = exc

    t = threading.Thread(target=target, daemon=True)
    t.start()
    return t, box


# ---- a worker that stops answering ----------------------------------------------------------


@pytest.mark.timeout(60)
@pytest.mark.parametrize("inline", [False, True])
def test_stopped_worker_raises_worker_error_naming_it_and_close_kills_it(inline):
    envs = make(inline=inline, worker_timeout=1.0)
    pids, name = envs.worker_pids(), shm_name(envs)
    victim = pids[-1]
    try:
        envs.reset(seed=0)
        envs.step(A)
        os.kill(victim, signal.SIGSTOP)
        t0 = time.monotonic()
        with pytest.raises(WorkerError) as info:
            envs.step(A)
        took = time.monotonic() - t0
        assert 1.0 <= took < 5.0
        msg = str(info.value)
        assert f"worker 1 (pid {victim}, env copies 2..3, stopped by a signal" in msg
        assert "did not answer within worker_timeout=1 s while stepping" in msg
        assert "the parent waited 1." in msg and "close()" in msg
        # unusable, but not torn down: the stopped worker is still there to inspect
        with pytest.raises(ClosedError, match="can no longer be used"):
            envs.step(A)
        os.kill(victim, 0)
    finally:
        t0 = time.monotonic()
        envs.close()
        assert time.monotonic() - t0 < 5.0
    assert_clean(pids, name)


@pytest.mark.timeout(60)
def test_stopped_worker_bounds_reset_call_and_recv_too():
    for op in ("reset", "get_attr", "recv"):
        envs = make(worker_timeout=0.5)
        pids, name = envs.worker_pids(), shm_name(envs)
        try:
            envs.reset(seed=0)
            if op == "recv":
                envs.send(A)
                envs.recv(min_shards=2)
            os.kill(pids[0], signal.SIGSTOP)
            with pytest.raises(WorkerError, match=rf"worker 0 \(pid {pids[0]}, env copies 0..1, stopped") as info:
                if op == "reset":
                    envs.reset(seed=1)
                elif op == "get_attr":
                    envs.get_attr("t")
                else:
                    envs.send(A)
                    envs.recv(min_shards=2)
            assert "worker_timeout=0.5 s" in str(info.value)
        finally:
            envs.close()
        assert_clean(pids, name)


@pytest.mark.timeout(60)
def test_stopped_worker_bounds_a_command_too_large_for_shared_memory():
    # The command goes through the pipes (beyond cmd_bytes) and is bigger
    # than a pipe buffers, so a send to a worker that does not read would
    # block the parent forever without the bound.
    envs = make(worker_timeout=0.5, cmd_bytes=4096)
    pids, name = envs.worker_pids(), shm_name(envs)
    big = np.arange(100_000, dtype=np.int64)  # 800 kB pickled
    try:
        envs.reset(seed=0)
        envs.set_attr("payload", [big] * 4)  # both workers read: it works
        assert all(np.array_equal(v, big) for v in envs.get_attr("payload"))
        os.kill(pids[0], signal.SIGSTOP)
        t0 = time.monotonic()
        with pytest.raises(WorkerError, match=rf"worker 0 \(pid {pids[0]}, env copies 0..1, stopped") as info:
            envs.set_attr("payload", [big[::-1]] * 4)
        assert time.monotonic() - t0 < 5.0
        assert "worker_timeout=0.5 s" in str(info.value)
        with pytest.raises(ClosedError, match="can no longer be used"):
            envs.step(A)
    finally:
        envs.close()
    assert_clean(pids, name)


@pytest.mark.timeout(60)
def test_stopped_worker_is_killed_and_restarted_with_restart_failed():
    envs = make(worker_timeout=0.5, restart_failed=True)
    pids, name = envs.worker_pids(), shm_name(envs)
    try:
        envs.reset(seed=0)
        envs.step(A)
        os.kill(pids[1], signal.SIGSTOP)
        with pytest.warns(RuntimeWarning, match="did not answer within worker_timeout=0.5 s and was killed"):
            obs, rew, term, trunc, infos = envs.step(A)
        assert infos["restarted"].tolist() == [False] * 6 + [True] * 6
        assert pids[1] not in envs.worker_pids()
        obs, *_ = envs.step(A)
        pids = pids + envs.worker_pids()
    finally:
        envs.close()
    assert_clean(pids, name)


def test_worker_timeout_is_checked():
    for bad in (0, -1.0, float("nan"), float("inf"), "60", True):
        with pytest.raises(ValueError, match=r"worker_timeout=.* is invalid: expected a number of seconds > 0"):
            make(worker_timeout=bad)
    with make(worker_timeout=None) as envs:  # None: wait forever
        envs.reset(seed=0)
        envs.step(A)
    assert protocol.WORKER_TIMEOUT_S >= 60


# ---- threads ---------------------------------------------------------------------------------


@pytest.mark.timeout(60)
@pytest.mark.parametrize("inline", [False, True])
def test_close_from_another_thread_ends_a_running_step_with_closed_error(inline):
    threads_before = threading.active_count()  # before make: its stderr reader ends with close() too
    envs = make(inline=inline)
    pids, name = envs.worker_pids(), shm_name(envs)
    envs.reset(seed=0)
    envs.set_attr("sleep", [0.0, 0.0, 30.0, 30.0])  # worker 1 hangs in the step
    t, box = in_thread(lambda: envs.step(A))
    time.sleep(0.3)
    assert t.is_alive()
    t0 = time.monotonic()
    envs.close()
    t.join(5.0)
    assert not t.is_alive() and time.monotonic() - t0 < 5.0
    err = box.get("error")
    assert isinstance(err, ClosedError), box
    assert "closed by another thread during step()" in str(err)
    assert_clean(pids, name)
    assert threading.active_count() == threads_before
    with pytest.raises(ClosedError):
        envs.step(A)


@pytest.mark.timeout(60)
def test_close_while_the_step_runs_our_own_copies_frees_them_when_it_returns(monkeypatch):
    import seer.vector._env as env_module

    monkeypatch.setattr(env_module, "CLOSE_WAIT_S", 0.3)
    envs = make(inline=True)
    pids, name = envs.worker_pids(), shm_name(envs)
    be = envs._backend
    envs.reset(seed=0)
    envs.set_attr("sleep", [2.0, 0.0, 0.0, 0.0])  # copy 0 runs in this process: close cannot interrupt it
    t, box = in_thread(lambda: envs.step(A))
    time.sleep(0.3)
    t0 = time.monotonic()
    with pytest.warns(RuntimeWarning, match="did not stop"):
        envs.close()
    assert time.monotonic() - t0 < 2.0
    assert_clean(pids, name)  # the workers and the block go at once
    assert be.runner is None and be._idle_runner is not None  # our own copies: still in use
    t.join(10.0)
    assert isinstance(box.get("error"), ClosedError), box
    assert be._idle_runner is None  # closed on the way out


@pytest.mark.timeout(60)
def test_close_from_another_thread_ends_a_running_recv():
    envs = make()
    pids, name = envs.worker_pids(), shm_name(envs)
    envs.reset(seed=0)
    envs.set_attr("sleep", 30.0)
    envs.send(A)
    t, box = in_thread(lambda: envs.recv())
    time.sleep(0.3)
    envs.close()
    t.join(5.0)
    assert not t.is_alive()
    assert isinstance(box.get("error"), ClosedError), box
    assert_clean(pids, name)


@pytest.mark.timeout(60)
def test_two_threads_stepping_at_once_one_is_refused():
    envs = make()
    try:
        envs.reset(seed=0)
        envs.set_attr("sleep", 0.5)
        t, box = in_thread(lambda: envs.step(A))
        time.sleep(0.2)
        with pytest.raises(MisuseError, match=r"step\(\) called while .*step\(\).* is running on this vector env"):
            envs.step(A)
        # the backend refuses a second caller on its own too (e.g. a Ray shard driving it directly)
        with pytest.raises(MisuseError, match=r"step\(\) called while another step\(\) is running on this vector "
                                              r"env in another thread"):
            envs._backend.step_async()
        t.join(10.0)
        assert "result" in box, box
        assert (box["result"][0][:, 1] == 1).all()  # the first step went through untouched
        envs.set_attr("sleep", 0.0)
        obs, *_ = envs.step(A)
        assert (obs[:, 1] == 2).all()
    finally:
        envs.close()


@pytest.mark.timeout(60)
def test_threads_hammering_one_env_get_seer_errors_only():
    envs = make()
    errors, steps = [], []
    try:
        envs.reset(seed=0)

        def hammer():
            for _ in range(40):
                try:
                    envs.step(A)
                    steps.append(1)
                except SeerError as exc:
                    errors.append(exc)
                except gymnasium.error.AlreadyPendingCallError as exc:  # pragma: no cover - reported below
                    errors.append(exc)

        ts = [threading.Thread(target=hammer) for _ in range(3)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(30.0)
        assert not any(t.is_alive() for t in ts)
        assert all(isinstance(e, MisuseError) for e in errors), errors[:3]
        assert steps and len(steps) + len(errors) == 120
        envs.step(A)  # still usable
    finally:
        envs.close()


# ---- forged messages -------------------------------------------------------------------------


class _Evil:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (os.mkdir, (self.path,))


def _worker_done(be, w):
    line = be.shared.line(w)
    deadline = time.monotonic() + 10.0
    while be.flags.load(line + protocol.DONE) != be.gen:
        assert time.monotonic() < deadline, "the worker did not finish its step"
        time.sleep(0.005)
    return line


@pytest.mark.timeout(60)
def test_forged_message_in_shared_memory_is_refused_not_unpickled(tmp_path):
    marker = tmp_path / "pwned"
    envs = make()
    pids, name = envs.worker_pids(), shm_name(envs)
    be = envs._backend
    envs.reset(seed=0)
    envs.step_async(A)
    line = _worker_done(be, 1)
    data = pickle.dumps([("info", 6, {"x": _Evil(str(marker))})])
    blob = b"\0" * protocol.MAC + data  # no key, no valid HMAC
    be.shared.msg[1][:len(blob)] = np.frombuffer(blob, np.uint8)
    be.ctl[line + protocol.MSGLEN] = len(data)
    # a new MSGLEN is refused by the flags' MAC, before the payload's HMAC is even looked at
    with pytest.raises(WorkerError, match=r"refused the message of worker 1 .*(HMAC does not match|does not carry "
                                          r"that worker's MAC)") as info:
        envs.step_wait()
    assert "nothing of it was unpickled" in str(info.value)
    assert not marker.exists()
    assert envs.closed
    assert_clean(pids, name)


@pytest.mark.timeout(60)
def test_replayed_message_from_an_earlier_op_is_refused():
    envs = make()
    pids, name = envs.worker_pids(), shm_name(envs)
    be = envs._backend
    envs.reset(seed=0)  # worker 0 sends infos (copy 0's agent a0 has {"reset": True})
    line = be.shared.line(0)
    n = int(be.ctl[line + protocol.MSGLEN])
    assert n > 0
    old = be.shared.msg[0][:protocol.MAC + n].copy()
    envs.step_async(np.zeros(12, np.int64))
    _worker_done(be, 0)
    be.shared.msg[0][:len(old)] = old  # authentic, but for the reset, not this step
    be.ctl[line + protocol.MSGLEN] = n
    with pytest.raises(WorkerError, match="refused the message of worker 0"):
        envs.step_wait()
    assert_clean(pids, name)


@pytest.mark.timeout(60)
def test_forged_command_is_refused_by_the_worker(tmp_path):
    marker = tmp_path / "pwned"
    envs = make()
    pids, name = envs.worker_pids(), shm_name(envs)
    be = envs._backend
    envs.reset(seed=0)
    data = pickle.dumps(("call", "t", (), {}, _Evil(str(marker))))
    blob = b"\1" * protocol.MAC + data
    be.shared.cmd[:len(blob)] = np.frombuffer(blob, np.uint8)
    be.ctl[protocol.CMD] = protocol.CALL
    be.ctl[protocol.CMDLEN] = len(data)
    be.flags.publish([protocol.GEN], [be.gen + 1], [be.shared.line(w) + protocol.WBELL for w in range(2)])
    be.gen += 1
    for p in be.procs:  # before the next op's command replaces ours
        p.proc.join(10.0)
    with pytest.raises(WorkerError, match="refused the command of op") as info:
        envs.get_attr("t")  # the parent waits for the op it thinks it started
    assert "nothing of it was unpickled" in str(info.value)
    assert not marker.exists()
    envs.close()
    assert_clean(pids, name)


# ---- the C flags on their own ----------------------------------------------------------------


@pytest.fixture(scope="module")
def stress_flags(tmp_path_factory):
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    out = tmp_path_factory.mktemp("flags") / "stress_flags"
    subprocess.run([cc, "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-pthread", f"-I{CSRC}",
                    str(CSRC / "tests" / "stress_flags.c"), str(CSRC / "seer_flags.c"), "-lm", "-o", str(out)],
                   check=True, capture_output=True, timeout=120)
    return out


@pytest.mark.timeout(120)
@pytest.mark.parametrize("mode", ["threads", "fork"])
def test_stress_flags_hand_over_without_lost_wakeups(stress_flags, mode):
    proc = subprocess.run([str(stress_flags), mode, "3", "2000", "7"], capture_output=True, text=True, timeout=100)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"stress_flags: OK {mode}, 3 workers, 2000 rounds" in proc.stdout


def test_stress_flags_rejects_bad_arguments(stress_flags):
    proc = subprocess.run([str(stress_flags), "sideways"], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2 and "usage" in proc.stderr
