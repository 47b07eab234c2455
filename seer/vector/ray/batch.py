"""The Ray backend's buffer layouts: the fields a shard sends back after each op, and a rollout batch's one-buffer layout."""

from __future__ import annotations

import os
import weakref

import numpy as np


#: Per-row and per-copy buffers a shard sends back after each op, in this order.
ROW_FIELDS = ("obs", "rew", "term", "trunc", "mask", "alive")
COPY_FIELDS = ("ended", "restarted")
SAME_STEP_FIELDS = ("final_obs", "final_mask")
MASK_FIELDS = ("action_mask",)


def shard_fields(layout) -> tuple[str, ...]:
    """The buffers a shard writes for ``layout``: rows, copies, and the optional ones."""
    return (ROW_FIELDS + COPY_FIELDS + (SAME_STEP_FIELDS if layout.same_step else ())
            + (MASK_FIELDS if layout.mask_n else ()))


BATCH_KEYS = ("obs", "actions", "rewards", "terminations", "truncations", "mask", "alive")


def _batch_spec(T: int, rows: int, obs_shape, obs_dtype, act_shape, act_dtype):
    """(name, shape, dtype, byte offset) of a rollout batch of ``T`` steps of
    ``rows`` rows in one buffer, and its size."""
    dts = [obs_dtype, act_dtype, np.float64, np.bool_, np.bool_, np.bool_, np.bool_]
    shapes = [(T, rows, *obs_shape), (T, rows, *act_shape)] + [(T, rows)] * 5
    spec, at = [], 0
    for name, shape, dt in zip(BATCH_KEYS, shapes, dts):
        dt = np.dtype(dt)
        spec.append((name, shape, dt, at))
        at += int(np.prod(shape, dtype=np.int64)) * dt.itemsize
        at = (at + 63) // 64 * 64
    return spec, max(at, 64)


def _views(buf, spec) -> dict:
    return {n: np.frombuffer(buf, dt, int(np.prod(sh, dtype=np.int64)), off).reshape(sh) for n, sh, dt, off in spec}


class BatchBlocks:
    """The driver's rollout batches in shared memory, for shards on its node:
    one block per rollout holds the whole batch (every shard writes its rows
    in place), and the arrays the rollout returns are views of it, so no
    batch is copied on its way to the caller.  A block comes back for a later
    rollout once the caller drops every array of it (a finalizer on the
    holder array that all of them are views of); a few are kept, others
    freed, and the shards are told which names to unmap.

    ``boxes``: the backend's dict of blocks (released at close, and by its
    finalizer); batch blocks go there under their names."""

    KEEP = 2  # free blocks kept for later rollouts

    def __init__(self, boxes: dict):
        self.boxes = boxes
        self.free: list = []  # SharedMemory blocks no array refers to any more
        self.forget: list[str] = []  # names freed since the shards last heard
        self.state = {"closed": False}

    def get(self, spec, size: int):
        """(name, views) of a block for a batch of layout ``spec`` (from
        :func:`_batch_spec`), or None when /dev/shm has no room for it."""
        from seer.vector import shm as shm_blocks

        shm = None
        for i, blk in enumerate(self.free):
            if blk.size == size:
                shm = self.free.pop(i)
                break
        if shm is None:
            while len(self.free) >= self.KEEP:  # another size now: let the old ones go
                self._release(self.free.pop(0))
            try:
                shm = shm_blocks.create(size)
            except OSError:
                return None
            try:  # reserve the pages now: a full /dev/shm is an error here, not SIGBUS in a shard's write
                os.posix_fallocate(shm._fd, 0, size)
            except (OSError, AttributeError):
                shm_blocks.release(shm, unlink=True)
                return None
            self.boxes[shm.name] = shm
        holder = np.frombuffer(shm.buf, np.uint8, size)
        views = {n: holder[off:off + int(np.prod(sh, dtype=np.int64)) * dt.itemsize].view(dt).reshape(sh)
                 for n, sh, dt, off in spec}
        weakref.finalize(holder, _returned, self.free, self.boxes, self.forget, self.state, shm, self.KEEP)
        return shm.name, views

    def take_forget(self) -> list[str]:
        out, self.forget[:] = list(self.forget), []
        return out

    def _release(self, shm) -> None:
        from seer.vector import shm as shm_blocks

        self.boxes.pop(shm.name, None)
        self.forget.append(shm.name)
        shm_blocks.release(shm, unlink=True)

    def close(self) -> None:
        self.state["closed"] = True
        self.free.clear()  # (the backend releases every block in boxes)


def _returned(free: list, boxes: dict, forget: list, state: dict, shm, keep: int) -> None:
    """Every array of a batch block is gone: keep the block for a later rollout, or free it."""
    from seer.vector import shm as shm_blocks

    if state["closed"]:
        shm_blocks.close(shm)  # its name went at close()
        return
    if len(free) < keep:
        free.append(shm)
        return
    boxes.pop(shm.name, None)
    forget.append(shm.name)
    shm_blocks.release(shm, unlink=True)
