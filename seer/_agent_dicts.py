"""The per-agent dicts of a PettingZoo step, built from rows without an interpreted iteration per agent.

At thousands of agents a step's dicts cost more than its simulation does at
two workers, and all of it is serial.  Three things make them cheap:

- :func:`gather_actions` reads a dict of per-agent actions into one array in
  a C loop (``seer._rowdicts``), where ``np.array(list_of_rows)`` discovers
  every element's shape and dtype;
- :class:`FloatDicts` hands out the rewards: a copy of a kept dict whose
  floats are given the step's values in place once nothing outside holds
  them (a new dict's floats are made by :func:`float_dict`, which copies a
  dict of the agents' names and replaces its values in C);
- :class:`RowViews` hands out per-agent observation arrays that are views
  of a copy of the rows, and :class:`InfoDicts` per-agent empty infos; each
  reuses what it handed out only once nothing outside holds any of it
  (reference counts, checked in C at each reuse), so what a user keeps is
  never overwritten and a reuse cannot be seen.

Each answers exactly what the plain Python it replaces would.
"""

from __future__ import annotations

import sys

import numpy as np

from seer._rowdicts import empty_dicts, float_dict, gather_rows, refill_floats, unheld

__all__ = ["FloatDicts", "InfoDicts", "RowViews", "float_dict", "gather_actions", "gather_in_box"]


def gather_actions(values: list, shape: tuple) -> np.ndarray | None:
    """``values`` (one array of ``shape`` per agent) as one float64 array of
    ``(len(values), *shape)``, or None when some value is not a buffer of exactly that shape and a
    native real or integer dtype (lists, bools, complex, byte-swapped data:
    the caller's general path handles and names them).  float64 holds every
    float32, and every integer a Box can bound, exactly."""
    out = np.empty((len(values), *shape))
    kinds = gather_rows(values, out, tuple(shape))
    return None if kinds is None else out


def gather_in_box(values: list | dict, low: np.ndarray, high: np.ndarray, finite: bool,
                  names: list | None = None) -> tuple | None:
    """:func:`gather_actions` for a Box's ``low`` and ``high`` (float64 arrays of its shape), checking the
    bounds in the same C pass: ``(rows, inside)``, where ``inside`` says that every element lies within
    the bounds (so none is NaN) and, with ``finite``, is finite; None as for :func:`gather_actions`.

    With ``names``, ``values`` is a dict and row ``i`` is ``values[names[i]]`` (None too when a name
    has no value): a dict built in the names' order is read in one walk, without a lookup per name."""
    out = np.empty((len(values) if names is None else len(names), *low.shape))
    kinds = gather_rows(values, out, low.shape, low, high, finite, names)
    return None if kinds is None else (out, bool(kinds & 4))


class _Recycled:
    """Dicts handed out as copies of a few kept ones, whose values are reused
    once nothing outside refers to them.  A training loop holds the previous
    step's dicts while it steps, so the kept ones take turns (:attr:`SLOTS`);
    one found held is left to its holders and a new one takes its place.
    The check is exact in CPython: every reference counts."""

    SLOTS = 2

    def __init__(self) -> None:
        self._names = None
        self._slots: list = []
        self._turn = 0

    def _slot(self, names, make, held):
        """The slot whose turn it is, for ``names`` (an object standing for
        one set of agents: another one drops every slot)."""
        if names is not self._names:
            self._names, self._slots, self._turn = names, [], 0
        turn = self._turn % self.SLOTS
        self._turn += 1
        if turn < len(self._slots) and not held(self._slots[turn]):
            return self._slots[turn]
        slot = make()
        if turn < len(self._slots):
            self._slots[turn] = slot
        else:
            self._slots.append(slot)
        return slot


class InfoDicts(_Recycled):
    """``{name: {}}`` with an empty dict of its own per agent, reused only
    when nobody holds it and it is still empty."""

    def take(self, names: dict) -> dict:
        """``{name: {} for name in names}`` (``names``: a dict of the agents' names in order)."""
        return self._slot(names, lambda: empty_dicts(names), lambda infos: not unheld(infos, True)).copy()


class FloatDicts(_Recycled):
    """``{name: float}`` per step, whose floats are reused once nobody holds them.

    Making 4,096 floats, looking up their keys and freeing them a step
    later costs some 15 times the copy of a dict: a kept dict whose floats
    only it refers to is given the new values in place instead (a float no
    one else holds cannot be seen to change), and handed out as a copy.
    (Handing out the kept dict itself would save the copy, but checking
    that its holder left it as it was walks its entries through the
    limited API's calls, which costs more than copying them.)
    """

    def take(self, names: dict, values: np.ndarray) -> dict:
        """``{name: float(values[i])}`` (``names``: a dict of the agents' names in row order)."""
        # a kept dict found unheld is refilled by the check itself: one pass over its floats
        slot = self._slot(names, lambda: float_dict(names, values), lambda kept: not refill_floats(kept, values))
        return slot.copy()


class RowViews(_Recycled):
    """Per-agent views of copies of a rows array, recycled once unheld.

    :meth:`take` copies the rows into a buffer and answers ``{name: row
    view}``.  A buffer is reused only when no object outside refers to it or
    to any of its views, so a dict, a row or a slice of a row that the
    caller keeps stays as it was.
    """

    def take(self, rows: np.ndarray, names: list, index=None) -> dict:
        """``{names[i]: copy of rows[index[i]]}`` (``rows`` itself when ``index`` is None)."""
        slot = self._slot(names, lambda: self._new_slot(rows, names), self._held)
        if index is None:
            np.copyto(slot[0], rows)
        else:
            np.take(rows, index, axis=0, out=slot[0])
        return slot[1].copy()

    @staticmethod
    def _new_slot(rows: np.ndarray, names: list) -> list:
        buf = np.empty((len(names), *rows.shape[1:]), rows.dtype)
        slot = [buf, dict(zip(names, buf)), 0]
        del buf  # the buffer's free count is read as _held reads it: through the slot alone
        slot[2] = RowViews._buffer_refs(slot)
        return slot

    @staticmethod
    def _buffer_refs(slot: list) -> int:
        return sys.getrefcount(slot[0])

    @staticmethod
    def _held(slot: list) -> bool:
        # a view of a view (obs[a][:2], obs[a].reshape(...)) refers to the buffer, not to obs[a]
        return RowViews._buffer_refs(slot) != slot[2] or not unheld(slot[1], False)
