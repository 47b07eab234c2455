"""The process backend's waits for its workers (`WorkerWaits`, a part of `ProcessBackend`): publishing ops, gathering answers and env-pool steps, noticing dead or silent workers."""

from __future__ import annotations

import multiprocessing as mp
import multiprocessing.connection as mpc
import signal
import threading
import time

import numpy as np

from seer._seer_c import lib
from seer.errors import ClosedError, WorkerError
from seer.vector._runner import STEP
from seer.vector.messages import CopyRestarted
from seer.vector.process.protocol import (CLOSING, CMD, CMDLEN, COPY_OP, CUR, DONE, DONE_MAC, GEN, GEN_MAC, MAC, MSGLEN,
                                          OP_NAMES, PBELL, REQ, REQ_MAC, REQDONE, REQDONE_MAC, SLICE_S, WBELL, _tag)
from seer.vector.process.worker import run_share


class _Proc:
    """A worker process, its pipe and its copies."""

    def __init__(self, w, proc, conn, copies):
        self.w, self.proc, self.conn, self.copies = w, proc, conn, copies
        self.forged = False  # it left because another process wrote its flags (never restarted)
        self.started = False  # it ran SEER's worker code (its stderr is ours from then on)


def _send_quietly(conn, data: bytes) -> None:
    """Send on a worker's pipe; a worker that died meanwhile is noticed by
    the wait that follows, with its exit status, so the broken pipe is not
    the error to report.  close() may also close the pipe under a send
    that a stopped worker never took (TypeError: the Connection's handle is
    None between two chunks of the send)."""
    try:
        conn.send_bytes(data)
    except (OSError, ValueError, TypeError):
        pass


def _signal_name(code: int) -> str:
    try:
        return f"killed by signal {signal.Signals(-code).name} ({-code})"
    except ValueError:
        return f"killed by signal {-code}"


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


class WorkerWaits:
    """The waiting half of :class:`~seer.vector.process.parent.ProcessBackend`
    (its state is set up there): ops out, answers in, dead or silent workers
    named or restarted."""

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
        # the flags themselves are authenticated too: a worker runs an op only
        # when GEN is its next op and this MAC covers GEN, CMD and CMDLEN
        ctl[GEN_MAC:GEN_MAC + 2] = self._sealer.flag_mac(b"cmd", 0, GEN, gen, int(ctl[CMDLEN]) * 16 + cmd)
        self.gen = gen
        self._publish_gen(GEN, gen)  # CMD, CMDLEN, payload: before
        if data is not None:  # after GEN: the workers read it once they see GEN
            self._send_large(data, cmd)

    def _send_large(self, data: bytes, op: int) -> None:
        """A command too large for the shared area, through every worker's
        pipe.  A pipe buffers ~64 KiB, so a plain send blocks until its worker
        reads, forever if the worker is stopped or stuck in its env: the
        sends run at once, each in a thread of its own, and workers that have
        not taken theirs within ``worker_timeout`` are unresponsive."""
        t0 = time.monotonic()
        senders = {}
        for p in self.child.values():
            t = threading.Thread(target=_send_quietly, args=(p.conn, data), daemon=True,
                                 name=f"seer-process-send-{p.w}")
            t.start()
            senders[p.w] = t
        for t in senders.values():
            left = None if self.worker_timeout is None else max(self.worker_timeout - (time.monotonic() - t0), 0.0)
            t.join(left)
        stuck = sorted(w for w, t in senders.items() if t.is_alive())
        if stuck:  # killing them (close(), or a restart) ends their sends with a broken pipe
            self._unresponsive(stuck, time.monotonic() - t0, op)

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
                       f"{self._in_copy(p, op)}{', ' + state if state else ''})")
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
        line = self.shared.line(w)
        n = int(self.ctl[line + MSGLEN])
        p = self.child[w]
        at = line + (DONE_MAC if flag == DONE else REQDONE_MAC)
        if not self._sealer.flag_ok(self.ctl[at:at + 2], b"msg", w, flag, value, n):
            name = "DONE" if flag == DONE else "REQDONE"
            self._refuse(p, "its flags in shared memory", f"{name} = {value} (with MSGLEN = {n}) does not carry that "
                         f"worker's MAC, so the worker did not publish it; none of its rows were read")
        if n == 0:
            return None
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

    def _in_copy(self, p: _Proc, op: int) -> str:
        """Which copy worker ``p`` was in when it died (its CUR slot), as a clause."""
        try:
            c = int(self.ctl[self.shared.line(p.w) + CUR]) - 1
        except (TypeError, AttributeError):  # the block is gone already
            return ""
        return f", in env copy {c}'s {COPY_OP.get(op, 'op')}" if c in p.copies else ""

    def _worker_died(self, p: _Proc, op: int, how: str | None = None) -> None:
        p.proc.join(0.5)
        how, detail = (how, "") if how else self._how_parts(p)
        what = (f"worker {p.w} (pid {p.proc.pid}) {how} while {OP_NAMES.get(op, 'running')} env copies "
                f"{p.copies[0]}..{p.copies[-1]}{self._in_copy(p, op)}{detail}")
        if p.forged:  # a restart would not help: whoever wrote the flags can write them again
            self.broken = what
            self._shutdown()
            raise WorkerError(f"{what}; the vector env is closed: another process wrote to its shared memory")
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
            self._note_native(p.w, ready)
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
            req = self._reqs[w] = self._reqs[w] + 1  # our own count: the block's REQ could be forged
            self.inflight[w] = req
            if w in self.child:
                self.ctl[line(w) + REQ_MAC:line(w) + REQ_MAC + 2] = self._sealer.flag_mac(b"cmd", w, REQ, req, 0)
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
            own = run_share(self.runner, self.shares[0], STEP)
            del inflight[0]
            self._acc += own
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
