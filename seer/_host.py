"""What this process may run on: the CPUs and cores its affinity allows.

One definition for the runtime's spin policy, STPA's hardware features,
seer.vector's defaults and the benchmarks' machine description.
"""

from __future__ import annotations

import os


def usable_cpus() -> list[int]:
    """The CPU ids this process may run on, sorted (affinity-aware on Linux)."""
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:  # no sched_getaffinity (macOS, Windows): assume every CPU
        return list(range(os.cpu_count() or 1))


def usable_cores() -> int:
    """How many CPUs this process may run on (affinity-aware on Linux)."""
    return len(usable_cpus())
