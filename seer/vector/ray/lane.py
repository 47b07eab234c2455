"""The Ray backend's fast lane: `step` and `rollout` calls to shards on the driver's node through a shared-memory block (flags, bells, sealed commands and replies) instead of Ray's task calls.

Why.  A Ray actor call costs ~0.9 ms here with nothing to do, and ~1.2 ms
each way after a step of milliseconds (every hop -- the driver's core
worker, the actor's gRPC and task threads -- wakes a sleeping thread, and on
a VM an idle core wakes slowly).  A shard stepping every few milliseconds
paid ~2.5 ms per step for it.  On the driver's node the shard already
reads its actions and writes its rows in the driver's shared-memory
buffers; the lane carries the call itself the same way, with the process
backend's flags and bells (``csrc/seer_flags.h``: a release-stored flag, a
futex word rung after it, a waiter that spins with ``sched_yield`` briefly,
then sleeps on the word), so a call costs tens of microseconds.

Per shard ``s``, one line of the control block and one command and one
reply area::

    driver: seals (method, args) into CMD[s]          shard s's lane thread: asleep on WBELL[s] (or spinning)
            publish REQ[s] = seq, ring WBELL[s]   ->  sees REQ change, checks its MAC, unseals, runs
                                                       the method (step / rollout: rows written in place)
            asleep on PBELL until DONE[s] == seq  <-  seals the result into MSG[s] (or keeps it, when
            (or spinning); unseals MSG[s]               larger: the driver fetches it with a Ray call);
                                                       publish DONE[s] = seq, ring PBELL

Commands and replies are pickles sealed with HMAC-SHA256 under a random key
the driver sends each shard through Ray (as the process backend's are), and
REQ / DONE carry keyed-BLAKE2b MACs: another process of this user that
writes into the block gets nothing unpickled or run.  The lane thread runs
in the actor next to Ray's own task thread; the driver sends a shard one
call at a time on either path, and the thread takes the shard's lock.

A shard whose process dies leaves its DONE unset: the driver watches each
lane shard's process (a pidfd on Linux) while it waits, and then asks Ray
what happened (an error of a dead actor, or the token of the new
incarnation Ray started), so that a death reads as it does for a Ray call.
"""

from __future__ import annotations

import os
import secrets
import select
import threading
import time
import traceback

import numpy as np

from seer._seer_c import ffi, lib
from seer.vector import shm as shm_blocks
from seer.vector.process.protocol import MAC, _Ctl, _Sealer, _tag

# control block: line 0 the driver's (PBELL: its bell, CLOSING: ends its waits), line 1 + s shard s's
LINE = 16
PBELL, CLOSING = 0, 1
# shard s's line: REQ (the call's number), CMDLEN and REQ_MAC (2 slots) written by the driver; WBELL (the shard's
# bell); DONE, MSGLEN and DONE_MAC (2 slots) by the shard; STOP (ends the shard's waits: set by its close());
# EXITED (its lane thread ended: the reason is kept by the shard); PID (the shard's process, as it sees it);
# OWNER (the lane thread that serves the line: a restarted actor's new one takes it over, and an old one that
# still runs -- a killed process between Ray's verdict and its end -- stops; the MACs cover it)
REQ, CMDLEN, REQ_MAC, WBELL, DONE, MSGLEN, DONE_MAC, STOP, EXITED, PID, OWNER = 0, 1, 2, 4, 5, 6, 7, 9, 10, 11, 12

CMD_BYTES = 64 << 10  # a command larger than this goes as a Ray call
MSG_BYTES = 256 << 10  # a reply larger than this is fetched with a Ray call (lane_reply)
SLICE_S = 0.05  # the driver's sleeps: how soon it sees a dead shard process or its time limits
SHARD_SLICE_S = 0.2  # the lane thread's: how soon it sees its STOP
YIELD_S = 0.002  # spin (sched_yield) before sleeping on a bell, as the process backend's default yield_s

#: The methods a lane call may run (the shard's per-step paths).
METHODS = ("step", "rollout")


def block_size(num_shards: int, cmd_bytes: int, msg_bytes: int) -> tuple[int, int, int]:
    """(size, command areas' offset, reply areas' offset) of the lane block for ``num_shards`` shards."""
    ctl = LINE * 8 * (num_shards + 1)
    cmd_off = (ctl + 63) // 64 * 64
    msg_off = cmd_off + num_shards * cmd_bytes
    return msg_off + num_shards * msg_bytes, cmd_off, msg_off


class LaneCall:
    """A call in flight on the lane: shard ``s``, number ``seq``."""

    __slots__ = ("s", "seq", "method", "sent")

    def __init__(self, s: int, seq: int, method: str):
        self.s, self.seq, self.method = s, seq, method
        self.sent = time.monotonic()


# ---- the driver's side --------------------------------------------------------------------------


class Lane:
    """The driver's end: the block, the key, per shard its next call number
    and a watch on its process."""

    def __init__(self, num_shards: int):
        self.n = num_shards
        self.cmd_bytes, self.msg_bytes = cb, mb = CMD_BYTES, MSG_BYTES
        size, self.cmd_off, self.msg_off = block_size(num_shards, cb, mb)
        self.shm = shm_blocks.create(size)
        self.name = self.shm.name
        buf = self.shm.buf
        self.ctl = np.frombuffer(buf, np.int64, LINE * (num_shards + 1), 0)
        self.flags = _Ctl(self.ctl)
        self.cmd = [np.frombuffer(buf, np.uint8, cb, self.cmd_off + s * cb) for s in range(num_shards)]
        self.msg = [np.frombuffer(buf, np.uint8, mb, self.msg_off + s * mb) for s in range(num_shards)]
        self.key = secrets.token_bytes(32)
        self.sealer = _Sealer(self.key)
        self.seq = [0] * num_shards
        self.owner = [0] * num_shards  # per shard, the lane thread serving its line (its OWNER)
        self.open: set[int] = set()  # shards whose lane thread serves this block (their current incarnation)
        self.watch: dict[int, tuple[int, int | None]] = {}  # shard -> (pid, pidfd or None)
        self.expect: dict[str, float] = {}  # method -> how long its calls usually take (EMA, seconds)
        self._publish = {}

    @staticmethod
    def line(s: int) -> int:
        return LINE * (s + 1)

    def config(self, s: int) -> dict:
        """What shard ``s`` needs to serve this lane (sent through Ray by attach)."""
        return {"name": self.name, "s": s, "key": self.key, "seq": self.seq[s], "cmd_off": self.cmd_off,
                "msg_off": self.msg_off, "cmd_bytes": self.cmd_bytes, "msg_bytes": self.msg_bytes, "n": self.n}

    def adopt(self, s: int, pid: int) -> bool:
        """Serve shard ``s`` (its lane thread just started, in process ``pid``)
        if its process can be watched from here; False leaves it on Ray calls."""
        self.drop(s)
        if self.flags.load(self.line(s) + PID) != pid:
            return False  # another pid namespace: its death could not be seen
        self.owner[s] = self.flags.load(self.line(s) + OWNER)
        fd = None
        if hasattr(os, "pidfd_open"):
            try:
                fd = os.pidfd_open(pid)
            except OSError:
                return False
        elif not _alive(pid, None):
            return False
        self.watch[s] = (pid, fd)
        self.open.add(s)
        return True

    def drop(self, s: int) -> None:
        self.open.discard(s)
        pid, fd = self.watch.pop(s, (None, None))
        if fd is not None:
            os.close(fd)

    def submit(self, s: int, method: str, args: tuple) -> LaneCall | None:
        """Send shard ``s`` a call; None if the command does not fit (send it through Ray)."""
        seq = self.seq[s] + 1
        blob = self.sealer.seal(_tag(b"rcmd%d" % self.owner[s], s, REQ, seq), (method, args))
        if len(blob) > self.cmd_bytes:
            return None
        line, n = self.line(s), len(blob) - MAC
        self.cmd[s][:len(blob)] = np.frombuffer(blob, np.uint8)
        ctl = self.ctl
        ctl[line + CMDLEN] = n
        ctl[line + REQ_MAC:line + REQ_MAC + 2] = self.sealer.flag_mac(b"rcmd%d" % self.owner[s], s, REQ, seq, n)
        pub = self._publish.get(s)
        if pub is None:
            pub = self._publish[s] = self.flags.publisher([line + WBELL])
        pub(line + REQ, seq)
        self.seq[s] = seq
        return LaneCall(s, seq, method)

    def is_done(self, call: LaneCall) -> bool:
        return self.flags.load(self.line(call.s) + DONE) == call.seq

    def state(self, call: LaneCall) -> str:
        """"done", "dead" (its process ended), "exited" (its lane thread ended) or "busy"."""
        if self.is_done(call):
            return "done"
        s = call.s
        if s in self.watch and not _alive(*self.watch[s]):
            return "done" if self.is_done(call) else "dead"
        if self.flags.load(self.line(s) + EXITED):
            return "done" if self.is_done(call) else "exited"
        return "busy"

    def wait(self, calls: list[LaneCall], need: int, timeout: float | None) -> list[LaneCall]:
        """Wait until ``need`` of ``calls`` are answered, or their shard died
        (or its lane thread ended), at most ``timeout`` seconds (None: no
        limit); returns those that are no longer busy."""
        over = [c for c in calls if self.state(c) != "busy"]
        if len(over) >= need or not calls:
            return over
        t0 = time.monotonic()
        flags = [self.line(c.s) + DONE for c in calls]
        seqs = [c.seq for c in calls]
        # A call that takes milliseconds is first slept through for most of its usual time (a spinning
        # driver would take turns on the cores with the shards it waits for); its end is spun for.
        sent = min(c.sent for c in calls)
        expect = max(self.expect.get(c.method, 0.0) for c in calls)
        nap = max(0.0, sent + min(0.6 * expect, 0.02) - t0) if expect > 4e-4 else 0.0
        spin = YIELD_S
        while True:
            left = SLICE_S if timeout is None else min(SLICE_S, timeout - (time.monotonic() - t0))
            if nap:
                now_spin, left, nap = 0.0, min(nap, max(left, 0.0)), 0.0
            else:
                now_spin, spin = spin, 0.0
            got, _ = self.flags.wait(flags, seqs, need, lib.SEER_FLAGS_EQ, PBELL, CLOSING, now_spin, max(left, 0.0))
            if got == lib.SEER_FLAGS_ABORTED:
                return [c for c in calls if self.state(c) != "busy"]
            if got >= need:
                break
            over = [c for c in calls if self.state(c) != "busy"]
            if len(over) >= need or any(self.state(c) in ("dead", "exited") for c in over):
                return over
            if timeout is not None and time.monotonic() - t0 >= timeout:
                return over
        took = time.monotonic() - sent
        for m in {c.method for c in calls}:
            self.expect[m] = took if m not in self.expect else 0.8 * self.expect[m] + 0.2 * took
        return [c for c in calls if self.state(c) != "busy"]

    def reply(self, call: LaneCall, fetch) -> tuple[bool, object]:
        """(True, the result) of an answered call, or (False, why): the
        method raised (its traceback, as Ray's RayTaskError carries it), or
        the reply is not this lane's (nothing of it unpickled).  ``fetch()``:
        the sealed reply through Ray when it did not fit in the reply area."""
        s, seq, line = call.s, call.seq, self.line(call.s)
        n = int(self.ctl[line + MSGLEN])
        tag = b"rmsg%d" % self.owner[s]
        if not self.sealer.flag_ok(self.ctl[line + DONE_MAC:line + DONE_MAC + 2], tag, s, DONE, seq, n):
            return False, (f"its answer to call {seq} in shared memory does not carry this lane's MAC: another "
                           f"process of this user wrote to the block; nothing of it was unpickled")
        if n < -1 or n > self.msg_bytes - MAC:
            return False, f"it answered call {seq} with an invalid length {n}"
        blob = fetch() if n == -1 else self.msg[s][:MAC + n].tobytes()
        try:
            kind, value = self.sealer.unseal(_tag(tag, s, DONE, seq), blob)
        except ValueError as exc:
            return False, f"its answer to call {seq} was refused ({exc}); nothing of it was unpickled"
        return kind == "ok", value

    def close(self) -> None:
        """End waits in other threads (close() from another thread), stop watching."""
        if self.ctl is not None:
            self.flags.store(CLOSING, 1)
            self.flags.ring(PBELL)
        for s in list(self.watch):
            self.drop(s)


def _alive(pid: int, fd: int | None) -> bool:
    if fd is not None:  # readable once the process has ended (zombie or reaped)
        return not select.select([fd], [], [], 0)[0]
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return True


# ---- the shard's side ---------------------------------------------------------------------------


class LaneServer:
    """A shard's lane thread: serves the calls its driver publishes on
    shard ``cfg["s"]``'s line of block ``cfg["name"]`` until close()."""

    def __init__(self, shard, cfg: dict):
        self.shard = shard
        self.s = s = cfg["s"]
        self.shm = shm_blocks.attach(cfg["name"], owned_elsewhere=True)  # the driver unlinks it
        buf = self.shm.buf
        self.ctl = np.frombuffer(buf, np.int64, LINE * (cfg["n"] + 1), 0)
        self.flags = _Ctl(self.ctl)
        cb, mb = cfg["cmd_bytes"], cfg["msg_bytes"]
        self.cmd = np.frombuffer(buf, np.uint8, cb, cfg["cmd_off"] + s * cb)
        self.msg = np.frombuffer(buf, np.uint8, mb, cfg["msg_off"] + s * mb)
        self.sealer = _Sealer(cfg["key"])
        self.line = LINE * (s + 1)
        self.last = cfg["seq"]
        self.kept: tuple[int, bytes] | None = None  # (seq, sealed reply) too large for the reply area
        self.error: str | None = None
        self.owner = secrets.randbits(62) + 1
        self.cmd_tag, self.msg_tag = b"rcmd%d" % self.owner, b"rmsg%d" % self.owner
        line = self.line
        self.flags.store(line + OWNER, self.owner)
        self.flags.store(line + STOP, 0)
        self.flags.store(line + EXITED, 0)
        self.flags.store(line + PID, os.getpid())
        self.thread = threading.Thread(target=self._serve, name=f"seer-ray-lane-{s}", daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        line, flags = self.line, self.flags
        at, val = ffi.new("int64_t[1]", [line + REQ]), ffi.new("int64_t[1]")
        publish = flags.publisher([PBELL])
        base = flags.base
        spin = YIELD_S
        superseded = False
        try:
            while True:
                val[0] = self.last
                got = lib.seer_flags_wait(base, at, val, 1, 1, lib.SEER_FLAGS_NE, line + WBELL, line + STOP, spin,
                                          SHARD_SLICE_S, ffi.NULL)
                if flags.load(line + OWNER) != self.owner:
                    superseded = True  # a new incarnation of this shard serves the line now
                    return
                if got == lib.SEER_FLAGS_ABORTED:
                    return
                if got == 0:
                    spin = 0.0  # idle (a learner update, a reset through Ray): sleep until rung
                    continue
                spin = YIELD_S
                seq, n = flags.load(line + REQ), int(self.ctl[line + CMDLEN])
                if seq != self.last + 1 or not self.sealer.flag_ok(self.ctl[line + REQ_MAC:line + REQ_MAC + 2],
                                                                   self.cmd_tag, self.s, REQ, seq, n):
                    if flags.load(line + OWNER) != self.owner:
                        superseded = True
                        return
                    raise RuntimeError(f"shard {self.s} refused call REQ = {seq} in shared memory: it is not the next "
                                       f"call ({self.last + 1}) or its MAC does not match, so this vector env's driver "
                                       f"did not publish it; nothing of it was unpickled or run")
                if not 0 <= n <= len(self.cmd) - MAC:
                    raise RuntimeError(f"shard {self.s} refused call {seq}: its length {n} is invalid")
                method, args = self.sealer.unseal(_tag(self.cmd_tag, self.s, REQ, seq), self.cmd[:MAC + n].tobytes())
                self.last = seq
                if method not in METHODS:
                    raise RuntimeError(f"shard {self.s} refused call {seq}: unknown method {method!r}")
                with self.shard.lock:
                    try:
                        out = ("ok", getattr(self.shard, method)(*args))
                    except BaseException:
                        out = ("raise", traceback.format_exc())
                blob = self.sealer.seal(_tag(self.msg_tag, self.s, DONE, seq), out)
                if len(blob) <= len(self.msg):
                    self.msg[:len(blob)] = np.frombuffer(blob, np.uint8)
                    n = len(blob) - MAC
                else:
                    self.kept, n = (seq, blob), -1
                self.ctl[line + MSGLEN] = n
                self.ctl[line + DONE_MAC:line + DONE_MAC + 2] = self.sealer.flag_mac(self.msg_tag, self.s, DONE, seq,
                                                                                     n)
                publish(line + DONE, seq)
        except BaseException:
            self.error = traceback.format_exc()
        finally:
            if not superseded:
                try:
                    flags.store(line + EXITED, 1)
                    flags.ring(PBELL)
                except Exception:
                    pass

    def take(self, seq: int) -> bytes:
        if self.kept is None or self.kept[0] != seq:
            raise RuntimeError(f"shard {self.s} keeps no reply to call {seq}")
        blob, self.kept = self.kept[1], None
        return blob

    def stop(self, timeout: float) -> bool:
        """End the thread; False if it is still in a call after ``timeout`` s (a step that hangs)."""
        try:
            self.flags.store(self.line + STOP, 1)
            self.flags.ring(self.line + WBELL)
        except Exception:
            pass
        self.thread.join(timeout)
        if self.thread.is_alive():
            return False
        self.ctl = self.flags = self.cmd = self.msg = None
        shm_blocks.close(self.shm)
        return True

