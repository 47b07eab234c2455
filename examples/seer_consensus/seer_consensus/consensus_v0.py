"""consensus_v0: gossip consensus on a ring, a SEER plug-in env (native handlers, native copy step).

``N`` agents sit on a ring.  Agent ``i`` runs on its own clock (period
``(0.05, 0.1, 0.2)[i % 3]`` s); at each tick it moves its value toward the
mean of what it last heard from its two neighbours, plus its action::

    v += T * (gain * (mean_heard - v) + speed * action)

and tells both neighbours its new value, which they hear ``delay`` = 0.01 s
later.  All agents want to reach the episode's goal value.

- Observation (float32, 4, clipped to [-10, 10]): own value, value heard
  from the left, from the right, goal - own value.
- Action: Box(-1, 1, (1,), float32).
- Reward: ``-|goal - value|`` after the step.  Episodes are truncated after
  ``max_cycles`` steps of ``dt`` = 0.1 s; no agent terminates.

The events run on SEER's runtime through C handlers from this package's own
extension module, built against ``seer.get_include()`` only; the whole step
is one C call (``cons_copy_step``), which seer.vector's thread backend also
runs for each copy with the GIL released.  ``engine="numba"`` runs the same
handlers and step written in Python syntax and compiled by Numba
(``_numba.py``), ``engine="python"`` the same model as a plain Python event
loop (a heap); all three give bit for bit the same numbers.

Example:
    >>> from seer_consensus import consensus_v0
    >>> env = consensus_v0.parallel_env(scenario="small")
    >>> obs, infos = env.reset(seed=0)
    >>> obs, rew, term, trunc, infos = env.step({a: env.action_space(a).sample() for a in env.agents})
"""

from __future__ import annotations

import copy
import numbers

import gymnasium
import numpy as np
from pettingzoo import ParallelEnv
from pettingzoo.utils import wrappers
from pettingzoo.utils.conversions import parallel_to_aec_wrapper

import seer
import seer.capi
import seer.stpa
from seer.actions import validate_actions
from seer.vector.native import NativeCopy, NativeSpec

from seer_consensus import _consensus_c
from seer_consensus._reference import ReferenceSim

__all__ = ["parallel_env", "env", "raw_env", "ConsensusEnv", "SCENARIOS"]

#: scenario -> number of agents
SCENARIOS = {"small": 8, "default": 64, "large": 1024}
PERIODS = (0.05, 0.1, 0.2)
DELAY, GAIN, SPEED, DT = 0.01, 2.0, 1.0, 0.1
ENGINES = ("seer", "numba", "python")
_plugin = None


def plugin() -> seer.capi.Plugin:
    """This package's C module, checked against the installed SEER's C API."""
    global _plugin
    if _plugin is None:
        _plugin = seer.capi.Plugin(_consensus_c)
    return _plugin


def make_spec(n: int) -> NativeSpec:
    return NativeSpec(agents=[f"agent_{i}" for i in range(n)],
                      observation=gymnasium.spaces.Box(-10.0, 10.0, (4,), np.float32),
                      action=gymnasium.spaces.Box(-1.0, 1.0, (1,), np.float32))


class ConsensusModel(seer.Model):
    """The SEER model: entities are agents; the state lives in numpy arrays
    that the C struct points at."""

    def __init__(self, n: int):
        p = plugin()
        ffi = p.ffi
        self.num_entities = n
        self.lookahead = DELAY / 2  # under the delay: t + delay may round below t + L
        self.kinds = [seer.EventKind("tick", p.handler("cons_tick")),
                      seer.EventKind("hear", p.handler("cons_hear")),
                      seer.EventKind("act", p.handler("cons_act"))]
        self.state = {"value": np.zeros(n), "heard": np.zeros((n, 2)), "action": np.zeros(n)}
        self.shared_state = ()  # messages carry the values: nothing to snapshot
        self.period = np.array([PERIODS[i % 3] for i in range(n)])
        c = ffi.new("cons_model *")
        c.n, c.delay, c.gain, c.speed = n, DELAY, GAIN, SPEED
        c.value = ffi.cast("double *", ffi.from_buffer(self.state["value"]))
        c.heard = ffi.cast("double *", ffi.from_buffer(self.state["heard"]))
        c.action = ffi.cast("double *", ffi.from_buffer(self.state["action"]))
        c.period = ffi.cast("double *", ffi.from_buffer(self.period))
        self.native_model = c

    def reset(self, runtime, seed):
        # An episode starts in the engine's own reset (it also sets the
        # state).  A reset through seer.Runtime -- STPA's probe of
        # workers="auto" runs this model on runtimes of its own -- gets the
        # same first events: every agent's tick at time 0.
        n = self.num_entities
        runtime.schedule(np.arange(n, dtype=np.int32), np.zeros(n), np.zeros(n, np.int32))


class SeerSim:
    """The env's C side: a runtime over the model and a ``cons_env``; one
    call per step (``cons_copy_step`` into this env's own rows)."""

    def __init__(self, n: int, max_cycles: int, workers):
        p = plugin()
        ffi, lib = p.ffi, p.lib
        self.model = ConsensusModel(n)
        capacity = max(4096, 16 * n)
        # "auto": STPA's choice, then checked against the neighbouring pool
        # sizes on the real steps (each reported by native_step below)
        self.runtime = seer.stpa.make_runtime(self.model, workers, capacity=capacity)
        e = ffi.new("cons_env *")
        e.m = self.model.native_model
        e.rt = ffi.cast("seer_runtime *", self.runtime.native_address)
        e.dt, e.max_cycles = DT, max_cycles
        self.env = e
        self.obs = np.zeros((n, 4), np.float32)
        self.act = np.zeros((n, 1), np.float32)
        self.rew = np.zeros(n)
        self.flags = {k: np.zeros(n, np.uint8) for k in ("term", "trunc", "mask", "alive")}
        self.ended = np.zeros(1, np.uint8)
        r = ffi.new("seer_copy_rows *")
        r.act = ffi.from_buffer(self.act)
        r.obs = ffi.from_buffer(self.obs)
        r.rew = ffi.cast("double *", ffi.from_buffer(self.rew))
        for k, arr in self.flags.items():
            setattr(r, k, ffi.cast("uint8_t *", ffi.from_buffer(arr)))
        r.ended = ffi.cast("uint8_t *", ffi.from_buffer(self.ended))
        self.rows = r
        self._lib, self._ffi = lib, ffi

    @property
    def workers(self) -> int:
        return self.runtime.workers

    @property
    def goal(self) -> float:
        return float(self.env.goal)

    def next_seed(self) -> int:
        return int(self._lib.cons_next_seed(self.env))

    def reset(self, seed: int) -> np.ndarray:
        rt = self.runtime
        with rt.exclusive("reset()"):
            rc = self._lib.cons_reset(self.env, seed)
            rt.mark_reset(seed)
            if rc != self._lib.SEER_OK:
                rt.fail(rc)
            self._lib.cons_observe_all(self.env, self._ffi.cast("float *", self._ffi.from_buffer(self.obs)))
        return self.obs.copy()

    def step(self, actions: np.ndarray) -> None:
        rt = self.runtime
        self.act[:, 0] = actions
        with rt.native_step():  # timed for the tuner, which may resize the pool for the next step
            rc = self._lib.cons_copy_step(self.env, self.rows, self._lib.SEER_COPY_STEP)
            if rc != self._lib.SEER_OK:
                rt.fail(rc)

    def error(self, rc: int) -> BaseException:
        try:
            self.runtime.fail(rc)
        except BaseException as exc:
            return exc
        return RuntimeError(f"cons_copy_step failed with status {rc}")

    def close(self) -> None:
        self.runtime.close()


class ConsensusEnv(ParallelEnv):
    """The PettingZoo ParallelEnv (see the module docstring).

    Args:
        scenario: ``"small"`` (8 agents), ``"default"`` (64), ``"large"`` (1024).
        num_agents: Overrides the scenario's count (at least 3).
        max_cycles: Steps per episode.
        workers: SEER's pool size for this env's runtime (``"auto"`` or an int).
        engine: ``"seer"`` (C handlers on SEER's runtime), ``"numba"`` (the
            same handlers and copy step in Python syntax, compiled by Numba:
            ``pip install 'seer-marl[numba]'``) or ``"python"`` (the same model as
            a plain Python event loop).
    """

    metadata = {"name": "consensus_v0", "render_modes": [], "is_parallelizable": True}

    def __init__(self, scenario: str = "small", num_agents: int | None = None, max_cycles: int = 100,
                 workers=1, engine: str = "seer"):
        if scenario not in SCENARIOS:
            raise ValueError(f"scenario={scenario!r} is unknown: expected one of {sorted(SCENARIOS)}")
        n = SCENARIOS[scenario] if num_agents is None else num_agents
        if not isinstance(n, numbers.Integral) or isinstance(n, bool) or n < 3:
            raise ValueError(f"num_agents={num_agents!r} is invalid: expected an integer >= 3")
        if not isinstance(max_cycles, numbers.Integral) or isinstance(max_cycles, bool) or max_cycles < 1:
            raise ValueError(f"max_cycles={max_cycles!r} is invalid: expected an integer >= 1")
        if engine not in ENGINES:
            raise ValueError(f"engine={engine!r} is unknown: expected one of {list(ENGINES)}")
        self.render_mode = None
        self.scenario, self.engine, self.max_cycles = scenario, engine, int(max_cycles)
        self.spec = make_spec(int(n))
        self.possible_agents = list(self.spec.agents)
        self.agents: list[str] = []
        self._index = {a: i for i, a in enumerate(self.possible_agents)}
        self._obs_spaces = {a: copy.deepcopy(self.spec.observation) for a in self.possible_agents}
        self._act_spaces = {a: copy.deepcopy(self.spec.action) for a in self.possible_agents}
        if engine == "seer":
            self._sim = SeerSim(int(n), self.max_cycles, workers)
        elif engine == "numba":
            from seer_consensus._numba import NumbaSim  # needs seer-marl[numba]

            self._sim = NumbaSim(int(n), self.max_cycles, workers, periods=PERIODS, delay=DELAY, gain=GAIN,
                                 speed=SPEED, dt=DT, spec=self.spec)
        else:
            self._sim = ReferenceSim(int(n), self.max_cycles, PERIODS, DELAY, GAIN, SPEED, DT)
        self._closed = False

    @property
    def workers(self) -> int:
        """SEER's pool size now (``workers="auto"`` tunes it between steps); 1 for the reference engine."""
        return getattr(self._sim, "workers", 1)

    def observation_space(self, agent):
        return self._obs_spaces[self._agent(agent)]

    def action_space(self, agent):
        return self._act_spaces[self._agent(agent)]

    def _agent(self, agent):
        if agent not in self._index:
            raise ValueError(f"agent {agent!r} is unknown: expected one of {self.possible_agents[:3]}...")
        return agent

    def reset(self, seed=None, options=None):
        self._check_open()
        if seed is None:
            seed = self._sim.next_seed()
        elif not isinstance(seed, numbers.Integral) or isinstance(seed, bool) or not 0 <= seed < 2**64:
            raise ValueError(f"seed={seed!r} is invalid: expected None or an integer in [0, 2**64)")
        obs = self._sim.reset(int(seed))
        self.agents = self.possible_agents[:]
        return dict(zip(self.agents, obs)), {a: {} for a in self.agents}

    def step(self, actions):
        self._check_open()
        agents = self.agents
        if not agents:
            raise RuntimeError("step() with no live agents: call reset() first")
        act = self._fast_actions(actions, agents)
        if act is None:  # something is off: the slow check names the agent and the value
            validate_actions(actions, agents, self.action_space, possible_agents=self._index)
            act = np.array([np.asarray(actions[a]).reshape(-1)[0] for a in agents], np.float32)
        sim = self._sim
        sim.step(act)
        obs, rew, trunc = sim.obs.copy(), sim.rew.tolist(), bool(sim.flags["trunc"][0])
        result = (dict(zip(agents, obs)), dict(zip(agents, rew)), dict.fromkeys(agents, False),
                  dict.fromkeys(agents, trunc), {a: {} for a in agents})
        if trunc:
            self.agents = []
        return result

    @staticmethod
    def _fast_actions(actions, agents):
        """Every live agent's action as one float32 array, when all are
        well formed (one numpy pass instead of a check per agent)."""
        if type(actions) is not dict or len(actions) != len(agents):
            return None
        try:
            arr = np.array([actions[a] for a in agents])
        except (KeyError, ValueError, TypeError):
            return None
        if arr.dtype.kind not in "fiu" or arr.shape != (len(agents), 1):
            return None
        if not (np.isfinite(arr).all() and arr.min() >= -1.0 and arr.max() <= 1.0):
            return None
        return arr[:, 0].astype(np.float32)

    def seer_native_copy(self) -> NativeCopy | None:
        """seer.vector's native path: this env's step and autoreset in C."""
        if self.engine == "python" or self._closed:
            return None
        if self.engine == "numba":
            return self._sim.native_copy(self)
        return NativeCopy(self.spec, step=plugin().function("cons_copy_step"), state=self._sim.env,
                          error=self._sim.error, owner=self)

    def _check_open(self):
        if self._closed:
            raise seer.ClosedError("this consensus_v0 env is closed")

    def close(self):
        if not self._closed:
            self._closed = True
            if self.engine != "python":
                self._sim.close()

    def __repr__(self):
        return f"consensus_v0(n={len(self.possible_agents)}, engine={self.engine!r})"


def parallel_env(**kwargs) -> ConsensusEnv:
    """The ParallelEnv; see :class:`ConsensusEnv` for the arguments."""
    return ConsensusEnv(**kwargs)


def raw_env(**kwargs):
    """The unwrapped AEC env (PettingZoo's conversion of :func:`parallel_env`, no wrapper)."""
    return parallel_to_aec_wrapper(ConsensusEnv(**kwargs))


def env(**kwargs):
    """The AEC env: :func:`raw_env` in PettingZoo's order-enforcing wrapper."""
    return wrappers.OrderEnforcingWrapper(raw_env(**kwargs))
