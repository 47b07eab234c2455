"""The native copy protocol: how an env hands seer.vector a C step of its whole copy (`NativeSpec`, `NativeCopy`).

An env whose whole step runs in C declares its rows once, in a
:class:`NativeSpec` (the agents, one observation Box, one action space), and
derives its PettingZoo spaces from it.  Its ``seer_native_copy()`` method
returns a :class:`NativeCopy`: the spec, the C function
``int step(void *env, const seer_copy_rows *rows, int32_t op)`` and the
env's C struct.  seer.vector's thread backend then steps such copies in C
with the GIL released, the process backend's workers and Ray shards through
the same function; the action check runs in C against the spec's bounds.

Example::

    SPEC = NativeSpec(agents=["a0", "a1"],
                      observation=spaces.Box(-1, 1, (4,), np.float32),
                      action=spaces.Discrete(3))

    class MyEnv(ParallelEnv):
        def observation_space(self, agent): return SPEC.observation
        def action_space(self, agent): return SPEC.action
        def seer_native_copy(self):
            return NativeCopy(SPEC, step=plugin.function("my_copy_step"), state=self._c_struct,
                              error=self._raise_status)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any, Callable, Sequence

import numpy as np
from gymnasium import spaces

from seer._debug import debug_address, resolve_debug
from seer.capi import address_of, pointer_address
from seer.errors import InvalidArgumentError

#: C action checks (seer_vec_copies.act_kind in csrc/seer_vector.h)
ACT_NONE, ACT_BOX_F32, ACT_BOX_F64, ACT_INT64 = 0, 1, 2, 3
_OBS_DTYPES = (np.float32, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8)


@dataclasses.dataclass(frozen=True, eq=False)
class NativeSpec:
    """The rows of one env copy, declared once.

    Args:
        agents: The copy's ``possible_agents``: one row each, in this order.
        observation: Every agent's observation space: a Box of a numeric dtype.
        action: Every agent's action space: a Box (float32 or float64,
            per-dimension bounds), a Discrete, or a MultiDiscrete (int64).

    Raises:
        seer.InvalidArgumentError: naming the field and what is supported.
    """

    agents: Sequence[str]
    observation: spaces.Box
    action: spaces.Space

    def __post_init__(self):
        expected = "expected a list of distinct agent names (non-empty strings), one row each"
        raw = self.agents
        # a string is a sequence too: "abc" would make the agents "a", "b" and "c"
        if isinstance(raw, (str, bytes)) or not isinstance(raw, Iterable):
            raise InvalidArgumentError(f"NativeSpec.agents={raw!r} is invalid: {expected}")
        agents = list(raw)
        bad = [a for a in agents if not isinstance(a, str) or not a]
        if bad:
            raise InvalidArgumentError(f"NativeSpec.agents={agents!r} is invalid: {bad[0]!r} is not an agent name; "
                                       f"{expected}")
        if not agents or len(set(agents)) != len(agents):
            raise InvalidArgumentError(f"NativeSpec.agents={agents!r} is invalid: {expected}")
        object.__setattr__(self, "agents", tuple(agents))
        obs = self.observation
        if not isinstance(obs, spaces.Box) or obs.dtype not in [np.dtype(d) for d in _OBS_DTYPES]:
            raise InvalidArgumentError(
                f"NativeSpec.observation={obs!r} is not supported: expected a Box of "
                f"{[np.dtype(d).name for d in _OBS_DTYPES]}")
        act = self.action
        ok = (isinstance(act, spaces.Box) and act.dtype in (np.float32, np.float64)) or \
            isinstance(act, spaces.Discrete) or (isinstance(act, spaces.MultiDiscrete) and act.dtype == np.int64)
        if not ok:
            raise InvalidArgumentError(
                f"NativeSpec.action={act!r} is not supported: expected a float32/float64 Box, a Discrete or an "
                f"int64 MultiDiscrete")

    @property
    def slots(self) -> int:
        return len(self.agents)

    @property
    def obs_row_bytes(self) -> int:
        return int(np.prod(self.observation.shape, dtype=np.int64)) * self.observation.dtype.itemsize

    @property
    def act_row_bytes(self) -> int:
        act = self.action
        if isinstance(act, spaces.Discrete):
            return 8
        return int(np.prod(act.shape, dtype=np.int64)) * act.dtype.itemsize

    def action_check(self) -> tuple[int, np.ndarray, np.ndarray]:
        """(kind, low, high) of the C action check: per value of a row,
        float64 bounds (inclusive; a NaN action fails)."""
        act = self.action
        if isinstance(act, spaces.Box):
            kind = ACT_BOX_F32 if act.dtype == np.float32 else ACT_BOX_F64
            # finite bounds: an infinite action fails as in the numpy check
            big = np.finfo(np.float64).max
            return (kind, np.clip(act.low.astype(np.float64).ravel(), -big, big),
                    np.clip(act.high.astype(np.float64).ravel(), -big, big))
        if isinstance(act, spaces.Discrete):
            lo = float(act.start)
            return ACT_INT64, np.array([lo]), np.array([lo + float(act.n) - 1])
        start = getattr(act, "start", None)
        start = np.zeros(act.shape, np.int64) if start is None else np.asarray(start, np.int64)
        return ACT_INT64, start.astype(np.float64).ravel(), (start + act.nvec - 1).astype(np.float64).ravel()

    def matches(self, obs_space, act_space, slots: int) -> str | None:
        """Why rows of (obs_space, act_space, slots) cannot hold this spec's
        copy, or None when they can."""
        if slots != self.slots:
            return f"the rows have {slots} slots per copy, the spec {self.slots} agents"
        if obs_space != self.observation:
            return f"the rows' observation space is {obs_space}, the spec's {self.observation}"
        if act_space != self.action:
            return f"the rows' action space is {act_space}, the spec's {self.action}"
        return None


@dataclasses.dataclass(eq=False)
class NativeCopy:
    """One env copy's native step, handed to seer.vector by ``env.seer_native_copy()``.

    Args:
        spec: The copy's rows (the env's spaces must be the spec's).
        step: ``int step(void *env, const seer_copy_rows *rows, int32_t op)``:
            a cffi function pointer, an address, a ctypes function or a Numba
            cfunc.  ``op`` is ``SEER_COPY_STEP`` or ``SEER_COPY_AUTORESET``;
            return ``SEER_E_UNSUPPORTED`` for an op the env leaves to Python
            (seer.vector then calls the env's ``reset``).
        state: The env's C struct (``void *env`` of ``step``): a cffi pointer
            of any module or an address; kept alive by ``owner``.
        autoreset: Whether ``step`` runs ``SEER_COPY_AUTORESET`` (a reset
            with the env's next seed); if not, seer.vector resets the copy
            through the env's ``reset``.
        error: ``error(status)`` returns the exception for a failed step's
            status (default: a :class:`seer.HandlerError` naming it).
        owner: What keeps ``step`` and ``state`` alive (default: the env).
        debug: Debug mode (None: on with ``SEER_DEBUG=1``): a ``seer.numba``
            copy step then runs its variant with bounds checks, so an
            out-of-range index fails the step as a :class:`seer.HandlerError`.
        sync: ``sync(obs, rew, term, trunc, mask, alive)``, called with the
            copy's rows (read-only views) before seer.vector hands the env
            to a ``call``, ``get_attr`` or ``render``: native steps write
            seer.vector's rows, not the env's, so an env that answers from
            its own rows (``state()``, ``agents``) takes them here.
    """

    spec: NativeSpec
    step: Any
    state: Any
    autoreset: bool = True
    error: Callable[[int], BaseException] | None = None
    owner: Any = None
    debug: bool | None = None
    sync: Callable[..., None] | None = None

    def __post_init__(self):
        if not isinstance(self.spec, NativeSpec):
            raise InvalidArgumentError(f"NativeCopy.spec must be a seer.vector.NativeSpec, got {self.spec!r}")
        self.debug = resolve_debug(self.debug)
        checked = debug_address(self.step) if self.debug else None
        self.step_address = address_of(self.step if checked is None else checked, "NativeCopy.step")
        self.state_address = pointer_address(self.state, "NativeCopy.state")
        if self.state_address == 0:
            raise InvalidArgumentError("NativeCopy.state is NULL: expected the env's C struct")
        check = getattr(self.step, "check_native_model", None)
        if check is not None:  # a seer.numba copy step: the state must be bound by its State
            check(self.state, "NativeCopy.step")

    def error_for(self, status: int) -> BaseException:
        from seer import _native_errors
        from seer.errors import HandlerError

        said = _native_errors.take(self.state_address)  # a compiled (seer.numba) step that raised
        if said is not None and said[1] is not None:
            exc = said[1]
            err = HandlerError(f"the native copy step raised {type(exc).__name__}: {exc}",
                               code=status)
            err.__cause__ = exc
            return err
        if self.error is not None:
            return self.error(status)
        return HandlerError(f"the native copy step failed with status {status}", code=status)
