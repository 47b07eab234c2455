"""What a native handler or copy step said when it failed, kept until the step's error is built.

A C handler fails by returning a code; a compiled one (``seer.numba``) can
also raise.  Its guard records the exception (or the code it returned) here,
keyed by the runtime (``ctx->rt``) or the copy's state, with the event that
failed; ``seer.Runtime`` and ``seer.vector``'s native path take it back when
they turn the failed step into a :class:`seer.HandlerError`.
"""

from __future__ import annotations

import math
import threading

_LOCK = threading.Lock()
#: key (runtime or copy state address) -> failures, oldest first
_FAILED: dict[int, list[tuple[int, int, float, int, BaseException | None]]] = {}
_PER_KEY = 16  # the first failure of a step is the one reported; a few more are plenty
_KEYS = 1024  # failures nobody asked for (a copy step that handled its runtime's code) age out

#: SEER_E_* codes (csrc/include/seer/seer_types.h) by value
CODE_NAMES = {-1: "SEER_E_ENTITY", -2: "SEER_E_KIND", -3: "SEER_E_TIME", -4: "SEER_E_PAST", -5: "SEER_E_FULL",
              -6: "SEER_E_NOT_CLAIMED", -7: "SEER_E_CAUSALITY", -8: "SEER_E_HANDLER", -9: "SEER_E_NOMEM",
              -10: "SEER_E_ARG", -11: "SEER_E_CLOSED", -12: "SEER_E_UNSUPPORTED"}


def code_name(code: int | None) -> str | None:
    """``SEER_E_*`` name of a code, or None for 0, None and codes of the handler's own."""
    return None if code is None else CODE_NAMES.get(int(code))


def record(key: int, entity: int, kind: int, time: float, code: int, exc: BaseException | None) -> None:
    with _LOCK:
        if int(key) not in _FAILED and len(_FAILED) >= _KEYS:
            del _FAILED[next(iter(_FAILED))]
        rows = _FAILED.setdefault(int(key), [])
        if len(rows) < _PER_KEY:
            rows.append((int(entity), int(kind), float(time), int(code), exc))


def take(key: int, entity: int | None = None, kind: int | None = None,
         time: float | None = None) -> tuple[int, BaseException | None] | None:
    """(code, exception) recorded for ``key`` (for that event, when given);
    forgets everything recorded for ``key``: the step it belongs to is over."""
    with _LOCK:
        rows = _FAILED.pop(int(key), None)
    if not rows:
        return None
    for e, k, t, code, exc in rows:
        if entity is None or (e == entity and k == kind and (t == time or (math.isnan(t) and math.isnan(time)))):
            return code, exc
    return None


def forget(key: int) -> None:
    with _LOCK:
        _FAILED.pop(int(key), None)
