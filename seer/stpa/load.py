"""STPA's load features: how many of the usable cores are free right now, and the tools that make load on purpose.

* :func:`free_cores` spins one thread, then one thread per usable core,
  alternately, on GIL-free work (``hashlib`` releases the GIL for large
  updates) and returns how many cores' worth of work the threads got: close
  to the usable cores on a quiet machine, less while other jobs run.  The
  probe records it as the ``free_cores`` feature, so the model sees the load
  a choice is made under.
* :class:`ForeignLoad` reads, from ``/proc/stat``, how many cores' worth of
  CPU time other processes used on this process's CPUs since its last
  reading: cheap enough (tens of microseconds) for a running tuner to
  notice a learner or a second job that starts or stops.
* :func:`cpu_pressure` reads ``/proc/pressure/cpu`` where the kernel has it
  (recorded with measurements; too slow-moving to be a feature: it is a
  10-second average).
* :func:`background_load` starts busy processes (each pinned to one core) and
  stops them: what ``seer tune`` measures and evaluates under as "loaded".
* :func:`restricted_affinity` narrows every thread of this process to some
  CPUs for a block: how ``seer tune`` evaluates a smaller machine shape.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Iterator

from seer._host import usable_cpus

__all__ = ["free_cores", "ForeignLoad", "cpu_pressure", "background_load", "restricted_affinity", "forget_reference"]

_BUF = bytes(32 << 10)  # one update: tens of us of pure compute, GIL released (hashlib does for >= 2 KiB)
_lock = threading.Lock()
#: Best one-thread spin rate (updates/s) this process has seen: the nearest
#: thing to an unloaded core it can know.  Dividing by it (not by this call's
#: own one-thread rate) makes an evenly loaded machine read as loaded too:
#: two threads on two half-busy cores get 2x one thread's work, but one core's.
_reference_rate = 0.0


def forget_reference() -> None:
    """Forget the one-thread reference rate (tests; after the machine changed)."""
    global _reference_rate
    with _lock:
        _reference_rate = 0.0


def _spin(threads: int, seconds: float) -> float:
    """Updates per second that ``threads`` threads complete together in ``seconds``."""
    counts = [0] * threads
    gate = threading.Barrier(threads + 1)

    def run(i: int) -> None:
        h = hashlib.sha256()
        gate.wait()
        end = time.perf_counter() + seconds
        n = 0
        while time.perf_counter() < end:
            h.update(_BUF)
            n += 1
        counts[i] = n

    pool = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(threads)]
    for t in pool:
        t.start()
    t0 = time.perf_counter()
    gate.wait()
    for t in pool:
        t.join()
    return sum(counts) / max(time.perf_counter() - t0, 1e-9)


def free_cores(threads: int | None = None, *, seconds: float = 0.008, rounds: int = 3) -> float:
    """Cores' worth of work that ``threads`` threads get right now, in [0, threads].

    Alternates one thread and ``threads`` threads (default: the usable
    cores, at most 64) ``rounds`` times, ``seconds`` each, and divides the
    many-thread rate by the best one-thread rate this process has seen.
    Costs about ``2 x rounds x seconds`` (50 ms by default).

    Raises:
        ValueError: ``threads``, ``seconds`` or ``rounds`` is out of range.
    """
    global _reference_rate
    n = min(len(usable_cpus()), 64) if threads is None else threads
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"threads={threads!r} is invalid: expected an integer >= 1 (or None: the usable cores)")
    if not (seconds > 0) or not isinstance(rounds, int) or rounds < 1:
        raise ValueError(f"seconds={seconds!r}, rounds={rounds!r} are invalid: expected seconds > 0 and an "
                         f"integer rounds >= 1")
    one, many = [], []
    for _ in range(rounds):
        one.append(_spin(1, seconds))
        many.append(_spin(n, seconds) if n > 1 else _spin(1, seconds))
    with _lock:
        _reference_rate = max(_reference_rate, *one)
        ref = _reference_rate
    # The mean of the many-thread runs: a burst of foreign load is part of what is measured.
    return float(min(n, max(0.0, (sum(many) / len(many)) / ref))) if ref > 0 else float(n)


class ForeignLoad:
    """Cores' worth of CPU time used by other processes on this process's CPUs, between readings.

    Each :meth:`read` returns the busy time of the usable CPUs (``/proc/stat``:
    everything but idle and iowait) less this process's own CPU time
    (``os.times``), over the wall time since the previous reading.  A thread
    of this process that competes with the steps (a learner's threads in the
    same process) counts as its own time: it shows only as slower steps.

    Args:
        cpus: The CPUs to count (default: the usable ones).
        proc_root: Where ``/proc`` is (tests).

    Example:
        >>> load = ForeignLoad()
        >>> load.read() is None   # the first reading only starts the clock
        True
    """

    #: /proc/stat's per-CPU fields that are busy time: user, nice, system, irq, softirq, steal.
    _BUSY_FIELDS = (0, 1, 2, 5, 6, 7)

    def __init__(self, cpus=None, proc_root: str | os.PathLike = "/proc"):
        self.cpus = {int(c) for c in (usable_cpus() if cpus is None else cpus)}
        self._path = Path(proc_root) / "stat"
        self._hz = float(os.sysconf("SC_CLK_TCK")) if hasattr(os, "sysconf") else 100.0
        self._last: tuple[float, float, float] | None = None

    @property
    def available(self) -> bool:
        """Whether this platform reports per-CPU busy time."""
        return self._busy() is not None

    def _busy(self) -> float | None:
        try:
            text = self._path.read_text()
        except OSError:
            return None
        total, seen = 0, False
        for line in text.splitlines():
            if not line.startswith("cpu") or line.startswith("cpu "):
                continue
            name, *fields = line.split()
            try:
                cpu = int(name[3:])
            except ValueError:
                continue
            if cpu in self.cpus:
                total += sum(int(fields[i]) for i in self._BUSY_FIELDS if i < len(fields))
                seen = True
        return total / self._hz if seen else None

    def read(self) -> float | None:
        """Other processes' cores of CPU since the last reading, in [0, len(cpus)];
        None on the first reading and where ``/proc/stat`` is missing."""
        busy = self._busy()
        if busy is None:
            return None
        t = os.times()
        now = (time.monotonic(), busy, t.user + t.system)
        last, self._last = self._last, now
        if last is None or now[0] - last[0] <= 0:
            return None
        foreign = (now[1] - last[1]) - (now[2] - last[2])
        return float(min(max(foreign / (now[0] - last[0]), 0.0), len(self.cpus)))


def cpu_pressure(proc_root: str | os.PathLike = "/proc") -> float | None:
    """The share of the last 10 s in which some runnable task waited for a CPU
    (``some avg10`` of ``/proc/pressure/cpu``, in [0, 1]); None where the
    kernel does not report it."""
    try:
        text = (Path(proc_root) / "pressure" / "cpu").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("some"):
            for part in line.split():
                if part.startswith("avg10="):
                    try:
                        return float(part[6:]) / 100.0
                    except ValueError:
                        return None
    return None


_BUSY = "import os, sys\nos.sched_setaffinity(0, {int(sys.argv[1])})\nwhile True:\n    pass\n"


@contextlib.contextmanager
def background_load(processes: int = 1, cpus=None) -> Iterator[list[int]]:
    """Run ``processes`` busy-looping processes for the block, each pinned to one CPU.

    The CPUs are taken from the end of ``cpus`` (default: the usable CPUs),
    so the busy processes share cores with this process's threads rather
    than land where nothing runs.  Yields the pinned CPUs.  The processes are
    ended (by their own ids) when the block exits, also on an error.

    Raises:
        ValueError: ``processes`` is not an integer >= 0.
    """
    if not isinstance(processes, int) or isinstance(processes, bool) or processes < 0:
        raise ValueError(f"processes={processes!r} is invalid: expected an integer >= 0")
    pool = sorted(cpus) if cpus is not None else usable_cpus()
    pinned = [pool[-1 - (i % len(pool))] for i in range(processes)]
    procs = []
    try:
        for cpu in pinned:
            procs.append(subprocess.Popen([sys.executable, "-c", _BUSY, str(cpu)], stdin=subprocess.DEVNULL,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        time.sleep(0.2 if procs else 0.0)  # the interpreters start before the load counts
        yield pinned
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()


def _thread_ids() -> list[int]:
    try:
        return [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:
        return [0]


@contextlib.contextmanager
def restricted_affinity(cpus) -> Iterator[set[int]]:
    """Let every thread of this process run only on ``cpus`` for the block, then restore each.

    Threads started inside the block inherit the narrowed set from the
    thread that starts them (a runtime's workers, a probe's spinners), so a
    block is a smaller machine for everything built in it.

    Raises:
        ValueError: ``cpus`` is empty or names CPUs this process may not use.
        NotImplementedError: the platform has no ``sched_setaffinity``.
    """
    if not hasattr(os, "sched_setaffinity"):
        raise NotImplementedError("restricted_affinity needs os.sched_setaffinity (Linux)")
    want = {int(c) for c in cpus}
    allowed = set(usable_cpus())
    if not want or not want <= allowed:
        raise ValueError(f"cpus={sorted(want)} is invalid: expected a non-empty subset of the usable CPUs "
                         f"{sorted(allowed)}")
    saved = {}
    for tid in _thread_ids():
        try:
            saved[tid] = os.sched_getaffinity(tid)
            os.sched_setaffinity(tid, want)
        except OSError:  # the thread ended meanwhile
            saved.pop(tid, None)
    try:
        yield want
    finally:
        for tid, mask in saved.items():
            try:
                os.sched_setaffinity(tid, mask)
            except OSError:
                pass
