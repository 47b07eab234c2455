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
amount per step whatever the number of copies.  The env's own ``rollout`` writes
each step's rows into the result's tensors (see :meth:`SeerTorchRLEnv.rollout`).

**Unbatched specs.**  ``batched=False`` (one copy) gives ``batch_size=[]``
and a group of shape ``[agents]``: an env like ``PettingZooWrapper``'s,
for code that batches envs itself (TorchRL's ``SerialEnv``/``ParallelEnv``).
A batched env's per-copy specs are TorchRL's ``*_spec_unbatched``
(``full_observation_spec_unbatched`` ...), which
:mod:`seer.integrations.benchmarl` hands to BenchMARL.
"""

from __future__ import annotations

import sys
from typing import Any, Callable

import numpy as np
from gymnasium import spaces

from seer.integrations import require

require("torchrl", "torchrl", "seer.integrations.torchrl")

import torch  # noqa: E402
from tensordict import LazyStackedTensorDict, TensorDict, TensorDictBase  # noqa: E402
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
        self._arenas: list = []          # the rollout's reusable memory (see _rollout_buffers)
        self._arena_free: list = []
        self._one_draw: dict[int, bool] = {}  # steps -> one draw gives the numbers of that many (_drawn_actions)
        # the rollout reads the vector's own rows (no copies, no infos) unless its class changes its step
        base = seer.vector.SeerVectorEnv
        self._views = type(envs).step is base.step and type(envs).step_wait is base.step_wait
        # leading dims of root and group entries: [C] and [C, A], or [] and [A]
        self._root = (C,) if batched else ()
        self._lead = (C, A) if batched else (A,)
        self._cpu = torch.device(device).type == "cpu"
        try:
            self._setup_state(return_state)
            self._make_specs()
            self._setup_rows()
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
            self._act_torch_dtype = _torch_dtype(act_space.dtype)
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
        C = self.num_copies
        which = None
        if tensordict is not None and self._started:
            r = tensordict.get("_reset", None)
            if r is None:
                r = tensordict.get((self.group, "_reset"), None)
                r = None if r is None else r.reshape(C, -1).any(-1)
            if r is not None:
                which = r.reshape(C).cpu().numpy().astype(bool)
        return self._out(self._reset_copies(which), None)

    def _reset_copies(self, which: np.ndarray | None) -> np.ndarray:
        """Reset the copies where ``which`` (all when None or all True); their observations."""
        A = self.agents_per_copy
        if which is None or which.all():
            obs, infos = self.envs.reset(seed=self._seed)
            if self._seed is not None:
                self._seed = None
            rows = slice(None)
        else:
            obs, infos = self.envs.reset(options={"reset_mask": np.repeat(which, A)})
            rows = np.repeat(which, A)
        if not self._started:  # (an attribute set on a TorchRL env costs: only when it changes)
            self._started = True
        self._term[rows] = False
        self._trunc[rows] = False
        np.copyto(self._alive, infos["alive"])
        return obs

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        obs, rew = self._env_step(self._act_rows(tensordict.get((self.group, "action"))))
        return self._out(obs, rew)

    def _act_rows(self, act: torch.Tensor, steps: int | None = None) -> np.ndarray:
        """The vector env's action rows of ``act`` (``[steps, rows, ...]`` for ``steps`` steps' actions)."""
        act = (act.detach().numpy() if act.device.type == "cpu" else act.detach().cpu().numpy())
        rows = self.num_copies * self.agents_per_copy
        lead = (rows,) if steps is None else (steps, rows)
        act = act.reshape(*lead, *act.shape[len(self._lead) + len(lead) - 1:])
        if act.dtype != self._act_dtype:
            act = act.astype(self._act_dtype)
        if self.clip_actions and isinstance(self.envs.single_action_space, spaces.Box):
            act = np.clip(act, self._clip_lo, self._clip_hi)
        return act

    def _env_step(self, act: np.ndarray, views: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Step the vector env; its observations and rewards.  ``views``: they may be the vector's own
        buffers (for a caller that copies them on before the next step)."""
        if views and self._views:
            obs, rew, term, trunc, mask, alive = self.envs._step_views(act)
        else:
            obs, rew, term, trunc, infos = self.envs.step(act)
            mask, alive = infos["mask"], infos["alive"]
        # in place: an attribute set on a TorchRL env (``|=``) goes through its __setattr__, a cost per step
        np.logical_or(self._term, term & mask, out=self._term)
        np.logical_or(self._trunc, trunc & mask, out=self._trunc)
        np.copyto(self._alive, alive)
        return obs, rew

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

    # ---- the rows of one reset or step ---------------------------------------------------------
    # Named arrays in a canonical [C, A, ...] (agents) / [C, ...] (copies) shape, whatever the
    # batching: _out wraps them as tensors of the spec's shapes, the rollout writes them into its
    # [..., time, ...] buffers.

    def _setup_rows(self) -> None:
        g, root, lead = self.group, self._root, self._lead
        obs_space = self.envs.single_observation_space
        self._keys = {"observation": (g, "observation"), "mask": (g, "mask"), "terminated": (g, "terminated"),
                      "truncated": (g, "truncated"), "done": (g, "done"), "c_done": ("done",),
                      "c_truncated": ("truncated",), "c_terminated": ("terminated",)}
        self._shapes = {"observation": (*lead, *obs_space.shape), "mask": lead,
                        **{n: (*lead, 1) for n in ("terminated", "truncated", "done")},
                        **{n: (*root, 1) for n in ("c_done", "c_truncated", "c_terminated")}}
        self._dtypes = {n: torch.bool for n in self._keys}
        self._dtypes["observation"] = _torch_dtype(obs_space.dtype)
        if self._state_space is not None:
            self._keys["state"] = ("state",)
            self._shapes["state"] = (*root, *self._state_space.shape)
            self._dtypes["state"] = _torch_dtype(self._state_space.dtype)
        self._root_names = tuple(self._keys)         # the names of a reset's (and a root's) rows
        self._keys["reward"] = (g, "reward")
        self._shapes["reward"] = (*lead, 1)
        self._dtypes["reward"] = torch.float32
        # the names whose entries end in a unit dim that the rows lack (not "mask": its last dim is the agents')
        self._unit = set(self._keys) - {"observation", "mask", "state"}

    def _rows(self, obs: np.ndarray, rew: np.ndarray | None) -> dict[str, np.ndarray]:
        """Fresh arrays of one reset (``rew`` None) or step; the observations are ``obs`` itself."""
        C, A = self.num_copies, self.agents_per_copy
        # one array for all the flags (the state's are updated in place at the next step)
        flags = np.empty(4 * C * A + 3 * C, bool)
        af = flags[:4 * C * A].reshape(4, C, A)
        cf = flags[4 * C * A:].reshape(3, C)
        d = {"mask": af[0], "terminated": af[1], "truncated": af[2], "done": af[3],
             "c_done": cf[0], "c_truncated": cf[1], "c_terminated": cf[2]}
        self._flags(d, self._alive.reshape(C, A), self._term.reshape(C, A), self._trunc.reshape(C, A))
        if rew is not None:
            d["reward"] = rew.reshape(C, A).astype(np.float32)
        d["observation"] = obs.reshape(C, A, *obs.shape[1:])
        if self._state_space is not None:
            d["state"] = self._state(obs)
        return d

    @staticmethod
    def _flags(d: dict[str, np.ndarray], alive: np.ndarray, term: np.ndarray, trunc: np.ndarray) -> None:
        """Write the flags of ``alive``, ``term`` and ``trunc`` (``[..., C, A]``: after one step, or
        several) into the arrays of ``d`` (``[..., C, A]`` for the agents', ``[..., C]`` for the copies';
        views are fine)."""
        np.copyto(d["mask"], alive)
        np.copyto(d["terminated"], term)
        np.copyto(d["truncated"], trunc)
        np.logical_or(term, trunc, out=d["done"])
        gone = d["c_done"]
        np.logical_not(alive.any(axis=-1), out=gone)                         # the copy has no agent left
        np.logical_and(gone, trunc.any(axis=-1), out=d["c_truncated"])
        np.greater(gone, d["c_truncated"], out=d["c_terminated"])            # gone and not truncated

    def _td(self, tensors: dict[str, torch.Tensor], root: tuple, lead: tuple) -> TensorDictBase:
        """The nested TensorDict of named tensors (batch ``root``, the group ``lead``)."""
        g, dev = self.group, self.device
        agents, out = {}, {}
        for n, v in tensors.items():
            key = self._keys[n]
            (agents if len(key) == 2 else out)[key[-1]] = v
        out[g] = TensorDict._new_unsafe(agents, batch_size=lead, device=dev)
        return TensorDict._new_unsafe(out, batch_size=root, device=dev)

    def _out(self, obs: np.ndarray, rew: np.ndarray | None) -> TensorDictBase:
        t, shapes = torch.from_numpy, self._shapes
        tensors = {n: t(a).view(shapes[n]) for n, a in self._rows(obs, rew).items()}
        if not self._cpu:
            tensors = {n: v.to(self.device) for n, v in tensors.items()}
        return self._td(tensors, self._root, self._lead)

    def _state(self, obs: np.ndarray) -> np.ndarray:
        """Each copy's state, ``[C, *state_space.shape]``."""
        C = self.num_copies
        if self._state_rows:
            # zero the rows of terminated (lost) agents; truncated ones keep their last observation
            st = obs.copy()
            if self._term.any():
                st[self._term] = 0
            return st.reshape(C, -1)
        st = np.stack([np.asarray(s, self._state_space.dtype) for s in self.envs.call("state")])
        return st.reshape(C, *self._state_space.shape)

    def rand_action(self, tensordict: TensorDictBase | None = None) -> TensorDictBase:
        """Uniform random actions for every row in one call (TorchRL's
        ``rollout`` without a policy uses it)."""
        if tensordict is None:
            tensordict = TensorDict._new_unsafe({}, batch_size=self._root, device=self.device)
        tensordict.set((self.group, "action"), self._rand_actions())
        return tensordict

    def _rand_actions(self, steps: int | None = None) -> torch.Tensor:
        """Random actions of every row (``[steps, ...]``: for that many steps, in one draw)."""
        space = self.envs.single_action_space
        first = () if steps is None else (steps,)
        if isinstance(space, spaces.Box):
            if self._act_uniform is not None:  # one bound for every value (SEER's envs): one call
                lo, hi = self._act_uniform
                a = torch.empty((*first, *self._act_low.shape), dtype=self._act_torch_dtype, device=self.device)
                return a.uniform_(lo, hi)
            a = torch.rand((*first, *self._act_low.shape), device=self.device, dtype=self._act_low.dtype)
            return (a * self._act_span + self._act_low).to(self._act_torch_dtype)
        return torch.randint(0, int(space.n), (*first, *self._lead), device=self.device)

    def _drawn_actions(self, steps: int) -> torch.Tensor | None:
        """The random actions of ``steps`` steps in one draw, ``[steps, ...]``: the very numbers that
        ``steps`` calls of :meth:`_rand_actions` give, leaving torch's generator where they leave it; None
        where that cannot be relied on.  Checked once per ``steps`` against that many calls (torch draws
        a tensor's numbers in order, one stream: an implementation detail); only for copies that all step
        in C, so that no env copy draws from torch's generator between two steps."""
        if self.envs.copy_path != "native":
            return None
        same = self._one_draw.get(steps)
        if same is None:
            state = torch.get_rng_state()
            each = torch.stack([self._rand_actions() for _ in range(steps)])
            after = torch.get_rng_state()
            torch.set_rng_state(state)
            one = self._rand_actions(steps)
            same = torch.equal(one, each) and torch.equal(torch.get_rng_state(), after)
            torch.set_rng_state(state)
            self._one_draw[steps] = same
        return self._rand_actions(steps) if same else None

    # ---- rollout ---------------------------------------------------------------------------------

    # what the fast rollout does in place of TorchRL's per-step calls: a subclass that changes one
    # of them gets TorchRL's loop
    _ROLLOUT_BYPASSES = ("step", "_step", "step_and_maybe_reset", "maybe_reset", "rand_action", "_step_proc_data")

    def rollout(self, max_steps: int, policy=None, callback=None, *, auto_reset: bool = True,
                auto_cast_to_device: bool = False, break_when_any_done: bool | None = None,
                break_when_all_done: bool | None = None, return_contiguous: bool | None = False,
                tensordict: TensorDictBase | None = None, set_truncated: bool = False, out=None,
                trust_policy: bool = False, storing_device=None) -> TensorDictBase:
        """TorchRL's :meth:`~torchrl.envs.EnvBase.rollout`, same arguments and result.

        Each step's rows are written straight into the ``[..., time, ...]``
        tensors of the result (allocated once) instead of one TensorDict per
        step stacked at the end: the observations and rewards from the
        vector env's own buffers (no copy of the step, no infos), the flags
        at the end from each step's live, terminated and truncated rows; a
        copy's root rows after a step are its next rows unless it was reset,
        so they are copied over in one call per key at the end.  Without a
        policy, on copies that all step in C, every step's random actions
        are drawn in one call: the numbers, and the generator's state after
        the rollout, of TorchRL's draw per step (checked once per length).
        Callbacks, ``break_when_all_done``,
        ``auto_cast_to_device``, ``set_truncated``, ``out``, another
        ``storing_device``, a non-CPU device, type checks, a ``tensordict``
        to start from, ``auto_reset=False`` and a global state take
        TorchRL's own loop.
        """
        kwargs = dict(callback=callback, auto_reset=auto_reset, auto_cast_to_device=auto_cast_to_device,
                      break_when_any_done=break_when_any_done, break_when_all_done=break_when_all_done,
                      return_contiguous=return_contiguous, tensordict=tensordict, set_truncated=set_truncated,
                      out=out, trust_policy=trust_policy, storing_device=storing_device)
        cls = type(self)
        fast = (callback is None and not auto_cast_to_device and not break_when_all_done and out is None
                and not set_truncated and self._cpu and not self.run_type_checks
                and (storing_device is None or torch.device(storing_device) == self.device)
                and isinstance(max_steps, int) and max_steps >= 1 and auto_reset and tensordict is None
                and self._state_space is None  # the paths the equality test covers; the rest: TorchRL's loop
                and all(getattr(cls, n) is getattr(SeerTorchRLEnv, n) for n in self._ROLLOUT_BYPASSES))
        if not fast:
            return EnvBase.rollout(self, max_steps, policy, **kwargs)
        break_any = break_when_any_done if break_when_any_done is not None else True
        if policy is not None:
            from torchrl.envs.utils import _make_compatible_policy

            policy = _make_compatible_policy(policy, self.observation_spec, env=self, fast_wrap=True,
                                             trust_policy=trust_policy)
        td0 = self.reset(tensordict) if auto_reset else self.maybe_reset(tensordict)
        T, R = max_steps, len(self._root)
        act_key = (self.group, "action")
        act_spec = self.full_action_spec[act_key]
        layout = [("root", n, (*self._root, T, *self._shapes[n][R:]), self._dtypes[n]) for n in self._root_names]
        layout += [("next", n, (*self._root, T, *self._shapes[n][R:]), self._dtypes[n]) for n in self._keys]
        layout.append(("act", "action", (*self._root, T, *act_spec.shape[R:]), act_spec.dtype))
        C, A = self.num_copies, self.agents_per_copy
        layout.append(("flags", "flags", (3, T, C, A), torch.bool))  # mask, terminated, truncated after each step
        bufs = self._rollout_buffers(layout)
        root_t = {n: bufs["root", n] for n in self._root_names}
        next_t = {n: bufs["next", n] for n in self._keys}
        act_t = bufs["act", "action"]
        flags = bufs["flags", "flags"].numpy()
        if not self._load_first(td0, root_t):
            # keys TorchRL's loop carries that the buffers do not hold: its loop, from this reset
            kwargs.update(auto_reset=False, tensordict=td0, trust_policy=True)
            return EnvBase.rollout(self, max_steps, policy, **kwargs)
        lead_ix = (slice(None),) * R                                  # [:, t] batched, [t] unbatched
        # the canonical [C, time, ...] views of the next rows
        next_np = {n: (v.numpy() if self.batched else v.numpy()[None]) for n, v in next_t.items()}
        obs_out, rew_out = next_np["observation"], next_np["reward"][..., 0]
        # every step's random actions in one draw (the numbers T calls give) where it can be relied on
        rng = torch.get_rng_state() if policy is None else None
        drawn = None if policy is not None else self._drawn_actions(T)
        if drawn is not None:
            act_rows = self._act_rows(drawn, T)
        resets: list = []           # (step, copies reset before it, their rows)
        steps_td, acts = [], []     # with a policy: each step's root TensorDict, its actions
        steps = drawn_used = T
        try:
            for t in range(T):
                drawn_used = t + 1
                if drawn is not None:
                    rows = act_rows[t]
                else:
                    if policy is None:
                        a = self._rand_actions()
                        act_t[lead_ix + (t,)].copy_(a)
                    else:
                        if t:
                            self._root_from_next(root_t, next_t, resets, t, t + 1)
                        td = self._td({n: v[lead_ix + (t,)] for n, v in root_t.items()}, self._root, self._lead)
                        td.update(policy(td))
                        a = td.get(act_key)
                        steps_td.append(td)
                        acts.append(a)
                    rows = self._act_rows(a)
                obs, rew = self._env_step(rows, views=True)
                # the step's rows: observations and rewards into the result, the flags for later
                np.copyto(obs_out[:, t], obs.reshape(C, A, *obs.shape[1:]))
                np.copyto(rew_out[:, t], rew.reshape(C, A), casting="same_kind")
                np.copyto(flags[0, t], self._alive.reshape(C, A))
                np.copyto(flags[1, t], self._term.reshape(C, A))
                np.copyto(flags[2, t], self._trunc.reshape(C, A))
                if policy is not None:  # its next step reads these rows
                    self._flags_to_next(next_np, flags, t, t + 1)
                if t == T - 1:
                    break
                gone = ~flags[0, t].any(axis=-1)  # TorchRL stops at, or resets, a copy's done, not an agent's
                if gone.any():
                    if break_any:
                        steps = t + 1
                        break
                    resets.append((t + 1, gone, self._rows(self._reset_copies(gone), None)))
        finally:
            if drawn is not None and drawn_used < T:
                # TorchRL's loop drew the actions of the steps it took only
                torch.set_rng_state(rng)
                for _ in range(drawn_used):
                    self._rand_actions()
        if policy is None:
            self._flags_to_next(next_np, flags, 0, steps)
            if drawn is not None:
                act_t[lead_ix + (slice(0, steps),)].copy_(drawn[:steps].movedim(0, R))
            self._root_from_next(root_t, next_t, resets, 1, steps)
        if steps < T:
            cut = lead_ix + (slice(0, steps),)
            root_t = {n: v[cut].contiguous() for n, v in root_t.items()}
            next_t = {n: v[cut].contiguous() for n, v in next_t.items()}
            act_t = act_t[cut].contiguous()
        time_root, time_lead = (*self._root, steps), (*self._root, steps, *self._lead[R:])
        nxt = self._td(next_t, time_root, time_lead)
        res = self._td(root_t, time_root, time_lead)
        res.set("next", nxt)
        if policy is None:
            res.set(act_key, act_t)
        else:
            stacked = self._stack_policy_keys(steps_td, acts, root_t, lead_ix)
            if stacked is None:  # the policy's keys differ between steps: TorchRL's stack of its steps
                tds = [td.set("next", nxt[lead_ix + (t,)]) for t, td in enumerate(steps_td)]
                if return_contiguous is None:
                    return_contiguous = not self._has_dynamic_specs
                res = (torch.stack(tds, R) if return_contiguous
                       else LazyStackedTensorDict.maybe_dense_stack(tds, R))
            else:
                for k, v in stacked.items():
                    res.set(k, v)
        if tensordict is not None:   # TorchRL's loop writes the first step into the given TensorDict
            td0.update(res[lead_ix + (0,)].exclude(*self._keys_of(self._root_names)))
        res.refine_names(..., "time")
        return res

    def _rollout_buffers(self, layout: list) -> dict:
        """Uninitialised tensors of ``layout``'s shapes and dtypes, carved from one arena that is reused
        once no tensor of an earlier rollout is left: fresh memory costs a page fault per 4 KiB written,
        as much as the copies themselves, and the allocator hands buffers this size back to the system."""
        sizes = [int(np.prod(shape)) * torch.empty(0, dtype=dt).element_size() for *_, shape, dt in layout]
        total = sum(-(-n // 64) * 64 for n in sizes)
        arena = None
        for i in range(len(self._arenas)):
            if self._arenas[i].nbytes >= total and self._arena_refs(i) == self._arena_free[i]:
                arena = self._arenas[i]
                break
        if arena is None:
            if len(self._arenas) >= 2:  # both in use or too small: let the smaller go
                j = int(np.argmin([a.nbytes for a in self._arenas]))
                del self._arenas[j], self._arena_free[j]
            self._arenas.append(np.empty(total, np.uint8))
            self._arena_free.append(self._arena_refs(len(self._arenas) - 1))
            arena = self._arenas[-1]
        out, off = {}, 0
        for (kind, name, shape, dt), n in zip(layout, sizes):
            np_dt = torch.empty(0, dtype=dt).numpy().dtype
            out[kind, name] = torch.from_numpy(arena[off:off + n].view(np_dt).reshape(shape))
            off += -(-n // 64) * 64
        return out

    def _arena_refs(self, i: int) -> int:
        # compared with its own count when the arena was new (no tensor on it): the same call, so the
        # interpreter's own references are the same
        return sys.getrefcount(self._arenas[i])

    def _keys_of(self, names) -> list:
        return [self._keys[n] for n in names]

    def _load_first(self, td0: TensorDictBase, root_t: dict) -> bool:
        """Copy the rollout's first root rows from ``td0``; False when ``td0`` has other keys."""
        expected = {self._keys[n]: n for n in self._root_names}
        act_key = (self.group, "action")
        keys = {k if isinstance(k, tuple) else (k,) for k in td0.keys(True, True)}
        if td0.batch_size != self.batch_size or keys - {act_key} != set(expected):
            return False
        R = len(self._root)
        for key, n in expected.items():
            v = td0.get(key)
            if v.shape != self._shapes[n] or v.dtype != self._dtypes[n]:
                return False
            root_t[n][(slice(None),) * R + (0,)].copy_(v)
        return True

    def _flags_to_next(self, next_np: dict, flags: np.ndarray, lo: int, hi: int) -> None:
        """The flags of steps ``lo..hi-1`` into the canonical ``[C, time, ...]`` next rows ``next_np``, from
        ``flags`` (mask, terminated and truncated after each step, ``[3, time, C, A]``)."""
        sl = slice(lo, hi)
        agents = lambda n: next_np[n][:, sl, :, 0].transpose(1, 0, 2)  # noqa: E731  [time, C, A]
        d = {n: agents(n) for n in ("terminated", "truncated", "done")}
        d["mask"] = next_np["mask"][:, sl].transpose(1, 0, 2)
        d.update({n: next_np[n][:, sl, 0].T for n in ("c_done", "c_truncated", "c_terminated")})   # [time, C]
        self._flags(d, flags[0, sl], flags[1, sl], flags[2, sl])

    def _root_from_next(self, root_t: dict, next_t: dict, resets: list, lo: int, hi: int) -> None:
        """Root rows of steps ``lo..hi-1``: the next rows of the step before, then the rows of the
        copies reset in between."""
        if hi <= lo:
            return
        R = len(self._root)
        dst, src = (slice(None),) * R + (slice(lo, hi),), (slice(None),) * R + (slice(lo - 1, hi - 1),)
        for n, v in root_t.items():
            v[dst].copy_(next_t[n][src])
        can_ix = (slice(None),) if self.batched else (None,)
        for t, which, rows in resets:
            if lo <= t < hi:
                for n, v in root_t.items():
                    view = v.numpy()[can_ix + (t,)]
                    if n in self._unit:
                        view = view[..., 0]
                    view[which] = rows[n][which]

    def _stack_policy_keys(self, steps_td: list, acts: list, root_t: dict, lead_ix: tuple) -> dict | None:
        """The policy's outputs stacked over time (the actions and any keys it added), after copying
        root entries it replaced into the buffers; None when the keys differ between steps."""
        R = len(self._root)
        placed = {self._keys[n]: n for n in self._root_names}
        act_key = (self.group, "action")
        extra_keys, extras = None, {}
        for t, td in enumerate(steps_td):
            leaves = {k if isinstance(k, tuple) else (k,): v for k, v in td.items(True, True)}
            for key, n in placed.items():
                v = leaves.pop(key, None)
                view = root_t[n][lead_ix + (t,)]
                if v is None or v.shape != view.shape or v.dtype != view.dtype:
                    return None
                if v is not view:
                    view.copy_(v)
            leaves.pop(act_key, None)
            if extra_keys is None:
                extra_keys = tuple(leaves)
            elif tuple(leaves) != extra_keys:
                return None
            for k, v in leaves.items():
                extras.setdefault(k, []).append(v)
        try:
            out = {act_key: torch.stack(acts, R)}
            out.update({k: torch.stack(v, R) for k, v in extras.items()})
        except RuntimeError:
            return None
        return out

    def close(self, *, raise_if_closed: bool = True) -> None:
        self.envs.close()
        try:
            super().close(raise_if_closed=raise_if_closed)
        except TypeError:  # TorchRL versions whose close() takes no argument
            super().close()

    def __repr__(self) -> str:
        return f"SeerTorchRLEnv({self.envs!r}, group={self.group!r}, batched={self.batched})"
