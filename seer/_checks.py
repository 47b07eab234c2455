"""Argument checks that several layers share: pool sizes, seeds and worker timeouts.

One definition each, so that ``Runtime``, the envs, ``seer.wrap``,
``seer.vector`` and the CLI accept and refuse the same values with the
same message.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

from seer.errors import InvalidArgumentError

#: Largest pool a :class:`seer.Runtime` accepts (the C runtime's limit).
MAX_WORKERS = 1024


def check_workers(workers: Any, *, auto: bool = True) -> int | str:
    """``workers`` as an int in ``[1, MAX_WORKERS]``, or ``"auto"`` when allowed.

    Args:
        workers: The value to check.
        auto: Whether ``"auto"`` (STPA's choice, resolved by the caller) is accepted.

    Returns:
        ``"auto"`` unchanged, else ``int(workers)``.

    Raises:
        InvalidArgumentError: Anything else (also a ``ValueError``); the
            message names the value and what was expected.
    """
    if auto and isinstance(workers, str) and workers == "auto":
        return workers
    if isinstance(workers, numbers.Integral) and not isinstance(workers, bool) and 1 <= workers <= MAX_WORKERS:
        return int(workers)
    expected = f'"auto" or an integer in [1, {MAX_WORKERS}]' if auto else f"an integer in [1, {MAX_WORKERS}]"
    raise InvalidArgumentError(f"workers={workers!r} is invalid: expected {expected}")


def check_seed(seed: Any) -> int:
    """A seed for the counter-based streams: an integer in [0, 2**64).

    Raises:
        InvalidArgumentError: ``seed`` is not such an integer (also a ``ValueError``).
    """
    if not isinstance(seed, numbers.Integral) or isinstance(seed, bool) or not 0 <= seed < 2**64:
        raise InvalidArgumentError(f"seed={seed!r} is invalid: expected an integer in [0, 2**64)")
    return int(seed)


def check_worker_timeout(value: Any) -> float | None:
    """``worker_timeout`` of the process and Ray backends: seconds > 0, or None to wait forever."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise InvalidArgumentError(f"worker_timeout={value!r} is invalid: expected a number of seconds > 0, or None "
                                   f"to wait for the workers forever")
    return float(value)
