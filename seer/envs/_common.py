"""Plumbing shared by SEER's PettingZoo environments: argument checks and the AEC factories
(the rest of an env's plumbing is :class:`seer.NativeEnv`'s)."""

from __future__ import annotations

import numbers
from typing import Any, Mapping

from pettingzoo.utils import wrappers
from pettingzoo.utils.conversions import parallel_to_aec_wrapper


def check_int(name: str, value: Any, lo: int, hi: int | None = None) -> int:
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < lo or (hi is not None and value > hi):
        bound = f"an integer >= {lo}" if hi is None else f"an integer in [{lo}, {hi}]"
        raise ValueError(f"{name}={value!r} is invalid: expected {bound}")
    return int(value)


def check_scenario(scenario: Any, scenarios: Mapping[str, Any]):
    if scenario not in scenarios:
        raise ValueError(f"scenario={scenario!r} is unknown: expected one of {sorted(scenarios)}")
    return scenarios[scenario]


def make_raw_aec(parallel_env_cls, **kwargs):
    """PettingZoo's ``raw_env``: the AEC version of a ParallelEnv, unwrapped.

    ``parallel_to_aec_wrapper`` is the conversion itself: PettingZoo's
    ``parallel_to_aec`` adds an order-enforcing wrapper, which ``env`` adds.
    """
    return parallel_to_aec_wrapper(parallel_env_cls(**kwargs))


def make_aec(parallel_env_cls, **kwargs):
    """PettingZoo's ``env``: the AEC version of a ParallelEnv, with the usual order-enforcing wrapper."""
    return wrappers.OrderEnforcingWrapper(make_raw_aec(parallel_env_cls, **kwargs))
