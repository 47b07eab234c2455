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

**State.**  With ``return_state=True`` (the env needs a ``state_space``)
the root holds ``state`` ``[num_copies, *state_space]``,
each copy's ``env.state()``, for centralised critics.  SEER's built-in envs
define their state as their agents' observations concatenated (terminated
agents zero), so it is built from the vector's rows without a call per copy;
other envs' ``state()`` is called on each copy after every step.

**Speed.**  Whole arrays become tensors with ``torch.from_numpy`` (no copy,
no per-agent loop); the TensorDicts are built unchecked from them, random
actions are drawn in one call, and TorchRL's per-step spec completion is
skipped (every key is always set), as is its generic ``step_mdp`` (the next
root is the step's TensorDict minus the reward), so TorchRL's ``rollout`` costs a fixed
amount per step whatever the number of copies.

**Unbatched specs.**  ``batched=False`` (one copy) gives ``batch_size=[]``
and a group of shape ``[agents]``: an env like ``PettingZooWrapper``'s,
for code that batches envs itself (TorchRL's ``SerialEnv``/``ParallelEnv``).
A batched env's per-copy specs are TorchRL's ``*_spec_unbatched``
(``full_observation_spec_unbatched`` ...), which
:mod:`seer.integrations.benchmarl` hands to BenchMARL.
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
        batched: False: ``batch_size=[]`` over one copy (see the module
            docstring).
        return_state: Put each copy's global state at the root ``state``
            (the env must have a ``state_space``); off by default, as in
            TorchRL's ``PettingZooWrapper``: it doubles what a rollout stores.
        **make_kwargs: Passed to :func:`seer.vector.make` (``backend``,
            ``workers``, ``pad``, ...).
    """

    def __init__(self, env_fn: Callable[[], Any] | Any, num_copies: int | None = None, *, group: str = "agents",
                 clip_actions: bool = False, device: str | torch.device = "cpu", batched: bool = True,
                 return_state: bool = False, **make_kwargs):
        from gymnasium.vector import AutoresetMode

        import seer.vector

        if not batched and num_copies not in (None, 1):
            raise ValueError(f"batched=False steps one copy: num_copies={num_copies!r} must be 1 (or None)")
        if not batched and num_copies is None and not isinstance(env_fn, seer.vector.SeerVectorEnv):
            num_copies = 1
        if isinstance(env_fn, seer.vector.SeerVectorEnv):
            if num_copies is not None or make_kwargs:
                raise TypeError("num_copies and make() options are for an env_fn, not an existing SeerVectorEnv")
            envs = env_fn
            if envs.autoreset_mode != AutoresetMode.DISABLED:
                raise ValueError(f"the SeerVectorEnv has autoreset_mode={envs.autoreset_mode!r}: expected DISABLED "
                                 f"(TorchRL resets finished copies itself)")
            if not batched and envs.num_copies != 1:
                raise ValueError(f"batched=False steps one copy: the SeerVectorEnv has {envs.num_copies}")
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
        self.batched = bool(batched)
        super().__init__(device=device, batch_size=torch.Size([C] if batched else []))
        self.group = group
        self.num_copies, self.agents_per_copy = C, A
        self.clip_actions = clip_actions
        self._seed: int | None = None
        self._term = np.zeros(C * A, bool)
        self._trunc = np.zeros(C * A, bool)
        self._alive = np.zeros(C * A, bool)
        self._started = False
        # leading dims of root and group entries: [C] and [C, A], or [] and [A]
        self._root = (C,) if batched else ()
        self._lead = (C, A) if batched else (A,)
        self._cpu = torch.device(device).type == "cpu"
        try:
            self._setup_state(return_state)
            self._make_specs()
        except BaseException:
            envs.close()
            raise

    # ---- specs ---------------------------------------------------------------------------------

    def _setup_state(self, return_state: bool) -> None:
        self._state_space = None
        self._state_rows = False
        if not return_state:
            return
        try:
            spaces_ = self.envs.get_attr("state_space")
        except Exception:  # the copies have no state_space (EnvCopyAttributeError and friends)
            spaces_ = None
        if spaces_ is None:
            raise ValueError("return_state=True, but the env copies have no state_space")
        space = spaces_[0]
        if not isinstance(space, spaces.Box):
            raise ValueError(f"SeerTorchRLEnv handles Box states, got {space}")
        self._state_space = space
        obs = self.envs.single_observation_space
        # SEER's built-in envs: the state is the copy's observation rows (lost agents zero)
        try:
            rows = all(self.envs.get_attr("state_from_observations"))
        except Exception:
            rows = False
        self._state_rows = rows and space.shape == (self.agents_per_copy * int(np.prod(obs.shape)),) \
            and space.dtype == obs.dtype

    def _make_specs(self) -> None:
        g, dev = self.group, self.device
        root, lead = self._root, self._lead
        obs_space, act_space = self.envs.single_observation_space, self.envs.single_action_space
        if not isinstance(obs_space, spaces.Box):
            raise ValueError(f"SeerTorchRLEnv handles Box observations, got {obs_space}")
        obs = Unbounded(shape=(*lead, *obs_space.shape), dtype=_torch_dtype(obs_space.dtype), device=dev)
        self._act_uniform = None
        if isinstance(act_space, spaces.Box):
            self._act_dtype = np.dtype(act_space.dtype)
            low = np.broadcast_to(act_space.low, (*lead, *act_space.shape)).copy()
            high = np.broadcast_to(act_space.high, (*lead, *act_space.shape)).copy()
            act = Bounded(low=torch.as_tensor(low), high=torch.as_tensor(high), shape=(*lead, *act_space.shape),
                          dtype=_torch_dtype(act_space.dtype), device=dev)
            self._act_low = torch.as_tensor(low, device=dev)
            self._act_span = torch.as_tensor(high - low, device=dev)
            finite = np.isfinite(low).all() and np.isfinite(high).all()
            uniform = finite and (low == low.flat[0]).all() and (high == high.flat[0]).all()
            self._act_uniform = (float(low.flat[0]), float(high.flat[0])) if uniform else None
            self._clip_lo = np.asarray(act_space.low, self._act_dtype)
            self._clip_hi = np.asarray(act_space.high, self._act_dtype)
        elif isinstance(act_space, spaces.Discrete) and act_space.start == 0:
            self._act_dtype = np.dtype(np.int64)
            act = Categorical(int(act_space.n), shape=lead, dtype=torch.int64, device=dev)
        else:
            raise ValueError(f"SeerTorchRLEnv handles Box and Discrete (start 0) actions, got {act_space}")
        flag = lambda shape: Categorical(2, shape=shape, dtype=torch.bool, device=dev)  # noqa: E731
        observations = {g: Composite({"observation": obs, "mask": flag(lead)}, shape=lead)}
        if self._state_space is not None:
            st = self._state_space
            observations["state"] = Unbounded(shape=(*root, *st.shape), dtype=_torch_dtype(st.dtype), device=dev)
        self.full_observation_spec = Composite(observations, shape=root, device=dev)
        self.full_action_spec = Composite({g: Composite({"action": act}, shape=lead)}, shape=root, device=dev)
        self.full_reward_spec = Composite(
            {g: Composite({"reward": Unbounded(shape=(*lead, 1), device=dev)}, shape=lead)}, shape=root, device=dev)
        agent_flags = {k: flag((*lead, 1)) for k in ("done", "terminated", "truncated")}
        self.full_done_spec = Composite(
            {**{k: flag((*root, 1)) for k in ("done", "terminated", "truncated")}, g: Composite(agent_flags, shape=lead)},
            shape=root, device=dev)

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
        act = tensordict.get((self.group, "action"))
        act = (act.detach().numpy() if act.device.type == "cpu" else act.detach().cpu().numpy())
        act = act.reshape(R, *act.shape[len(self._lead):])
        if act.dtype != self._act_dtype:
            act = act.astype(self._act_dtype)
        if self.clip_actions and isinstance(self.envs.single_action_space, spaces.Box):
            act = np.clip(act, self._clip_lo, self._clip_hi)
        obs, rew, term, trunc, infos = self.envs.step(act)
        mask = infos["mask"]
        self._term |= term & mask
        self._trunc |= trunc & mask
        np.copyto(self._alive, infos["alive"])
        return self._out(obs, rew)

    def _step_proc_data(self, next_tensordict_out):
        # _out sets every reward and done key in its final shape and dtype: TorchRL's completion
        # pass (a loop over the keys each step) has nothing to add
        if self.run_type_checks:
            return super()._step_proc_data(next_tensordict_out)
        return next_tensordict_out

    def step_and_maybe_reset(self, tensordict: TensorDictBase) -> tuple[TensorDictBase, TensorDictBase]:
        # TorchRL's rollout and collectors call this each step; its generic step_mdp walks every key
        # of both TensorDicts to copy the observations and flags forward.  _out's keys are fixed,
        # so the next root is its TensorDict minus the reward, built unchecked from the same tensors.
        if (self.run_type_checks or tensordict.device != self.device or tensordict.batch_size != self.batch_size
                or "next" in tensordict.keys()):
            return super().step_and_maybe_reset(tensordict)
        nxt = self._step(tensordict)
        tensordict.set("next", nxt)
        g = self.group
        agents = dict(nxt.get(g).items())
        del agents["reward"]
        root = {k: v for k, v in nxt.items() if k != g}
        root[g] = TensorDict._new_unsafe(agents, batch_size=self._lead, device=self.device)
        nxt_root = TensorDict._new_unsafe(root, batch_size=self._root, device=self.device)
        return tensordict, self.maybe_reset(nxt_root)

    def _out(self, obs: np.ndarray, rew: np.ndarray | None) -> TensorDictBase:
        C, A = self.num_copies, self.agents_per_copy
        root, lead = self._root, self._lead
        # one fresh array for all the flags (the state's are updated in place at the next step):
        # rows mask, terminated, truncated, done of the agents; then done, truncated, terminated of the copies
        flags = np.empty(4 * C * A + 3 * C, bool)
        agent_flags = flags[:4 * C * A].reshape(4, C, A)
        agent_flags[0] = self._alive.reshape(C, A)
        agent_flags[1] = self._term.reshape(C, A)
        agent_flags[2] = self._trunc.reshape(C, A)
        np.logical_or(agent_flags[1], agent_flags[2], out=agent_flags[3])
        copy_flags = flags[4 * C * A:].reshape(3, C)
        np.logical_not(agent_flags[0].any(axis=1), out=copy_flags[0])        # the copy has no agent left
        np.logical_and(copy_flags[0], agent_flags[2].any(axis=1), out=copy_flags[1])
        np.greater(copy_flags[0], copy_flags[1], out=copy_flags[2])           # gone and not truncated
        t = torch.from_numpy
        af = t(agent_flags).view(4, *lead)
        cf = t(copy_flags).view(3, *root, 1)
        agents = {
            "observation": t(obs).view(*lead, *obs.shape[1:]),
            "mask": af[0],
            "terminated": af[1].unsqueeze(-1),
            "truncated": af[2].unsqueeze(-1),
            "done": af[3].unsqueeze(-1),
        }
        if rew is not None:
            agents["reward"] = t(rew.astype(np.float32)).view(*lead, 1)
        out = {"done": cf[0], "truncated": cf[1], "terminated": cf[2]}
        if self._state_space is not None:
            out["state"] = t(self._state(obs))
        if not self._cpu:
            agents = {k: v.to(self.device) for k, v in agents.items()}
            out = {k: v.to(self.device) for k, v in out.items()}
        out[self.group] = TensorDict._new_unsafe(agents, batch_size=lead, device=self.device)
        return TensorDict._new_unsafe(out, batch_size=root, device=self.device)

    def _state(self, obs: np.ndarray) -> np.ndarray:
        C, root = self.num_copies, self._root
        if self._state_rows:
            # zero the rows of terminated (lost) agents; truncated ones keep their last observation
            st = obs.copy()
            if self._term.any():
                st[self._term] = 0
            return st.reshape(*root, -1)
        st = np.stack([np.asarray(s, self._state_space.dtype) for s in self.envs.call("state")])
        return st.reshape(*root, *self._state_space.shape)

    def rand_action(self, tensordict: TensorDictBase | None = None) -> TensorDictBase:
        """Uniform random actions for every row in one call (TorchRL's
        ``rollout`` without a policy uses it)."""
        if tensordict is None:
            tensordict = TensorDict._new_unsafe({}, batch_size=self._root, device=self.device)
        space = self.envs.single_action_space
        if isinstance(space, spaces.Box):
            if self._act_uniform is not None:  # one bound for every value (SEER's envs): one call
                lo, hi = self._act_uniform
                a = torch.empty(self._act_low.shape, dtype=_torch_dtype(self._act_dtype), device=self.device)
                a.uniform_(lo, hi)
            else:
                a = torch.rand(self._act_low.shape, device=self.device, dtype=self._act_low.dtype)
                a = (a * self._act_span + self._act_low).to(_torch_dtype(self._act_dtype))
        else:
            a = torch.randint(0, int(space.n), self._lead, device=self.device)
        tensordict.set((self.group, "action"), a)
        return tensordict

    def close(self, *, raise_if_closed: bool = True) -> None:
        self.envs.close()
        try:
            super().close(raise_if_closed=raise_if_closed)
        except TypeError:  # TorchRL versions whose close() takes no argument
            super().close()

    def __repr__(self) -> str:
        return f"SeerTorchRLEnv({self.envs!r}, group={self.group!r}, batched={self.batched})"
