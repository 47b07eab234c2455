"""Process backend: env copies in worker processes, rows in shared memory.

Memory.  One ``multiprocessing.shared_memory`` block holds a control area,
a command area (parent -> workers), one message area per worker (workers ->
parent) and every row buffer of :class:`~seer.vector._layout.Layout`.
Workers write their copies' rows in place; nothing per step is pickled
unless an env returns non-empty infos.

Coordination, per op (step, reset, call, close), without pipes::

    parent: write actions / seeds / command           worker w: asleep on BELL[w] (or spinning)
            publish GEN = gen, ring BELL[w]         ->  sees GEN change, reads CMD
                                                        steps its copies, writes rows and MSG[w]
            asleep on PBELL until every DONE[w]    <-  MSGLEN[w] = n; publish DONE[w] = gen, ring PBELL
            == gen; reads rows and MSG[w]

Flags.  Every flag (GEN, DONE[w], REQ[w], REQDONE[w], CLOSING) has one
writer, which publishes with a C11 release store after the payload's plain
stores; readers load it with acquire, so whoever sees a flag's new value
sees the payload written before it, on any architecture (see
``csrc/seer_flags.h``; no reliance on x86 store order).  Waiting spins with
``sched_yield`` for ``yield_s``, then sleeps on a bell: a futex word in the
block (FUTEX_WAIT, shared, not _PRIVATE), rung by the flag's writer, which
makes a system call only when someone sleeps.  A parent that expects a wait
of milliseconds first sleeps on the bell through 60% of the usual wait (a
spinning parent would take turns on the cores with the workers it waits
for), then spins for the end (a futex wake-up costs tens of microseconds on
a busy machine, a spin a few).  Sleeps are slices: the parent's of 50 ms, after
each of which it checks the workers' sentinels (a dead worker is seen
within ~50 ms), its time limits, and whether ``close()`` came from another
thread (which also sets CLOSING and rings, so a waiting step ends at once);
a worker's of 0.2 s, after which it checks that the parent lives.

Time limits.  Every wait of the parent for its workers (``step``,
``reset``, ``call``, ``recv``, a large message on the pipe) gives up after
``worker_timeout`` seconds (default :data:`WORKER_TIMEOUT_S`; None waits
forever) with :class:`~seer.errors.WorkerError`, naming each worker that did
not answer (index, pid, copies, whether it is stopped) and how long it
waited.  The workers are then left as they are (stopped, or stuck in an
env's C code), so that they can be inspected (``py-spy dump --pid``); every
later call raises :class:`~seer.errors.ClosedError` and ``close()`` kills
and reaps them (SIGKILL ends stopped processes too).  With
``restart_failed=True`` a worker that does not answer a step is killed and
restarted like one that died.

Messages.  Payloads that are arbitrary Python objects (infos, tracebacks,
``call`` / ``get_attr`` results, ``reset`` options, ``set_attr`` values)
are pickled, and a pickle can run code when loaded; so each one carries an
HMAC-SHA256 under a random 32-byte key that the parent creates per env and
hands to each worker in its spawn arguments (never through shared memory),
computed over the payload and its place in the protocol (direction,
worker, flag, op number: a stale or misdirected payload fails too).  A
payload whose HMAC does not match is refused before unpickling: by the
parent with :class:`~seer.errors.WorkerError` (and the env is closed), by a
worker by exiting with the reason (the parent reports it).  Another user
cannot write the block anyway (it is created 0600); the HMAC keeps a
process that can (same user, a stale mapping, a bug writing out of bounds)
from getting code run.  Flags carry no objects, only integers.  Pipes carry
what is not per step: start-up (spaces, layout), payloads too large for the
shared areas (sealed the same way), and a worker's last words.

With ``inline`` the calling process is worker 0: it publishes the op, steps
its own share in ``step_wait`` and then waits for the others, so ``workers``
processes keep ``workers`` cores busy and nobody waits on a core someone
else needs (on the 2-core machine this is worth ~15%: see bench/results).

Copies live in one worker for their whole life (contiguous chunks of
``num_copies / workers``) because a PettingZoo env's state is a Python
object inside that process: it cannot be stepped anywhere else.  What is
handed out dynamically is the waiting: env-pool stepping (``send`` /
``recv``, :class:`ProcessVectorEnv`) gives each worker its own request flag
(REQ, answered by REQDONE in its line), so the caller takes the rows of
whichever workers finish first and a slow copy stalls only its own worker's
share.  Copies with seer.vector's native path (the built-in envs) run their
whole step and autoreset in C inside the worker.

Threads.  The vector env takes one caller at a time
(:class:`~seer.guard.CallGuard`, in :class:`~seer.vector.SeerVectorEnv`);
this backend refuses a second caller too (a non-blocking lock, for callers
that drive it directly).  ``close()`` from another thread interrupts a
running wait, which raises :class:`~seer.errors.ClosedError`.
"""

from __future__ import annotations

import hmac
import math
import multiprocessing as mp
import multiprocessing.connection as mpc
import os
import pickle
import secrets
import signal
import threading
import time
import traceback
import warnings
import weakref

import numpy as np

from seer._seer_c import ffi, lib
from seer.errors import ClosedError, MisuseError, WorkerError
from seer.guard import CLOSE_WAIT_S
from seer.vector._env import SeerVectorEnv
from seer.vector._layout import Layout, build_layout, describe_copy
from seer.vector import shm as shm_blocks
from seer.vector._pool import EnvPool
from seer.vector._runner import CALL, CLOSE, RESET, STEP, CopyRunner, make_parallel
from seer.vector.messages import CopyRestarted, restarts

#: Default ``worker_timeout``: how long the parent waits for a worker's
#: answer before giving up on it.  No healthy env comes near it: the first
#: reset and step can be slow (a simulator launched in reset, JIT
#: compilation in the first step) and may take as long as creating the copies,
#: whose own limit (``startup_timeout``) is also 120 s.  A limit that is too
#: short breaks a healthy run, one too long only delays noticing a hang by a
#: minute, so it errs long.
WORKER_TIMEOUT_S = 120.0

# control area: line 0 = the parent's; line 1 + w = worker w's (8 slots each)
LINE = 8
# line 0: GEN (op number, the publishing flag), CMD and CMDLEN (its payload),
# PBELL (the parent's bell, rung by workers), CLOSING (set by close() from
# another thread: ends the parent's wait)
GEN, CMD, CMDLEN, PBELL, CLOSING = 0, 1, 2, 3, 4
# worker w's line: DONE, MSGLEN, REQDONE written by the worker; REQ (an
# env-pool step request for this worker alone) by the parent; WBELL, the
# worker's bell, rung by the parent
DONE, MSGLEN, REQ, REQDONE, WBELL = 0, 1, 2, 3, 4

MAC = 32  # HMAC-SHA256 in front of each sealed payload
SLICE_S = 0.05  # the parent's sleeps: how soon it sees a dead worker or its time limits
WORKER_SLICE_S = 0.2  # a worker's: how soon it sees that the parent is gone

OP_NAMES = {STEP: "stepping", RESET: "resetting", CALL: "calling into", CLOSE: "closing"}


def _signal_name(code: int) -> str:
    try:
        return f"killed by signal {signal.Signals(-code).name} ({-code})"
    except ValueError:
        return f"killed by signal {-code}"


def _dumps(fn) -> bytes:
    try:
        import cloudpickle

        return cloudpickle.dumps(fn)
    except ImportError:  # gymnasium depends on cloudpickle; plain pickle as a last resort
        return pickle.dumps(fn)


def _proc_state(pid: int) -> str:
    """What /proc says about a worker that does not answer ("" if nothing useful)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""
    if state in (b"T", b"t"):
        return "stopped by a signal (SIGSTOP, or a debugger)"
    if state == b"D":
        return "in uninterruptible sleep (I/O)"
    if state == b"R":
        return "running"
    return ""


# ---- sealed payloads -----------------------------------------------------------------------


def _tag(direction: bytes, w: int, flag: int, value: int) -> bytes:
    """A payload's place in the protocol, covered by its HMAC: a payload
    copied from another worker, op or direction does not verify."""
    return b"seer.vector/%s/%d/%d/%d:" % (direction, w, flag, value)


class _Sealer:
    """HMAC-SHA256 of pickles under one env's key (keyed once, copied per
    payload)."""

    def __init__(self, key: bytes):
        self._keyed = hmac.new(key, digestmod="sha256")

    def _mac(self, tag: bytes, data: bytes) -> bytes:
        h = self._keyed.copy()
        h.update(tag)
        h.update(data)
        return h.digest()

    def seal(self, tag: bytes, obj) -> bytes:
        data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
        return self._mac(tag, data) + data

    def unseal(self, tag: bytes, blob: bytes):
        """The object in ``blob``, or ValueError without unpickling anything
        when its HMAC does not match."""
        if len(blob) < MAC:
            raise ValueError(f"{len(blob)} bytes are too short for a sealed payload (at least {MAC} expected)")
        data = blob[MAC:]
        if not hmac.compare_digest(blob[:MAC], self._mac(tag, data)):
            raise ValueError("its HMAC does not match its content and place in the protocol")
        return pickle.loads(data)


# ---- the shared block ----------------------------------------------------------------------


class _Ctl:
    """The control area's flags and bells, through seer_flags (csrc).

    Holding this object keeps the mapping alive while C works on it: its
    numpy view exports the buffer, so ``SharedMemory.close()`` fails
    (``_Shared.release`` then leaves the mapping to the views) instead of
    unmapping it under a wait that another thread is still in.
    """

    def __init__(self, arr: np.ndarray):
        if arr.ctypes.data % 8:
            raise ValueError(f"the control area at {arr.ctypes.data:#x} is not 8-byte aligned")
        self.arr = arr
        self.base = ffi.cast("int64_t *", arr.ctypes.data)
        self._arrays: dict[tuple, tuple] = {}

    def load(self, i: int) -> int:
        return lib.seer_flag_load(self.base + i)

    def store(self, i: int, value: int) -> None:
        lib.seer_flag_store(self.base + i, value)

    def publish(self, flags: list[int], values: list[int], bells: list[int]) -> None:
        """Release-store each flag, then ring each bell."""
        lib.seer_flags_publish(self.base, ffi.new("int64_t[]", flags), ffi.new("int64_t[]", values), len(flags),
                               ffi.new("int64_t[]", bells), len(bells))

    def publisher(self, bells: list[int]):
        """``publish(flag, value)``: one flag, then ``bells``; arrays made
        once (this is the per-step path of its one caller thread)."""
        at, val, rings, n, base = ffi.new("int64_t[1]"), ffi.new("int64_t[1]"), ffi.new("int64_t[]", bells), \
            len(bells), self.base
        publish = lib.seer_flags_publish

        def publish_one(flag: int, value: int, _mapping=self) -> None:  # holding self keeps the mapping
            at[0], val[0] = flag, value
            publish(base, at, val, 1, rings, n)

        return publish_one

    def ring(self, bell: int) -> None:
        lib.seer_bell_ring(ffi.cast("seer_bell *", self.base + bell))

    def wait(self, flags: list[int], values: list[int], need: int, mode: int, bell: int, abort: int = -1,
             spin: float = 0.0, timeout: float | None = None):
        """(how many flags met ``mode`` against their value, which: a cdata
        uint8_t array); the count is ``lib.SEER_FLAGS_ABORTED`` once the
        ``abort`` flag is set."""
        key = tuple(flags)
        arrays = self._arrays.get(key)
        if arrays is None:  # the same few sets of flags every step: made once each
            if len(self._arrays) >= 64:  # env-pool steps can wait on many subsets of workers
                self._arrays.clear()
            n = len(flags)
            arrays = self._arrays[key] = (ffi.new("int64_t[]", flags), ffi.new("int64_t[]", n), ffi.new("uint8_t[]", n))
        at, val, hit = arrays
        for i, v in enumerate(values):
            val[i] = v
        got = lib.seer_flags_wait(self.base, at, val, len(key), need, mode, bell, abort, spin,
                                  -1.0 if timeout is None else max(timeout, 0.0), hit)
        return got, hit


class _Shared:
    """The shared block and numpy views on it."""

    def __init__(self, layout: Layout, workers: int, cmd_bytes: int, msg_bytes: int, name: str | None = None):
        self.ctl_bytes = LINE * 8 * (workers + 1)
        self.cmd_off = self.ctl_bytes
        self.msg_off = self.cmd_off + cmd_bytes
        self.buf_off = self.msg_off + workers * msg_bytes
        self.buf_off = (self.buf_off + 63) // 64 * 64
        _, buf_size = layout.offsets()
        size = self.buf_off + buf_size
        self.cmd_bytes, self.msg_bytes = cmd_bytes, msg_bytes
        self.shm = shm_blocks.create(size) if name is None else shm_blocks.attach(name)
        self.name = self.shm.name
        mm = self.shm._mmap
        self.ctl = np.frombuffer(mm, np.int64, self.ctl_bytes // 8, 0)
        self.flags = _Ctl(self.ctl)
        self.cmd = np.frombuffer(mm, np.uint8, cmd_bytes, self.cmd_off)
        self.msg = [np.frombuffer(mm, np.uint8, msg_bytes, self.msg_off + w * msg_bytes) for w in range(workers)]
        self.bufs = layout.allocate(memoryview(mm)[self.buf_off:self.buf_off + buf_size])

    def line(self, w: int) -> int:
        return LINE * (w + 1)

    def release(self, unlink: bool) -> None:
        """Drop the views, close the mapping, unlink the name.  A view still
        held elsewhere (``copy=False`` results, a wait in another thread)
        keeps the mapping alive until it dies; the name goes from /dev/shm
        either way."""
        self.ctl = self.flags = self.cmd = self.msg = self.bufs = None
        shm_blocks.release(self.shm, unlink)


# =============================================================================================
# worker side


def call_share(runner: CopyRunner, share: list[int], payload) -> list:
    """A CALL op on the copies of ``share`` that the payload selects; one result each, in ``share`` order."""
    kind, name, args, kwargs, values, copies = payload
    value_of = dict(zip(copies, values)) if kind == "set_attr" else {}
    chosen = set(copies)
    return [runner.call(c, kind, name, value_of[c] if kind == "set_attr" else args, kwargs)
            for c in share if c in chosen]


def _parent_gone(parent_sentinel, parent_pid: int) -> bool:
    if parent_sentinel is not None:  # readable once the parent is gone, zombie or not
        return bool(mpc.wait([parent_sentinel], timeout=0))
    try:
        os.kill(parent_pid, 0)
    except ProcessLookupError:
        return True
    return False


def _wait_work(flags: _Ctl, at, val, last_gen: int, line: int, last_req: int, parent_pid: int, yield_s: float,
               parent_sentinel=None) -> tuple[int, int] | None:
    """Wait until the parent publishes an op for everyone (GEN) or an
    env-pool step for this worker (its REQ); (GEN, REQ), or None once the
    parent is gone.  ``at`` / ``val``: int64_t[2] arrays, made once."""
    at[0], at[1], val[0], val[1], base = GEN, line + REQ, last_gen, last_req, flags.base
    spin = yield_s
    while True:
        got = lib.seer_flags_wait(base, at, val, 2, 1, lib.SEER_FLAGS_NE, line + WBELL, -1, spin, WORKER_SLICE_S,
                                  ffi.NULL)
        if got > 0:
            return lib.seer_flag_load(base + GEN), lib.seer_flag_load(base + line + REQ)
        spin = 0.0  # idle (a learner update): sleep until rung
        if _parent_gone(parent_sentinel, parent_pid):
            return None


def _worker_entry(w: int, conn, fn_bytes: bytes, copies: list[int], parent_pid: int, key: bytes, opts: dict):
    """A worker process: create its copies, then serve ops until CLOSE."""
    shared = runner = None
    try:
        try:
            env_fn = pickle.loads(fn_bytes)
            envs = {}
            for c in copies:
                envs[c] = make_parallel(env_fn)
            specs = {c: describe_copy(e) for c, e in envs.items()}
        except BaseException:
            conn.send(("error", traceback.format_exc()))
            return
        conn.send(("specs", specs))
        msg = conn.recv()
        if msg[0] != "layout":
            return
        _, layout, shm_name, workers, cmd_bytes, msg_bytes, gen, restart_info = msg
        shared = _Shared(layout, workers, cmd_bytes, msg_bytes, name=shm_name)
        runner = CopyRunner(layout, shared.bufs, envs, specs, opts["autoreset"], env_fn, opts["restart"],
                            opts["seed_stride"])
        if restart_info is not None:
            try:
                for c in copies:
                    runner.last_seed[c] = restart_info["last_seed"][c]
                    runner.restarts[c] = restart_info["restarts"][c]
                    runner.restarted(c, restart_info["alive_before"][c])
            except BaseException:
                conn.send(("error", traceback.format_exc()))
                return
        conn.send(("ready", runner.msgs))
        _serve(w, conn, shared, runner, copies, gen, parent_pid, key, opts)
    except BaseException:
        try:
            conn.send(("fatal", traceback.format_exc()))
        except Exception:
            pass
        raise
    finally:
        if runner is not None:
            runner.close()
        runner = None
        if shared is not None:
            shared.release(unlink=False)


def _serve(w, conn, shared: _Shared, runner: CopyRunner, copies, gen, parent_pid, key: bytes, opts):
    ctl, flags, b = shared.ctl, shared.flags, shared.bufs
    mine = shared.line(w)
    region = shared.msg[w]
    yield_s = opts["yield_s"]
    parent = mp.parent_process()
    sentinel = getattr(parent, "sentinel", None) if parent is not None else None
    last, last_req = gen, flags.load(mine + REQ)

    sealer = _Sealer(key)
    publish = flags.publisher([PBELL])
    wait_at, wait_val = ffi.new("int64_t[2]"), ffi.new("int64_t[2]")

    def reply(out, flag: int, value: int) -> None:
        blob = sealer.seal(_tag(b"msg", w, flag, value), out) if out else b""
        over = len(blob) > len(region)
        if blob and not over:
            region[:len(blob)] = np.frombuffer(blob, np.uint8)
        ctl[mine + MSGLEN] = -1 if over else max(len(blob) - MAC, 0)  # payload of the flag below
        publish(mine + flag, value)
        if over:  # after the flag: the parent reads the pipe once it sees it
            conn.send_bytes(blob)

    def command(g: int):
        n = int(ctl[CMDLEN])
        if n == 0:
            return None
        if n > 0:
            if n > len(shared.cmd) - MAC:
                raise RuntimeError(f"worker {w} refused the command of op {g}: its length {n} is beyond the "
                                   f"command area ({len(shared.cmd) - MAC} bytes); nothing of it was unpickled")
            blob = shared.cmd[:MAC + n].tobytes()
        elif n == -1:
            blob = conn.recv_bytes()
        else:
            raise RuntimeError(f"worker {w} refused the command of op {g}: length {n} is invalid (expected >= -1)")
        try:
            return sealer.unseal(_tag(b"cmd", 0, GEN, g), blob)
        except ValueError as exc:
            raise RuntimeError(f"worker {w} refused the command of op {g} in shared memory ({exc}): it was not "
                               f"written by this vector env's parent process; nothing of it was unpickled") from None

    while True:
        got = _wait_work(flags, wait_at, wait_val, last, mine, last_req, parent_pid, yield_s, sentinel)
        if got is None:  # the parent is gone
            return
        g, r = got
        if g == last:  # an env-pool step of this worker's copies
            last_req = r
            runner.msgs = []
            for c in copies:
                runner.step(c)
            reply(runner.msgs, REQDONE, r)
            continue
        last = g
        cmd = int(ctl[CMD])
        if cmd == CLOSE:
            ctl[mine + MSGLEN] = 0
            publish(mine + DONE, g)
            return
        payload = command(g)
        runner.msgs = []
        if cmd == STEP:
            for c in copies:
                runner.step(c)
            out = runner.msgs
        elif cmd == RESET:
            sel, seeds, seeded = b["select"], b["seeds"], b["seeded"]
            for c in copies:
                if sel[c]:
                    runner.reset(c, int(seeds[c]) if seeded[c] else None, payload)
            out = runner.msgs
        elif cmd == CALL:
            out = (call_share(runner, copies, payload), runner.msgs)
        else:
            raise RuntimeError(f"worker {w} got unknown command {cmd}")
        reply(out, DONE, g)


# =============================================================================================
# parent side


class _Proc:
    def __init__(self, w, proc, conn, copies):
        self.w, self.proc, self.conn, self.copies = w, proc, conn, copies


def _cleanup(procs: list, shared_box: list, runner_box: list) -> None:
    """Ends every worker and frees the shared block; safe to call twice."""
    for p in procs:
        try:
            if p.proc.is_alive():
                p.proc.terminate()
                os.kill(p.proc.pid, signal.SIGCONT)  # a stopped worker acts on SIGTERM only once continued
        except (ValueError, OSError):  # closed or gone already
            pass
    deadline = time.monotonic() + 1.0
    for p in procs:
        try:
            p.proc.join(max(0.0, deadline - time.monotonic()))
            if p.proc.is_alive():
                p.proc.kill()
                p.proc.join()
        except ValueError:
            pass
        try:
            p.conn.close()
        except Exception:
            pass
        try:
            p.proc.close()
        except Exception:
            pass
    procs.clear()
    if runner_box and runner_box[0] is not None:
        runner_box[0].close()
        runner_box[0] = None
    if shared_box and shared_box[0] is not None:
        shared_box[0].release(unlink=True)
        shared_box[0] = None


def _check_timeout(value) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"worker_timeout={value!r} is invalid: expected a number of seconds > 0, or None to wait "
                         f"for the workers forever")
    return float(value)


def _guarded(call: str):
    """Run the method as ``call`` with the backend taken (one caller at a
    time); a call that ``close()`` from another thread interrupted raises
    :class:`ClosedError`, whatever it ran into on the way out."""

    def decorate(method):
        def guarded(self, *args, **kwargs):
            self._enter(call)
            try:
                return method(self, *args, **kwargs)
            except Exception as exc:
                if self._interrupted and not isinstance(exc, ClosedError):
                    raise self._closed_error() from exc
                raise
            finally:
                self._leave()

        guarded.__name__, guarded.__doc__ = method.__name__, method.__doc__
        return guarded

    return decorate


class ProcessBackend:
    """The copies of a :class:`ProcessVectorEnv`, in worker processes (see
    the module docstring for the protocol).

    Args:
        env_fn: Makes one copy; pickled with cloudpickle for the workers.
        num_copies: Env copies, split in contiguous chunks over the workers.
        workers: Worker processes (with ``inline``, the caller is worker 0).
        pad, autoreset, restart: As in :func:`seer.vector.make`.
        context: ``"forkserver"`` (default where available) or ``"spawn"``.
        inline: The calling process steps worker 0's share itself.
        yield_s: How long a waiter spins (``sched_yield``) before sleeping.
        cmd_bytes, msg_bytes: Shared areas for commands and each worker's
            messages; larger payloads go through the pipes.
        startup_timeout: Seconds a worker may take to create its copies.
        worker_timeout: Seconds any wait for the workers may take before
            :class:`~seer.errors.WorkerError` (None: no limit); see
            :data:`WORKER_TIMEOUT_S` for the default.
    """

    name = "process"

    def __init__(self, env_fn, num_copies, workers, *, pad, autoreset, restart, seed_stride=None, context=None,
                 inline=False,
                 yield_s=0.002, cmd_bytes=1 << 20, msg_bytes=1 << 20, startup_timeout=120.0,
                 worker_timeout=WORKER_TIMEOUT_S):
        if context is None:
            context = "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"
        if context not in ("spawn", "forkserver"):
            raise ValueError(
                f"context={context!r} is invalid: expected 'spawn' or 'forkserver' (fork is unsafe in a process "
                f"with threads, such as SEER's worker pools)"
            )
        self.worker_timeout = _check_timeout(worker_timeout)
        self.ctx = mp.get_context(context)
        if context == "forkserver":
            self.ctx.set_forkserver_preload(["seer.vector._process"])
        self.context = context
        self.autoreset = autoreset
        self.restart_failed = restart
        self.inline = bool(inline)
        self.num_workers = workers
        self.yield_s = float(yield_s)
        self.startup_timeout = float(startup_timeout)
        self.cmd_bytes, self.msg_bytes = int(cmd_bytes), int(msg_bytes)
        # authenticates the pickles in shared memory; handed to workers in
        # their spawn arguments, never through the shared block
        self.key = secrets.token_bytes(32)
        self._sealer = _Sealer(self.key)
        self.opts = {"autoreset": autoreset, "restart": restart, "yield_s": self.yield_s, "seed_stride": seed_stride}
        self.fn_bytes = _dumps(env_fn)
        self.env_fn = env_fn
        self.shares = [list(map(int, s)) for s in np.array_split(np.arange(num_copies), workers) if len(s)]
        self.num_workers = len(self.shares)
        self.owner = {c: w for w, s in enumerate(self.shares) for c in s}
        # env-pool stepping (seer.vector._pool): a worker's copies are a shard
        self.num_shards = self.num_workers
        self.copy_ranges = [(s[0], s[-1] + 1) for s in self.shares]
        self.inflight: dict[int, int] = {}  # worker -> its REQ number
        self._done_shards: list[int] = []
        self._acc: list = []
        self.procs: list[_Proc] = []
        self.child: dict[int, _Proc] = {}
        self._shared_box = [None]
        self._runner_box = [None]
        self._finalizer = weakref.finalize(self, _cleanup, self.procs, self._shared_box, self._runner_box)
        self.gen = 0
        self._expect: dict[int, float] = {}
        self.closed = False
        self.broken: str | None = None
        self._pending_op = None
        self._own = None
        self._restart_msgs: dict[int, list] = {}
        self.restart_counts = [0] * num_copies
        self.last_seeds: list = [None] * num_copies
        # one caller at a time (see _enter); close() from another thread
        # sets _interrupted, and leaves an inline runner still in use to its
        # caller to close on the way out (_idle_runner)
        self._lock = threading.Lock()
        self._owner: int | None = None
        self._busy_with = ""
        self._interrupted = False
        self._idle_runner = None
        self.shared = self.flags = self.ctl = self.bufs = self._publish_gen = None
        try:
            self._start(num_copies, pad)
        except BaseException:
            self._finalizer()
            raise

    # ---- start-up ----------------------------------------------------------------------------

    def _spawn(self, w: int) -> _Proc:
        parent_conn, child_conn = self.ctx.Pipe()
        proc = self.ctx.Process(
            target=_worker_entry, name=f"seer-vector-worker-{w}", daemon=True,
            args=(w, child_conn, self.fn_bytes, self.shares[w], os.getpid(), self.key, self.opts))
        proc.start()
        child_conn.close()
        p = _Proc(w, proc, parent_conn, self.shares[w])
        self.procs.append(p)
        self.child[w] = p
        return p

    def _recv(self, p: _Proc, what: str):
        """One start-up message from worker ``p`` (raises if it dies or times out)."""
        deadline = time.monotonic() + self.startup_timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise WorkerError(f"worker {p.w} (pid {p.proc.pid}) sent no {what} within {self.startup_timeout} s")
            ready = mpc.wait([p.conn, p.proc.sentinel], timeout=left)
            if p.conn in ready:
                try:
                    msg = p.conn.recv()
                except EOFError:
                    msg = None
                if msg is not None:
                    if msg[0] in ("error", "fatal"):
                        raise WorkerError(f"worker {p.w} (pid {p.proc.pid}) failed while {what}:\n{msg[1]}")
                    return msg
            if p.proc.sentinel in ready or not p.proc.is_alive():
                p.proc.join(1.0)
                raise WorkerError(f"worker {p.w} (pid {p.proc.pid}) died while {what}: {self._how(p)}")

    def _how(self, p: _Proc) -> str:
        code = p.proc.exitcode
        if code is None:
            return "still running"
        if code < 0:
            return _signal_name(code)
        last = ""
        try:
            if p.conn.poll(0):
                m = p.conn.recv()
                if m and m[0] in ("fatal", "error"):
                    last = f"; its traceback:\n{m[1]}"
        except Exception:
            pass
        return f"exited with code {code}{last}"

    def _start(self, num_copies: int, pad: bool) -> None:
        first_child = 1 if self.inline else 0
        specs: dict[int, object] = {}
        for w in range(first_child, self.num_workers):
            self._spawn(w)
        if self.inline:  # worker 0 is this process
            envs = {}
            try:
                for c in self.shares[0]:
                    envs[c] = make_parallel(self.env_fn)
            except BaseException:
                for e in envs.values():
                    e.close()
                raise
            self._inline_envs = envs
            specs.update({c: describe_copy(e) for c, e in envs.items()})
        for w in range(first_child, self.num_workers):
            specs.update(self._recv(self.child[w], "creating its env copies")[1])
        self.specs = [specs[c] for c in range(num_copies)]
        self.layout = build_layout(self.specs, pad, same_step=self.autoreset.value == "SameStep")
        shared = _Shared(self.layout, self.num_workers, self.cmd_bytes, self.msg_bytes)
        self._shared_box[0] = shared
        self.shared = shared
        self.bufs = shared.bufs
        self.ctl = shared.ctl
        self.flags = shared.flags
        # a restarted worker keeps its index, so the bells rung per op stay these
        self._publish_gen = shared.flags.publisher([shared.line(w) + WBELL for w in self.child])
        if self.inline:
            runner = CopyRunner(self.layout, self.bufs, self._inline_envs, {c: specs[c] for c in self.shares[0]},
                                self.autoreset, self.env_fn, self.restart_failed, self.opts["seed_stride"])
            self._runner_box[0] = runner
            del self._inline_envs
        for w in range(first_child, self.num_workers):
            self._send_layout(self.child[w], None)
        for w in range(first_child, self.num_workers):
            self._recv(self.child[w], "attaching the shared memory")

    def _send_layout(self, p: _Proc, restart_info) -> None:
        p.conn.send(("layout", self.layout, self.shared.name, self.num_workers, self.cmd_bytes, self.msg_bytes,
                     self.gen, restart_info))

    @property
    def runner(self) -> CopyRunner | None:
        return self._runner_box[0]

    # ---- one caller at a time ------------------------------------------------------------------

    def _enter(self, call: str) -> None:
        """Take the backend for ``call``; refuses, never waits: a second
        caller gets MisuseError at once."""
        if not self._lock.acquire(blocking=False):
            if self.closed:
                raise ClosedError(f"{call}: this vector env is closed")
            busy = self._busy_with or "another call"
            if self._owner == threading.get_ident():
                raise MisuseError(f"{call} called from inside {busy} of this vector env (from an env copy's own "
                                  f"code?): a vector env takes one call at a time")
            raise MisuseError(
                f"{call} called while {'another ' if busy == call else ''}{busy} is running on this vector env in "
                f"another thread: a vector env takes one caller at a time; call it from one thread (or serialize "
                f"the calls with a lock), or give each thread its own vector env")
        self._owner, self._busy_with = threading.get_ident(), call
        if self.closed or self.broken:
            self._leave()
            self._check()

    def _leave(self) -> None:
        self._owner = None
        self._busy_with = ""
        runner, self._idle_runner = self._idle_runner, None
        try:
            if runner is not None:  # closed by another thread while this call ran our own copies
                runner.close()
        finally:
            self._lock.release()

    def _closed_error(self) -> ClosedError:
        return ClosedError(f"the vector env was closed by another thread during {self._busy_with or 'a call'}")

    def _check(self) -> None:
        if self.closed:
            raise ClosedError(f"this vector env is closed{'' if not self.broken else ' (' + self.broken + ')'}")
        if self.broken:
            raise ClosedError(f"this vector env can no longer be used ({self.broken}); close() it")

    def _idle(self, call: str) -> None:
        if self._pending_op is not None:
            raise MisuseError(f"{call} called while a step is pending on this vector env (step_async() returned, "
                              f"step_wait() has not): call step_wait() first")

    # ---- ops ---------------------------------------------------------------------------------

    def _publish(self, cmd: int, payload=None) -> None:
        ctl, gen = self.ctl, self.gen + 1
        ctl[CMD] = cmd
        data = None
        if payload is not None:
            blob = self._sealer.seal(_tag(b"cmd", 0, GEN, gen), payload)
            if len(blob) <= self.cmd_bytes:
                self.shared.cmd[:len(blob)] = np.frombuffer(blob, np.uint8)
                ctl[CMDLEN] = len(blob) - MAC
            else:
                ctl[CMDLEN] = -1
                data = blob
        else:
            ctl[CMDLEN] = 0
        self.gen = gen
        self._publish_gen(GEN, gen)  # CMD, CMDLEN, payload: before
        if data is not None:  # after GEN: the workers read it once they see GEN
            for p in self.child.values():
                p.conn.send_bytes(data)

    def _dead(self) -> list[_Proc]:
        sentinels = {p.proc.sentinel: p for p in self.child.values()}
        if not sentinels:
            return []
        return [sentinels[s] for s in mpc.wait(list(sentinels), timeout=0)]

    def _slice(self, t0: float, timeout: float | None) -> float:
        """The next sleep of a wait: a slice, cut at the time limits."""
        waited = time.monotonic() - t0
        left = SLICE_S
        if timeout is not None:
            left = min(left, timeout - waited)
        if self.worker_timeout is not None:
            left = min(left, self.worker_timeout - waited)
        return max(left, 0.0)

    def _wait(self, timeout, op: int) -> dict[int, object]:
        """Wait for every worker to finish op ``self.gen``; return its messages."""
        if self._interrupted:
            raise self._closed_error()
        flags, gen, line = self.flags, self.gen, self.shared.line
        waiting = list(self.child)
        restarted: set[int] = set()
        t0 = time.monotonic()
        # An op that takes the workers milliseconds is first slept through
        # for most of its usual time, so that we do not take turns with them
        # on the cores; its end is spun for (a futex wake-up costs tens of
        # microseconds on a busy machine, a spin a few).
        expect = self._expect.get(op, 0.0)
        nap = min(0.6 * expect, 0.02) if expect > 4e-4 else 0.0
        spin = self.yield_s
        while waiting:
            limit = self._slice(t0, timeout)
            if nap:
                now_spin, limit, nap = 0.0, min(nap, limit), 0.0
            else:
                now_spin, spin = spin, 0.0
            got, hit = flags.wait([line(w) + DONE for w in waiting], [gen] * len(waiting), len(waiting),
                                  lib.SEER_FLAGS_EQ, PBELL, CLOSING, now_spin, limit)
            if got == lib.SEER_FLAGS_ABORTED:
                raise self._closed_error()
            if got == len(waiting):
                break
            pending = [w for w, h in zip(waiting, hit) if not h]
            for p in self._dead():
                if p.w in pending:
                    self._worker_died(p, op)  # raises unless restart_failed (then a new worker has its copies)
                    restarted.add(p.w)
            pending = [w for w in pending if w not in restarted]
            if pending:
                restarted |= self._check_time(t0, timeout, pending, op, "call step_wait again or close()")
            waiting = [w for w in waiting if w not in restarted]
        took = time.monotonic() - t0
        self._expect[op] = took if op not in self._expect else 0.8 * self._expect[op] + 0.2 * took
        msgs = {}
        for w in self.child:
            if w in restarted:
                msgs[w] = self._restart_msgs.pop(w, [])
                continue
            m = self._read_msgs(w, DONE, gen)
            if m is not None:
                msgs[w] = m
        return msgs

    def _check_time(self, t0: float, timeout, pending: list[int], op: int, hint: str) -> set[int]:
        """Raise once a wait is past the caller's ``timeout`` (retryable) or
        ``worker_timeout`` (the pending workers are unresponsive); the
        workers restarted for being unresponsive, if any."""
        waited = time.monotonic() - t0
        if timeout is not None and waited >= timeout:
            raise mp.TimeoutError(f"the vector env's {OP_NAMES.get(op, 'op')} step has timed out after {timeout} s "
                                  f"(workers {sorted(pending)} still busy); {hint}")
        if self.worker_timeout is not None and waited >= self.worker_timeout:
            return self._unresponsive(sorted(pending), waited, op)
        return set()

    def _unresponsive(self, ws: list[int], waited: float, op: int) -> set[int]:
        """Workers ``ws`` did not answer within worker_timeout: restart them
        (a step, with restart_failed) or raise WorkerError, leaving them as
        they are until close()."""
        procs = [self.child[w] for w in ws]
        limit = f"worker_timeout={self.worker_timeout:g} s"
        if self.restart_failed and op == STEP:
            for p in procs:
                try:
                    p.proc.kill()
                except (ValueError, OSError):
                    pass
                self._worker_died(p, op, how=f"did not answer within {limit} and was killed")
            return set(ws)
        who = []
        for p in procs:
            state = _proc_state(p.proc.pid)
            who.append(f"worker {p.w} (pid {p.proc.pid}, env copies {p.copies[0]}..{p.copies[-1]}"
                       f"{', ' + state if state else ''})")
        what = (f"{'; '.join(who)} did not answer within {limit} while {OP_NAMES.get(op, 'running')} "
                f"{'its' if len(procs) == 1 else 'their'} env copies (the parent waited {waited:.2f} s)")
        self.broken = what
        raise WorkerError(
            f"{what}.  The vector env can no longer be used: close() it, which kills and reaps its workers (until "
            f"then they are left as they are, for inspection: py-spy dump --pid {procs[0].proc.pid}).  Pass "
            f"worker_timeout= to seer.vector.make to wait longer (None: forever)"
            + ("" if op != STEP else ", or restart_failed=True to kill and restart workers that hang in a step"))

    def _read_msgs(self, w: int, flag: int, value: int):
        """Worker ``w``'s message for the op it answered with ``flag`` =
        ``value``; None if it sent none.  Unpickled only once its HMAC
        verifies."""
        n = int(self.ctl[self.shared.line(w) + MSGLEN])
        if n == 0:
            return None
        p = self.child[w]
        where = "its message area in shared memory"
        if n > 0:
            if n > self.msg_bytes - MAC:
                self._refuse(p, where, f"its length {n} is beyond the area ({self.msg_bytes - MAC} bytes)")
            blob = self.shared.msg[w][:MAC + n].tobytes()
        elif n == -1:
            where = "the pipe"
            blob = self._recv_bytes(p)
        else:
            self._refuse(p, where, f"its length {n} is invalid (expected >= -1)")
        try:
            return self._sealer.unseal(_tag(b"msg", w, flag, value), blob)
        except ValueError as exc:
            self._refuse(p, where, str(exc))

    def _refuse(self, p: _Proc, where: str, why: str) -> None:
        what = (f"refused the message of worker {p.w} (pid {p.proc.pid}) in {where}: {why}.  It was not written by "
                f"that worker for this op (another process wrote to the shared block, or it is corrupt), and "
                f"nothing of it was unpickled")
        self.broken = what
        self._shutdown()
        raise WorkerError(f"{what}; the vector env is closed")

    def _recv_bytes(self, p: _Proc) -> bytes:
        """A message too large for shared memory, from the pipe."""
        ready = mpc.wait([p.conn, p.proc.sentinel], timeout=self.worker_timeout)
        if p.conn in ready:
            try:
                return p.conn.recv_bytes()
            except EOFError:
                pass
        if ready:
            p.proc.join(0.5)
            late = f"{self._how(p)} before sending it"
        else:
            late = f"did not send it within worker_timeout={self.worker_timeout:g} s"
        what = f"worker {p.w} (pid {p.proc.pid}) announced a message too large for shared memory but {late}"
        self.broken = what
        self._shutdown()
        raise WorkerError(f"{what}; the vector env is closed")

    def _worker_died(self, p: _Proc, op: int, how: str | None = None) -> None:
        p.proc.join(0.5)
        how = how or self._how(p)
        what = (f"worker {p.w} (pid {p.proc.pid}) {how} while {OP_NAMES.get(op, 'running')} env copies "
                f"{p.copies[0]}..{p.copies[-1]}")
        if not (self.restart_failed and op == STEP):
            self.broken = what
            self._shutdown()
            raise WorkerError(f"{what}; the vector env is closed"
                              + ("" if self.restart_failed else " (pass restart_failed=True to restart failed "
                                 "copies and go on)"))
        # start a replacement with the same copies; it cuts their episodes
        self.procs.remove(p)
        try:
            p.proc.join(1.0)
            p.conn.close()
            p.proc.close()
        except Exception:
            pass
        A = self.layout.slots
        alive = self._alive_before
        info = {"alive_before": {c: alive[c * A:(c + 1) * A].copy() for c in p.copies},
                "last_seed": {c: self.last_seeds[c] for c in p.copies},
                "restarts": {c: self.restart_counts[c] + 1 for c in p.copies}}  # counted from the messages
        try:
            q = self._spawn(p.w)
            self._recv(q, "creating its env copies (restart)")
            self._send_layout(q, info)
            ready = self._recv(q, "restarting its env copies")
        except BaseException as exc:
            self.broken = f"{what}, and restarting it failed: {exc}"
            self._shutdown()
            raise WorkerError(f"{what}; restarting it failed: {exc}") from exc
        tb = f"{what}; a new worker (pid {q.proc.pid}) took its copies over"
        self._restart_msgs[p.w] = [CopyRestarted(c, tb) for c in p.copies] + list(ready[1])

    # ---- env-pool stepping (seer.vector._pool.EnvPool) -----------------------------------------

    @_guarded("send()")
    def send(self, shards) -> None:
        """Step the copies of workers ``shards`` (their action rows are in
        place) without waiting: one REQ flag each."""
        self._idle("send()")
        if self.restart_failed:  # what a restart truncates, should a worker die in this step
            self._alive_before = self.bufs["alive"].copy()
        flags, line = self.flags, self.shared.line
        at, reqs, bells = [], [], []
        for w in shards:
            req = flags.load(line(w) + REQ) + 1
            self.inflight[w] = req
            if w in self.child:
                at.append(line(w) + REQ)
                reqs.append(req)
                bells.append(line(w) + WBELL)
            # the inline share (worker 0 is this process) runs in recv
        if at:
            flags.publish(at, reqs, bells)  # the action rows: before

    @_guarded("recv()")
    def recv(self, min_shards=None, timeout=None) -> tuple[list, list]:
        """Gather in-flight env-pool steps: all (``min_shards=None``) or at
        least ``min_shards`` plus any others done by then; (shards, messages).
        ``timeout`` raises ``multiprocessing.TimeoutError`` with too few done
        (those done stay gathered for the next call)."""
        if self._interrupted:
            raise self._closed_error()
        flags, line, inflight = self.flags, self.shared.line, self.inflight
        if 0 in inflight and 0 not in self.child:  # our own share first
            r = self.runner
            r.msgs = []
            for c in self.shares[0]:
                r.step(c)
            del inflight[0]
            self._acc += r.msgs
            self._done_shards.append(0)
        total = len(self._done_shards) + len(inflight)
        need = total if min_shards is None else min(int(min_shards), total)
        t0 = time.monotonic()
        spin = self.yield_s
        while True:
            more = need - len(self._done_shards)
            ws = list(inflight)
            if ws:  # with nothing more needed, gather whoever is done without waiting
                got, hit = flags.wait([line(w) + REQDONE for w in ws], [inflight[w] for w in ws], max(more, 0),
                                      lib.SEER_FLAGS_EQ, PBELL, CLOSING, spin if more > 0 else 0.0,
                                      self._slice(t0, timeout) if more > 0 else 0.0)
                if got == lib.SEER_FLAGS_ABORTED:
                    raise self._closed_error()
                for w, h in zip(ws, hit):
                    if h:
                        req = inflight.pop(w)
                        self._acc += self._count(self._read_msgs(w, REQDONE, req) or [])
                        self._done_shards.append(w)
            if len(self._done_shards) >= need:
                break
            spin = 0.0
            lost = set()
            for p in self._dead():
                if p.w in inflight:
                    self._worker_died(p, STEP)  # raises unless restart_failed
                    lost.add(p.w)
            if not lost:
                lost = self._check_time(t0, timeout, list(inflight), STEP, "wait again or close()")
            for w in lost:
                del inflight[w]
                self._acc += self._count(self._restart_msgs.pop(w, []))
                self._done_shards.append(w)
        shards, self._done_shards = sorted(self._done_shards), []
        msgs, self._acc = self._acc, []
        return shards, msgs

    def _count(self, msgs: list) -> list:
        """Restarts reported by worker processes (the inline runner counts its own)."""
        for m in restarts(msgs):
            self.restart_counts[m.copy] += 1
        return msgs

    def _run_inline(self, op: int, payload=None):
        r = self.runner
        if r is None:
            return None
        r.msgs = []
        b = self.bufs
        if op == STEP:
            for c in self.shares[0]:
                r.step(c)
            return r.msgs
        if op == RESET:
            for c in self.shares[0]:
                if b["select"][c]:
                    r.reset(c, int(b["seeds"][c]) if b["seeded"][c] else None, payload)
            return r.msgs
        return (call_share(r, self.shares[0], payload), r.msgs)

    def _op(self, op: int, payload=None, timeout=None):
        self._pending_op = op  # until its answers are in: close() then ends the workers without asking
        self._publish(op, payload if op != STEP else None)
        own = self._run_inline(op, payload)
        msgs = self._wait(timeout, op)
        self._pending_op = None
        if own:
            msgs[0] = own
        return msgs

    @staticmethod
    def _flat(msgs: dict) -> list:
        out = []
        for w in sorted(msgs):
            out.extend(msgs[w])
        return out

    # ---- backend interface -------------------------------------------------------------------

    @property
    def row_ranges(self) -> list[tuple[int, int]]:
        A = self.layout.slots
        return [(c0 * A, c1 * A) for c0, c1 in self.copy_ranges]

    @_guarded("reset()")
    def reset(self, options) -> list:
        self._idle("reset()")
        b = self.bufs
        for c in np.flatnonzero(b["select"]):
            self.last_seeds[c] = int(b["seeds"][c]) if b["seeded"][c] else None
        return self._flat(self._op(RESET, options))

    @_guarded("step()")
    def step_async(self) -> None:
        self._idle("step()")
        self._alive_before = self.bufs["alive"].copy()
        self._pending_op = STEP
        self._publish(STEP)
        self._own = None

    @_guarded("step()")
    def step_wait(self, timeout=None) -> list:
        """``timeout`` bounds the wait for the worker processes (raising
        ``multiprocessing.TimeoutError``, the step still pending), and so
        does ``worker_timeout`` (raising WorkerError); the caller's own
        share (``inline``) runs to its end first."""
        if self._own is None and self._pending_op == STEP:
            self._own = self._run_inline(STEP) or []
        msgs = self._wait(timeout, STEP)
        self._pending_op = None
        for m in msgs.values():  # the inline runner counts its own restarts
            self._count(m)
        if self._own:
            msgs[0] = self._own
        self._own = None
        return self._flat(msgs)

    @_guarded("call()")
    def call(self, kind, name, args, kwargs, values=None, copies=None):
        self._idle(f"{kind}()")
        copies = list(range(self.layout.num_copies)) if copies is None else list(copies)
        msgs = self._op(CALL, (kind, name, args, kwargs, values, copies))
        chosen = set(copies)
        by_copy, errs = {}, []
        for w, (res, m) in msgs.items():
            by_copy.update(zip([c for c in self.shares[w] if c in chosen], res))
            errs.extend(m)
        return [by_copy.get(c) for c in copies], errs

    def worker_of(self, c: int) -> str:
        w = self.owner[c]
        p = self.child.get(w)
        return "the main process (inline worker 0)" if p is None else f"worker {w} (pid {p.proc.pid})"

    def restarts(self) -> list[int]:
        counts = list(self.restart_counts)
        r = self.runner
        if r is not None:
            for c in self.shares[0]:
                counts[c] += r.restarts[c]
        return counts

    def worker_pids(self) -> list[int]:
        return [p.proc.pid for p in self.procs]

    def interrupt(self) -> None:
        """End a wait that another thread is in (``close()`` from another
        thread): it raises ClosedError at once.  Safe from any thread."""
        self._interrupted = True
        flags = self.flags
        if flags is not None:
            flags.store(CLOSING, 1)  # what the waiter checks once woken
            flags.ring(PBELL)

    def close(self, timeout: float = 1.0) -> None:
        """End the workers (asked to leave when idle, killed after
        ``timeout`` seconds or at once when an op is under way) and free the
        shared memory.  From another thread during a call: interrupts it
        and waits for it (``seer.guard.CLOSE_WAIT_S``, unless the vector env
        did so already); if it is still running the caller's own copies
        then, their envs are closed when it returns."""
        if self.closed:
            return
        if self._owner == threading.get_ident():
            raise MisuseError(f"close() called during {self._busy_with} of this vector env on the same thread: "
                              f"close it after that call returns")
        if not self._lock.acquire(blocking=False):
            waited = self._interrupted  # the vector env interrupted and waited already
            self.interrupt()
            if not (self._lock.acquire(blocking=False) if waited else self._lock.acquire(timeout=CLOSE_WAIT_S)):
                self._close_under_call()
                return
        try:
            self._shutdown(timeout)
        finally:
            self._lock.release()

    def _close_under_call(self) -> None:
        """Close while another thread's call still runs our inline copies:
        the workers and the shared block go now (that thread's views keep
        the mapping alive), the inline envs when it leaves."""
        warnings.warn(f"seer.vector: close(): {self._busy_with or 'a call'} in another thread did not stop when "
                      f"interrupted (one of this process's own env copies does not return?); its workers and shared "
                      f"memory are freed now, this process's env copies when that call returns", RuntimeWarning,
                      stacklevel=4)
        self.closed = True
        self._idle_runner, self._runner_box[0] = self._runner_box[0], None
        self.ctl = self.bufs = self.shared = self.flags = self._publish_gen = None
        self._finalizer()

    def _shutdown(self, timeout: float = 1.0) -> None:
        """Close, from the thread that holds the backend."""
        self.closed = True
        try:
            if (self._pending_op is None and self.broken is None and not self._interrupted
                    and self.flags is not None and self.child):
                # ask politely; _cleanup terminates whoever does not leave in time
                self._publish(CLOSE)
                deadline = time.monotonic() + timeout
                for p in self.child.values():
                    p.proc.join(max(0.0, deadline - time.monotonic()))
        except Exception:
            pass
        finally:
            self.ctl = self.bufs = self.shared = self.flags = self._publish_gen = None
            self._finalizer()


# =============================================================================================
# the vector env


class ProcessVectorEnv(EnvPool, SeerVectorEnv):
    """A :class:`~seer.vector.SeerVectorEnv` whose copies run in worker
    processes, from ``seer.vector.make(..., backend="process")``.

    On top of the whole :class:`~seer.vector.SeerVectorEnv` contract:
    env-pool stepping (:class:`~seer.vector._pool.EnvPool`), with one shard
    per worker process (``shard_copies[w]``: its copies):
    :meth:`send` steps some workers' copies, :meth:`recv` returns the rows
    of the first workers to finish, so a slow copy holds up its own worker's
    copies only.  (A copy cannot move between processes: a PettingZoo env is
    a Python object inside one of them.)  Every wait for the workers is
    bounded by ``worker_timeout`` (see :data:`WORKER_TIMEOUT_S`).
    """
