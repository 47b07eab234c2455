"""Checking a PettingZoo action dict against the agents' action spaces."""

from __future__ import annotations

import numbers
from typing import Any, Mapping

import gymnasium
import numpy as np


def validate_actions(actions: Any, live_agents, action_space_of, *, possible_agents=None,
                     strict: bool = False) -> None:
    """Raise a ValueError naming the agent and the value for any bad action.

    Every live agent must have an action.  A key naming an agent that left
    the episode is ignored, as PettingZoo's own converters do (the common
    loop ``{a: policy(obs[a]) for a in obs}`` still names an agent in the
    step it dies), unless ``strict``; a key naming no agent of the env at
    all (not in ``possible_agents``) is always an error.  Without
    ``possible_agents`` every key that is not live is an error.
    """
    if not isinstance(actions, Mapping):
        raise TypeError(f"actions must be a dict of agent -> action, got {type(actions).__name__}")
    live = set(live_agents)
    unknown = [a for a in actions if a not in live]
    if unknown and possible_agents is not None and not strict:
        unknown = [a for a in unknown if a not in possible_agents]
        if unknown:
            raise ValueError(f"actions name agents {unknown!r} that this env does not have; its agents are "
                             f"{list(possible_agents)[:8]}...")
    elif unknown:
        why = " (strict_actions=True: actions for agents that left are errors)" if strict else ""
        raise ValueError(f"actions name agents {unknown!r} that are not live{why}; live agents are "
                         f"{sorted(live)[:8]}...")
    missing = [a for a in live_agents if a not in actions]
    if missing:
        raise ValueError(f"actions are missing for agents {missing[:8]!r}: every live agent needs an action")
    for agent, action in actions.items():
        if agent not in live:  # an agent that left: its action is ignored, not checked
            continue
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
