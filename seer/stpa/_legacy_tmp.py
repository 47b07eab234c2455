"""STPA: choose the worker-pool size.

This module currently holds the documented fallback heuristic only; the
learned selector arrives with the STPA issue.
"""

from __future__ import annotations


def heuristic_workers(num_entities: int, native_share: float, cores: int) -> int:
    """Fallback rule: one worker per core for native workloads with enough
    entities to share out (>= 32 per worker), else one worker: Python
    handlers serialize on the GIL and small workloads lose to barrier costs."""
    if native_share < 0.5 or num_entities < 64:
        return 1
    return max(1, min(cores, num_entities // 32))


def select_workers_for_model(model) -> int:
    from seer.runtime import usable_cores

    kinds = list(model.kinds)
    native_share = sum(k.native for k in kinds) / max(len(kinds), 1)
    return heuristic_workers(model.num_entities, native_share, usable_cores())
