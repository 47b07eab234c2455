"""The baseline of bench/bench_trainers.py: seer.vector's rows from a plain Python loop.

``PlainVectorEnv`` steps ``num_copies`` PettingZoo ParallelEnvs one after
another through their dict API (what a trainer does without a vectorizer)
and lays the results out exactly as :class:`seer.vector.SeerVectorEnv`
does: one row per agent slot, zero rows for absent agents,
``infos["mask"]`` / ``infos["alive"]``, autoreset when a copy's agents are
all gone (``NEXT_STEP`` or ``SAME_STEP``).  So a training loop written for
seer.vector runs unchanged on it, and the two differ only in how the copies
are stepped.
"""

from __future__ import annotations

import numpy as np
from gymnasium.vector import AutoresetMode


class PlainVectorEnv:
    """Rows of ``num_copies`` ParallelEnvs, stepped in a Python loop (see the module docstring)."""

    def __init__(self, env_fn, num_copies: int, autoreset_mode="next_step"):
        if isinstance(autoreset_mode, str) and not isinstance(autoreset_mode, AutoresetMode):
            autoreset_mode = AutoresetMode[autoreset_mode.upper()]
        self.autoreset_mode = AutoresetMode(autoreset_mode)
        if self.autoreset_mode == AutoresetMode.DISABLED:
            raise ValueError("autoreset_mode='disabled' is not supported here: expected next_step or same_step")
        self.copies = [env_fn() for _ in range(num_copies)]
        e = self.copies[0]
        self.agents = list(e.possible_agents)
        self.num_copies, self.agents_per_copy = num_copies, len(self.agents)
        self.num_envs = num_copies * len(self.agents)
        self.single_observation_space = e.observation_space(self.agents[0])
        self.single_action_space = e.action_space(self.agents[0])
        self.row_copy = np.repeat(np.arange(num_copies), len(self.agents))
        self.row_agents = self.agents * num_copies
        self._index = {a: j for j, a in enumerate(self.agents)}
        R, shape = self.num_envs, self.single_observation_space.shape
        self._obs = np.zeros((R, *shape), self.single_observation_space.dtype)
        self._alive = np.zeros(R, bool)
        self._pending = np.zeros(num_copies, bool)  # NEXT_STEP: copies to reset at the next step
        self.closed = False

    def _rows(self, c: int) -> slice:
        A = self.agents_per_copy
        return slice(c * A, (c + 1) * A)

    def _reset_copy(self, c: int, seed=None) -> None:
        obs, _ = self.copies[c].reset(seed=seed)
        rows = self._rows(c)
        self._obs[rows] = 0
        self._alive[rows] = False
        base = c * self.agents_per_copy
        for a, o in obs.items():
            self._obs[base + self._index[a]] = o
            self._alive[base + self._index[a]] = True

    def reset(self, *, seed=None, options=None):
        for c in range(self.num_copies):
            self._reset_copy(c, None if seed is None else seed + c)
        self._pending[:] = False
        return self._obs.copy(), {"mask": self._alive.copy(), "alive": self._alive.copy()}

    def step(self, actions):
        R, A = self.num_envs, self.agents_per_copy
        rew = np.zeros(R, np.float32)
        term = np.zeros(R, bool)
        trunc = np.zeros(R, bool)
        mask = self._alive.copy()
        infos: dict = {}
        same = self.autoreset_mode == AutoresetMode.SAME_STEP
        final_obs = np.empty(R, object) if same else None
        final_mask = np.zeros(R, bool)
        for c, env in enumerate(self.copies):
            base = c * A
            if self._pending[c]:
                self._pending[c] = False
                self._reset_copy(c)
                mask[base:base + A] = False
                continue
            if not env.agents:
                continue
            act = {a: actions[base + self._index[a]] for a in env.agents}
            obs, r, te, tr, _ = env.step(act)
            rows = self._rows(c)
            self._obs[rows] = 0
            for a, o in obs.items():
                i = base + self._index[a]
                self._obs[i] = o
                rew[i], term[i], trunc[i] = r[a], te[a], tr[a]
            self._alive[rows] = False
            for a in env.agents:
                self._alive[base + self._index[a]] = True
            if not env.agents:
                if same:
                    done_rows = np.flatnonzero(mask[rows]) + base
                    for i in done_rows:
                        final_obs[i] = self._obs[i].copy()
                    final_mask[done_rows] = True
                    self._reset_copy(c)
                else:
                    self._pending[c] = True
        infos["mask"] = mask
        infos["alive"] = self._alive.copy()
        if same and final_mask.any():
            infos["final_obs"], infos["_final_obs"] = final_obs, final_mask
        return self._obs.copy(), rew, term, trunc, infos

    def _copies(self, copies):
        """The env copies named by ``copies`` (None: all), as seer.vector's ``copies=`` takes them."""
        if copies is None:
            return self.copies
        idx = [copies] if isinstance(copies, (int, np.integer)) else list(copies)
        for c in idx:
            if isinstance(c, bool) or not isinstance(c, (int, np.integer)) or not 0 <= c < self.num_copies:
                raise ValueError(f"copies holds {c!r}: expected copy indices in 0..{self.num_copies - 1}")
        return [self.copies[c] for c in idx]

    def get_attr(self, name, copies=None):
        return tuple(getattr(e, name) for e in self._copies(copies))

    def set_attr(self, name, values, copies=None):
        envs = self._copies(copies)
        values = values if isinstance(values, (list, tuple)) else [values] * len(envs)
        if len(values) != len(envs):
            raise ValueError(f"set_attr got {len(values)} values: expected {len(envs)} (one per copy) or a single value")
        for e, v in zip(envs, values):
            setattr(e, name, v)

    def call(self, name, *args, copies=None, **kwargs):
        return tuple(getattr(e, name)(*args, **kwargs) for e in self._copies(copies))

    def render(self):
        return tuple(e.render() for e in self.copies)

    def close(self):
        if not self.closed:
            self.closed = True
            for e in self.copies:
                e.close()

    def __repr__(self):
        return f"PlainVectorEnv({self.copies[0]!r}, num_copies={self.num_copies})"
