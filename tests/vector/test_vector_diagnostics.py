"""seer.vector's errors as a user trips on them: bad process-backend options,
a failing make (nothing left in /dev/shm), a worker that segfaults in a copy
or dies at start (the copy named, its stderr shown), repr saying which copy
path is in use, an unpicklable env_fn, and a bad NativeSpec."""

import ctypes
import functools
import gc
import math
import multiprocessing
import os
import sys
import threading

import cloudpickle
import numpy as np
import pytest
from gymnasium import spaces

import seer
import seer.vector
from seer.envs import uav_swarm_v0
from seer.errors import InvalidArgumentError, WorkerError
from seer.vector import shm as shm_blocks
from seer.vector.native import NativeSpec

from toy_envs import ToyEnv  # noqa: E402  (tests/toy_envs.py, pickled by value)
from test_vector_faults import assert_clean, gone  # noqa: E402

cloudpickle.register_pickle_by_value(sys.modules[__name__])  # worker processes cannot import this file

toy = functools.partial(ToyEnv, max_steps=50)
A = np.zeros(12, np.int64)


@pytest.fixture
def blocks(monkeypatch):
    """The names of the shared-memory blocks this test creates (other tests
    on the machine create theirs, so /dev/shm as a whole is no measure)."""
    made = []
    create = shm_blocks.create

    def recording(size):
        shm = create(size)
        made.append(shm.name)
        return shm

    monkeypatch.setattr(shm_blocks, "create", recording)
    return made


def left_in_shm(names):
    return [n for n in names if os.path.exists(f"/dev/shm/{n.lstrip('/')}")]


# ---- process-backend options ----------------------------------------------------------------


@pytest.mark.timeout(60)
@pytest.mark.parametrize("option, value", [
    ("yield_s", -0.1), ("yield_s", "0.01"), ("yield_s", math.nan), ("yield_s", True), ("yield_s", 3600),
    ("cmd_bytes", -1), ("cmd_bytes", 1.5), ("cmd_bytes", "1M"), ("cmd_bytes", 1 << 40), ("cmd_bytes", False),
    ("msg_bytes", -64), ("msg_bytes", None), ("msg_bytes", 1 << 31),
    ("startup_timeout", 0), ("startup_timeout", math.inf),
])
def test_bad_process_option_is_refused_naming_it_and_nothing_is_left(blocks, option, value):
    children = set(multiprocessing.active_children())
    with pytest.raises(InvalidArgumentError, match=rf"^{option}={value!r} is invalid: expected "):
        seer.vector.make(toy, 4, backend="process", workers=2, **{option: value})
    assert blocks == [] and set(multiprocessing.active_children()) <= children


def test_good_process_options_still_work():
    with seer.vector.make(toy, 2, backend="process", workers=2, inline=False, yield_s=0, cmd_bytes=0,
                          msg_bytes=64, startup_timeout=30) as envs:
        obs, _ = envs.reset(seed=0)  # every payload goes through the pipes: the areas are too small
        envs.step(np.zeros(6, np.int64))
        assert list(envs.get_attr("t")) == [1, 1]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("where", ["views", "inline copies"])
def test_a_failing_make_unlinks_its_shared_memory(blocks, monkeypatch, where):
    import seer.vector.process.parent as parent

    if where == "views":  # the block exists, its row buffers fail
        def allocate(self, buf=None):
            raise MemoryError("no room for the rows")

        monkeypatch.setattr(seer.vector._layout.Layout, "allocate", allocate)
    else:  # the block and the workers exist, this process's own share fails
        def runner(*a, **k):
            raise MemoryError("no room for the rows")

        monkeypatch.setattr(parent, "CopyRunner", runner)
    children = set(multiprocessing.active_children())
    with pytest.raises(MemoryError, match="no room for the rows"):
        seer.vector.make(toy, 4, backend="process", workers=2, inline=True)
    assert len(blocks) == 1 and left_in_shm(blocks) == [], f"{blocks} left in /dev/shm"
    new = [p.pid for p in set(multiprocessing.active_children()) - children]
    assert gone(new), f"worker processes {new} outlived the failed make"


# ---- a worker that dies ---------------------------------------------------------------------


class SegfaultingEnv(ToyEnv):
    """Copy 3 (reset with seed 3) crashes the process in its second step, as
    a plug-in's C handler writing through a bad pointer would."""

    def reset(self, seed=None, options=None):
        self.seed_ = seed
        return super().reset(seed=seed, options=options)

    def step(self, actions):
        if self.seed_ == 3 and self.t == 1:
            ctypes.string_at(0)  # SIGSEGV
        return super().step(actions)


def crash_message(env_cls) -> str:
    """The WorkerError of the second step of 4 copies of ``env_cls`` on 2 worker
    processes (the test envs crash there); checks nothing is left behind."""
    envs = seer.vector.make(functools.partial(env_cls, max_steps=50), 4, backend="process", workers=2,
                            inline=False)
    pids, name = envs.worker_pids(), envs._backend.shared.name
    try:
        envs.reset(seed=0)
        envs.step(A)
        with pytest.raises(WorkerError) as info:
            envs.step(A)
    finally:
        envs.close()
    assert_clean(pids, name)
    return str(info.value)


@pytest.mark.timeout(60)
def test_segfault_in_a_copy_names_the_copy_and_shows_the_stack():
    msg = crash_message(SegfaultingEnv)
    assert "killed by signal SIGSEGV (11) while stepping env copies 2..3, in env copy 3's step" in msg
    # faulthandler's report, from the worker's stderr
    assert "Fatal Python error: Segmentation fault" in msg and "in step" in msg


class CrashingModel(seer.Model):
    """Five entities, one native kind, every entity due at time 1.25."""

    num_entities, lookahead = 5, 0.5

    def __init__(self, handler_address):
        self.kinds = [seer.EventKind("tick", seer.Native(handler_address))]
        self.state = {}
        self._cell = np.zeros(1)  # what the handler would read as ctx->model (it reads nothing)
        self.native_model = self._cell.ctypes.data

    def reset(self, runtime, seed):
        n = self.num_entities
        runtime.schedule(np.arange(n), np.full(n, 1.25), np.zeros(n, np.int32))


class CrashingHandlerEnv(ToyEnv):
    """Copy 2's step runs a model whose native handler (a C-callable made
    with ctypes, as a plug-in's C function would be) crashes at entity 3,
    time 1.25: a fault inside SEER's worker loop, below any Python frame
    that could say which event it was."""

    def reset(self, seed=None, options=None):
        out = super().reset(seed=seed, options=options)
        self.crash = seed == 2
        if not hasattr(self, "rt"):
            proto = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
            self._handler = proto(self._event)
            self.rt = seer.Runtime(CrashingModel(ctypes.cast(self._handler, ctypes.c_void_p).value), workers=1)
        self.rt.reset(seed=0)
        return out

    def _event(self, ctx, ev):
        event = ctypes.cast(ev, ctypes.POINTER(ctypes.c_double))  # seer_event: time first
        entity = ctypes.cast(ev, ctypes.POINTER(ctypes.c_int32))[4]
        if self.crash and entity == 3 and event[0] == 1.25:
            ctypes.string_at(0)  # SIGSEGV
        return 0

    def step(self, actions):
        if self.t == 1:
            self.rt.step(2.0)
        return super().step(actions)


@pytest.mark.timeout(60)
def test_segfault_in_a_native_handler_names_the_copy_and_the_event():
    msg = crash_message(CrashingHandlerEnv)
    assert "killed by signal SIGSEGV (11) while stepping env copies 2..3, in env copy 2's step" in msg
    assert "seer: SIGSEGV in the handler of event kind 0 at entity 3, time 1.25" in msg


@pytest.mark.timeout(60)
def test_worker_hung_in_a_copy_names_that_copy():
    envs = seer.vector.make(toy, 4, backend="process", workers=2, inline=False, worker_timeout=1.0)
    pids, name = envs.worker_pids(), envs._backend.shared.name
    try:
        envs.reset(seed=0)
        envs.set_attr("sleep", [0.0, 0.0, 0.0, 30.0])  # copy 3's step does not return
        with pytest.raises(WorkerError, match=r"worker 1 \(pid \d+, env copies 2\.\.3, in env copy 3's step\) did "
                                              r"not answer within worker_timeout=1 s"):
            envs.step(A)
    finally:
        envs.close()
    assert_clean(pids, name)


def dies_at_start():
    print("simulator: license server unreachable", file=sys.stderr, flush=True)
    os._exit(3)  # as a C library's exit() would: no traceback, nothing on the pipe


@pytest.mark.timeout(60)
def test_worker_dying_at_start_shows_the_last_lines_of_its_stderr(blocks):
    threads = threading.active_count()
    with pytest.raises(WorkerError, match=r"(?s)worker 0 \(pid \d+\) died while creating its env copies: exited "
                                          r"with code 3; the last lines of its stderr:\n.*license server "
                                          r"unreachable"):
        seer.vector.make(dies_at_start, 2, backend="process", workers=2, inline=False)
    assert blocks == []
    assert threading.active_count() == threads  # the stderr reader ended with the failed make


def test_worker_stderr_still_reaches_the_terminal(capfd):
    class Chatty(ToyEnv):
        def step(self, actions):
            print(f"chatty copy at t={self.t}", file=sys.stderr, flush=True)
            return super().step(actions)

    with seer.vector.make(functools.partial(Chatty, max_steps=50), 2, backend="process", workers=2,
                          inline=False) as envs:
        envs.reset(seed=0)
        envs.step(np.zeros(6, np.int64))
    assert capfd.readouterr().err.count("chatty copy at t=0") == 2


@pytest.mark.timeout(120)
def test_capturing_worker_stderr_leaks_no_fds_or_threads():
    def fds():
        gc.collect()  # an earlier test's unreachable envs close their pipes when collected, not in this loop
        return len(os.listdir("/proc/self/fd"))

    def cycle():
        with seer.vector.make(toy, 4, backend="process", workers=2, inline=False) as envs:
            envs.reset(seed=0)
            envs.step(A)
        with pytest.raises(WorkerError):  # a worker that dies: its pipe is read to the end, then closed
            seer.vector.make(dies_at_start, 2, backend="process", workers=2, inline=False)

    cycle()  # the forkserver and the resource tracker keep theirs for the session
    before, threads = fds(), threading.active_count()
    for _ in range(3):
        cycle()
    assert fds() == before and threading.active_count() == threads


# ---- repr ------------------------------------------------------------------------------------


def uav():
    return uav_swarm_v0.UavSwarmEnv(workers=1, scenario="small", max_cycles=25)


class PlainUav(uav_swarm_v0.UavSwarmEnv):
    seer_native_copy = None


@pytest.mark.timeout(120)
@pytest.mark.parametrize("backend", ["thread", "process"])
def test_repr_says_whether_the_native_copy_path_is_in_use(backend):
    kw = dict(backend=backend, workers=2) if backend == "thread" else dict(backend=backend, workers=2, inline=False)
    with seer.vector.make(uav, 2, **kw) as envs:
        assert envs.copy_path == "native"
        assert f"backend={backend!r}, workers=2" in repr(envs) and "copy_path='native'" in repr(envs)
    with seer.vector.make(lambda: PlainUav(workers=1, scenario="small", max_cycles=25), 2, **kw) as envs:
        assert envs.copy_path == "python" and "copy_path='python'" in repr(envs)
    with seer.vector.make(toy, 2, **kw) as envs:
        assert "copy_path='python'" in repr(envs)


# ---- env_fn that cannot be pickled ----------------------------------------------------------


def test_unpicklable_env_fn_auto_falls_back_to_threads_and_says_why(monkeypatch):
    monkeypatch.setattr(seer.vector, "usable_cores", lambda: 4)  # where auto would take processes
    lock = threading.Lock()

    def env_fn():
        with lock:
            return ToyEnv(max_steps=50)

    with pytest.warns(RuntimeWarning, match=r"takes the thread backend.*cannot be pickled.*_thread\.lock"):
        envs = seer.vector.make(env_fn, 2)
    with envs:
        assert envs.backend == "thread"
        envs.reset(seed=0)
    with pytest.raises(InvalidArgumentError, match=r"(?s)cannot be pickled \(TypeError: cannot pickle "
                                                   r"'_thread.lock' object\).*must be picklable.*"
                                                   r"backend=\"thread\""):
        seer.vector.make(env_fn, 2, backend="process", workers=2)


def test_picklable_env_fn_on_auto_gives_no_warning(monkeypatch, recwarn):
    monkeypatch.setattr(seer.vector, "usable_cores", lambda: 4)
    with seer.vector.make(toy, 2, workers=2) as envs:
        assert envs.backend == "process"
    assert not [w for w in recwarn if "cannot be pickled" in str(w.message)]


# ---- NativeSpec ------------------------------------------------------------------------------


@pytest.mark.parametrize("agents", ["abc", b"ab", 3, [1, 2], ["a", ""], ["a", "a"], [], None])
def test_native_spec_refuses_agents_that_are_not_names(agents):
    with pytest.raises(InvalidArgumentError, match=r"NativeSpec\.agents=.* is invalid: .*expected a list of "
                                                   r"distinct agent names"):
        NativeSpec(agents=agents, observation=spaces.Box(-1, 1, (2,), np.float32), action=spaces.Discrete(2))
    assert NativeSpec(agents=("a", "b"), observation=spaces.Box(-1, 1, (2,), np.float32),
                      action=spaces.Discrete(2)).agents == ("a", "b")


UNGUARDED = """
import sys
sys.path.insert(0, {tests!r})
import functools
import seer.vector
from toy_envs import ToyEnv
envs = seer.vector.make(functools.partial(ToyEnv, max_steps=5), 2, backend="process", workers=2, inline=False)
envs.close()
"""


@pytest.mark.timeout(120)
def test_script_without_a_main_guard_is_told_why_its_workers_die(tmp_path):
    import subprocess

    script = tmp_path / "train.py"
    script.write_text(UNGUARDED.format(tests=os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=100)
    assert proc.returncode != 0
    assert "WorkerError" in proc.stderr and "died before running any SEER code" in proc.stderr
    assert 'under `if __name__ == "__main__":`' in proc.stderr and str(script) in proc.stderr
