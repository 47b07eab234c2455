"""TorchRL over ``seer.vector``: one batched ``EnvBase`` for all env copies.

>>> from seer.envs import uav_swarm_v0
>>> from seer.integrations.torchrl import SeerTorchRLEnv
>>> env = SeerTorchRLEnv(lambda: uav_swarm_v0.parallel_env(scenario="small"), 8)
>>> td = env.rollout(10)            # batch [8 copies, 10 steps]; td["agents", "observation"]: [8, 10, 8, 51]

**Why not PettingZooWrapper.**  TorchRL's ``PettingZooWrapper`` wraps one
env; several copies then need TorchRL's ``SerialEnv``/``ParallelEnv``, which
step them one by one or in processes with a TensorDict per copy per step.
Here the copies are stepped together by :func:`seer.vector.make` (SEER's
own envs: one C call for all copies on the thread backend) and their rows
land in one TensorDict without a per-agent Python loop.  Parallel
``PettingZooWrapper`` also ends (and resets) an episode as soon as one agent
is done by default (``done_on_any``); here a copy ends when all its agents
are gone.

**Layout.**  ``batch_size = [num_copies]``; the agents of a copy are one
group (default ``"agents"``), a nested TensorDict of shape
``[num_copies, agents_per_copy]`` holding:

- ``observation``, ``action`` (and after a step ``reward``, shape ``[..., 1]``);
- ``mask`` (bool): the agent acts at the next step (SEER's
  ``infos["alive"]``, as ``PettingZooWrapper(use_mask=True)``'s ``mask``).
  A transition is real iff its root ``("agents", "mask")`` is True: losses
  and advantages should be averaged over those only (dead agents, padded
  slots);
- ``done`` / ``terminated`` / ``truncated`` (``[..., 1]``): set in the step an
  agent leaves and kept set while it is gone, so an agent's last
  transition cuts GAE and its masked rows never feed a real one.

The root ``done`` of a copy is True once all its agents are gone; the copy
then waits for TorchRL's partial reset (``"_reset"``), as collectors do
(the SEER vector env runs with autoreset disabled).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
from gymnasium import spaces

from seer.integrations import require

require("torchrl", "torchrl", "seer.integrations.torchrl")

import torch  # noqa: E402
from tensordict import TensorDict, TensorDictBase  # noqa: E402
from torchrl.data import Bounded, Categorical, Composite, Unbounded  # noqa: E402
from torchrl.envs import EnvBase  # noqa: E402

__all__ = ["SeerTorchRLEnv"]


def _torch_dtype(dtype) -> torch.dtype:
    return torch.from_numpy(np.zeros(0, dtype)).dtype


class SeerTorchRLEnv(EnvBase):
    """A TorchRL ``EnvBase`` over ``seer.vector.make(env_fn, num_copies, ...)``.

    Args:
        env_fn: Makes one PettingZoo env copy (see :func:`seer.vector.make`),
            or an existing ``SeerVectorEnv`` made with
            ``autoreset_mode="disabled"`` (then ``num_copies`` must be None).
        num_copies: Env copies: the batch size.
        group: Name of the agent group in the TensorDict.
        clip_actions: Clip Box actions into their bounds before stepping
            (for Gaussian policies); otherwise an out-of-bounds action of a
            live agent raises, naming the row.
        device: Where the TensorDicts live (the env itself runs on the CPU).
        **make_kwargs: Passed to :func:`seer.vector.make` (``backend``,
            ``workers``, ``pad``, ...).
    """

    def __init__(self, env_fn: Callable[[], Any] | Any, num_copies: int | None = None, *, group: str = "agents",
                 clip_actions: bool = False, device: str | torch.device = "cpu", **make_kwargs):
        from gymnasium.vector import AutoresetMode

        import seer.vector

        if isinstance(env_fn, seer.vector.SeerVectorEnv):
            if num_copies is not None or make_kwargs:
                raise TypeError("num_copies and make() options are for an env_fn, not an existing SeerVectorEnv")
            envs = env_fn
            if envs.autoreset_mode != AutoresetMode.DISABLED:
                raise ValueError(f"the SeerVectorEnv has autoreset_mode={envs.autoreset_mode!r}: expected DISABLED "
                                 f"(TorchRL resets finished copies itself)")
        else:
            if num_copies is None:
                raise TypeError("num_copies is required with an env_fn")
            if make_kwargs.get("autoreset_mode", "disabled") not in ("disabled", AutoresetMode.DISABLED):
                raise ValueError(f"autoreset_mode={make_kwargs['autoreset_mode']!r}: expected DISABLED (TorchRL "
                                 f"resets finished copies itself)")
            make_kwargs["autoreset_mode"] = AutoresetMode.DISABLED
            envs = seer.vector.make(env_fn, num_copies, **make_kwargs)
        self.envs = envs
        C, A = envs.num_copies, envs.agents_per_copy
        super().__init__(device=device, batch_size=torch.Size([C]))
        self.group = group
        self.num_copies, self.agents_per_copy = C, A
        self.clip_actions = clip_actions
        self._seed: int | None = None
        self._term = np.zeros(C * A, bool)
        self._trunc = np.zeros(C * A, bool)
        self._alive = np.zeros(C * A, bool)
        self._started = False
        try:
            self._make_specs()
        except BaseException:
            envs.close()
            raise

    # ---- specs ---------------------------------------------------------------------------------

    def _make_specs(self) -> None:
        C, A, g = self.num_copies, self.agents_per_copy, self.group
        obs_space, act_space = self.envs.single_observation_space, self.envs.single_action_space
        if not isinstance(obs_space, spaces.Box):
            raise ValueError(f"SeerTorchRLEnv handles Box observations, got {obs_space}")
        lead = (C, A)
        obs = Unbounded(shape=(*lead, *obs_space.shape), dtype=_torch_dtype(obs_space.dtype), device=self.device)
        if isinstance(act_space, spaces.Box):
            self._act_dtype = act_space.dtype
            act = Bounded(low=torch.as_tensor(np.broadcast_to(act_space.low, (*lead, *act_space.shape)).copy()),
                          high=torch.as_tensor(np.broadcast_to(act_space.high, (*lead, *act_space.shape)).copy()),
                          shape=(*lead, *act_space.shape), dtype=_torch_dtype(act_space.dtype), device=self.device)
        elif isinstance(act_space, spaces.Discrete) and act_space.start == 0:
            self._act_dtype = np.int64
            act = Categorical(int(act_space.n), shape=lead, dtype=torch.int64, device=self.device)
        else:
            raise ValueError(f"SeerTorchRLEnv handles Box and Discrete (start 0) actions, got {act_space}")
        flag = lambda shape: Categorical(2, shape=shape, dtype=torch.bool, device=self.device)  # noqa: E731
        self.full_observation_spec = Composite(
            {g: Composite({"observation": obs, "mask": flag(lead)}, shape=lead)}, shape=(C,), device=self.device)
        self.full_action_spec = Composite({g: Composite({"action": act}, shape=lead)}, shape=(C,), device=self.device)
        self.full_reward_spec = Composite(
            {g: Composite({"reward": Unbounded(shape=(*lead, 1), device=self.device)}, shape=lead)},
            shape=(C,), device=self.device)
        agent_flags = {k: flag((*lead, 1)) for k in ("done", "terminated", "truncated")}
        self.full_done_spec = Composite(
            {**{k: flag((C, 1)) for k in ("done", "terminated", "truncated")}, g: Composite(agent_flags, shape=lead)},
            shape=(C,), device=self.device)

    # ---- reset and step ------------------------------------------------------------------------

    def _set_seed(self, seed: int | None) -> None:
        # the next full reset seeds copy c with seed + c (seer.vector's rule)
        self._seed = None if seed is None else int(seed)

    def _reset(self, tensordict: TensorDictBase | None = None, **kwargs) -> TensorDictBase:
        C, A = self.num_copies, self.agents_per_copy
        which = None
        if tensordict is not None and self._started:
            r = tensordict.get("_reset", None)
            if r is None:
                r = tensordict.get((self.group, "_reset"), None)
                r = None if r is None else r.reshape(C, -1).any(-1)
            if r is not None:
                which = r.reshape(C).cpu().numpy().astype(bool)
        if which is None or which.all():
            obs, infos = self.envs.reset(seed=self._seed)
            self._seed = None
            which = np.ones(C, bool)
        else:
            obs, infos = self.envs.reset(options={"reset_mask": np.repeat(which, A)})
        self._started = True
        rows = np.repeat(which, A)
        self._term[rows] = False
        self._trunc[rows] = False
        self._alive = infos["alive"].copy()
        return self._out(obs, None)

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        R = self.num_copies * self.agents_per_copy
        act = tensordict.get((self.group, "action")).detach().cpu().numpy()
        act = act.reshape(R, *act.shape[2:])
        if self.clip_actions and isinstance(self.envs.single_action_space, spaces.Box):
            space = self.envs.single_action_space
            act = np.clip(act, space.low, space.high)
        obs, rew, term, trunc, infos = self.envs.step(act.astype(self._act_dtype, copy=False))
        mask = infos["mask"]
        self._term |= term & mask
        self._trunc |= trunc & mask
        self._alive = infos["alive"].copy()
        return self._out(obs, rew)

    def _out(self, obs: np.ndarray, rew: np.ndarray | None) -> TensorDictBase:
        C, A, dev = self.num_copies, self.agents_per_copy, self.device
        lead = (C, A)
        # copies: the flags are updated in place at the next step, the TensorDicts must keep this one's
        term = self._term.reshape(C, A, 1).copy()
        trunc = self._trunc.reshape(C, A, 1).copy()
        gone = ~self._alive.reshape(C, A).any(axis=1, keepdims=True)   # the copy has no agent left
        agents = {
            "observation": torch.as_tensor(obs.reshape(*lead, *obs.shape[1:]), device=dev),
            "mask": torch.as_tensor(self._alive.reshape(lead).copy(), device=dev),
            "terminated": torch.as_tensor(term, device=dev),
            "truncated": torch.as_tensor(trunc, device=dev),
            "done": torch.as_tensor(term | trunc, device=dev),
        }
        if rew is not None:
            agents["reward"] = torch.as_tensor(rew.reshape(*lead, 1), dtype=torch.float32, device=dev)
        root_trunc = gone & trunc.any(axis=1)
        out = {
            self.group: TensorDict(agents, batch_size=lead, device=dev),
            "done": torch.as_tensor(gone, device=dev),
            "truncated": torch.as_tensor(root_trunc, device=dev),
            "terminated": torch.as_tensor(gone & ~root_trunc, device=dev),
        }
        return TensorDict(out, batch_size=(C,), device=dev)

    def close(self, *, raise_if_closed: bool = True) -> None:
        self.envs.close()
        try:
            super().close(raise_if_closed=raise_if_closed)
        except TypeError:  # TorchRL versions whose close() takes no argument
            super().close()

    def __repr__(self) -> str:
        return f"SeerTorchRLEnv({self.envs!r}, group={self.group!r})"
