"""Plumbing shared by SEER's PettingZoo environments: argument checks,
action validation, seeding and the AEC factory."""

from __future__ import annotations

import numbers
from typing import Any, Mapping

import gymnasium
import numpy as np
from pettingzoo import ParallelEnv
from pettingzoo.utils import parallel_to_aec, wrappers


def check_workers(workers: Any) -> int | str:
    if workers == "auto":
        return workers
    if not isinstance(workers, numbers.Integral) or isinstance(workers, bool) or workers < 1:
        raise ValueError(f'workers={workers!r} is invalid: expected "auto" or an integer >= 1')
    return int(workers)


def check_render_mode(render_mode: Any, modes) -> Any:
    if render_mode is not None and render_mode not in modes:
        raise ValueError(f"render_mode={render_mode!r} is invalid: expected None or one of {list(modes)}")
    return render_mode


def check_int(name: str, value: Any, lo: int, hi: int | None = None) -> int:
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < lo or (hi is not None and value > hi):
        bound = f"an integer >= {lo}" if hi is None else f"an integer in [{lo}, {hi}]"
        raise ValueError(f"{name}={value!r} is invalid: expected {bound}")
    return int(value)


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


def validate_actions(actions: Any, live_agents, action_space_of) -> None:
    """Raise a ValueError naming the agent and the value for any bad action.

    Every live agent must have an action; keys that are not live agents (dead
    or unknown) are errors, as silently dropping them hides bugs in a policy.
    """
    if not isinstance(actions, Mapping):
        raise TypeError(f"actions must be a dict of agent -> action, got {type(actions).__name__}")
    live = set(live_agents)
    unknown = [a for a in actions if a not in live]
    if unknown:
        raise ValueError(f"actions name agents {unknown!r} that are not live; live agents are {sorted(live)[:8]}...")
    missing = [a for a in live_agents if a not in actions]
    if missing:
        raise ValueError(f"actions are missing for agents {missing[:8]!r}: every live agent needs an action")
    for agent, action in actions.items():
        space = action_space_of(agent)
        if isinstance(space, gymnasium.spaces.Box):
            arr = np.asarray(action)
            if arr.shape != space.shape:
                raise ValueError(f"action of {agent!r} has shape {arr.shape}: expected {space.shape}")
            if arr.dtype.kind not in "fiu":
                raise ValueError(f"action of {agent!r} has dtype {arr.dtype}: expected a real dtype")
            if not np.all(np.isfinite(arr)):
                raise ValueError(f"action of {agent!r} is {arr.tolist()}: NaN or inf is not allowed")
            if np.any(arr < space.low) or np.any(arr > space.high):
                raise ValueError(
                    f"action of {agent!r} is {arr.tolist()}: outside the action space [{space.low.min()}, "
                    f"{space.high.max()}]"
                )
        elif isinstance(space, gymnasium.spaces.Discrete):
            if isinstance(action, np.ndarray) and action.shape == ():
                action = action.item()
            if not isinstance(action, numbers.Integral) or isinstance(action, bool) or not space.contains(action):
                raise ValueError(
                    f"action of {agent!r} is {action!r}: expected an integer in [{space.start}, "
                    f"{space.start + space.n - 1}]"
                )
        elif not space.contains(action):
            raise ValueError(f"action of {agent!r} is {action!r}: not in {space}")


def seed_from(seed: Any, np_random: np.random.Generator | None) -> int:
    """An explicit seed, or a fresh one drawn from the env's generator."""
    if seed is None:
        rng = np_random if np_random is not None else np.random.default_rng()
        return int(rng.integers(0, 2**31 - 1))
    if not isinstance(seed, numbers.Integral) or isinstance(seed, bool) or not 0 <= seed < 2**64:
        raise ValueError(f"seed={seed!r} is invalid: expected None or an integer in [0, 2**64)")
    return int(seed)


def make_aec(parallel_env_cls, **kwargs):
    """The AEC version of a ParallelEnv, with PettingZoo's usual safety wrappers."""
    env = parallel_to_aec(parallel_env_cls(**kwargs))
    env = wrappers.OrderEnforcingWrapper(env)
    return env


class ClosingParallelEnv(ParallelEnv):
    """ParallelEnv whose runtime is closed with it and when collected."""

    _runtime = None

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
