"""SEER's counter-based random streams in numpy, bit-identical to the C runtime's.

A draw is a pure function of ``(seed, entity, counter)``, the same as
``seer_counter_uniform`` in ``csrc/seer_runtime.c`` (which handlers reach as
``seer_uniform`` / ``ctx.uniform``).  Time-stepped reference models and
initial states drawn in numpy use it to produce exactly the numbers the
event-driven run produces.
"""

from __future__ import annotations

import numpy as np

__all__ = ["counter_uniform", "mix64"]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31, _S11, _ONE = (np.uint64(s) for s in (30, 27, 31, 11, 1))


def mix64(z: np.ndarray) -> np.ndarray:
    """SplitMix64's finalizer on uint64 arrays (wraps modulo 2**64, as in C)."""
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


def counter_uniform(seed: int, entity, counter) -> np.ndarray:
    """Uniform [0, 1) draws, bit-identical to SEER's ``seer_counter_uniform``.

    Args:
        seed: The run's seed (taken modulo 2**64).
        entity: Entity ids (int32 range); broadcasts with ``counter``.
        counter: The draw's index in the entity's stream.

    Returns:
        A float64 array of the broadcast shape (at least 1-d).
    """
    s = np.array([int(seed) & 0xFFFFFFFFFFFFFFFF], np.uint64)
    ent = np.atleast_1d(np.asarray(entity, np.int64)).astype(np.uint32).astype(np.uint64)
    ctr = np.atleast_1d(np.asarray(counter, np.int64)).astype(np.uint64)
    k = mix64(s ^ _GOLDEN) ^ mix64((ent << _ONE) | _ONE)
    return (mix64(k + ctr * _GOLDEN) >> _S11).astype(np.float64) * (2.0 ** -53)
