"""The process backend's flags in shared memory are authenticated like its
payloads: another process of the same user that bumps a request flag (GEN,
a worker's REQ) or an answer flag (a worker's DONE) is refused with
WorkerError naming the flag, and nothing is stepped on its word."""

import functools
import subprocess
import sys

import numpy as np
import pytest

import seer.vector
from seer.errors import WorkerError
from seer.vector.process import protocol  # the shared block's flags and sealed messages

from toy_envs import ToyEnv  # noqa: E402  (tests/toy_envs.py, pickled by value)
from test_vector_faults import assert_clean, shm_name  # noqa: E402

toy = functools.partial(ToyEnv, max_steps=50)
A = np.zeros(12, np.int64)

# Another process of the same user: attaches the block by name (as anyone
# listing /dev/shm can), bumps one flag the way its writer would (a release
# store) and rings a bell.
FORGER = r"""
import sys
import numpy as np
from seer._seer_c import ffi, lib
from seer.vector import shm
name, flag, bell = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
block = shm.attach(name, owned_elsewhere=True)
ctl = np.frombuffer(block._mmap, np.int64, bell + 1, 0)
base = ffi.cast("int64_t *", ctl.ctypes.data)
lib.seer_flag_store(base + flag, lib.seer_flag_load(base + flag) + 1)
lib.seer_bell_ring(ffi.cast("seer_bell *", base + bell))
del base, ctl
shm.close(block)
"""


def forge(envs, flag: int, bell: int) -> None:
    subprocess.run([sys.executable, "-c", FORGER, shm_name(envs), str(flag), str(bell)], check=True, timeout=60,
                   capture_output=True)


def ticks(envs, copies) -> np.ndarray:
    """Each copy's step count as its rows in shared memory show it (ToyEnv's observation column 1)."""
    rows = np.concatenate([np.arange(c * 3, c * 3 + 3) for c in copies])
    return envs._backend.bufs["obs"][rows, 1].copy()


def make(n=4, **kw):
    return seer.vector.make(toy, n, backend="process", workers=2, inline=False, **kw)


@pytest.mark.timeout(60)
def test_forged_env_pool_request_is_refused_not_stepped():
    envs = make()
    pids, name = envs.worker_pids(), shm_name(envs)
    be = envs._backend
    try:
        envs.reset(seed=0)
        envs.step(A)
        assert (ticks(envs, [2, 3]) == 1).all()
        line = be.shared.line(1)
        forge(envs, line + protocol.REQ, line + protocol.WBELL)  # "step worker 1's copies again"
        be.child[1].proc.join(10.0)  # it refuses and leaves, saying why
        assert be.child[1].proc.exitcode == 1
        assert (ticks(envs, [2, 3]) == 1).all(), "the worker stepped its copies on a forged request"
        with pytest.raises(WorkerError, match=r"(?s)worker 1 \(pid \d+\) exited with code 1 .*refused the env-pool "
                                              r"step request REQ = 1 .*its MAC does not match") as info:
            envs.step(A)
        assert "not published by this vector env's parent process" in str(info.value)
        assert "another process wrote to its shared memory" in str(info.value)
    finally:
        envs.close()
    assert_clean(pids, name)


@pytest.mark.timeout(60)
def test_forged_op_number_is_refused_by_every_worker_not_run():
    envs = make()
    pids, name = envs.worker_pids(), shm_name(envs)
    be = envs._backend
    try:
        envs.reset(seed=0)
        envs.step(A)  # CMD is STEP now: a bare GEN bump would step every copy again
        forge(envs, protocol.GEN, be.shared.line(0) + protocol.WBELL)  # worker 1 sees it within its 0.2 s nap
        for p in be.procs:
            p.proc.join(10.0)
            assert p.proc.exitcode == 1
        assert (ticks(envs, [0, 1, 2, 3]) == 1).all(), "the workers stepped their copies on a forged op"
        g = be.gen + 1
        with pytest.raises(WorkerError, match=rf"(?s)refused the command of op {g} .*GEN = {g}, CMD = 1.*their MAC "
                                              rf"does not match") as info:
            envs.step(A)
        assert "nothing of it was unpickled and nothing was run" in str(info.value)
    finally:
        envs.close()
    assert_clean(pids, name)


@pytest.mark.timeout(60)
def test_forged_answer_is_refused_before_its_rows_are_read():
    envs = make()
    pids, name = envs.worker_pids(), shm_name(envs)
    be = envs._backend
    try:
        envs.reset(seed=0)
        envs.set_attr("sleep", [0.0, 0.0, 30.0, 30.0])  # worker 1 is still in its step when the forger says "done"
        envs.step_async(A)
        forge(envs, be.shared.line(1) + protocol.DONE, protocol.PBELL)
        with pytest.raises(WorkerError, match=r"(?s)refused the message of worker 1 .*DONE = \d+ .*does not carry that "
                                              r"worker's MAC.*none of its rows were read"):
            envs.step_wait(timeout=20.0)
        assert envs.closed
    finally:
        envs.close()
    assert_clean(pids, name)


@pytest.mark.timeout(300)
def test_random_bit_flips_in_the_control_area_are_harmless_or_named():
    """A bit flipped anywhere in the flags, between two steps or during one
    (a stray write, another process), either changes nothing the caller
    sees or ends in a SEER error naming what happened; never in rows that
    silently differ, and never in a hang."""
    from seer.errors import ClosedError

    with seer.vector.make(toy, 4, backend="thread", workers=1) as ref_envs:
        ref_envs.reset(seed=0)
        ref = [ref_envs.step(A)[:2] for _ in range(4)]
    rng = np.random.default_rng(30)
    outcomes = {"unchanged": 0, "named": 0}
    for trial in range(60):
        envs = make(worker_timeout=10.0)
        pids, name = envs.worker_pids(), shm_name(envs)
        be = envs._backend
        slot = int(rng.integers(0, be.ctl.size))
        bit = int(rng.integers(0, 63))
        try:
            envs.reset(seed=0)
            got = [envs.step(A)[:2]]
            try:
                if trial % 2:  # while the workers step
                    envs.step_async(A)
                    be.ctl[slot] ^= np.int64(1) << np.int64(bit)
                    got.append(envs.step_wait()[:2])
                else:  # between two steps
                    be.ctl[slot] ^= np.int64(1) << np.int64(bit)
                    got.append(envs.step(A)[:2])
                for _ in range(2):
                    got.append(envs.step(A)[:2])
            except (WorkerError, ClosedError) as exc:
                assert str(exc), (slot, bit)
                outcomes["named"] += 1
                continue
            for (o, r), (ro, rr) in zip(got, ref):
                assert np.array_equal(o, ro) and np.array_equal(r, rr), \
                    f"flipping bit {bit} of control slot {slot} silently changed the rows"
            outcomes["unchanged"] += 1
        finally:
            envs.close()
        assert_clean(pids, name)
    assert outcomes["named"] > 0 and outcomes["unchanged"] > 0, outcomes
