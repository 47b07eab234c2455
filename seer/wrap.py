"""`seer.wrap(env)`: a PettingZoo ParallelEnv run through SEER (a ``BaseParallelWrapper``).

What "through SEER" means depends on the env:

- Envs that already run every agent's work as events on a SEER runtime of
  their own (SEER's registered envs ``uav_swarm_v0`` and ``wireless_v0``,
  or an outside env built the same way: a :class:`seer.Runtime` in its
  ``_runtime`` attribute): ``wrap`` returns an env that delegates to them
  unchanged.
- A foreign env (any other ParallelEnv, or an AECEnv, converted with
  ``aec_to_parallel`` when it is parallelizable, else run one turn per step
  by :class:`seer.vector.turns.TurnBasedEnv`: a board game's ``agents`` are
  the players still in the game, every dict reports each of them, the
  actions of players not to move are ignored (``env.to_act`` names who
  moves), and a move that the mover's ``action_mask`` rules out is refused
  unless ``check_action_masks=False``) is a black box whose ``step`` does all agents' work in
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

Either way the result has PettingZoo's whole ParallelEnv surface:
``observation_spaces`` / ``action_spaces`` dicts, and ``state()`` /
``state_space`` whenever the wrapped env has them.  ``black_death=True``
fixes the agent set (SuperSuit's ``black_death_v3`` semantics, for trainers
that index ``possible_agents``): every possible agent stays in ``agents``
and in every dict until the episode ends; an agent that is gone gets an
all-zero observation (its space must be a Box) and reward 0, and is neither
terminated nor truncated until the episode ends (then every agent is done,
each as it left: terminated or truncated); ``infos[agent]["active"]`` is
False from the step it leaves in on (a time limit's truncation keeps it
True: the agent was not lost).  Actions for agents that are gone are
ignored.  A step after the episode's end returns empty dicts.
"""

from __future__ import annotations

import gymnasium
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

    def __init__(self, env, workers="auto", *, validate: bool = True, trace: bool = False,
                 black_death: bool = False, check_action_masks: bool = True):
        if isinstance(env, AECEnv):
            from seer.vector.turns import as_parallel

            env = as_parallel(env, live="players", check_masks=check_action_masks)
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
        if not isinstance(black_death, (bool, np.bool_)):
            raise InvalidArgumentError(f"black_death={black_death!r} is invalid: expected True or False")
        # an env that fixes its own agent set (SEER's, built with black_death=True) needs no second layer
        self._bd = _BlackDeath(env) if black_death and not getattr(env, "black_death", False) else None
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
        return self._bd.agents if self._bd is not None else self.env.agents

    @property
    def num_agents(self):
        return len(self.agents)

    @property
    def black_death(self) -> bool:
        """Whether the agent set is fixed (see the module docstring)."""
        return self._bd is not None or bool(getattr(self.env, "black_death", False))

    @property
    def max_num_agents(self):
        return len(self.env.possible_agents)

    @property
    def observation_spaces(self):
        return {a: self.env.observation_space(a) for a in self.env.possible_agents}

    @property
    def action_spaces(self):
        return {a: self.env.action_space(a) for a in self.env.possible_agents}

    @property
    def state_space(self):
        """The wrapped env's global state space (AttributeError if it has none)."""
        return self.env.state_space

    def reset(self, seed=None, options=None):
        self._check_open()
        out = self.env.reset(seed=seed, options=options)
        return out if self._bd is None else self._bd.reset(*out)

    def step(self, actions):
        self._check_open()
        bd = self._bd
        if bd is None:
            return self._step(actions)
        if not bd.agents and bd.was_reset:
            return {}, {}, {}, {}, {}  # the episode has ended (PettingZoo's envs answer so too)
        return bd.step(self._step(bd.live_actions(actions)))

    def _step(self, actions):
        if self.builtin:
            return self.env.step(actions)
        if self.validate:
            mover = getattr(self.env, "to_act", None)
            if mover is not None and isinstance(actions, dict):  # a turn-based game: only the mover's move counts
                if mover not in actions:
                    raise ValueError(f"it is {mover!r}'s turn, but the actions name {sorted(map(str, actions))}: "
                                     f"expected an action for {mover!r}")
                validate_actions({mover: actions[mover]}, [mover], self.env.action_space,
                                 possible_agents=self.env.possible_agents)
                validate_actions(dict.fromkeys(actions, None), [], self.env.action_space,
                                 possible_agents=self.env.possible_agents)
            else:
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


class _BlackDeath:
    """The fixed-agent-set layer of ``wrap(..., black_death=True)`` (see the module docstring)."""

    def __init__(self, env):
        self.env = env
        self.all = list(env.possible_agents)
        self.zeros = {}
        for a in self.all:
            space = env.observation_space(a)
            if not isinstance(space, gymnasium.spaces.Box):
                raise InvalidArgumentError(
                    f"black_death=True needs Box observation spaces (a gone agent observes zeros); {a!r} has {space}")
            self.zeros[a] = np.zeros(space.shape, space.dtype)
        self.agents: list = []
        self.was_reset = False
        self.gone: dict = {}  # agent -> "term" / "trunc": how it left

    def reset(self, obs, infos):
        self.agents = list(self.all)
        self.was_reset = True
        live = set(self.env.agents)
        self.gone = {a: "trunc" for a in self.all if a not in live}
        return self._fill(obs), self._infos(infos, live)

    def live_actions(self, actions):
        live = self.env.agents
        if not isinstance(actions, dict):
            return actions  # the step's validation names the problem
        return {a: actions[a] for a in live if a in actions}

    def step(self, result):
        obs, rew, term, trunc, infos = result
        for a in obs.keys() | term.keys() | trunc.keys():
            if a not in self.gone and (term.get(a) or trunc.get(a)):
                self.gone[a] = "term" if term.get(a) else "trunc"
        live = set(self.env.agents)
        rew_d = {a: float(rew[a]) if a in rew else 0.0 for a in self.all}
        if live:
            term_d, trunc_d = dict.fromkeys(self.all, False), dict.fromkeys(self.all, False)
        else:  # the episode has ended: every agent is done, as it left
            how = {a: self.gone.get(a, "trunc") for a in self.all}
            term_d = {a: how[a] == "term" for a in self.all}
            trunc_d = {a: how[a] == "trunc" for a in self.all}
            self.agents = []
        # an agent truncated now (the time limit) was not lost: still active
        active = live | {a for a, v in trunc.items() if v and not term.get(a)}
        return self._fill(obs), rew_d, term_d, trunc_d, self._infos(infos, active)

    def _fill(self, obs):
        return {a: obs[a] if a in obs else self.zeros[a].copy() for a in self.all}

    def _infos(self, infos, live):
        return {a: {**infos.get(a, {}), "active": a in live} for a in self.all}


def wrap(env, workers="auto", *, validate: bool = True, trace: bool = False,
         black_death: bool = False, check_action_masks: bool = True) -> SeerParallelEnv:
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
        black_death: Fix the agent set: every possible agent stays until the
            episode ends (see the module docstring).
        check_action_masks: A turn-based AEC game: refuse a move that the
            mover's ``action_mask`` rules out (an error naming the agent,
            the move and the legal moves); False hands it to the game.

    Returns:
        A :class:`SeerParallelEnv`.

    Raises:
        InvalidArgumentError: ``env`` is no PettingZoo env, or ``workers``
            is not ``"auto"`` or an integer in [1, 1024] (or differs from a
            built-in env's own pool).
    """
    return SeerParallelEnv(env, workers, validate=validate, trace=trace, black_death=black_death,
                           check_action_masks=check_action_masks)
