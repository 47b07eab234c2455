"""Turn-based AEC envs as ParallelEnvs whose one live agent is the one to act (`TurnBasedEnv`, `as_parallel`).

PettingZoo's ``aec_to_parallel`` refuses AEC envs that are not
``is_parallelizable`` (board games such as ``pettingzoo.classic``'s
``connect_four_v3`` and ``tictactoe_v3``: one player moves at a time, and
what the next player may do depends on that move).  :class:`TurnBasedEnv`
runs such an env one turn per ``step`` instead:

- ``agents`` holds only the agent to act (``agent_selection``), so a vector
  env's ``infos["alive"]`` has one live row per copy and the other rows'
  actions are ignored; ``step`` takes ``{agent_to_act: action}`` (other keys
  are ignored).
- A step reports the agent that acted and every agent whose episode ended
  in it (the loser of a game learns of its loss in the winner's turn): their
  observation (``observe``), termination, truncation and info, and as reward
  what the agent earned since it was last reported (AEC's cumulative reward,
  as ``env.last()`` gives it); :attr:`TurnBasedEnv.reported` names them.
  The observation dict also holds the next player's observation, which it
  acts on.  Agents that are done are stepped out with ``None`` as AEC
  requires, so ``agents`` is empty once the game is over.
"""

from __future__ import annotations

from typing import Any

from pettingzoo import AECEnv, ParallelEnv


class TurnBasedEnv(ParallelEnv):
    """A non-parallelizable AEC env as a ParallelEnv, one turn per step (see the module docstring).

    Args:
        aec: The AEC env (any PettingZoo ``AECEnv``, wrapped or not).

    Attributes:
        aec: The AEC env.
        reported: The agents whose data the last ``reset``/``step`` returned
            (the rows a vector env marks as real in ``infos["mask"]``).
    """

    def __init__(self, aec: AECEnv):
        self.aec = aec
        self.possible_agents = list(aec.possible_agents)
        self.metadata = dict(getattr(aec, "metadata", {}) or {})
        self.render_mode = getattr(aec, "render_mode", None)
        self.agents: list = []
        self.reported: list = []
        self._earned: dict[Any, float] = {}

    def observation_space(self, agent):
        return self.aec.observation_space(agent)

    def action_space(self, agent):
        return self.aec.action_space(agent)

    @property
    def unwrapped(self):
        return self.aec.unwrapped

    def _skip_done(self) -> None:
        """Step out the agents that are done (AEC takes a ``None`` action from
        each), until one is to act or none is left."""
        env = self.aec
        while env.agents and (env.terminations.get(env.agent_selection) or env.truncations.get(env.agent_selection)):
            env.step(None)
        self.agents = [env.agent_selection] if env.agents else []

    def reset(self, seed=None, options=None):
        env = self.aec
        env.reset(seed=seed, options=options)
        self._earned = dict.fromkeys(self.possible_agents, 0.0)
        self._skip_done()
        self.reported = list(self.agents)
        return ({a: env.observe(a) for a in self.agents},
                {a: dict(env.infos.get(a, {})) for a in self.agents})

    def step(self, actions: dict):
        env = self.aec
        if not self.agents:
            raise ValueError("step() after the game ended: call reset() first")
        actor = self.agents[0]
        if actor not in actions:
            raise ValueError(f"it is {actor!r}'s turn, but the actions name {sorted(map(str, actions))}: expected an "
                             f"action for {actor!r} (the only live agent of this turn-based env)")
        env.step(actions[actor])
        for a, r in env.rewards.items():
            self._earned[a] = self._earned.get(a, 0.0) + float(r)
        ended = [a for a in env.agents if a != actor and (env.terminations.get(a) or env.truncations.get(a))]
        reported = [actor] + ended
        obs = {a: env.observe(a) for a in reported}
        rew = {a: self._earned.pop(a, 0.0) for a in reported}
        term = {a: bool(env.terminations.get(a, False)) for a in reported}
        trunc = {a: bool(env.truncations.get(a, False)) for a in reported}
        infos = {a: dict(env.infos.get(a, {})) for a in reported}
        for a in reported:
            self._earned[a] = 0.0
        self._skip_done()
        self.reported = reported
        for a in self.agents:  # the next player: its observation is what it acts on
            if a not in obs:
                obs[a] = env.observe(a)
        return obs, rew, term, trunc, infos

    def render(self):
        return self.aec.render()

    def state(self):
        return self.aec.state()

    def close(self):
        self.aec.close()

    def __repr__(self) -> str:
        return f"TurnBasedEnv({self.aec!r})"


def as_parallel(env):
    """``env`` as a ParallelEnv: AEC envs through PettingZoo's ``aec_to_parallel``
    when they declare ``is_parallelizable``, through :class:`TurnBasedEnv`
    otherwise; anything else unchanged."""
    if not isinstance(env, AECEnv):
        return env
    if (getattr(env, "metadata", None) or {}).get("is_parallelizable", False):
        from pettingzoo.utils.conversions import aec_to_parallel

        return aec_to_parallel(env)
    return TurnBasedEnv(env)
