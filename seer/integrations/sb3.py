"""Stable-Baselines3 over ``seer.vector``: a ``VecEnv`` whose envs are agent slots.

>>> from seer.envs import uav_swarm_v0
>>> from seer.integrations.sb3 import MaskedPPO, make_vec_env
>>> venv = make_vec_env(lambda: uav_swarm_v0.parallel_env(scenario="small"), 4)   # 4 copies x 8 UAVs = 32 envs
>>> model = MaskedPPO("MlpPolicy", venv, n_steps=128).learn(20_000)
>>> venv.close()

**Each row is one SB3 env**, and all rows share one policy (parameter
sharing, as with SuperSuit's ``pettingzoo_env_to_vec_env_v1``).  What an SB3
env index reports, step by step:

- While its agent lives: the agent's observation, reward and ``done=False``.
- The step its agent terminates or is truncated: ``done=True``, with
  ``infos[i]["terminal_observation"]`` (the agent's last observation),
  ``infos[i]["TimeLimit.truncated"]`` (truncated and not terminated: SB3
  then bootstraps from the terminal observation's value) and
  ``infos[i]["episode"] = {"r", "l", "t"}`` (the agent's return and length,
  as SB3's ``Monitor`` writes them; SB3 logs ``ep_rew_mean`` from it).
- Between its agent's death and the copy's next episode the row has no
  agent: SEER's ``infos["mask"]`` is False.  The row then reads a zero
  observation and reward with ``done=False`` (and ``infos[i]["seer_masked"]``);
  its next real observation is the first of the copy's next episode.
  Padded slots (``pad=True``) read the same way forever.

**Why dead rows are masked, not reported as done every step.**  A row that
re-reported ``done=True`` with a zero reward every step would feed PPO a
stream of one-step "episodes" that never happened: the value net learns
that zero observations are worth 0, and the policy gradient pushes on
actions that changed nothing; SB3's episode statistics would count them as
episodes.  Instead, the transitions of a masked row are kept out of the
update: :class:`MaskedRolloutBuffer` records SEER's ``infos["mask"]`` with
every transition and hands PPO (or A2C) only the transitions whose agent
acted.  The advantages of the real transitions are unaffected by the gap:
the agent's last real transition is terminal (its ``done`` cuts GAE), and
the next episode's transitions only look forward.  :class:`MaskedPPO` and
:class:`MaskedA2C` use that buffer.  Plain ``PPO`` also runs on a
:class:`SeerVecEnv`, but learns from the masked rows too; with an env whose
agents never leave (no deaths, no padding) the two are the same.

The copy autoresets when all its agents are gone (``make_vec_env`` asks for
SEER's ``SAME_STEP`` autoreset, so no step is spent on the reset itself).
``VecMonitor`` is not needed (the ``episode`` infos are already there); if
added, it counts the masked gap into the next episode's length.
``VecNormalize`` works on top, but its running statistics also see the
masked rows' zero observations.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Sequence

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode

from seer.integrations import require

require("stable_baselines3", "sb3", "seer.integrations.sb3")

from stable_baselines3 import A2C, PPO  # noqa: E402
from stable_baselines3.common.buffers import RolloutBuffer  # noqa: E402
from stable_baselines3.common.vec_env import VecEnv  # noqa: E402

__all__ = ["SeerVecEnv", "make_vec_env", "MaskedRolloutBuffer", "MaskedPPO", "MaskedA2C"]

# infos keys of seer.vector that SeerVecEnv turns into its own per-row entries
_OWN_KEYS = frozenset({"mask", "alive", "final_obs", "final_info"})


class SeerVecEnv(VecEnv):
    """An SB3 ``VecEnv`` over a :class:`seer.vector.SeerVectorEnv`: one SB3 env per row.

    See the module docstring for what a row reports.  ``transition_mask``
    (after each step) says which rows' transitions are real;
    :class:`MaskedRolloutBuffer` reads it.

    Args:
        envs: A vector env from :func:`seer.vector.make` with autoreset mode
            ``SAME_STEP`` (preferred: no step is spent on resets) or
            ``NEXT_STEP``.  The SB3 env owns it: :meth:`close` closes it.

    Attributes:
        envs: The SEER vector env.
        transition_mask: bool ``(num_envs,)``: the rows whose agent acted in
            the last step (SEER's ``infos["mask"]``); all False before the first step.
        alive: bool ``(num_envs,)``: the rows whose agent acts at the next step.
        row_copy: the copy each row belongs to.
    """

    def __init__(self, envs):
        mode = getattr(envs, "autoreset_mode", None)
        if mode not in (AutoresetMode.SAME_STEP, AutoresetMode.NEXT_STEP):
            raise ValueError(f"SeerVecEnv needs a seer.vector env with autoreset_mode SAME_STEP or NEXT_STEP, got "
                             f"{mode!r}: SB3 expects every env to restart by itself")
        self.envs = envs
        self._same_step = mode == AutoresetMode.SAME_STEP
        R = envs.num_envs
        self.row_copy = np.asarray(envs.row_copy)
        self.num_copies = envs.num_copies
        self.agents_per_copy = envs.agents_per_copy
        self.transition_mask = np.zeros(R, bool)
        self.alive = np.zeros(R, bool)
        self._ep_return = np.zeros(R)
        self._ep_length = np.zeros(R, np.int64)
        self._t0 = time.perf_counter()
        self._actions: np.ndarray | None = None
        self._seed: int | None = None
        super().__init__(R, envs.single_observation_space, envs.single_action_space)

    # ---- reset and step ------------------------------------------------------------------------

    def seed(self, seed: int | None = None) -> list[int | None]:
        """Seed the next :meth:`reset`: copy ``c`` gets ``seed + c`` (SEER's
        rule), so every row returns the seed of its copy."""
        if seed is None:
            seed = int(np.random.randint(0, np.iinfo(np.uint32).max, dtype=np.uint32))
        if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
            raise ValueError(f"seed={seed!r} is invalid: expected None or a non-negative integer")
        self._seed = int(seed)
        return [self._seed + int(c) for c in self.row_copy]

    def reset(self):
        options = self._options[0] if self._options else {}
        if any(o != options for o in self._options):
            raise ValueError("set_options gave the rows different options: a seer.vector reset passes one options "
                             "dict to every copy")
        obs, infos = self.envs.reset(seed=self._seed, options=options or None)
        self._seed = None
        self._reset_seeds()
        self._reset_options()
        self.alive = infos["alive"].copy()
        self.transition_mask = np.zeros(self.num_envs, bool)
        self._ep_return[:] = 0.0
        self._ep_length[:] = 0
        self.reset_infos = self._row_infos(infos)
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions

    def step_wait(self):
        if self._actions is None:
            raise RuntimeError("step_wait() without step_async(): call step_async(actions) first")
        actions, self._actions = self._actions, None
        if isinstance(self.action_space, spaces.Discrete):
            actions = np.asarray(actions).reshape(self.num_envs)
        obs, rew, term, trunc, infos = self.envs.step(actions)
        mask = infos["mask"]
        self.transition_mask = mask.copy()
        self.alive = infos["alive"].copy()
        rew = np.where(mask, rew, 0.0).astype(np.float32)
        dones = (term | trunc) & mask
        self._ep_return += rew
        self._ep_length += mask
        rows = self._row_infos(infos)
        if dones.any():
            final_obs = infos.get("final_obs") if self._same_step else None
            has_final = infos.get("_final_obs") if final_obs is not None else None
            now = round(time.perf_counter() - self._t0, 6)
            for r in np.flatnonzero(dones).tolist():
                info = rows[r]
                last = final_obs[r] if has_final is not None and has_final[r] else obs[r]
                info["terminal_observation"] = np.array(last, copy=True)
                info["TimeLimit.truncated"] = bool(trunc[r] and not term[r])
                info["episode"] = {"r": float(self._ep_return[r]), "l": int(self._ep_length[r]), "t": now}
                self._ep_return[r] = 0.0
                self._ep_length[r] = 0
        if not mask.all():
            for r in np.flatnonzero(~mask).tolist():
                rows[r]["seer_masked"] = True
        return obs, rew, dones, rows

    def _row_infos(self, infos: dict) -> list[dict]:
        """Gymnasium's vector infos (arrays with ``_key`` masks) as one dict per row."""
        rows: list[dict] = [{} for _ in range(self.num_envs)]
        _scatter(infos, rows, skip=_OWN_KEYS)
        final = infos.get("final_info")
        if final:  # SAME_STEP: the infos of an episode's last step belong to its done row
            _scatter(final, rows, skip=())
        return rows

    def close(self) -> None:
        self.envs.close()

    # ---- copies --------------------------------------------------------------------------------

    def _rows(self, indices) -> list[int]:
        if indices is None:
            return list(range(self.num_envs))
        if isinstance(indices, (int, np.integer)):
            indices = [indices]
        rows = [int(i) for i in indices]
        bad = [i for i in rows if not 0 <= i < self.num_envs]
        if bad:
            raise IndexError(f"env indices {bad} are out of range: expected 0..{self.num_envs - 1} (one per row)")
        return rows

    def _copies(self, indices) -> tuple[list[int], list[int] | None]:
        """The rows in ``indices`` and the copies they belong to (None: every copy)."""
        rows = self._rows(indices)
        if indices is None:
            return rows, None
        return rows, sorted({int(self.row_copy[r]) for r in rows})

    def _per_row(self, rows: list[int], copies: list[int] | None, values) -> list[Any]:
        """One value per row, from ``values`` (one per copy in ``copies``): rows of one copy share it."""
        at = {c: i for i, c in enumerate(range(self.num_copies) if copies is None else copies)}
        return [values[at[int(self.row_copy[r])]] for r in rows]

    def get_attr(self, attr_name: str, indices=None) -> list[Any]:
        """Attribute ``attr_name`` of each row's copy (rows of one copy share it).

        Raises:
            AttributeError: A copy has no such attribute (what SB3's
                ``has_attr`` looks for): seer's ``EnvCopyAttributeError``.
        """
        rows, copies = self._copies(indices)
        return self._per_row(rows, copies, self.envs.get_attr(attr_name, copies=copies))

    def set_attr(self, attr_name: str, value: Any, indices=None) -> None:
        """Set ``attr_name`` on the copies of the rows in ``indices`` (a copy is set once for all its rows)."""
        self.envs.set_attr(attr_name, value, copies=self._copies(indices)[1])

    def has_attr(self, attr_name: str) -> bool:
        """Whether the copies have ``attr_name``; ``action_masks`` is the vector
        env's own (sb3-contrib's ``MaskablePPO`` looks for it)."""
        if attr_name == "action_masks":
            return self._masks_supported()
        return super().has_attr(attr_name)

    def _masks_supported(self) -> bool:
        from gymnasium import spaces

        return isinstance(self.envs.single_action_space, spaces.Discrete)

    def action_masks(self) -> np.ndarray:
        """Each row's legal actions, bool ``(num_envs, n)``: see
        :meth:`seer.vector.SeerVectorEnv.action_masks`."""
        return self.envs.action_masks()

    def env_method(self, method_name: str, *method_args, indices=None, **method_kwargs) -> list[Any]:
        """Call ``method_name`` once on each copy of the rows in ``indices``; each row gets its copy's result.

        ``"action_masks"`` (what sb3-contrib's ``MaskablePPO`` calls) answers
        one mask per row from the vector env's own masks, without calling the copies."""
        if method_name == "action_masks" and self._masks_supported():
            return list(self.envs.action_masks()[self._rows(indices)])
        rows, copies = self._copies(indices)
        results = self.envs.call(method_name, *method_args, copies=copies, **method_kwargs)
        return self._per_row(rows, copies, results)

    def env_is_wrapped(self, wrapper_class: type, indices=None) -> list[bool]:
        """Whether each row's copy is an instance of ``wrapper_class`` (copies
        are PettingZoo envs: a gymnasium wrapper such as SB3's ``Monitor``
        never wraps them)."""
        return [issubclass(cls, wrapper_class) for cls in self.get_attr("__class__", indices)]

    def get_images(self) -> Sequence[np.ndarray | None]:
        """One frame per *copy* (the rows of a copy share its picture), so
        ``render()`` tiles the copies."""
        return list(self.envs.render())

    def __repr__(self) -> str:
        return f"SeerVecEnv({self.envs!r})"


def _scatter(infos: dict, rows: list[dict], skip) -> None:
    for key, value in infos.items():
        if key.startswith("_") or key in skip:
            continue
        present = infos.get("_" + key)
        if present is None:
            continue
        if isinstance(value, dict):
            nested: list[dict] = [{} for _ in rows]
            _scatter(value, nested, skip=())
            for r in np.flatnonzero(present).tolist():
                rows[r][key] = nested[r]
        else:
            for r in np.flatnonzero(present).tolist():
                rows[r][key] = value[r]


def make_vec_env(env_fn: Callable[[], Any], num_copies: int, **make_kwargs) -> SeerVecEnv:
    """A :class:`SeerVecEnv` over ``seer.vector.make(env_fn, num_copies, **make_kwargs)``.

    Args:
        env_fn: Makes one PettingZoo env copy (see :func:`seer.vector.make`).
        num_copies: Env copies; SB3 sees ``num_copies * agents_per_copy`` envs.
        **make_kwargs: Passed to :func:`seer.vector.make` (``backend``,
            ``workers``, ``pad``, ...); ``autoreset_mode`` defaults to ``SAME_STEP``.
    """
    import seer.vector

    make_kwargs.setdefault("autoreset_mode", AutoresetMode.SAME_STEP)
    envs = seer.vector.make(env_fn, num_copies, **make_kwargs)
    try:
        return SeerVecEnv(envs)
    except BaseException:
        envs.close()
        raise


class MaskedRolloutBuffer(RolloutBuffer):
    """SB3's ``RolloutBuffer`` that keeps, per transition, whether its agent
    acted (``transition_mask`` of the env it samples, a :class:`SeerVecEnv`),
    and hands the learner only those transitions.

    Returns and advantages are computed over the whole ``(n_steps, n_envs)``
    grid as usual (a masked transition never feeds a real one: see the
    module docstring); :meth:`get` then drops the masked ones before
    shuffling, so every minibatch, the loss means and the logged explained
    variance cover real transitions only.  ``num_valid`` is their count.

    ``mask_source`` is set by :class:`MaskedPPO` / :class:`MaskedA2C` to the
    env being sampled; without one every transition counts (plain SB3).
    """

    mask_source: Any = None
    num_valid: int = 0

    def reset(self) -> None:
        super().reset()
        self.valid = np.ones((self.buffer_size, self.n_envs), bool)
        self.num_valid = 0

    def add(self, *args, **kwargs) -> None:
        m = getattr(self.mask_source, "transition_mask", None)
        if m is not None:
            if m.shape != (self.n_envs,):
                raise ValueError(f"the mask source's transition_mask has shape {m.shape}: expected ({self.n_envs},), "
                                 f"one per env of this buffer")
            self.valid[self.pos] = m
        super().add(*args, **kwargs)

    def get(self, batch_size: int | None = None):
        assert self.full, "the rollout buffer is read before it is full"
        if not self.generator_ready:
            keep = self.swap_and_flatten(self.valid).reshape(-1)
            for name in ("observations", "actions", "values", "log_probs", "advantages", "returns"):
                self.__dict__[name] = self.swap_and_flatten(self.__dict__[name])[keep]
            self.num_valid = int(keep.sum())
            self.generator_ready = True
        n = self.num_valid
        if n == 0:
            raise RuntimeError("the rollout has no transition of a live agent (every row was masked for all "
                               f"{self.buffer_size} steps): raise n_steps")
        indices = np.random.permutation(n)
        if batch_size is None:
            batch_size = n
        for start in range(0, n, batch_size):
            yield self._get_samples(indices[start:start + batch_size])


class _Masked:
    """Makes an on-policy SB3 algorithm learn only from the transitions of live agents."""

    def __init__(self, *args, **kwargs):
        if kwargs.get("rollout_buffer_class") is None:
            kwargs["rollout_buffer_class"] = MaskedRolloutBuffer
        super().__init__(*args, **kwargs)

    def _setup_model(self) -> None:
        if isinstance(self.observation_space, spaces.Dict) and self.rollout_buffer_class is MaskedRolloutBuffer:
            raise ValueError(f"{type(self).__name__} handles Box/Discrete observations, got {self.observation_space}: "
                             f"flatten Dict observations first")
        super()._setup_model()

    def collect_rollouts(self, env, callback, rollout_buffer, n_rollout_steps) -> bool:
        if isinstance(rollout_buffer, MaskedRolloutBuffer):
            # the buffer reads the mask of the step just taken at each add()
            rollout_buffer.mask_source = env.unwrapped
        return super().collect_rollouts(env, callback, rollout_buffer, n_rollout_steps)


class MaskedPPO(_Masked, PPO):
    """SB3's PPO learning only from live agents' transitions (see :class:`MaskedRolloutBuffer`).

    Takes PPO's arguments.  ``total_timesteps`` in ``learn`` counts rows
    times steps, as SB3 does for any ``VecEnv`` (masked rows included).
    """


class MaskedA2C(_Masked, A2C):
    """SB3's A2C learning only from live agents' transitions (see :class:`MaskedRolloutBuffer`)."""
