"""RLlib over ``seer.vector``: every env copy of an env runner stepped in one call.

RLlib's (new API stack) ``MultiAgentEnvRunner`` steps its
``num_envs_per_env_runner`` copies one after another through
``SyncVectorMultiAgentEnv``, one ``MultiAgentEnv.step`` each.
:class:`SeerMultiAgentEnvRunner` swaps that for
:class:`SeerVectorMultiAgentEnv`: the copies are rows of
:func:`seer.vector.make` (SEER's own envs: one C call for all copies on the
thread backend), handed to RLlib as the per-copy agent dicts it expects.
Agents that die leave the dicts (RLlib's multi-agent episodes end them), so
no dead row ever becomes a transition.

>>> from ray.rllib.algorithms.ppo import PPOConfig
>>> from seer.envs import uav_swarm_v0
>>> from seer.integrations.rllib import SeerMultiAgentEnv, SeerMultiAgentEnvRunner, shared_policy
>>> make_uav = lambda: uav_swarm_v0.parallel_env(scenario="small")
>>> config = (PPOConfig()
...           .environment(SeerMultiAgentEnv, env_config={"env_fn": make_uav})
...           .env_runners(env_runner_cls=SeerMultiAgentEnvRunner, num_env_runners=0,
...                        num_envs_per_env_runner=16)
...           .multi_agent(**shared_policy()))
>>> algo = config.build_algo()

What sets the sampling rate (``bench/results/rllib.md``): RLlib's own
per-agent-step work (episode bookkeeping, connectors, the module's forward
pass) costs far more than SEER's step, so the settings that matter are
RLlib's: ``num_envs_per_env_runner`` (copies batched into one forward
pass), ``num_env_runners=0`` on a small machine (remote runners add a
process hop per sample and fight the learner for cores) and
``rollout_fragment_length``.

:class:`SeerMultiAgentEnv` alone is a plain ``MultiAgentEnv`` over one
PettingZoo copy, for RLlib's stock env runners.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from seer.integrations import require

require("ray.rllib", "rllib", "seer.integrations.rllib")

import gymnasium as gym  # noqa: E402
from ray.rllib.env.multi_agent_env import MultiAgentEnv  # noqa: E402
from ray.rllib.env.multi_agent_env_runner import MultiAgentEnvRunner  # noqa: E402
from ray.rllib.env.vector.vector_multi_agent_env import VectorMultiAgentEnv  # noqa: E402

__all__ = ["SeerMultiAgentEnv", "SeerVectorMultiAgentEnv", "SeerMultiAgentEnvRunner", "shared_policy"]


def _env_fn_of(env_config) -> Callable[[], Any]:
    fn = (env_config or {}).get("env_fn")
    if not callable(fn):
        raise ValueError(f"env_config['env_fn'] must be a callable returning a PettingZoo ParallelEnv, got {fn!r}")
    return fn


class SeerMultiAgentEnv(MultiAgentEnv):
    """An RLlib ``MultiAgentEnv`` over one PettingZoo ParallelEnv.

    Args:
        env_config: RLlib's env config: ``{"env_fn": callable}``, the
            callable returning a PettingZoo ParallelEnv (e.g. one of SEER's).
            A ParallelEnv itself is also accepted.
    """

    def __init__(self, env_config: dict | Any = None):
        super().__init__()
        self.par_env = env_config if hasattr(env_config, "possible_agents") else _env_fn_of(env_config)()
        self.possible_agents = list(self.par_env.possible_agents)
        self.agents = []
        self.observation_spaces = {a: self.par_env.observation_space(a) for a in self.possible_agents}
        self.action_spaces = {a: self.par_env.action_space(a) for a in self.possible_agents}
        self.metadata = getattr(self.par_env, "metadata", {})
        self.render_mode = getattr(self.par_env, "render_mode", None)

    def reset(self, *, seed=None, options=None):
        obs, infos = self.par_env.reset(seed=seed, options=options)
        self.agents = list(self.par_env.agents)
        return obs, infos

    def step(self, action_dict):
        obs, rew, term, trunc, infos = self.par_env.step(action_dict)
        self.agents = list(self.par_env.agents)
        term = dict(term)
        trunc = dict(trunc)
        term["__all__"] = not self.agents and not any(trunc.values())
        trunc["__all__"] = not self.agents and any(trunc.values())
        return obs, rew, term, trunc, infos

    def render(self):
        return self.par_env.render()

    def close(self):
        self.par_env.close()


class SeerVectorMultiAgentEnv(VectorMultiAgentEnv):
    """RLlib's ``VectorMultiAgentEnv`` over ``seer.vector.make(env_fn, num_envs, ...)``.

    Each step sends every copy's actions in one vector step and returns one
    agent dict per copy: the agents that acted (their observation, reward,
    and their termination or truncation), ``"__all__"`` once the copy has no
    agent left.  A finished copy is reset in the next step (RLlib's
    ``next_step`` autoreset), whose dicts then hold its new agents' first
    observations.

    Args:
        env_fn: Makes one PettingZoo ParallelEnv copy.
        num_envs: Env copies.
        **make_kwargs: Passed to :func:`seer.vector.make` (``backend``,
            ``workers``...); autoreset is ``NEXT_STEP``.
    """

    def __init__(self, env_fn: Callable[[], Any], num_envs: int, **make_kwargs):
        import seer.vector

        super().__init__()
        make_kwargs["autoreset_mode"] = "next_step"
        self.vec = seer.vector.make(env_fn, num_envs, **make_kwargs)
        try:
            v = self.vec
            self.num_envs = v.num_copies
            self.A = v.agents_per_copy
            self.row_agents = list(v.row_agents)
            agents = [a for a in self.row_agents[:self.A] if a is not None]
            self.possible_agents = agents
            self.single_observation_spaces = {a: v.single_observation_space for a in agents}
            self.single_action_spaces = {a: v.single_action_space for a in agents}
            self.single_observation_space = gym.spaces.Dict(self.single_observation_spaces)
            self.single_action_space = gym.spaces.Dict(self.single_action_spaces)
            self.observation_space = self.single_observation_space
            self.action_space = self.single_action_space
            self.metadata = dict(v.metadata)
            self.metadata["autoreset_mode"] = "next_step"
            self.render_mode = v.render_mode
            # RLlib's runner reads spaces and agent ids from per-copy env objects
            self.envs = [_SpacesOnly(agents, self.single_observation_spaces, self.single_action_spaces)
                         for _ in range(self.num_envs)]
            self._act = np.zeros(v.action_space.shape, v.action_space.dtype)
            self._index = {a: j for j, a in enumerate(self.row_agents[:self.A])}
        except BaseException:
            self.vec.close()
            raise

    def _dicts(self, obs, rows_of_copy):
        A, names = self.A, self.row_agents
        out = []
        for c in range(self.num_envs):
            base = c * A
            out.append({names[base + j]: obs[base + j] for j in rows_of_copy[c]})
        return out

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        obs, infos = self.vec.reset(seed=seed, options=options)
        live = infos["alive"].reshape(self.num_envs, self.A)
        rows = [np.flatnonzero(live[c]).tolist() for c in range(self.num_envs)]
        return self._dicts(obs, rows), [{self.row_agents[c * self.A + j]: {} for j in r} for c, r in enumerate(rows)]

    def step(self, actions):
        act, A, index = self._act, self.A, self._index
        for c, acts in enumerate(actions):
            base = c * A
            for agent, a in acts.items():
                act[base + index[agent]] = a
        obs, rew, term, trunc, infos = self.vec.step(act)
        C = self.num_envs
        mask = infos["mask"].reshape(C, A)
        alive = infos["alive"].reshape(C, A)
        names = self.row_agents
        o_out, r_out, te_out, tr_out, i_out = [], [], [], [], []
        for c in range(C):
            base = c * A
            if mask[c].any():  # a step of the copy: the agents that acted
                js = np.flatnonzero(mask[c]).tolist()
                ended = not alive[c].any()
                any_trunc = bool(trunc[base:base + A].any())
                te = {names[base + j]: bool(term[base + j]) for j in js}
                tr = {names[base + j]: bool(trunc[base + j]) for j in js}
                te["__all__"] = ended and not any_trunc
                tr["__all__"] = ended and any_trunc
                r = {names[base + j]: float(rew[base + j]) for j in js}
            else:  # the copy was reset in this step: its new agents' first observations
                js = np.flatnonzero(alive[c]).tolist()
                te = {names[base + j]: False for j in js}
                tr = dict(te)
                te["__all__"] = tr["__all__"] = False
                r = {names[base + j]: 0.0 for j in js}
            o_out.append({names[base + j]: obs[base + j] for j in js})
            r_out.append(r)
            te_out.append(te)
            tr_out.append(tr)
            i_out.append({})
        return o_out, r_out, te_out, tr_out, i_out

    def render(self):
        return self.vec.render()

    def close_extras(self, **kwargs):
        self.vec.close()


class _SpacesOnly(MultiAgentEnv):
    """What RLlib's runner reads of a sub-env: agent ids and spaces (the
    copies themselves live in the SEER vector env)."""

    def __init__(self, agents, obs_spaces, act_spaces):
        super().__init__()
        self.possible_agents = list(agents)
        self.agents = list(agents)
        self.observation_spaces = dict(obs_spaces)
        self.action_spaces = dict(act_spaces)


class SeerMultiAgentEnvRunner(MultiAgentEnvRunner):
    """RLlib's ``MultiAgentEnvRunner`` whose copies are one :class:`SeerVectorMultiAgentEnv`.

    Takes the env from ``config.env_config``: ``"env_fn"`` (a callable
    returning one PettingZoo ParallelEnv copy) and optionally ``"seer"``
    (keyword arguments of :func:`seer.vector.make`, e.g. ``{"backend":
    "thread", "workers": 1}``).  ``num_envs_per_env_runner`` is the number
    of copies.
    """

    def make_env(self):
        if getattr(self, "env", None) is not None:
            try:
                self.env.close()
            finally:
                self.env = None
        cfg = self.config.env_config or {}
        make_kwargs = dict(cfg.get("seer") or {})
        self.env = SeerVectorMultiAgentEnv(_env_fn_of(cfg), self.config.num_envs_per_env_runner, **make_kwargs)
        self.num_envs = self.env.num_envs
        self._needs_initial_reset = True


def shared_policy(module_id: str = "shared") -> dict:
    """``AlgorithmConfig.multi_agent`` arguments that map every agent to one
    module (parameter sharing, as the other SEER integrations do)."""
    return {"policies": {module_id}, "policy_mapping_fn": lambda agent_id, episode, **kw: module_id}
