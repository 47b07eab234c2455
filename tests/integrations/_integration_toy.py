"""A tiny ParallelEnv for the trainer adapters' tests: agents that die on cue.

Agent ``i`` observes ``(1 + noise, t, i, its action sum)`` (never all zero,
so a zero row in a batch can only be a masked one); agents in ``die``
terminate at that step, all truncate at ``max_steps``.
"""

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv


class DyingAgents(ParallelEnv):
    metadata = {"name": "dying_agents_v0", "render_modes": ["rgb_array"], "is_parallelizable": True}

    def __init__(self, n_agents=3, max_steps=6, die=None, discrete=False, render_mode=None):
        self.possible_agents = [f"a{i}" for i in range(n_agents)]
        self.agents = []
        self.max_steps = max_steps
        self.die = dict(die or {})
        self.discrete = discrete
        self.render_mode = render_mode
        self._rng = np.random.default_rng()
        self.t = 0

    def observation_space(self, agent):
        return spaces.Box(-1e6, 1e6, (4,), np.float32)

    def action_space(self, agent):
        return spaces.Discrete(3) if self.discrete else spaces.Box(-1.0, 1.0, (2,), np.float32)

    def reset(self, seed=None, options=None):
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self.t = 0
        self.agents = list(self.possible_agents)
        self.acc = dict.fromkeys(self.agents, 0.0)
        self.noise = float(self._rng.uniform(0.0, 0.5))
        return {a: self._obs(a) for a in self.agents}, {a: {} for a in self.agents}

    def _obs(self, a):
        return np.array([1.0 + self.noise, self.t, int(a[1:]), self.acc[a]], np.float32)

    def step(self, actions):
        assert set(actions) == set(self.agents), (actions, self.agents)
        for a, act in actions.items():
            self.acc[a] += float(np.sum(act)) + 1.0
        self.t += 1
        self.noise = float(self._rng.uniform(0.0, 0.5))
        obs = {a: self._obs(a) for a in actions}
        rew = {a: 1.0 + int(a[1:]) for a in actions}
        term = {a: self.die.get(int(a[1:])) == self.t for a in actions}
        trunc = {a: self.t >= self.max_steps for a in actions}
        self.agents = [a for a in actions if not term[a] and not trunc[a]]
        return obs, rew, term, trunc, {a: {"t": self.t} for a in actions}

    def render(self):
        return np.full((4, 6, 3), self.t, np.uint8)
