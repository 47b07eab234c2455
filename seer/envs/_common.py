"""Plumbing shared by SEER's PettingZoo environments: argument checks,
action validation, seeding, native-step errors, the AEC factories and the
``make_traced`` hook's result."""

from __future__ import annotations

import numbers
from typing import Any, Mapping

import numpy as np
from pettingzoo import ParallelEnv
from pettingzoo.utils import wrappers
from pettingzoo.utils.conversions import parallel_to_aec_wrapper

from seer._checks import check_workers  # noqa: F401  (re-exported for the envs)
from seer.actions import validate_actions  # noqa: F401  (re-exported for the envs)
from seer.errors import HandlerError


def check_render_mode(render_mode: Any, modes) -> Any:
    if render_mode is not None and render_mode not in modes:
        raise ValueError(f"render_mode={render_mode!r} is invalid: expected None or one of {list(modes)}")
    return render_mode


def check_int(name: str, value: Any, lo: int, hi: int | None = None) -> int:
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < lo or (hi is not None and value > hi):
        bound = f"an integer >= {lo}" if hi is None else f"an integer in [{lo}, {hi}]"
        raise ValueError(f"{name}={value!r} is invalid: expected {bound}")
    return int(value)


def check_bool(name: str, value: Any) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name}={value!r} is invalid: expected True or False")
    return bool(value)


def check_float(name: str, value: Any, lo: float, *, open_lo: bool = False) -> float:
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and np.isfinite(value)
    if not ok or value < lo or (open_lo and value == lo):
        rel = ">" if open_lo else ">="
        raise ValueError(f"{name}={value!r} is invalid: expected a finite number {rel} {lo}")
    return float(value)


def check_scenario(scenario: Any, scenarios: Mapping[str, Any]):
    if scenario not in scenarios:
        raise ValueError(f"scenario={scenario!r} is unknown: expected one of {sorted(scenarios)}")
    return scenarios[scenario]


def seed_from(seed: Any, np_random: np.random.Generator | None) -> int:
    """An explicit seed, or a fresh one drawn from the env's generator."""
    if seed is None:
        rng = np_random if np_random is not None else np.random.default_rng()
        return int(rng.integers(0, 2**31 - 1))
    if not isinstance(seed, numbers.Integral) or isinstance(seed, bool) or not 0 <= seed < 2**64:
        raise ValueError(f"seed={seed!r} is invalid: expected None or an integer in [0, 2**64)")
    return int(seed)


def make_raw_aec(parallel_env_cls, **kwargs):
    """PettingZoo's ``raw_env``: the AEC version of a ParallelEnv, unwrapped.

    ``parallel_to_aec_wrapper`` is the conversion itself: PettingZoo's
    ``parallel_to_aec`` adds an order-enforcing wrapper, which ``env`` adds.
    """
    return parallel_to_aec_wrapper(parallel_env_cls(**kwargs))


def make_aec(parallel_env_cls, **kwargs):
    """PettingZoo's ``env``: the AEC version of a ParallelEnv, with the usual order-enforcing wrapper."""
    return wrappers.OrderEnforcingWrapper(make_raw_aec(parallel_env_cls, **kwargs))


def native_error(runtime, rc: int) -> BaseException:
    """The error behind status ``rc`` of an env's native step on ``runtime``:
    the one the runtime records (a handler's), else a HandlerError."""
    try:
        runtime.fail(rc)
    except BaseException as exc:
        return exc
    return HandlerError(f"the native step failed with status {rc}")


def traced(core, step):
    """What an env's ``make_traced`` hook returns (the hook ``seer trace <env>``
    uses; see :mod:`seer.registry`) for ``core``, the env's engine on a
    runtime built with ``trace=True``: it is reset with seed 0 here.

    Args:
        core: Has ``runtime``, ``reset(seed)`` and ``close()``.
        step: ``step()`` advances ``core`` one env step and returns the
            number of events it ran.

    Returns:
        ``(runtime, step, close)``: ``close()`` frees the runtime.
    """
    core.reset(0)
    return core.runtime, step, core.close


class ClosingParallelEnv(ParallelEnv):
    """ParallelEnv whose runtime is closed with it and when collected."""

    _runtime = None

    @property
    def runtime(self):
        """The :class:`seer.Runtime` this env steps (None with
        ``engine="reference"``): for its :meth:`~seer.Runtime.pool_stats`,
        :attr:`~seer.Runtime.trace` and pool size.  The env steps and resets
        it; stepping, resetting or resizing it yourself desynchronizes them.

        Example:
            >>> from seer.envs import uav_swarm_v0
            >>> with uav_swarm_v0.parallel_env(scenario="small", workers=2) as env:
            ...     _ = env.reset(seed=0)
            ...     with env.runtime.pool_stats() as stats:
            ...         _ = env.step({a: env.action_space(a).sample() for a in env.agents})
            >>> stats.steps
            1
        """
        return self._runtime

    def close(self) -> None:
        if self._runtime is not None:
            self._runtime.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
