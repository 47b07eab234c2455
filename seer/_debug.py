"""Debug mode of a `seer.Runtime` (``debug=True`` or ``SEER_DEBUG=1``): the checks a normal run skips.

In debug mode the runtime serializes its Python handlers and compares the
per-entity state rows around each call: a row written for an entity the
handler was not handed raises :class:`seer.EntityWriteError` inside the
handler's call; the step raises it (with kind and worker added, as for
``ctx.emit``'s misuse errors) and needs a reset.  Native handlers (C,
``seer.numba``) are checked in C the same way: they run one at a time, and
after each the runtime compares every other entity's rows with its copy of
them (``seer_rt_set_debug_rows``; the cost of an event grows with the state's
size, so debug small scenarios).  A normal run never reaches this module.
"""

from __future__ import annotations

import os
import threading
from typing import Mapping

import numpy as np

from seer.errors import EntityWriteError, InvalidArgumentError

__all__ = ["resolve_debug", "debug_address", "RowWatch", "MAX_NATIVE_ARRAYS"]

#: Per-entity arrays the C runtime checks after each native handler (seer_rt_set_debug_rows' bound).
MAX_NATIVE_ARRAYS = 64

ENV_VAR = "SEER_DEBUG"
_ON = {"1", "true", "yes", "on"}
_OFF = {"", "0", "false", "no", "off"}


def resolve_debug(debug) -> bool:
    """``debug`` as given (a bool), or, for None, whether ``SEER_DEBUG`` turns debug mode on."""
    if debug is None:
        raw = os.environ.get(ENV_VAR, "")
        val = raw.strip().lower()
        if val in _ON:
            return True
        if val in _OFF:
            return False
        raise InvalidArgumentError(f"{ENV_VAR}={raw!r} is invalid: expected 1 (debug mode on) or 0 (off)")
    if not isinstance(debug, (bool, np.bool_)):
        raise InvalidArgumentError(f"debug={debug!r} is invalid: expected True or False (or None: "
                                   f"on when the environment sets {ENV_VAR}=1)")
    return bool(debug)


def debug_address(fn) -> int | None:
    """The address of a seer.numba handler's or copy step's variant with bounds
    checks (compiled and cached apart); None for anything else (C, ctypes)."""
    if callable(getattr(fn, "compile", None)) and hasattr(fn, "state"):
        return fn.compile(debug=True).address
    return None


class RowWatch:
    """Compares per-entity state rows before and after one Python handler call."""

    def __init__(self, num_entities: int):
        self.num_entities = num_entities
        # pool workers would write their own rows while another's are compared
        self.lock = threading.Lock()

    def per_entity(self, state) -> dict[str, np.ndarray]:
        """The arrays whose first axis is the entity; other (shared) arrays stay writable by every handler."""
        if not isinstance(state, Mapping):
            return {}
        n = self.num_entities
        return {name: arr for name, arr in state.items()
                if isinstance(arr, np.ndarray) and arr.ndim >= 1 and arr.shape[0] == n}

    @staticmethod
    def _rows(arr: np.ndarray) -> np.ndarray:
        # bytes, not values: NaN rows compare equal, -0.0 and 0.0 differ
        return np.ascontiguousarray(arr).view(np.uint8).reshape(arr.shape[0], -1)

    def take(self, state) -> dict[str, np.ndarray]:
        return {name: self._rows(arr).copy() for name, arr in self.per_entity(state).items()}

    def check(self, state, before: dict[str, np.ndarray], held: np.ndarray, what: str) -> None:
        """Raise :class:`EntityWriteError` for the first row changed of an entity not in ``held``."""
        for name, arr in self.per_entity(state).items():
            old = before.get(name)
            if old is None:
                continue
            changed = np.flatnonzero((self._rows(arr) != old).any(axis=1))
            if not changed.size:
                continue
            bad = changed[~np.isin(changed, held)]
            if bad.size:
                shown = np.unique(held)[:8].tolist()
                raise EntityWriteError(
                    f"{what} wrote model.state[{name!r}][{int(bad[0])}] (row of entity {int(bad[0])}), but it "
                    f"handles entities {shown} only: a handler writes its own entities' rows and reads others "
                    f"through ctx.snapshot (seer debug mode; {bad.size} such row(s) in {name!r})")
