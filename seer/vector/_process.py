"""Process backend: env copies in worker processes, rows in shared memory.

Memory.  One ``multiprocessing.shared_memory`` block holds a control area,
a command area (parent -> workers), one message area per worker (workers ->
parent) and every row buffer of :class:`~seer.vector._layout.Layout`.
Workers write their copies' rows in place; nothing per step is pickled
unless an env returns non-empty infos.

Coordination, per op (step, reset, call, close), without pipes or futexes::

    parent: write actions / seeds (plain stores)      worker w: ...waiting on GEN
            CMD = op; GEN += 1 (the publishing store)  -> sees GEN change, reads CMD
                                                          steps its copies, writes rows
            waits until DONE[w] == GEN for every w  <- MSGLEN[w] = n; DONE[w] = GEN
            reads rows and MSG[w]

Every flag has one writer (GEN/CMD: the parent; DONE[w]/MSGLEN[w]: worker
w), so plain aligned 8-byte stores suffice; the data written before a flag
is visible to whoever sees the flag because x86-64 keeps stores in order
(TSO).  On other architectures a process-shared lock is taken and released
around each flag (a full barrier).  Waiting spins with ``sched_yield`` for
``yield_s`` (SEER's machines are small: a yielding waiter hands its core to
whoever needs it), then sleeps with exponential backoff up to 1 ms (5 ms
once idle for 0.1 s, e.g. while a learner updates); a parent that expects a
wait of milliseconds first sleeps through 60% of the usual wait.  The
parent polls the workers' process sentinels while it waits (a dead worker is
seen within milliseconds); workers check that the parent lives.

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

Pipes carry only what is not per step: start-up (spaces, layout), payloads
too large for the shared areas (large infos, ``call`` results), and a
worker's last words.
"""

from __future__ import annotations

import multiprocessing as mp
import multiprocessing.connection as mpc
import os
import pickle
import platform
import signal
import time
import traceback
import weakref
from multiprocessing import shared_memory

import numpy as np

from seer.errors import ClosedError, WorkerError
from seer.vector._env import SeerVectorEnv
from seer.vector._layout import Layout, build_layout, describe_copy
from seer.vector._pool import EnvPool
from seer.vector._runner import CALL, CLOSE, RESET, STEP, CopyRunner, make_parallel

_X86 = platform.machine().lower() in ("x86_64", "amd64", "i386", "i686", "x86")

# control area: line 0 = parent's flags; line 1 + w = worker w's (64 bytes each)
LINE = 8
GEN, CMD, CMDLEN = 0, 1, 2
# in worker w's line: DONE, MSGLEN, REQDONE written by the worker; REQ (an
# env-pool step request for this worker alone) by the parent
DONE, MSGLEN, REQ, REQDONE = 0, 1, 2, 3

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
        if name is None:
            self.shm = shared_memory.SharedMemory(create=True, size=size)
        else:
            self.shm = shared_memory.SharedMemory(name=name)
        self.name = self.shm.name
        mm = self.shm._mmap
        self.ctl = np.frombuffer(mm, np.int64, self.ctl_bytes // 8, 0)
        self.cmd = np.frombuffer(mm, np.uint8, cmd_bytes, self.cmd_off)
        self.msg = [np.frombuffer(mm, np.uint8, msg_bytes, self.msg_off + w * msg_bytes) for w in range(workers)]
        self.bufs = layout.allocate(memoryview(mm)[self.buf_off:self.buf_off + buf_size])

    def line(self, w: int) -> int:
        return LINE * (w + 1)

    def release(self, unlink: bool) -> None:
        """Drop the views, close the mapping, unlink the name.  A view still
        held elsewhere (``copy=False`` results) keeps the mapping alive until
        it dies; the name goes from /dev/shm either way."""
        shm = self.shm
        self.ctl = self.cmd = self.msg = self.bufs = None
        if unlink:
            try:
                shm.unlink()
            except FileNotFoundError:
                pass
        try:
            shm.close()
        except BufferError:  # exported views remain: let them own the mapping
            if shm._fd >= 0:
                os.close(shm._fd)
                shm._fd = -1
            shm._mmap = None


# =============================================================================================
# worker side


def _parent_gone(parent_sentinel, parent_pid: int) -> bool:
    if parent_sentinel is not None:  # readable once the parent is gone, zombie or not
        return bool(mpc.wait([parent_sentinel], timeout=0))
    try:
        os.kill(parent_pid, 0)
    except ProcessLookupError:
        return True
    return False


def _wait_work(ctl, last_gen: int, req_at: int, last_req: int, parent_pid: int, yield_s: float,
               parent_sentinel=None) -> tuple[int, int] | None:
    """Wait until the parent publishes an op for everyone (GEN) or an
    env-pool step for this worker (its REQ); (GEN, REQ), or None once the
    parent is gone."""
    t0 = time.perf_counter()
    check = t0 + 0.2
    dt = 20e-6
    while True:
        g, r = int(ctl[GEN]), int(ctl[req_at])
        if g != last_gen or r != last_req:
            return g, r
        now = time.perf_counter()
        if now - t0 < yield_s:
            os.sched_yield()
            continue
        time.sleep(dt)
        dt = min(dt * 2, 1e-3 if now - t0 < 0.1 else 5e-3)  # long idle (a learner update): wake less often
        if now > check:
            check = now + 0.2
            if _parent_gone(parent_sentinel, parent_pid):
                return None


def _worker_entry(w: int, conn, fn_bytes: bytes, copies: list[int], parent_pid: int, fence_lock, opts: dict):
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
        runner = CopyRunner(layout, shared.bufs, envs, specs, opts["autoreset"], env_fn, opts["restart"])
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
        _serve(w, conn, shared, runner, copies, gen, parent_pid, fence_lock, opts)
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


def _serve(w, conn, shared: _Shared, runner: CopyRunner, copies, gen, parent_pid, fence_lock, opts):
    ctl, b = shared.ctl, shared.bufs
    mine = shared.line(w)
    region = shared.msg[w]
    yield_s = opts["yield_s"]
    parent = mp.parent_process()
    sentinel = getattr(parent, "sentinel", None) if parent is not None else None
    last, last_req = gen, int(ctl[mine + REQ])

    def reply(out, flag: int, value: int) -> None:
        data = pickle.dumps(out, protocol=pickle.HIGHEST_PROTOCOL) if out else b""
        over = len(data) > len(region)
        if data and not over:
            region[:len(data)] = np.frombuffer(data, np.uint8)
        ctl[mine + MSGLEN] = -1 if over else len(data)
        if fence_lock is not None:
            with fence_lock:
                pass
        ctl[mine + flag] = value  # the publishing store
        if over:  # after the flag: the parent reads the pipe once it sees it
            conn.send_bytes(data)

    while True:
        got = _wait_work(ctl, last, mine + REQ, last_req, parent_pid, yield_s, sentinel)
        if got is None:  # the parent is gone
            return
        g, r = got
        if fence_lock is not None:
            with fence_lock:
                pass
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
            ctl[mine + DONE] = g
            return
        payload = None
        n = int(ctl[CMDLEN])
        if n > 0:
            payload = pickle.loads(shared.cmd[:n].tobytes())
        elif n < 0:
            payload = pickle.loads(conn.recv_bytes())
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
            kind, name, args, kwargs, values = payload
            res = [runner.call(c, kind, name, values[c] if kind == "set_attr" else args, kwargs) for c in copies]
            out = (res, runner.msgs)
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
        if p.proc.is_alive():
            p.proc.terminate()
    deadline = time.monotonic() + 1.0
    for p in procs:
        p.proc.join(max(0.0, deadline - time.monotonic()))
        if p.proc.is_alive():
            p.proc.kill()
            p.proc.join()
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


class ProcessBackend:
    name = "process"

    def __init__(self, env_fn, num_copies, workers, *, pad, autoreset, restart, context=None, inline=False,
                 yield_s=0.002, cmd_bytes=1 << 20, msg_bytes=1 << 20, startup_timeout=120.0):
        if context is None:
            context = "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"
        if context not in ("spawn", "forkserver"):
            raise ValueError(
                f"context={context!r} is invalid: expected 'spawn' or 'forkserver' (fork is unsafe in a process "
                f"with threads, such as SEER's worker pools)"
            )
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
        self.fence_lock = None if _X86 else self.ctx.Lock()
        self.opts = {"autoreset": autoreset, "restart": restart, "yield_s": self.yield_s}
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
        self._first_sleep, self._parent_yield_s, self._parent_sleep_cap = 0.6, self.yield_s, 1e-3
        self.closed = False
        self.broken: str | None = None
        self._pending_op = None
        self.restart_counts = [0] * num_copies
        self.last_seeds: list = [None] * num_copies
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
            args=(w, child_conn, self.fn_bytes, self.shares[w], os.getpid(), self.fence_lock, self.opts))
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
        if self.inline:
            runner = CopyRunner(self.layout, self.bufs, self._inline_envs, {c: specs[c] for c in self.shares[0]},
                                self.autoreset, self.env_fn, self.restart_failed)
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

    # ---- ops ---------------------------------------------------------------------------------

    def _check(self) -> None:
        if self.closed:
            raise ClosedError(f"this vector env is closed{'' if not self.broken else ' (' + self.broken + ')'}")

    def _fence(self) -> None:
        if self.fence_lock is not None:
            with self.fence_lock:
                pass

    def _publish(self, cmd: int, payload=None) -> None:
        ctl = self.ctl
        ctl[CMD] = cmd
        data = None
        if payload is not None:
            data = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
            if len(data) <= self.cmd_bytes:
                self.shared.cmd[:len(data)] = np.frombuffer(data, np.uint8)
                ctl[CMDLEN] = len(data)
                data = None
            else:
                ctl[CMDLEN] = -1
        else:
            ctl[CMDLEN] = 0
        self._fence()
        self.gen += 1
        ctl[GEN] = self.gen  # the publishing store
        if data is not None:  # after GEN: the workers read it once they see GEN
            for p in self.child.values():
                p.conn.send_bytes(data)

    def _dead(self) -> list[_Proc]:
        sentinels = {p.proc.sentinel: p for p in self.child.values()}
        if not sentinels:
            return []
        return [sentinels[s] for s in mpc.wait(list(sentinels), timeout=0)]

    def _pause(self, waited: float, dt: float) -> float:
        """One pause of the parent's wait: sched_yield for the first
        ``yield_s``, then sleeps doubling up to the cap; the next sleep."""
        if waited < self._parent_yield_s:
            os.sched_yield()
            return dt
        time.sleep(dt)
        return min(dt * 2, self._parent_sleep_cap)

    def _wait(self, timeout, op: int) -> dict[int, object]:
        """Wait for every worker to finish op ``self.gen``; return its messages."""
        ctl, gen = self.ctl, self.gen
        pending = list(self.child)
        lines = {w: self.shared.line(w) for w in pending}
        t0 = time.perf_counter()
        next_check = t0 + 0.002
        dt = 20e-6
        restarted: set[int] = set()
        # Long waits (a step that takes the workers milliseconds) first sleep
        # through most of the time they usually take, so that this process
        # does not take turns with them on the cores while it waits.
        expect = self._expect.get(op, 0.0)
        if expect > 4e-4 and (timeout is None or timeout > expect):
            time.sleep(min(self._first_sleep * expect, 0.02))  # short enough to notice a dead worker at once
        while True:
            pending = [w for w in pending if ctl[lines[w] + DONE] != gen]
            if not pending:
                break
            now = time.perf_counter()
            if now >= next_check:
                next_check = now + 0.002
                for p in self._dead():
                    if p.w in pending or ctl[lines[p.w] + DONE] != gen:
                        self._worker_died(p, op)
                        restarted.add(p.w)
                        pending = [w for w in pending if w != p.w]
            if timeout is not None and now - t0 > timeout:
                raise mp.TimeoutError(f"the vector env's {OP_NAMES.get(op, 'op')} step has timed out after "
                                      f"{timeout} s (workers {pending} still busy); call step_wait again or close()")
            dt = self._pause(now - t0, dt)
        took = time.perf_counter() - t0
        self._expect[op] = took if op not in self._expect else 0.8 * self._expect[op] + 0.2 * took
        self._fence()
        msgs = {}
        for w, p in self.child.items():
            if w in restarted:
                msgs[w] = self._restart_msgs.pop(w, [])
                continue
            n = int(ctl[lines[w] + MSGLEN])
            if n > 0:
                msgs[w] = pickle.loads(self.shared.msg[w][:n].tobytes())
            elif n < 0:
                msgs[w] = pickle.loads(p.conn.recv_bytes())
        return msgs

    def _worker_died(self, p: _Proc, op: int) -> None:
        p.proc.join(0.5)
        how = self._how(p)
        what = (f"worker {p.w} (pid {p.proc.pid}) {how} while {OP_NAMES.get(op, 'running')} env copies "
                f"{p.copies[0]}..{p.copies[-1]}")
        if not (self.restart_failed and op == STEP):
            self.broken = what
            self.close()
            raise WorkerError(f"{what}; the vector env is closed"
                              + ("" if self.restart_failed else " (pass restart_failed=True to restart failed "
                                 "copies and go on)"))
        # start a replacement with the same copies; it cuts their episodes
        self.procs.remove(p)
        try:
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
            self.close()
            raise WorkerError(f"{what}; restarting it failed: {exc}") from exc
        tb = f"{what}; a new worker (pid {q.proc.pid}) took its copies over"
        self._restart_msgs = getattr(self, "_restart_msgs", {})
        self._restart_msgs[p.w] = [("restart", c, tb) for c in p.copies] + list(ready[1])

    # ---- env-pool stepping (seer.vector._pool.EnvPool) -----------------------------------------

    def submit(self, shards) -> None:
        """Step the copies of workers ``shards`` (their action rows are in
        place) without waiting: one REQ store each."""
        self._check()
        self._fence()
        for w in shards:
            at = self.shared.line(w) + REQ
            req = int(self.ctl[at]) + 1
            self.inflight[w] = req
            if w in self.child:
                self.ctl[at] = req  # the publishing store
            # the inline share (worker 0 is this process) runs in collect

    def collect(self, min_shards=None, timeout=None) -> tuple[list, list]:
        """Gather in-flight env-pool steps: all (``min_shards=None``) or at
        least ``min_shards`` plus any others done by then; (shards, messages).
        ``timeout`` raises ``multiprocessing.TimeoutError`` with too few done
        (those done stay gathered for the next call)."""
        self._check()
        ctl, inflight = self.ctl, self.inflight
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
        t0 = time.perf_counter()
        next_check, dt = t0 + 0.002, 20e-6
        while True:
            for w in [w for w, req in inflight.items() if ctl[self.shared.line(w) + REQDONE] == req]:
                self._fence()
                del inflight[w]
                self._acc += self._count(self._read_msgs(w))
                self._done_shards.append(w)
            if len(self._done_shards) >= need:
                break
            now = time.perf_counter()
            if now >= next_check:
                next_check = now + 0.002
                for p in self._dead():
                    if p.w in inflight:
                        del inflight[p.w]
                        self._worker_died(p, STEP)  # raises unless restart_failed
                        self._acc += self._count(self._restart_msgs.pop(p.w, []))
                        self._done_shards.append(p.w)
            if timeout is not None and now - t0 > timeout and len(self._done_shards) < need:
                raise mp.TimeoutError(f"the vector env's step has timed out after {timeout} s (workers "
                                      f"{sorted(inflight)} still busy); wait again or close()")
            dt = self._pause(now - t0, dt)
        shards, self._done_shards = sorted(self._done_shards), []
        msgs, self._acc = self._acc, []
        return shards, msgs

    def _read_msgs(self, w: int) -> list:
        n = int(self.ctl[self.shared.line(w) + MSGLEN])
        if n > 0:
            return pickle.loads(self.shared.msg[w][:n].tobytes())
        if n < 0:
            return pickle.loads(self.child[w].conn.recv_bytes())
        return []

    def _count(self, msgs: list) -> list:
        """Restarts reported by worker processes (the inline runner counts its own)."""
        for kind, c, *_ in msgs:
            if kind == "restart":
                self.restart_counts[c] += 1
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
        kind, name, args, kwargs, values = payload
        res = [r.call(c, kind, name, values[c] if kind == "set_attr" else args, kwargs) for c in self.shares[0]]
        return (res, r.msgs)

    def _op(self, op: int, payload=None, timeout=None):
        self._check()
        self._publish(op, payload if op != STEP else None)
        own = self._run_inline(op, payload)
        msgs = self._wait(timeout, op)
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

    def reset(self, options) -> list:
        b = self.bufs
        for c in np.flatnonzero(b["select"]):
            self.last_seeds[c] = int(b["seeds"][c]) if b["seeded"][c] else None
        return self._flat(self._op(RESET, options))

    def step_async(self) -> None:
        self._check()
        self._alive_before = self.bufs["alive"].copy()
        self._publish(STEP)
        self._own = None
        self._pending_op = STEP

    def step_wait(self, timeout=None) -> list:
        """``timeout`` bounds the wait for the worker processes; the
        caller's own share (``inline``) runs to its end first."""
        if self._own is None and self._pending_op == STEP:
            self._own = self._run_inline(STEP) or []
        msgs = self._wait(timeout, STEP)
        self._pending_op = None
        for w, m in msgs.items():  # the inline runner counts its own restarts
            for kind, c, *_ in m:
                if kind == "restart":
                    self.restart_counts[c] += 1
        if self._own:
            msgs[0] = self._own
        self._own = None
        return self._flat(msgs)

    def call(self, kind, name, args, kwargs, values=None):
        msgs = self._op(CALL, (kind, name, args, kwargs, values))
        results, errs = [None] * self.layout.num_copies, []
        for w, (res, m) in msgs.items():
            for c, r in zip(self.shares[w], res):
                results[c] = r
            errs.extend(m)
        return results, errs

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

    def close(self, timeout: float = 1.0) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            if self._pending_op is None and self.broken is None and self.ctl is not None and self.child:
                # ask politely; _cleanup terminates whoever does not leave in time
                self._publish(CLOSE)
                deadline = time.monotonic() + timeout
                for p in self.child.values():
                    p.proc.join(max(0.0, deadline - time.monotonic()))
        except Exception:
            pass
        finally:
            self.ctl = self.bufs = self.shared = None
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
    a Python object inside one of them.)
    """
