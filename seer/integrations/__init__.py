"""Adapters that feed SEER's vector envs to the trainers people use.

Each adapter is an optional extra, imported only when asked for, so that
``import seer`` never pulls in torch or Ray:

- :mod:`seer.integrations.sb3`: a Stable-Baselines3 ``VecEnv`` over
  :func:`seer.vector.make`, and PPO/A2C whose rollout buffers leave out the
  rows of dead and padded agents (``pip install 'seer-marl[sb3]'``).
- :mod:`seer.integrations.torchrl`: a batched TorchRL ``EnvBase`` over
  :func:`seer.vector.make`, with the agents of each copy as a group and
  SEER's masks as TensorDict entries (``pip install 'seer-marl[torchrl]'``).
- :mod:`seer.integrations.benchmarl`: any registered SEER env as a
  BenchMARL task, stepping on :mod:`seer.integrations.torchrl`'s vector
  env (``pip install 'seer-marl[benchmarl]'``).
- :mod:`seer.integrations.rllib`: RLlib env runners fed by
  :func:`seer.vector.make` (``pip install 'seer-marl[rllib]'``).

A missing library raises an ``ImportError`` that names the extra to install.
"""

from __future__ import annotations

import importlib

__all__ = ["sb3", "torchrl", "benchmarl", "rllib", "require"]

_SUBMODULES = ("sb3", "torchrl", "benchmarl", "rllib")


def require(module: str, extra: str, what: str):
    """Import ``module`` or raise an ImportError naming the extra that installs it.

    Args:
        module: The module to import (``"stable_baselines3"``).
        extra: SEER's extra that installs it (``"sb3"``).
        what: The adapter that needs it, for the message.

    Returns:
        The imported module.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(
            f"{what} needs {module!r}, which is not installed ({exc}): pip install 'seer-marl[{extra}]'"
        ) from exc


def __getattr__(name):  # the adapters import their library only when first used
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
