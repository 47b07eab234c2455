"""Shared-memory blocks of seer.vector: create, attach, close and unlink, with numpy views still alive.

The process backend's block (flags, commands, messages and row buffers) and
the Ray backend's blocks (the driver's row buffers, rollout batches) use
these, so the one subtle part lives once: a block whose numpy views are
still held somewhere (results returned with ``copy=False``, a wait in
another thread) cannot be unmapped, and ``SharedMemory.close()`` raises
``BufferError``; the views then own the mapping until they die, while the
name still leaves ``/dev/shm`` at once.
"""

from __future__ import annotations

import os
from multiprocessing import shared_memory


def create(size: int) -> shared_memory.SharedMemory:
    """A new block of ``size`` bytes (at least 1), readable and writable by this user only."""
    return shared_memory.SharedMemory(create=True, size=max(int(size), 1))


def attach(name: str, *, owned_elsewhere: bool = False) -> shared_memory.SharedMemory:
    """The existing block ``name``.

    Args:
        name: The block's name.
        owned_elsewhere: Another process unlinks it (a Ray driver): this
            process's resource tracker must not unlink it at exit.
    """
    shm = shared_memory.SharedMemory(name=name)
    if owned_elsewhere:
        from multiprocessing import resource_tracker

        try:
            resource_tracker.unregister(shm._name, "shared_memory")
        except Exception:  # the tracker's bookkeeping only: never fatal
            pass
    return shm


def close(shm: shared_memory.SharedMemory) -> None:
    """Unmap ``shm`` now, or leave the mapping to the views that still export it."""
    try:
        shm.close()
    except BufferError:  # exported views remain: they keep the mapping until they die
        if shm._fd >= 0:
            os.close(shm._fd)
            shm._fd = -1
        shm._mmap = None


def release(shm: shared_memory.SharedMemory, unlink: bool) -> None:
    """Unlink the name (if ``unlink``: this process owns the block), then :func:`close`."""
    if unlink:
        try:
            shm.unlink()
        except FileNotFoundError:
            pass
    close(shm)


def release_all(blocks: dict) -> None:
    """Unlink and close every block in ``blocks`` (a dict, emptied); safe to call twice."""
    for shm in list(blocks.values()):
        release(shm, unlink=True)
    blocks.clear()
