"""Toy envs and helpers the vector, wrap and Ray tests share: :class:`ToyEnv`, rollouts, row comparison.

Importable from any test file as ``toy_envs`` (``tests/conftest.py`` puts
``tests/`` on ``sys.path``).  The module is pickled by value, so the toy
envs travel to worker processes and Ray actors, which cannot import it.
"""

import functools
import os
import sys
import time

import cloudpickle
import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

# the tests folder is no package: worker processes get these classes by value
cloudpickle.register_pickle_by_value(sys.modules[__name__])

#: How long a step waits at a closed gate before it fails (a test that forgot to open it).
GATE_TIMEOUT_S = 60.0


class ToyEnv(ParallelEnv):
    """A tiny ParallelEnv: agent ``i`` observes (noise, t, i, its action sum);
    agents in ``die`` terminate at that step, all truncate at ``max_steps``.
    ``fail_next = True`` (or ``fail_at``) makes the next step raise.

    Two holds let a test assert an order of events instead of a duration:
    with ``gate`` (a file path, settable through ``set_attr``) a step waits
    until that file exists; with ``barrier`` (a ``threading.Barrier``, for
    copies in one process) a step waits until every party has arrived, so
    the step completes only if that many copies run at once."""

    metadata = {"name": "toy_v0", "render_modes": ["rgb_array"], "is_parallelizable": True}

    def __init__(self, n_agents=3, max_steps=6, die=None, continuous=False, hetero=False, render_mode=None,
                 sleep=0.0, fail_at=None, gate=None, barrier=None):
        self.possible_agents = [f"a{i}" for i in range(n_agents)]
        self.agents = []
        self.max_steps = max_steps
        self.die = dict(die or {})
        self.continuous = continuous
        self.hetero = hetero
        self.render_mode = render_mode
        self.sleep = sleep
        self.fail_next = False
        self.fail_at = fail_at
        self.gate = gate
        self.barrier = barrier
        self._rng = np.random.default_rng()
        self.t = 0

    def observation_space(self, agent):
        i = int(agent[1:])
        return spaces.Box(-1e6, 1e6, (4 + (i if self.hetero else 0),), np.float32)

    def action_space(self, agent):
        i = int(agent[1:])
        if self.continuous:
            return spaces.Box(-1.0, 1.0, (2 + (i if self.hetero else 0),), np.float32)
        return spaces.Discrete(3 + (i if self.hetero else 0))

    def reset(self, seed=None, options=None):
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self.t = 0
        self.agents = list(self.possible_agents)
        self.acc = dict.fromkeys(self.agents, 0.0)
        self.noise = float(self._rng.normal())
        obs = {a: self._obs(a) for a in self.agents}
        return obs, {a: ({"reset": True} if a == "a0" else {}) for a in self.agents}

    def _obs(self, a):
        o = np.zeros(self.observation_space(a).shape, np.float32)
        o[:4] = (self.noise, self.t, int(a[1:]), self.acc[a])
        return o

    def step(self, actions):
        if self.sleep:
            time.sleep(self.sleep)
        if self.gate:
            self._wait_at_gate()
        if self.barrier is not None:
            self.barrier.wait()
        if self.fail_next or (self.fail_at is not None and self.t + 1 == self.fail_at):
            self.fail_next = False
            raise RuntimeError(f"toy failure on demand (pid {os.getpid()})")
        assert set(actions) == set(self.agents), (actions, self.agents)
        for a, act in actions.items():
            assert self.action_space(a).contains(np.asarray(act, self.action_space(a).dtype)), (a, act)
            self.acc[a] += float(np.sum(act)) + 1.0
        self.t += 1
        self.noise = float(self._rng.normal())
        obs = {a: self._obs(a) for a in actions}
        rew = {a: self.acc[a] + self.noise for a in actions}
        term = {a: self.die.get(int(a[1:])) == self.t for a in actions}
        trunc = {a: self.t >= self.max_steps for a in actions}
        infos = {a: ({"t": self.t} if a == "a0" else {}) for a in actions}
        self.agents = [a for a in actions if not term[a] and not trunc[a]]
        return obs, rew, term, trunc, infos

    def _wait_at_gate(self):
        # A bound, so that a test whose gate never opens fails with a message instead of hanging.
        deadline = time.monotonic() + GATE_TIMEOUT_S
        while not os.path.exists(self.gate):
            if time.monotonic() > deadline:
                raise RuntimeError(f"gate {self.gate} did not open within {GATE_TIMEOUT_S} s")
            time.sleep(0.001)

    @property
    def pid(self):
        return os.getpid()

    def render(self):
        return np.full((2, 2, 3), self.t, np.uint8)


toy = functools.partial(ToyEnv, die={1: 3})


def sample(envs, rng):
    space = envs.single_action_space
    if isinstance(space, spaces.Discrete):
        return rng.integers(space.start, space.start + space.n, envs.num_envs)
    return rng.uniform(space.low, space.high, (envs.num_envs, *space.shape)).astype(space.dtype)


def rollout(envs, steps, seed=0):
    obs, infos = envs.reset(seed=seed)
    out = [obs, infos["mask"]]
    rng = np.random.default_rng(7)
    for _ in range(steps):
        o, r, te, tr, inf = envs.step(sample(envs, rng))
        out += [o, r, te, tr, inf["mask"], inf["alive"]]
    return out


def assert_same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.dtype == y.dtype and x.shape == y.shape
        assert x.tobytes() == y.tobytes()
