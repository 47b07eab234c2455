"""`seer.wrap(env)`: a PettingZoo ParallelEnv run through SEER (a ``BaseParallelWrapper``).

What "through SEER" means depends on the env:

- Envs that already run every agent's work as events on a SEER runtime of
  their own (SEER's registered envs ``uav_swarm_v0`` and ``wireless_v0``,
  or an outside env built the same way: a :class:`seer.Runtime` in its
  ``_runtime`` attribute): ``wrap`` returns an env that delegates to them
  unchanged.
- A foreign env (any other ParallelEnv, or an AECEnv, converted with
  ``aec_to_parallel`` when it is parallelizable, else run one turn per step
  by :class:`seer.vector.turns.TurnBasedEnv`, whose one live agent is the
  player to act) is a black box whose ``step`` does all agents' work in
  one Python call, so SEER cannot split it into per-agent events.  ``wrap``
  makes it the single entity of a SEER model: each ``step`` validates the
  actions the way SEER's envs do (every live agent, no unknown or dead agent,
  shape, dtype, bounds, NaN; the error names the agent and the value), then
  runs the env's ``step`` as one event on a :class:`seer.Runtime`.  That buys
  the runtime's error reporting (a failure is a :class:`seer.HandlerError`
  naming the step and carrying the env's traceback) and its tracing
  (``trace=True``: per-step timings in :attr:`SeerParallelEnv.trace`), not
  speed: one entity keeps one worker busy whatever ``workers`` says.  For
  parallelism over copies of a foreign env use :func:`seer.vector.make`.
"""

from __future__ import annotations

import numpy as np
from pettingzoo import AECEnv, ParallelEnv
from pettingzoo.utils import BaseParallelWrapper

from seer._checks import check_workers
from seer.actions import validate_actions
from seer.errors import ClosedError, InvalidArgumentError
from seer.model import EventKind, Model
from seer.runtime import Runtime
from seer.stpa import resolve_workers

__all__ = ["wrap", "SeerParallelEnv"]


def _is_builtin(env) -> bool:
    # Where the env's class lives does not matter: registered envs from other packages are
    # built like SEER's own, so what counts is whether it already runs on a SEER runtime.
    return isinstance(getattr(env, "_runtime", None), Runtime)


class _StepModel(Model):
    """One entity (the env); one kind (``env_step``)."""

    lookahead = 1.0
    shared_state = ()

    def __init__(self, owner: "SeerParallelEnv"):
        self.num_entities = 1
        self.state = {"steps": np.zeros(1, np.int64)}
        self.kinds = [EventKind("env_step", self._step, batched=False)]
        self._owner = owner

    def reset(self, runtime, seed):
        pass

    def _step(self, ctx, event):
        o = self._owner
        o._result = o.env.step(o._actions)
        ctx.state["steps"][0] += 1


class SeerParallelEnv(BaseParallelWrapper):
    """The env returned by :func:`wrap` (see the module docstring).

    A PettingZoo ``BaseParallelWrapper``: public attributes it does not
    define come from the wrapped env, as for any PettingZoo wrapper.  After
    :meth:`close`, ``reset``, ``step``, ``render`` and ``state`` raise
    :class:`seer.ClosedError`; the spaces and agent lists stay readable.
    """

    def __init__(self, env, workers="auto", *, validate: bool = True, trace: bool = False):
        if isinstance(env, AECEnv):
            from seer.vector.turns import as_parallel

            env = as_parallel(env)
        if not isinstance(env, ParallelEnv) and not all(
                hasattr(env, a) for a in ("possible_agents", "reset", "step", "action_space")):
            raise InvalidArgumentError(
                f"seer.wrap expects a PettingZoo ParallelEnv or AECEnv, got {type(env).__name__}")
        workers = check_workers(workers)
        super().__init__(env)
        self.builtin = _is_builtin(env)
        self.validate = validate
        self.metadata = dict(getattr(env, "metadata", {}) or {})
        self.render_mode = getattr(env, "render_mode", None)
        self._closed = False
        if self.builtin:
            have = getattr(env, "workers", None)
            if workers != "auto" and have is not None and workers != have:
                raise InvalidArgumentError(
                    f"workers={workers} differs from the env's own pool ({have} workers): SEER's envs size their "
                    f"pool when built; build it with workers={workers} instead"
                )
            self.runtime = env.runtime
            self.workers = have
            return
        self._model = _StepModel(self)
        # One entity keeps one worker busy: STPA is asked with that cap, so "auto" is 1.
        self.workers = resolve_workers(workers, self._model, max_workers=1)
        self.runtime = Runtime(self._model, workers=self.workers, trace=trace)
        self._k = 0
        self._actions = None
        self._result = None

    # ---- ParallelEnv API -------------------------------------------------------------------------

    @property
    def possible_agents(self):
        return self.env.possible_agents

    @property
    def agents(self):
        return self.env.agents

    @property
    def num_agents(self):
        return len(self.env.agents)

    @property
    def max_num_agents(self):
        return len(self.env.possible_agents)

    @property
    def observation_spaces(self):
        return {a: self.env.observation_space(a) for a in self.env.possible_agents}

    @property
    def action_spaces(self):
        return {a: self.env.action_space(a) for a in self.env.possible_agents}

    def reset(self, seed=None, options=None):
        self._check_open()
        return self.env.reset(seed=seed, options=options)

    def step(self, actions):
        self._check_open()
        if self.builtin:
            return self.env.step(actions)
        if self.validate:
            validate_actions(actions, self.env.agents, self.env.action_space,
                             possible_agents=self.env.possible_agents)
        rt = self.runtime
        if rt._needs_reset:  # the last step failed; the runtime's own state is clean
            rt.reset(rt.seed)
            self._k = 0
        self._actions = actions
        k = self._k
        rt.schedule(np.zeros(1, np.int32), np.array([float(k)]), np.zeros(1, np.int32))
        try:
            rt.step(float(k + 1))
        finally:
            self._actions = None
        self._k = k + 1
        out, self._result = self._result, None
        return out

    def render(self):
        self._check_open()
        return self.env.render()

    def state(self):
        self._check_open()
        return self.env.state()

    @property
    def unwrapped(self):
        return self.env.unwrapped if hasattr(self.env, "unwrapped") else self.env

    @property
    def trace(self):
        """The runtime's trace (``trace=True``): one event per step."""
        return self.runtime.trace

    def _check_open(self):
        if self._closed:
            raise ClosedError("this wrapped env is closed")

    def close(self):
        if self._closed:
            return
        self._closed = True
        try:
            self.env.close()
        finally:
            if not self.builtin:
                self.runtime.close()

    def __repr__(self):
        return f"seer.wrap({self.env!r}, workers={self.workers})"


def wrap(env, workers="auto", *, validate: bool = True, trace: bool = False) -> SeerParallelEnv:
    """A PettingZoo ParallelEnv that runs ``env`` through SEER.

    Args:
        env: A ParallelEnv (or AECEnv).  SEER's own envs are delegated to;
            any other env becomes the one entity of a SEER model (see the
            module docstring for what that does and does not give).
        workers: Pool size of the runtime for a foreign env (``"auto"``: 1,
            as one entity keeps one worker busy); for SEER's envs it must be
            ``"auto"`` or the pool size they were built with.
        validate: Check every step's actions before the env sees them.
        trace: Record the runtime's trace (foreign envs).

    Returns:
        A :class:`SeerParallelEnv`.

    Raises:
        InvalidArgumentError: ``env`` is no PettingZoo env, or ``workers``
            is not ``"auto"`` or an integer in [1, 1024] (or differs from a
            built-in env's own pool).
    """
    return SeerParallelEnv(env, workers, validate=validate, trace=trace)
