"""The process backend's capture of its workers' stderr (`StderrTails`): forwarded to this process's stderr as it comes, its last lines kept to say why a worker died."""

from __future__ import annotations

import os
import selectors
import threading
from multiprocessing.connection import Connection

#: How much of each worker's stderr is kept for an error message.
TAIL_BYTES = 4096
TAIL_LINES = 20


class StderrTails:
    """One pipe per worker process for its fd 2, drained by one thread.

    The thread forwards every chunk to this process's fd 2 at once (so a
    worker's warnings still reach the terminal, as when it inherited fd 2)
    and keeps the last :data:`TAIL_BYTES` of each worker: a pipe nobody
    reads would block a chatty worker, a file would grow without bound.  It
    ends, and every read end is closed, in :meth:`close`.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._sel: selectors.BaseSelector | None = None
        self._thread: threading.Thread | None = None
        self._wake_r = self._wake_w = -1
        self._tails: dict[int, bytearray] = {}
        self._eof: dict[int, threading.Event] = {}
        self._stop = False

    def pipe(self, w: int) -> Connection:
        """A new pipe for worker ``w``'s stderr (a restart replaces the
        old one): the write end, as a Connection so that it travels in the
        Process arguments of any start method.  Close it here once the
        worker has started."""
        r, wr = os.pipe()
        with self._lock:
            if self._thread is None:
                self._sel = selectors.DefaultSelector()
                self._wake_r, self._wake_w = os.pipe()
                self._sel.register(self._wake_r, selectors.EVENT_READ, None)
                self._thread = threading.Thread(target=self._drain, name="seer-process-stderr", daemon=True)
                self._thread.start()
            self._tails[w] = bytearray()
            self._eof[w] = threading.Event()
            self._sel.register(r, selectors.EVENT_READ, (w, self._tails[w], self._eof[w]))
        return Connection(wr, readable=False)

    def _drain(self) -> None:
        try:
            self._drain_until_closed()
        except (OSError, ValueError):  # close() ran in this very thread (a collected backend's finalizer)
            if not self._stop:
                raise

    def _drain_until_closed(self) -> None:
        sel = self._sel
        while not self._stop:
            for key, _ in sel.select():
                if key.data is None:  # woken by close()
                    continue
                w, tail, eof = key.data
                try:
                    data = os.read(key.fd, 65536)
                except OSError:
                    data = b""
                if not data:  # the worker (and whatever inherited its stderr) is gone
                    with self._lock:
                        sel.unregister(key.fd)
                        os.close(key.fd)
                    eof.set()
                    continue
                _write_all(2, data)
                tail += data
                if len(tail) > TAIL_BYTES:
                    del tail[:len(tail) - TAIL_BYTES]

    def tail(self, w: int, wait: float = 0.5) -> str:
        """The last lines worker ``w`` wrote to stderr ("" if none), once
        its pipe ended (at most ``wait`` seconds: a process it started may
        hold the pipe open)."""
        eof = self._eof.get(w)
        if eof is None:
            return ""
        eof.wait(wait)
        with self._lock:
            data = bytes(self._tails.get(w, b""))
        lines = data.decode("utf-8", "replace").rstrip().splitlines()
        return "\n".join(lines[-TAIL_LINES:])

    def close(self) -> None:
        """Stop the thread and close every pipe; safe to call twice."""
        with self._lock:
            thread, self._thread = self._thread, None
            if thread is None:
                return
            self._stop = True
        _write_all(self._wake_w, b"x")
        if thread is not threading.current_thread():
            thread.join(2.0)
        with self._lock:
            for key in list(self._sel.get_map().values()):
                os.close(key.fd)
            self._sel.close()
            os.close(self._wake_w)
            self._wake_r = self._wake_w = -1


def _write_all(fd: int, data: bytes) -> None:
    try:
        while data:
            data = data[os.write(fd, data):]
    except OSError:  # a closed or broken stderr: the tail is kept all the same
        pass
