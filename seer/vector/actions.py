"""Checking a vector step's actions: shape, dtype, and every live row's value in its agent's space (`ActionCheck`).

One checker per vector env, shared by :class:`~seer.vector.SeerVectorEnv`
(``step``, ``send``) and the Ray shards' batched rollouts, so that an
action is refused with the same message wherever it is checked.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from gymnasium import spaces

from seer.vector._layout import CopySpec, Layout, row_bounds


class ActionCheck:
    """The action check of the rows of ``layout``.

    Args:
        layout: The rows (their action space, copies and agent slots).
        specs: Each copy's agents and spaces (a padded agent's own bounds
            are checked, not the padded space's).
    """

    def __init__(self, layout: Layout, specs: Sequence[CopySpec]):
        self.space = layout.act_space
        self.num_copies, self.slots = layout.num_copies, layout.slots
        self.shape = (layout.rows, *self.space.shape)
        self.row_agents = [a for agents in layout.agents for a in agents + [None] * (layout.slots - len(agents))]
        self._bounds = row_bounds(layout, specs)
        # the same finite bounds on every row: one min and one max check every
        # row at once (NaN fails both; only a failure looks at the live rows)
        self._uniform_bounds = None
        if self._bounds is not None:
            lo, hi = self._bounds
            if np.isfinite(lo).all() and np.isfinite(hi).all() and (lo == lo.min()).all() and (hi == hi.max()).all():
                self._uniform_bounds = (float(lo.min()), float(hi.max()))

    def check_dtype(self, a: np.ndarray) -> None:
        """Raise ValueError unless ``a``'s dtype kind fits the action space (integers for discrete spaces)."""
        space = self.space
        discrete = isinstance(space, (spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary))
        if discrete and a.dtype.kind not in "iub":
            raise ValueError(f"actions have dtype {a.dtype}: {space} needs integer actions")
        if not discrete and a.dtype.kind not in "fiu":
            raise ValueError(f"actions have dtype {a.dtype}: expected a real dtype for {space}")

    def check(self, actions, alive: np.ndarray, values: bool = True) -> np.ndarray:
        """``actions`` as an array of the right shape and dtype kind, and
        (``values``) the value of every row in ``alive`` in its space.

        Raises:
            ValueError: naming the shape, the dtype, or the first bad row
                (its copy, agent and value) and what was expected.
        """
        space = self.space
        a = np.asarray(actions)
        want = self.shape
        if a.shape != want:
            raise ValueError(
                f"actions has shape {a.shape}: expected {want}, one row per agent slot "
                f"({self.num_copies} copies x {self.slots} agents{' x ' + str(space.shape) if space.shape else ''})"
            )
        self.check_dtype(a)
        if not values:
            return a
        ub = self._uniform_bounds
        if ub is not None and a.size:
            if ub[0] == -ub[1]:  # symmetric: one pass (NaN fails it too)
                if np.abs(a).max() <= ub[1]:
                    return a
            elif a.min() >= ub[0] and a.max() <= ub[1]:
                return a
        live = alive
        if not live.any():
            return a
        v = a[live]
        if isinstance(space, spaces.Box):
            low, high = self._bounds
            bad = ~np.isfinite(v) | (v < low[live]) | (v > high[live])
        elif isinstance(space, spaces.Discrete):
            bad = (v < space.start) | (v >= space.start + space.n)
        elif isinstance(space, spaces.MultiDiscrete):
            bad = (v < space.start) | (v >= space.start + space.nvec)
        else:
            bad = (v != 0) & (v != 1)
        if bad.ndim > 1:
            bad = bad.reshape(len(v), -1).any(axis=1)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            r = int(np.flatnonzero(live)[i])
            c = r // self.slots
            val = a[r]
            if isinstance(space, spaces.Box):
                lo, hi = self._bounds
                expect = f"finite values in [{lo[r].min()}, {hi[r].max()}]"
            elif isinstance(space, spaces.Discrete):
                expect = f"an integer in [{space.start}, {space.start + space.n - 1}]"
            else:
                expect = f"a value in {space}"
            raise ValueError(
                f"action of row {r} (copy {c}, agent {self.row_agents[r]!r}) is "
                f"{np.asarray(val).tolist()!r}: expected {expect} "
                f"({int(bad.sum())} live rows are bad)"
            )
        return a


def masked_choice(mask: np.ndarray, rng: np.random.Generator, live: np.ndarray | None = None) -> np.ndarray:
    """A uniform pick among each row's True entries of ``mask`` (bool, rows x n), as int64
    indices; 0 for a row without one, and for the rows that ``live`` (bool, one per row) leaves out.

    The pick is the entry with the largest of iid uniform draws, one per entry:
    ``np.where(mask & live[:, None], rng.random(mask.shape), -1.0).argmax(axis=1)``, the same
    indices from the same ``rng`` state, which it leaves as that would.  It writes the -1s into
    the draws in place, and for a wide mask (chess: 4672 actions a row) only into the live rows':
    the temporaries of the one-line form cost more than the draws there.
    """
    draws = rng.random(mask.shape)
    if live is not None and draws.nbytes > 1 << 16:
        rows = np.flatnonzero(live)
        sub = draws[rows]
        np.copyto(sub, -1.0, where=~mask[rows])
        out = np.zeros(len(mask), np.int64)
        out[rows] = sub.argmax(axis=1)
        return out
    np.copyto(draws, -1.0, where=~(mask if live is None else mask & live[:, None]))
    return draws.argmax(axis=1).astype(np.int64, copy=False)
