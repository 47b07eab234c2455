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
runs for each copy with the GIL released.  The env is a ``seer.NativeEnv``:
this module writes the reset and the step over the rows, the base class the
runtime, the PettingZoo API, the action check and the native copy.  ``engine="numba"`` runs the same
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

import numbers

import gymnasium
import numpy as np
from pettingzoo.utils import wrappers
from pettingzoo.utils.conversions import parallel_to_aec_wrapper

import seer
import seer.capi
from seer.vector.native import NativeSpec

from seer_consensus import _consensus_c
from seer_consensus._reference import ReferenceSim

__all__ = ["parallel_env", "env", "raw_env", "ConsensusEnv", "SCENARIOS", "make_traced"]

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
        for k in ("value", "heard", "action"):
            setattr(c, k, ffi.cast("double *", ffi.from_buffer(self.state[k])))
        c.period = ffi.cast("double *", ffi.from_buffer(self.period))
        self.native_model = c

    def reset(self, runtime, seed):
        # An episode starts in the engine's own reset (it also sets the
        # state).  A reset through seer.Runtime -- STPA's probe of
        # workers="auto" runs this model on runtimes of its own -- gets the
        # same first events: every agent's tick at time 0.
        n = self.num_entities
        runtime.schedule(np.arange(n, dtype=np.int32), np.zeros(n), np.zeros(n, np.int32))


def _check_int(name, value, lo):
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < lo:
        raise ValueError(f"{name}={value!r} is invalid: expected an integer >= {lo}")
    return int(value)


class ConsensusEnv(seer.NativeEnv):
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
        trace: Record the runtime's trace (``seer trace consensus_v0``).
    """

    metadata = {"name": "consensus_v0", "render_modes": [], "is_parallelizable": True}

    def __init__(self, scenario: str = "small", num_agents: int | None = None, max_cycles: int = 100,
                 workers=1, engine: str = "seer", trace: bool = False):
        if scenario not in SCENARIOS:
            raise ValueError(f"scenario={scenario!r} is unknown: expected one of {sorted(SCENARIOS)}")
        n = _check_int("num_agents", SCENARIOS[scenario] if num_agents is None else num_agents, 3)
        self.max_cycles = _check_int("max_cycles", max_cycles, 1)
        if engine not in ENGINES:
            raise ValueError(f"engine={engine!r} is unknown: expected one of {list(ENGINES)}")
        self.scenario, self.engine = scenario, engine
        spec = NativeSpec(agents=[f"agent_{i}" for i in range(n)],
                          observation=gymnasium.spaces.Box(-10.0, 10.0, (4,), np.float32),
                          action=gymnasium.spaces.Box(-1.0, 1.0, (1,), np.float32))
        if engine == "seer":
            super().__init__(spec, ConsensusModel(n), workers=workers, trace=trace)
            ffi = plugin().ffi
            self.c_env = e = ffi.new("cons_env *")
            e.m, e.rt = self.runtime.model.native_model, ffi.cast("seer_runtime *", self.runtime.native_address)
            e.dt, e.max_cycles = DT, self.max_cycles
            self._obs_ptr = ffi.cast("float *", ffi.from_buffer(self.rows.obs))
        elif engine == "numba":
            from seer_consensus import _numba as nb  # needs seer-marl[numba]

            self._nb = nb
            arrays = {"value": np.zeros(n), "heard": np.zeros((n, 2)), "action": np.zeros(n),
                      "period": np.array([PERIODS[i % 3] for i in range(n)]),
                      "P": np.array([DELAY, GAIN, SPEED, DT, 0.0]),
                      "I": np.array([n, 0, self.max_cycles, 0, 0], np.int64)}
            super().__init__(spec, nb.NumbaModel(arrays), workers=workers, trace=trace)
            arrays["I"][nb.I_RT] = self.runtime.native_address
            self._s = self.runtime.model.native_model.tuple()  # the handlers' State, for the same kernels
        else:
            super().__init__(spec, None)
            self._sim = ReferenceSim(n, self.max_cycles, PERIODS, DELAY, GAIN, SPEED, DT)

    def reset_rows(self, seed):
        if self.engine == "seer":
            rc = plugin().lib.cons_reset(self.c_env, seed)
            plugin().lib.cons_observe_all(self.c_env, self._obs_ptr)
            return rc
        if self.engine == "numba":
            rc = self._nb.reset(seer.capi.api_address(), self._s, np.uint64(seed))
            self._nb.observe(self._s, self.rows.obs)
            return rc
        self.rows.obs[:] = self._sim.reset(seed)

    def copy_step(self):
        if self.engine == "seer":
            return plugin().function("cons_copy_step"), self.c_env
        if self.engine == "numba":
            return self._nb.copy_step(self.spec), self.runtime.model.native_model

    def step_rows(self):  # engine="python": the plain event loop
        sim, rows = self._sim, self.rows
        sim.step(rows.act[:, 0])
        rows.obs[:], rows.rew[:], rows.trunc[:] = sim.obs, sim.rew, sim.flags["trunc"]

    def next_seed(self) -> int:
        if self.engine == "seer":
            return int(plugin().lib.cons_next_seed(self.c_env))
        return int(self._nb.next_seed(self._s) if self.engine == "numba" else self._sim.next_seed())


make_traced = ConsensusEnv.make_traced  # seer trace consensus_v0


def parallel_env(**kwargs) -> ConsensusEnv:
    """The ParallelEnv; see :class:`ConsensusEnv` for the arguments."""
    return ConsensusEnv(**kwargs)


def raw_env(**kwargs):
    """The unwrapped AEC env (PettingZoo's conversion of :func:`parallel_env`, no wrapper)."""
    return parallel_to_aec_wrapper(ConsensusEnv(**kwargs))


def env(**kwargs):
    """The AEC env: :func:`raw_env` in PettingZoo's order-enforcing wrapper."""
    return wrappers.OrderEnforcingWrapper(raw_env(**kwargs))
