"""Where a runtime's pool spends its time, per worker: what ``Runtime.pool_stats()`` fills."""

from __future__ import annotations

import dataclasses

from seer._seer_c import ffi, lib

__all__ = ["PoolStats", "WorkerTimes"]

_FIELDS = ("steps", "windows", "step_ns", "bookkeeping_ns", "barrier_ns", "spin_ns", "parks")


@dataclasses.dataclass(frozen=True)
class WorkerTimes:
    """One pool worker's share of a :class:`PoolStats` block.

    Attributes:
        worker: The worker's index (0 is the thread that calls ``step``).
        steps: Steps it took part in (worker 0: every step; a pool thread
            counts the steps in which it ran some of the work, since a step
            never waits for a particular pool thread).
        windows: Windows it ran some of the events of (worker 0: every
            window of the steps).
        step_s: Seconds inside the steps' runs (worker 0: the steps' wall time
            in the runtime, without the model's own work before and after).
        bookkeeping_s: Seconds deciding windows: reporting what it left
            pending, copying its share of the snapshots, readying its lanes.
            Every worker does its share; none decides alone while the
            others wait.
        barrier_s: Seconds waiting for the others: at window barriers, or
            for the last units of a phase that others hold.
        spin_s: Seconds spent spinning in waits, inside steps and between
            them, before the awaited change came or the thread slept: time
            taken from other threads on the cores.
        parks: Waits that ended in a sleep on the futex.
    """

    worker: int
    steps: int
    windows: int
    step_s: float
    bookkeeping_s: float
    barrier_s: float
    spin_s: float = 0.0
    parks: int = 0


class PoolStats:
    """What a runtime's pool did during one ``with rt.pool_stats() as stats:`` block.

    Filled when the block ends (empty inside it).  Accounting costs a few
    clock reads per window and worker, so it is off outside such blocks.  A
    pool resized inside the block (``Runtime.resize``, or STPA's tuner under
    ``workers="auto"``) keeps what its old workers measured; a runtime closed
    inside it keeps what its pool measured up to the close.

    The fractions are worker 0's, over its ``step_s``: the bookkeeping
    fraction is the share of a step spent deciding windows, the barrier
    fraction the share spent waiting for the other workers at window ends
    (load imbalance, or a core the OS or the host gave to someone else).

    Example:
        >>> import seer
        >>> from seer.synthetic import SyntheticModel
        >>> with seer.Runtime(SyntheticModel(num_entities=64), workers=2) as rt:
        ...     with rt.pool_stats() as stats:
        ...         _ = rt.step(1.0)
        >>> stats.steps, len(stats.workers)
        (1, 2)
        >>> 0.0 <= stats.barrier_fraction <= 1.0
        True
    """

    def __init__(self) -> None:
        self._ns: dict[int, dict[str, int]] = {}  # worker -> _FIELDS, summed over takes
        self._open = True

    def take(self, rt, num_workers: int) -> None:
        """Add what each worker of ``rt`` (a ``seer_runtime *``) measured
        since the last take, and restart its counts; between steps only."""
        st = ffi.new("seer_rt_stats *")
        for w in range(num_workers):
            lib.seer_rt_take_stats(rt, w, st)
            acc = self._ns.setdefault(w, dict.fromkeys(_FIELDS, 0))
            for name in _FIELDS:
                acc[name] += int(getattr(st, name))

    def seal(self) -> None:
        """The block ended: the stats are final."""
        self._open = False

    @property
    def workers(self) -> tuple[WorkerTimes, ...]:
        """Each worker's times, by worker index."""
        return tuple(WorkerTimes(w, a["steps"], a["windows"], a["step_ns"] / 1e9, a["bookkeeping_ns"] / 1e9,
                                 a["barrier_ns"] / 1e9, a["spin_ns"] / 1e9, a["parks"])
                     for w, a in sorted(self._ns.items()))

    def _worker0(self, name: str) -> int:
        return self._ns.get(0, {}).get(name, 0)

    @property
    def steps(self) -> int:
        """Steps run in the block."""
        return self._worker0("steps")

    @property
    def windows(self) -> int:
        """Windows run in the block."""
        return self._worker0("windows")

    @property
    def step_s(self) -> float:
        """Seconds the steps took in the runtime (worker 0's ``step_s``)."""
        return self._worker0("step_ns") / 1e9

    def _fraction(self, name: str) -> float:
        step_ns = self._worker0("step_ns")
        return self._worker0(name) / step_ns if step_ns > 0 else 0.0

    @property
    def bookkeeping_fraction(self) -> float:
        """Share of worker 0's step time spent on window bookkeeping."""
        return self._fraction("bookkeeping_ns")

    @property
    def barrier_fraction(self) -> float:
        """Share of worker 0's step time spent waiting at window barriers."""
        return self._fraction("barrier_ns")

    @property
    def spin_s(self) -> float:
        """Seconds all workers spent spinning in waits (time taken from the
        other threads on the cores without doing work)."""
        return sum(a["spin_ns"] for a in self._ns.values()) / 1e9

    @property
    def spin_per_step_s(self) -> float:
        """:attr:`spin_s` per step of the block (0 without steps)."""
        return self.spin_s / self.steps if self.steps else 0.0

    @property
    def parks(self) -> int:
        """Waits, over all workers, that ended in a sleep on the futex."""
        return sum(a["parks"] for a in self._ns.values())

    def __repr__(self) -> str:
        if self._open:
            return "PoolStats(open: filled when its with-block ends)"
        return (f"PoolStats(steps={self.steps}, windows={self.windows}, workers={len(self._ns)}, "
                f"step_s={self.step_s:.6f}, "
                f"bookkeeping_fraction={self.bookkeeping_fraction:.3f}, "
                f"barrier_fraction={self.barrier_fraction:.3f}, spin_per_step_s={self.spin_per_step_s:.6f}, "
                f"parks={self.parks})")
