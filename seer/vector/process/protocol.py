"""The process backend's protocol between parent and workers: the shared block's flag/slot layout, its flags and bells, and the sealed (HMAC) message codec."""

from __future__ import annotations

import hashlib
import hmac
import pickle
import struct

import numpy as np

from seer._seer_c import ffi, lib
from seer.vector._layout import Layout
from seer.vector import shm as shm_blocks
from seer.vector._runner import CALL, CLOSE, RESET, STEP


#: Default ``worker_timeout`` of the process and Ray backends: how long a
#: wait for a worker process or shard actor may take before it is named in a
#: :class:`seer.WorkerError`.  No healthy env comes near it: the first reset
#: and step can be slow (a simulator launched in reset, JIT compilation in the
#: first step) and may take as long as creating the copies, whose own limit
#: (``startup_timeout``) is also 120 s.  A limit that is too short breaks a
#: healthy run, one too long only delays noticing a hang by a minute, so it
#: errs long.
WORKER_TIMEOUT_S = 120.0

# control area: line 0 = the parent's; line 1 + w = worker w's (LINE slots each)
LINE = 16
# line 0: GEN (op number, the publishing flag), CMD and CMDLEN (its payload),
# PBELL (the parent's bell, rung by workers), CLOSING (set by close() from
# another thread: ends the parent's wait), GEN_MAC (2 slots: the MAC of this
# op's GEN, CMD and CMDLEN)
GEN, CMD, CMDLEN, PBELL, CLOSING, GEN_MAC = 0, 1, 2, 3, 4, 5
# worker w's line: DONE, MSGLEN, REQDONE and their MACs (DONE_MAC,
# REQDONE_MAC), CUR (1 + the copy it is in, 0 between copies) written by the
# worker; REQ (an env-pool step request for this worker alone) and REQ_MAC by
# the parent; WBELL, the worker's bell, rung by the parent
DONE, MSGLEN, REQ, REQDONE, WBELL, REQ_MAC, DONE_MAC, REQDONE_MAC, CUR = 0, 1, 2, 3, 4, 5, 7, 9, 11

MAC = 32  # HMAC-SHA256 in front of each sealed payload
FLAG_MAC = 16  # a flag's MAC (keyed BLAKE2b, 128 bits), in 2 slots next to the flag
SLICE_S = 0.05  # the parent's sleeps: how soon it sees a dead worker or its time limits
WORKER_SLICE_S = 0.2  # a worker's: how soon it sees that the parent is gone

OP_NAMES = {STEP: "stepping", RESET: "resetting", CALL: "calling into", CLOSE: "closing"}
COPY_OP = {STEP: "step", RESET: "reset", CALL: "call"}

# ---- sealed payloads -----------------------------------------------------------------------


def _tag(direction: bytes, w: int, flag: int, value: int) -> bytes:
    """A payload's place in the protocol, covered by its HMAC: a payload
    copied from another worker, op or direction does not verify."""
    return b"seer.vector/%s/%d/%d/%d:" % (direction, w, flag, value)


# A flag's value and place in the protocol (direction, worker, flag, value,
# and what goes with it: the op and command length for GEN, the message
# length for DONE / REQDONE), as the MAC's input.
_flag_tag = struct.Struct("<3sxqqqq").pack


class _Sealer:
    """HMAC-SHA256 of pickles under one env's key (keyed once, copied per
    payload)."""

    def __init__(self, key: bytes):
        self._keyed = hmac.new(key, digestmod="sha256")
        # flags are MAC'd on every step: keyed BLAKE2b (a MAC by design,
        # a fraction of HMAC's cost), truncated to FLAG_MAC bytes
        self._flag_keyed = hashlib.blake2b(key=key, digest_size=FLAG_MAC, person=b"seer-flag")

    def _mac(self, tag: bytes, data: bytes) -> bytes:
        h = self._keyed.copy()
        h.update(tag)
        h.update(data)
        return h.digest()

    def seal(self, tag: bytes, obj) -> bytes:
        data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
        return self._mac(tag, data) + data

    def _flag_digest(self, direction: bytes, w: int, flag: int, value: int, what: int) -> bytes:
        h = self._flag_keyed.copy()
        h.update(_flag_tag(direction, w, flag, value, what))
        return h.digest()

    def flag_mac(self, direction: bytes, w: int, flag: int, value: int, what: int) -> np.ndarray:
        """The MAC of a flag's new value, as the two int64 slots that hold it."""
        return np.frombuffer(self._flag_digest(direction, w, flag, value, what), np.int64)

    def flag_ok(self, slots: np.ndarray, direction: bytes, w: int, flag: int, value: int, what: int) -> bool:
        """Whether ``slots`` hold the MAC of that flag value: whether this
        env's parent (or worker ``w``) published it, not another process."""
        return hmac.compare_digest(slots.tobytes(), self._flag_digest(direction, w, flag, value, what))

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
        try:
            mm = self.shm._mmap
            self.ctl = np.frombuffer(mm, np.int64, self.ctl_bytes // 8, 0)
            self.flags = _Ctl(self.ctl)
            self.cmd = np.frombuffer(mm, np.uint8, cmd_bytes, self.cmd_off)
            self.msg = [np.frombuffer(mm, np.uint8, msg_bytes, self.msg_off + w * msg_bytes) for w in range(workers)]
            self.bufs = layout.allocate(memoryview(mm)[self.buf_off:self.buf_off + buf_size])
        except BaseException:  # nobody else holds this object yet: the block would stay in /dev/shm until exit
            self.release(unlink=name is None)
            raise

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
