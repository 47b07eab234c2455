"""The ``with``-blocks a `seer.Runtime` hands out: `exclusive`, `native_step` and `pool_stats`."""

from __future__ import annotations

import time

from seer._seer_c import lib
from seer.errors import ClosedError, MisuseError
from seer.pool_stats import PoolStats


class _PoolStatsBlock:
    """``with``-block of :meth:`Runtime.pool_stats`."""

    __slots__ = ("_core", "_stats")

    def __init__(self, core):  # the runtime's seer._runtime_core._Core
        self._core = core
        self._stats = PoolStats()

    def __enter__(self) -> PoolStats:
        core = self._core
        core.guard.enter("pool_stats()")
        try:
            if core.closed:
                raise ClosedError("pool_stats(): this Runtime is closed")
            if core.pool_stats is not None:
                raise MisuseError("pool_stats(): a pool_stats() block is already open on this Runtime; "
                                  "end it first (its stats cover every step inside it)")
            lib.seer_rt_set_stats(core.rt, 1)  # restarts every worker's counts
            core.pool_stats = self._stats
        finally:
            core.guard.leave()
        return self._stats

    def __exit__(self, *exc) -> None:
        core, stats = self._core, self._stats
        if core.pool_stats is not stats:
            return
        try:
            try:
                core.guard.enter("pool_stats()")
            except ClosedError:  # closed (from any thread): closing took the counts already
                return
            try:
                if not core.closed:
                    core.take_pool_stats()
                    lib.seer_rt_set_stats(core.rt, 0)
            finally:
                core.guard.leave()
        finally:
            core.pool_stats = None
            stats.seal()


class _Exclusive:
    """``with``-block form of ``_Core.enter``/``leave`` (see :meth:`Runtime.exclusive`)."""

    __slots__ = ("_core", "_what")

    def __init__(self, core, what: str):
        self._core = core
        self._what = what

    def __enter__(self) -> None:
        self._core.guard.enter(self._what)

    def __exit__(self, *exc) -> None:
        self._core.guard.leave()


class _NativeStep:
    """``with``-block of :meth:`Runtime.native_step` (a class, not a
    generator: it runs once per env step, and costs half as much)."""

    __slots__ = ("_rt", "_what", "_t0")

    def __init__(self, rt, what: str):  # rt: the seer.Runtime
        self._rt = rt
        self._what = what

    def __enter__(self) -> None:
        rt = self._rt
        rt._core.guard.enter(self._what)
        try:
            rt.check_steppable()
        except BaseException:
            rt._core.guard.leave()
            raise
        self._t0 = time.perf_counter()

    def __exit__(self, exc_type, *exc) -> None:
        try:
            if exc_type is None:
                self._rt.report_step_time(time.perf_counter() - self._t0)
        finally:
            self._rt._core.guard.leave()
