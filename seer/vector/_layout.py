"""Rows, spaces and buffers of :mod:`seer.vector`.

One row per agent slot: row ``c * A + j`` holds agent ``j`` (in
``possible_agents`` order) of copy ``c``, ``A`` being the largest number of
possible agents of any copy.  Every per-row quantity lives in one flat numpy
array (observations, actions, rewards, ...); both backends share this layout,
the process backend places the arrays in one shared-memory block.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import gymnasium
import numpy as np
from gymnasium import spaces

from seer.errors import SpaceMismatchError

ARRAY_SPACES = (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)
ALIGN = 64



@dataclasses.dataclass
class CopySpec:
    """What a worker reports about one env copy after creating it."""

    possible_agents: list
    obs_spaces: list  # per possible agent
    act_spaces: list
    metadata: dict
    render_mode: Any


def describe_copy(env) -> CopySpec:
    agents = list(env.possible_agents)
    if not agents:
        raise ValueError(f"{env!r} has no possible_agents: a vector env needs at least one agent")
    # a seer.NativeEnv's agents all have its spec's spaces: one object for all, which unify() takes at
    # a glance, where asking each of 65,536 agents and comparing their spaces took seconds
    shared = getattr(env, "_shared_spaces", None)
    shared = shared() if callable(shared) else None
    if shared is not None:
        obs_spaces, act_spaces = [shared[0]] * len(agents), [shared[1]] * len(agents)
    else:
        obs_spaces, act_spaces = [env.observation_space(a) for a in agents], [env.action_space(a) for a in agents]
    return CopySpec(
        possible_agents=agents,
        obs_spaces=obs_spaces,
        act_spaces=act_spaces,
        metadata=dict(getattr(env, "metadata", {}) or {}),
        render_mode=getattr(env, "render_mode", None),
    )


def equal_spaces(a, b, memo: dict) -> bool:
    """``a == b``, compared once per pair of objects (``memo``, kept by the caller for one pass, while the
    spaces live): the copies of a vector env list one space object for thousands of agents, and
    comparing two Boxes' bounds is some 30 us."""
    if a is b:
        return True
    key = (id(a), id(b))
    same = memo.get(key)
    if same is None:
        same = memo[key] = bool(a == b)
    return same


def _space_kind(space) -> str:
    for cls in ARRAY_SPACES:
        if type(space) is cls or isinstance(space, cls):
            return cls.__name__
    return type(space).__name__


def _check_array_space(what: str, agent, space) -> None:
    if not isinstance(space, ARRAY_SPACES):
        raise SpaceMismatchError(
            f"the {what} space of agent {agent!r} is {space}: seer.vector supports Box, Discrete, MultiDiscrete and "
            f"MultiBinary spaces, and Dict({{'observation': ..., 'action_mask': ...}}) observations (the action "
            f"mask goes to infos['action_mask']); flatten other Dict/Tuple spaces first, e.g. with "
            f"gymnasium.spaces.flatten"
        )


#: The keys of an observation that carries its agent's legal actions (pettingzoo.classic's layout).
MASKED_KEYS = frozenset({"observation", "action_mask"})


def action_mask_part(space) -> tuple[Any, int] | None:
    """(the observation part, the mask's length) of an observation space
    ``Dict(observation=..., action_mask=Box((n,)))``; None for any other space."""
    if not isinstance(space, spaces.Dict) or set(space.spaces) != MASKED_KEYS:
        return None
    mask = space["action_mask"]
    if not isinstance(mask, (spaces.Box, spaces.MultiBinary)) or len(mask.shape) != 1:
        return None
    return space["observation"], int(mask.shape[0])


@dataclasses.dataclass
class Pad:
    """How one agent's value sits in a padded row: ``region`` indexes the row,
    ``shape`` is the agent's own shape (``reshape`` when the row is flattened),
    ``n`` the agent's Discrete size."""

    region: tuple | None = None
    shape: tuple | None = None
    flat: bool = False
    n: int | None = None
    start: int = 0


def _pad_boxes(what: str, named: Sequence[tuple[Any, spaces.Box]], action: bool):
    """A Box that holds every agent's Box in its leading corner (same ndim) or,
    when the ranks differ, in the start of a flat vector."""
    shapes = [s.shape for _, s in named]
    flat = len({len(sh) for sh in shapes}) > 1
    if flat:
        shape = (max(int(np.prod(sh)) for sh in shapes),)
    else:
        shape = tuple(int(max(d)) for d in zip(*shapes)) if shapes[0] else ()
    dtype = np.result_type(*[s.dtype for _, s in named])
    # bounds of the padding: 0 for observations (what is written there), the
    # union of the agents' bounds for actions (ignored by the env)
    low = np.full(shape, np.inf, np.float64)
    high = np.full(shape, -np.inf, np.float64)
    pads = []
    for _, s in named:
        if flat:
            region = (slice(0, int(np.prod(s.shape))),)
            lo, hi = s.low.reshape(-1), s.high.reshape(-1)
        else:
            region = tuple(slice(0, d) for d in s.shape)
            lo, hi = s.low, s.high
        low[region] = np.minimum(low[region], lo)
        high[region] = np.maximum(high[region], hi)
        pads.append(Pad(region=region, shape=s.shape, flat=flat))
    untouched = low > high
    if action:
        low[untouched], high[untouched] = 0.0, 0.0
    else:
        for p in pads:  # padding cells read 0
            cover = np.zeros(shape, bool)
            cover[p.region] = True
            low[~cover] = np.minimum(low[~cover], 0.0)
            high[~cover] = np.maximum(high[~cover], 0.0)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        low, high = np.clip(low, info.min, info.max), np.clip(high, info.min, info.max)
    return spaces.Box(low.astype(dtype), high.astype(dtype), shape, dtype), pads


def unify(what: str, named: Sequence[tuple[Any, Any]], pad: bool, action: bool):
    """The one space all rows use, plus per-agent :class:`Pad` (None when no
    agent needs padding).  ``named`` is ``[(agent label, space), ...]``."""
    for agent, space in named:
        _check_array_space(what, agent, space)
    first_agent, first = named[0]
    memo: dict = {}
    differ = [(a, s) for a, s in named if not equal_spaces(s, first, memo)]
    if not differ:
        return first, None
    a2, s2 = differ[0]
    if not pad:
        raise SpaceMismatchError(
            f"agents have different {what} spaces ({first_agent!r}: {first}, {a2!r}: {s2}); rows of one "
            f"vector env need one space: pass pad=True to pad them (Box to the largest shape, Discrete to the "
            f"largest n) or give the agents equal spaces"
        )
    kinds = {_space_kind(s) for _, s in named}
    if kinds == {"Box"}:
        return _pad_boxes(what, named, action)
    if kinds == {"Discrete"}:
        starts = {int(s.start) for _, s in named}
        if len(starts) > 1:
            raise SpaceMismatchError(f"pad=True cannot pad Discrete {what} spaces with different starts {sorted(starts)}")
        start = starts.pop()
        n = max(int(s.n) for _, s in named)
        return spaces.Discrete(n, start=start), [Pad(n=int(s.n), start=start) for _, s in named]
    raise SpaceMismatchError(
        f"pad=True pads Box or Discrete {what} spaces, not a mix of {sorted(kinds)} ({first_agent!r}: {first}, "
        f"{a2!r}: {s2})"
    )


def array_spec(space) -> tuple[tuple, np.dtype]:
    """Shape and dtype of one row of ``space`` in a buffer."""
    if isinstance(space, spaces.Discrete):
        return (), np.dtype(np.int64)
    return tuple(space.shape), np.dtype(space.dtype)


@dataclasses.dataclass
class Layout:
    """Everything both backends agree on: rows, spaces, padding, buffers."""

    num_copies: int
    slots: int  # A: agent slots per copy
    agents: list  # per copy: possible_agents
    obs_space: Any
    act_space: Any
    obs_pads: list | None  # per copy: per slot Pad (None: no padding anywhere)
    act_pads: list | None
    same_step: bool  # SAME_STEP autoreset: final_obs buffer needed
    mask_n: int = 0  # observations carry action masks of this length (0: none)

    @property
    def rows(self) -> int:
        return self.num_copies * self.slots

    def fields(self) -> list[tuple[str, tuple, np.dtype]]:
        """(name, shape, dtype) of every buffer, in a fixed order."""
        R, C = self.rows, self.num_copies
        oshape, odt = array_spec(self.obs_space)
        ashape, adt = array_spec(self.act_space)
        f = [
            ("obs", (R, *oshape), odt),
            ("act", (R, *ashape), adt),
            ("rew", (R,), np.dtype(np.float64)),
            ("term", (R,), np.dtype(np.bool_)),
            ("trunc", (R,), np.dtype(np.bool_)),
            ("mask", (R,), np.dtype(np.bool_)),     # row acted in this step (its data is real)
            ("alive", (R,), np.dtype(np.bool_)),    # agent is live after the op
            ("ended", (C,), np.dtype(np.bool_)),    # copy's episode ended in this step
            ("restarted", (C,), np.dtype(np.bool_)),
            ("seeds", (C,), np.dtype(np.int64)),    # reset: seed of each copy ...
            ("seeded", (C,), np.dtype(np.bool_)),   # ... if set
            ("select", (C,), np.dtype(np.bool_)),   # reset: copies to reset
        ]
        if self.same_step:
            f.append(("final_obs", (R, *oshape), odt))
            f.append(("final_mask", (R,), np.dtype(np.bool_)))
        if self.mask_n:
            f.append(("action_mask", (R, self.mask_n), np.dtype(np.bool_)))  # legal actions of the row's agent
        return f

    def offsets(self) -> tuple[dict[str, int], int]:
        off, at = {}, 0
        for name, shape, dt in self.fields():
            off[name] = at
            at += int(np.prod(shape, dtype=np.int64)) * dt.itemsize
            at = (at + ALIGN - 1) // ALIGN * ALIGN
        return off, max(at, ALIGN)

    def allocate(self, buf=None) -> dict[str, np.ndarray]:
        """The buffers as numpy arrays, in ``buf`` (a writable buffer of at
        least :meth:`offsets`'s size) or freshly allocated."""
        off, size = self.offsets()
        if buf is None:
            buf = np.zeros(size, np.uint8)
        out = {}
        for name, shape, dt in self.fields():
            count = int(np.prod(shape, dtype=np.int64))
            out[name] = np.frombuffer(buf, dt, count, off[name]).reshape(shape)
        return out


def build_layout(specs: Sequence[CopySpec], pad: bool, same_step: bool) -> Layout:
    C = len(specs)
    A = max(len(s.possible_agents) for s in specs)
    obs_named, act_named, mask_ns = [], [], []
    for c, s in enumerate(specs):
        for a, os_, as_ in zip(s.possible_agents, s.obs_spaces, s.act_spaces):
            label = a if c == 0 else f"{a} (copy {c})"
            masked = action_mask_part(os_)
            if masked is not None:
                os_, n = masked
                mask_ns.append(n)
            obs_named.append((label, os_))
            act_named.append((label, as_))
    if mask_ns and len(mask_ns) != len(obs_named):
        raise SpaceMismatchError(
            f"{len(mask_ns)} of {len(obs_named)} agents observe Dict(observation=..., action_mask=...) and the "
            f"others not: rows of one vector env need one layout (give every agent an action mask, or none)")
    obs_space, obs_flat = unify("observation", obs_named, pad, action=False)
    act_space, act_flat = unify("action", act_named, pad, action=True)

    def per_copy(flat):
        if flat is None:
            return None
        out, i = [], 0
        for s in specs:
            n = len(s.possible_agents)
            out.append(flat[i:i + n])
            i += n
        return out

    return Layout(C, A, [list(s.possible_agents) for s in specs], obs_space, act_space,
                  per_copy(obs_flat), per_copy(act_flat), same_step, max(mask_ns, default=0))


def row_bounds(layout: Layout, specs: Sequence[CopySpec]):
    """Per-row action bounds for validation: (low, high) arrays of the row
    shape for Box actions (each agent's own bounds in its region, anything
    finite in the padding); None for other spaces (checked against the
    padded space)."""
    space = layout.act_space
    if not isinstance(space, spaces.Box):
        return None
    R, A = layout.rows, layout.slots
    low = np.full((R, *space.shape), -np.inf)
    high = np.full((R, *space.shape), np.inf)
    for c, s in enumerate(specs):
        for j, sp in enumerate(s.act_spaces):
            r = c * A + j
            if layout.act_pads is None:
                low[r], high[r] = space.low, space.high
            else:
                p = layout.act_pads[c][j]
                lo, hi = (sp.low.reshape(-1), sp.high.reshape(-1)) if p.flat else (sp.low, sp.high)
                low[r][p.region] = lo
                high[r][p.region] = hi
    return low, high


def batch(space, n: int):
    return gymnasium.vector.utils.batch_space(space, n)
