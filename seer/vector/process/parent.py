"""The process backend's parent side: `ProcessBackend` (spawning, start-up, one caller at a time, the backend calls, close); its waits for the workers are in waits.py."""

from __future__ import annotations

import multiprocessing as mp
import multiprocessing.connection as mpc
import os
import pickle
import secrets
import signal
import threading
import time
import warnings
import weakref

import numpy as np

from seer.errors import ClosedError, InvalidArgumentError, MisuseError, WorkerError
from seer.guard import CLOSE_WAIT_S
from seer.vector._layout import build_layout, describe_copy
from seer.vector._runner import CALL, CLOSE, RESET, STEP, CopyRunner, make_parallel
from seer._checks import check_worker_timeout
from seer.vector.messages import restarts
from seer.vector.process.protocol import CLOSING, PBELL, WBELL, WORKER_TIMEOUT_S, _Sealer, _Shared
from seer.vector.process.options import check_options, died_starting, unpicklable
from seer.vector.process.stderr import StderrTails
from seer.vector.process.waits import WorkerWaits, _guarded, _Proc, _signal_name
from seer.vector.process.worker import _worker_entry, run_share


def _dumps(fn) -> bytes:
    try:
        import cloudpickle

        return cloudpickle.dumps(fn)
    except ImportError:  # gymnasium depends on cloudpickle; plain pickle as a last resort
        return pickle.dumps(fn)


def _cleanup(procs: list, shared_box: list, runner_box: list, stderr: StderrTails | None = None) -> None:
    """Ends every worker, frees the shared block and stops reading the
    workers' stderr; safe to call twice."""
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
    if stderr is not None:
        stderr.close()
    if runner_box and runner_box[0] is not None:
        runner_box[0].close()
        runner_box[0] = None
    if shared_box and shared_box[0] is not None:
        shared_box[0].release(unlink=True)
        shared_box[0] = None


class ProcessBackend(WorkerWaits):
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
        self.worker_timeout = check_worker_timeout(worker_timeout)
        self.yield_s, self.cmd_bytes, self.msg_bytes, self.startup_timeout = check_options(
            yield_s, cmd_bytes, msg_bytes, startup_timeout)
        self.ctx = mp.get_context(context)
        if context == "forkserver":
            self.ctx.set_forkserver_preload(["seer.vector.process.worker"])
        self.context = context
        self.autoreset = autoreset
        self.restart_failed = restart
        self.inline = bool(inline)
        self.num_workers = workers
        # authenticates the pickles in shared memory; handed to workers in
        # their spawn arguments, never through the shared block
        self.key = secrets.token_bytes(32)
        self._sealer = _Sealer(self.key)
        self.opts = {"autoreset": autoreset, "restart": restart, "yield_s": self.yield_s, "seed_stride": seed_stride}
        try:
            self.fn_bytes = _dumps(env_fn)
        except Exception as exc:
            raise InvalidArgumentError(unpicklable(env_fn, exc)) from exc
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
        self._stderr = StderrTails()
        self._native = [False] * num_copies
        self._reqs = [0] * self.num_workers  # each worker's last env-pool request (REQ)
        self._finalizer = weakref.finalize(self, _cleanup, self.procs, self._shared_box, self._runner_box,
                                           self._stderr)
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
        err = self._stderr.pipe(w)
        proc = self.ctx.Process(
            target=_worker_entry, name=f"seer-vector-worker-{w}", daemon=True,
            args=(w, child_conn, self.fn_bytes, self.shares[w], os.getpid(), self.key, self.opts, err))
        try:
            proc.start()
        finally:
            child_conn.close()
            err.close()
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
                if msg is not None and msg[0] == "started":
                    p.started = True
                    continue
                if msg is not None:
                    if msg[0] in ("error", "fatal"):
                        raise WorkerError(f"worker {p.w} (pid {p.proc.pid}) failed while {what}:\n{msg[1]}")
                    return msg
            if p.proc.sentinel in ready or not p.proc.is_alive():
                p.proc.join(1.0)
                raise WorkerError(f"worker {p.w} (pid {p.proc.pid}) died while {what}: {self._how(p)}")

    def _how(self, p: _Proc) -> str:
        how, detail = self._how_parts(p)
        return how + detail

    def _how_parts(self, p: _Proc) -> tuple[str, str]:
        """(how worker ``p`` ended, what it said: its last traceback or the
        last lines of its stderr)."""
        code = p.proc.exitcode
        if code is None:
            return "still running", ""
        how = _signal_name(code) if code < 0 else f"exited with code {code}"
        try:
            while p.conn.poll(0):
                m = p.conn.recv()
                if m and m[0] == "started":
                    p.started = True
                elif m and m[0] in ("fatal", "error"):
                    p.forged = len(m) > 2 and m[2] == "forged"
                    return how, f"; its traceback:\n{m[1]}"
        except Exception:
            pass
        if not p.started:
            return how, died_starting(self.context)
        tail = self._stderr.tail(p.w)
        return how, (f"; the last lines of its stderr:\n{tail}" if tail else "; it wrote nothing to stderr")

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
            self._note_native(w, self._recv(self.child[w], "attaching the shared memory"))

    def _send_layout(self, p: _Proc, restart_info) -> None:
        p.conn.send(("layout", self.layout, self.shared.name, self.num_workers, self.cmd_bytes, self.msg_bytes,
                     self.gen, restart_info))

    def _note_native(self, w: int, ready: tuple) -> None:
        """Which of worker ``w``'s copies took the native path (its "ready" message says)."""
        if len(ready) > 2:
            for c, native in zip(self.shares[w], ready[2]):
                self._native[c] = bool(native)

    @property
    def native_copies(self) -> list[bool]:
        """Per copy: whether it steps on the native path (in C), not through its Python ``step``."""
        out = list(self._native)
        r = self.runner
        if r is not None:
            for c in self.shares[0]:
                out[c] = bool(r.vec.native[c])
        return out

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

    def _count(self, msgs: list) -> list:
        """Restarts reported by worker processes (the inline runner counts its own)."""
        for m in restarts(msgs):
            self.restart_counts[m.copy] += 1
        return msgs

    def _run_inline(self, op: int, payload=None):
        r = self.runner
        if r is None:
            return None
        return run_share(r, self.shares[0], op, payload)

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
