"""`CallGuard`: one caller at a time for SEER's stateful objects (runtime, envs, vector envs).

SEER's objects are not meant to be driven from two threads at once: a step
of a runtime owns its worker pool, a vector step owns the copies' rows.  A
second caller is refused at once with :class:`~seer.errors.MisuseError`
rather than made to wait (waiting hides the bug and, for a call made from
inside one of the object's own handlers, deadlocks).  ``close()`` is the one
call another thread may make during a running call: it interrupts that call,
waits a bounded time for it to return, and the interrupted call raises
:class:`~seer.errors.ClosedError`.
"""

from __future__ import annotations

import threading
from typing import Callable

from seer.errors import ClosedError, MisuseError

#: How long close() from another thread waits for a running call to stop.  It
#: interrupts the call first, so only code that never returns (a handler
#: stuck in a loop) makes it wait this long.
CLOSE_WAIT_S = 10.0


class CallGuard:
    """The owner thread, nesting depth and purpose of the running call.

    Args:
        what: The guarded object, as messages name it ("this Runtime").
    """

    def __init__(self, what: str):
        self.what = what
        self.lock = threading.Lock()
        self.owner: int | None = None
        self.depth = 0
        self.busy_with = ""
        self.closed = False
        #: set by close() from another thread: the running call raises ClosedError
        self.closed_by_other = False
        #: set as close() starts: from then on a new call is told the object
        #: is closed (not that another call runs), even before close holds it
        self.closing = False
        #: marks the threads that are inside one of the object's own callbacks
        self.local = threading.local()
        self.on_idle: Callable[[], None] | None = None

    def in_callback(self) -> bool:
        return getattr(self.local, "handling", False)

    def enter(self, call: str) -> None:
        """Take the object for ``call`` ("step()").  Re-entry from the owning
        thread outside callbacks nests (an env's step calling its runtime's)."""
        if self.lock.acquire(False):
            # The common case, kept short (it runs once per step).  A free lock
            # also means no call runs, hence no handler: nothing else to check.
            if self.closing:
                self.lock.release()
                raise ClosedError(f"{call}: {self.what} is closed")
            self.owner = threading.get_ident()
            self.depth = 1
            self.busy_with = call
            return
        if getattr(self.local, "handling", False):
            raise MisuseError(f"{call} called from inside a handler of {self.what}: a handler may only emit "
                              f"events (ctx.emit) and draw random numbers (ctx.uniform); step, reset, schedule "
                              f"and close belong to the code that drives it")
        me = threading.get_ident()
        if self.owner == me:
            self.depth += 1
            return
        if not self.lock.acquire(False):
            if self.closing:
                raise ClosedError(f"{call}: {self.what} is closed")
            raise MisuseError(f"{call} called while another call ({self.busy_with}) is running on {self.what} in "
                              f"another thread: SEER's runtimes, envs and vector envs take one caller at a time; "
                              f"use one per thread or serialize the calls with a lock")
        if self.closing:
            self.lock.release()
            raise ClosedError(f"{call}: {self.what} is closed")
        self.owner = me
        self.depth = 1
        self.busy_with = call

    def leave(self) -> None:
        self.depth -= 1
        if self.depth:
            return
        self.owner = None
        if self.on_idle is None:
            self.lock.release()
            return
        on_idle, self.on_idle = self.on_idle, None
        try:
            if on_idle is not None:  # closed by another thread while we ran
                # Closed before it is freed: this thread may take the lock
                # again before close() does, and must find it closed.
                self.closed = True
                on_idle()
        finally:
            self.lock.release()

    def closed_error(self) -> ClosedError:
        return ClosedError(f"{self.what} was closed by another thread during {self.busy_with or 'a call'}")

    def begin_close(self, interrupt: Callable[[], None], free: Callable[[], None], wait: float) -> bool:
        """For ``close()``: take the object, interrupting a call that another
        thread is running.  True when taken: the caller frees the object,
        then calls :meth:`end_close`.  False when that call did not return
        within ``wait`` seconds: the object is marked closed and ``free``
        (which must be idempotent) runs when that call returns."""
        if self.in_callback():
            raise MisuseError(f"close() called from inside a handler of {self.what}: close it from the code that "
                              f"drives it, after the call returns")
        if self.owner == threading.get_ident():
            raise MisuseError(f"close() called during {self.busy_with} of {self.what} on the same thread")
        # Before taking the lock: a call that finds it taken by close() from
        # here on raises ClosedError, not MisuseError ("another call runs").
        self.closing = True
        if self.lock.acquire(blocking=False):
            self._closing()
            return True
        # Set before the interrupt: if the running call returns from here on,
        # its leave() frees; if it already left, the lock is ours below.
        self.on_idle = free
        self.closed_by_other = True
        interrupt()
        if self.lock.acquire(timeout=wait):
            self.on_idle = None
            self._closing()
            return True
        self.closed = True
        return False

    def _closing(self) -> None:
        self.closed = True
        self.busy_with = "close()"

    def end_close(self) -> None:
        self.closed = True
        self.lock.release()
