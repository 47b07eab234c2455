"""Turn-based AEC envs as ParallelEnvs, one turn per step (`TurnBasedEnv`, `as_parallel`).

PettingZoo's ``aec_to_parallel`` refuses AEC envs that are not
``is_parallelizable`` (board games such as ``pettingzoo.classic``'s
``connect_four_v3`` and ``tictactoe_v3``: one player moves at a time, and
what the next player may do depends on that move).  :class:`TurnBasedEnv`
runs such an env one turn per ``step`` instead, in one of two ways:

- ``live="actor"`` (what :func:`seer.vector.make` uses): ``agents`` holds
  only the agent to act (``agent_selection``), so a vector env's
  ``infos["alive"]`` has one live row per copy and the other rows' actions
  are ignored; ``step`` takes ``{agent_to_act: action}`` (other keys are
  ignored).
- ``live="players"`` (what :func:`seer.wrap` uses, PettingZoo's ParallelEnv
  contract as ``parallel_api_test`` checks it): ``agents`` holds every
  player still in the game, each step reports every one of them (the
  waiting players with reward 0 unless the move changed theirs), and the
  actions of players who are not to move are ignored;
  :attr:`TurnBasedEnv.to_act` names the one who is.
- A step reports the agent that acted and every agent whose episode ended
  in it (the loser of a game learns of its loss in the winner's turn): their
  observation (``observe``), termination, truncation and info, and as reward
  what the agent earned since it was last reported (AEC's cumulative reward,
  as ``env.last()`` gives it); :attr:`TurnBasedEnv.reported` names them.
  The observation dict also holds the next player's observation, which it
  acts on.  (Chess, go, connect four and tictactoe: the waiting players'
  observations are derived from the next player's, the same arrays as
  ``observe`` gives, see :mod:`seer.vector._waiting`; a plain AEC loop never
  observes them.)  Agents that are done are stepped out with ``None`` as AEC
  requires, so ``agents`` is empty once the game is over.

A move that the mover's action mask rules out (``observe(agent)
["action_mask"]`` or ``infos[agent]["action_mask"]``) is refused with an
:class:`~seer.errors.InvalidArgumentError` naming the agent, the move and
the legal moves, before the game sees it (PettingZoo's classic games would
end the game with a penalty instead); ``check_masks=False`` hands it on.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pettingzoo import AECEnv, ParallelEnv

from seer.errors import InvalidArgumentError

LIVE_MODES = ("actor", "players")


class TurnBasedEnv(ParallelEnv):
    """A non-parallelizable AEC env as a ParallelEnv, one turn per step (see the module docstring).

    Args:
        aec: The AEC env (any PettingZoo ``AECEnv``, wrapped or not).
        live: ``"actor"``: ``agents`` is the player to move; ``"players"``:
            every player still in the game (see the module docstring).
        check_masks: Refuse a move its action mask rules out.

    Attributes:
        aec: The AEC env.
        reported: The agents whose data the last ``reset``/``step`` returned
            (the rows a vector env marks as real in ``infos["mask"]``).
    """

    def __init__(self, aec: AECEnv, live: str = "actor", check_masks: bool = True):
        if live not in LIVE_MODES:
            raise InvalidArgumentError(f"live={live!r} is invalid: expected one of {LIVE_MODES}")
        self.aec = aec
        self.live = live
        self.check_masks = bool(check_masks)
        self.possible_agents = list(aec.possible_agents)
        self.metadata = dict(getattr(aec, "metadata", {}) or {})
        self.render_mode = getattr(aec, "render_mode", None)
        self._data = _data_holder(aec)
        self._observe_waiting = _observer_of_waiting(aec)
        # the waiting player's observation from the next player's, where the game allows
        self._derive_waiting = _deriver_of_waiting(aec)
        self.agents: list = []
        self.reported: list = []
        self._earned: dict[Any, float] = {}
        # (agent, observation) of the player to move, as the last reset/step observed it: the
        # mask check reads its action mask from there instead of observing the game again
        self._to_act_obs: tuple | None = None

    def observation_space(self, agent):
        return self.aec.observation_space(agent)

    def action_space(self, agent):
        return self.aec.action_space(agent)

    @property
    def unwrapped(self):
        return self.aec.unwrapped

    @property
    def to_act(self):
        """The agent whose move the next ``step`` takes (None once the game is over)."""
        return self._data.agent_selection if self.agents else None

    def _skip_done(self) -> None:
        """Step out the agents that are done (AEC takes a ``None`` action from
        each), until one is to act or none is left."""
        env = self._data
        while env.agents and (env.terminations.get(env.agent_selection) or env.truncations.get(env.agent_selection)):
            self.aec.step(None)
        if not env.agents:
            self.agents = []
        elif self.live == "actor":
            self.agents = [env.agent_selection]
        else:
            self.agents = [a for a in env.agents if not (env.terminations.get(a) or env.truncations.get(a))]

    def _check_move(self, actor, action) -> None:
        """Refuse ``action`` if ``actor``'s action mask rules it out."""
        seen = self._to_act_obs
        obs = seen[1] if seen is not None and seen[0] == actor else self.aec.observe(actor)
        mask = obs.get("action_mask") if isinstance(obs, dict) else None
        if mask is None:
            mask = (self._data.infos.get(actor) or {}).get("action_mask")
        if mask is None:
            return
        mask = np.asarray(mask).reshape(-1)
        try:
            move = int(action)
        except (TypeError, ValueError):
            return  # not a discrete move: the env's own checks name it
        if isinstance(action, (bool, np.bool_)) or move != action:
            return
        if not 0 <= move < len(mask) or not mask[move]:
            legal = np.flatnonzero(mask).tolist()
            raise InvalidArgumentError(
                f"action {action!r} of agent {actor!r} is masked out by its action_mask: legal moves are {legal} "
                f"(check_masks=False hands illegal moves to the game)")

    def reset(self, seed=None, options=None):
        aec, env = self.aec, self._data
        self._to_act_obs = None
        aec.reset(seed=seed, options=options)
        self._earned = dict.fromkeys(self.possible_agents, 0.0)
        self._skip_done()
        self.reported = list(self.agents)
        obs = {a: aec.observe(a) for a in self.agents}
        self._remember_to_act(obs)
        return obs, {a: dict(env.infos.get(a, {})) for a in self.agents}

    def _remember_to_act(self, obs: dict) -> None:
        if self.agents:
            a = self._data.agent_selection
            self._to_act_obs = (a, obs[a]) if a in obs else None

    def step(self, actions: dict):
        aec, env = self.aec, self._data
        if not self.agents:
            raise ValueError("step() after the game ended: call reset() first")
        actor = env.agent_selection
        if actor not in actions:
            raise ValueError(f"it is {actor!r}'s turn, but the actions name {sorted(map(str, actions))}: expected an "
                             f"action for {actor!r} (the player to move in this turn-based env)")
        action = actions[actor]
        if self.check_masks:
            self._check_move(actor, action)
        self._to_act_obs = None
        before = self.agents  # _skip_done rebinds self.agents, never mutates it
        aec.step(action)
        earned = self._earned
        for a, r in env.rewards.items():
            earned[a] = earned.get(a, 0.0) + float(r)
        terms, truncs, infos_now = env.terminations, env.truncations, env.infos
        if self.live == "players":  # everyone who was in the game hears of this turn
            reported = [actor] + [a for a in before if a != actor]
        else:
            reported = [actor] + [a for a in env.agents if a != actor and (terms.get(a) or truncs.get(a))]
        # the next player's observation (below) goes through the wrappers: PettingZoo's
        # TerminateIllegalWrapper keeps it to check that player's move against
        to_move = env.agent_selection
        observe_waiting = self._observe_waiting
        derive, ahead = self._derive_waiting, None
        if derive is not None and to_move in env.agents and (
                to_move in reported or not (terms.get(to_move) or truncs.get(to_move))):
            # the next player's observation first (the one observed below anyway, of this same
            # position): the waiting players' follow from it
            ahead = aec.observe(to_move)
        obs, rew, term, trunc, infos = {}, {}, {}, {}, {}
        for a in reported:
            if a == to_move:
                obs[a] = aec.observe(a) if ahead is None else ahead
            else:
                obs[a] = observe_waiting(a) if ahead is None else derive(a, ahead)
            rew[a] = earned.pop(a, 0.0)
            earned[a] = 0.0
            term[a] = bool(terms.get(a, False))
            trunc[a] = bool(truncs.get(a, False))
            info = infos_now.get(a)
            infos[a] = dict(info) if info else {}
        self._skip_done()
        self.reported = reported
        for a in self.agents:  # the next player: its observation is what it acts on
            if a not in obs:
                obs[a] = ahead if a == to_move and ahead is not None else aec.observe(a)
        self._remember_to_act(obs)
        return obs, rew, term, trunc, infos

    def render(self):
        return self.aec.render()

    def state(self):
        return self.aec.state()

    def close(self):
        self.aec.close()

    def __repr__(self) -> str:
        return f"TurnBasedEnv({self.aec!r})"


_GAME_STATE = ("agents", "agent_selection", "terminations", "truncations", "rewards", "infos")


def _data_holder(aec):
    """Where to read the game's state (``agents``, ``agent_selection``,
    ``terminations``, ...): the raw env when every wrapper around it is a
    PettingZoo ``BaseWrapper`` that leaves those names alone (PettingZoo's
    wrappers write them to ``env.unwrapped``), since each wrapper layer's
    ``__getattr__`` costs a Python call per read; else ``aec`` itself."""
    from pettingzoo.utils.wrappers import BaseWrapper

    e = aec
    while isinstance(e, BaseWrapper):
        for cls in type(e).__mro__:
            if cls is BaseWrapper:
                break
            if any(name in vars(cls) for name in _GAME_STATE):
                return aec
        e = e.env
    return e


def _raw_behind_transparent(aec):
    """The raw env when every wrapper around ``aec`` is one of PettingZoo's
    that pass an ``observe`` of a player who is not to move straight through,
    else None."""
    from pettingzoo.utils.wrappers import (AssertOutOfBoundsWrapper, BaseWrapper, OrderEnforcingWrapper,
                                           TerminateIllegalWrapper)

    # OrderEnforcingWrapper only checks that reset came first; TerminateIllegalWrapper only
    # keeps the observation of the player to move
    transparent = (BaseWrapper, OrderEnforcingWrapper, AssertOutOfBoundsWrapper, TerminateIllegalWrapper)
    e = aec
    while isinstance(e, BaseWrapper):
        if type(e) not in transparent:
            return None
        e = e.env
    return e


def _observer_of_waiting(aec):
    """``observe`` for a player who is not to move: the raw env's behind
    PettingZoo's own wrappers (a Python call less per layer), else
    ``aec.observe``."""
    raw = _raw_behind_transparent(aec)
    return aec.observe if raw is None else raw.observe


def _deriver_of_waiting(aec):
    """``derive(agent, next_obs)``: the observation of ``agent``, a player who
    is not to move, from ``next_obs``, the player to move's observation of the
    same position, for the games where that is the same arrays as ``observe``
    and cheaper (chess, go, connect four, tictactoe: :mod:`seer.vector._waiting`) behind
    PettingZoo's own wrappers; None otherwise."""
    raw = _raw_behind_transparent(aec)
    if raw is None:
        return None
    from seer.vector._waiting import waiting_observer

    return waiting_observer(raw)


def as_parallel(env, live: str = "actor", check_masks: bool = True):
    """``env`` as a ParallelEnv: AEC envs through PettingZoo's ``aec_to_parallel``
    when they declare ``is_parallelizable``, through :class:`TurnBasedEnv`
    (with ``live`` and ``check_masks``) otherwise; anything else unchanged."""
    if not isinstance(env, AECEnv):
        return env
    if (getattr(env, "metadata", None) or {}).get("is_parallelizable", False):
        from pettingzoo.utils.conversions import aec_to_parallel

        return aec_to_parallel(env)
    return TurnBasedEnv(env, live=live, check_masks=check_masks)
