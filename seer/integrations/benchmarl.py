"""BenchMARL tasks over ``seer.vector``: any registered SEER env as a BenchMARL task.

>>> import seer.integrations.benchmarl as sb
>>> task = sb.task("uav_swarm_v0", scenario="small", max_cycles=100)
>>> # from benchmarl.algorithms import MappoConfig; from benchmarl.experiment import Experiment, ExperimentConfig
>>> # from benchmarl.models import MlpConfig
>>> # Experiment(task=task, algorithm_config=MappoConfig.get_from_yaml(), model_config=MlpConfig.get_from_yaml(),
>>> #            critic_model_config=MlpConfig.get_from_yaml(), seed=0, config=ExperimentConfig.get_from_yaml()).run()

**Path.**  The task's env is a :class:`seer.integrations.torchrl.SeerTorchRLEnv`
with BenchMARL's ``num_envs`` copies as its batch: the copies step together
on seer.vector (SEER's own envs: one C call for all of them, no TensorDict
per copy), so BenchMARL uses it as a vectorized env, as it does VMAS, with
no ``SerialEnv``/``ParallelEnv`` around it.  Episodes keep SEER's length:
a copy ends when all its agents are gone (the time limit, or every agent
lost), never at the first lost agent.

**Specs.**  Per copy (unbatched), as BenchMARL's models expect: one group,
``"agents"`` (every possible agent, in ``possible_agents`` order) with its
``observation``; the root ``state`` (BenchMARL's ``state_spec``, which
MAPPO's and MASAC's critics and QMIX's mixer read) when the env has a
``state_space``; the action spec is a Box's bounds or a Discrete's
categories (the env decides which: :meth:`SeerTask.supports_continuous_actions`).

**Masks.**  An agent that is lost keeps its rows until its copy's episode
ends, with zero observations and rewards, ``("agents", "mask")`` False and
its per-agent ``done`` set from its loss on, so no return or bootstrap
crosses its loss and no reward is invented for it.  BenchMARL's losses do
not read masks themselves; the task's replay-buffer transform zeroes the
advantage of masked rows, so on-policy algorithms (IPPO, MAPPO) take no
policy gradient from rows in which the agent did not act; off-policy ones
(MASAC, IQL, QMIX) learn a zero value for a lost agent's zero observation.
The mask stays in the batches for losses of your own.

Needs ``pip install 'seer-marl[benchmarl]'`` (BenchMARL with a CPU torch:
see docs/tutorials/training.md, "Installing them").
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from gymnasium import spaces

from seer.integrations import require

require("benchmarl", "benchmarl", "seer.integrations.benchmarl")

from benchmarl.environments.common import TaskClass  # noqa: E402
from tensordict import TensorDictBase  # noqa: E402
from torchrl.data import Composite  # noqa: E402
from torchrl.envs import EnvBase, Transform  # noqa: E402

from seer.integrations.torchrl import SeerTorchRLEnv  # noqa: E402

__all__ = ["task", "SeerTask", "MaskedAdvantage"]

GROUP = "agents"


class MaskedAdvantage(Transform):
    """Replay-buffer transform: the sampled ``(group, "advantage")`` is zero
    where ``(group, "mask")`` is False (the agent did not act in that row)."""

    def __init__(self, group: str = GROUP):
        super().__init__(in_keys=[], out_keys=[])
        self.group = group

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        adv = tensordict.get((self.group, "advantage"), None)
        mask = tensordict.get((self.group, "mask"), None)
        if adv is not None and mask is not None:
            keep = mask.reshape(*mask.shape, *([1] * (adv.dim() - mask.dim()))).to(adv.dtype)
            tensordict.set((self.group, "advantage"), adv * keep)
        return tensordict

    _call = forward

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        return tensordict


class SeerTask(TaskClass):
    """A BenchMARL task of a registered SEER env (see the module docstring).

    Made by :func:`task`.  ``name`` is the env id, ``config`` the env's
    keyword arguments (``parallel_env(**config)`` makes each copy).
    """

    def __init__(self, name: str, config: dict[str, Any] | None = None, *, vector_kwargs: dict | None = None):
        from seer import registry

        super().__init__(name=name, config=dict(config or {}))
        self.vector_kwargs = dict(vector_kwargs or {})
        probe = registry.load(name).parallel_env(**self.config)
        try:
            self._agents = list(probe.possible_agents)
            self._action_space = probe.action_space(self._agents[0])
            self._max_steps = int(getattr(probe, "max_cycles"))
            self._has_state = getattr(probe, "state_space", None) is not None
        except AttributeError as exc:
            raise ValueError(f"SEER env {name!r} has no max_cycles: BenchMARL needs an episode's step limit") from exc
        finally:
            probe.close()

    # ---- the env ---------------------------------------------------------------------------

    def get_env_fun(self, num_envs: int, continuous_actions: bool, seed: int | None,
                    device) -> Callable[[], EnvBase]:
        if continuous_actions and not self.supports_continuous_actions():
            raise ValueError(f"{self.name} has {self._action_space} actions: continuous_actions=True is impossible")
        if not continuous_actions and not self.supports_discrete_actions():
            raise ValueError(f"{self.name} has {self._action_space} actions: use an algorithm for continuous actions")
        from seer import registry

        # the module is looked up here, not kept: BenchMARL pickles the task with its experiment
        make_copy = functools.partial(registry.load(self.name).parallel_env, **self.config)
        vector_kwargs = {"backend": "thread", **self.vector_kwargs}
        has_state = self._has_state

        def make() -> SeerTorchRLEnv:
            env = SeerTorchRLEnv(make_copy, num_envs, group=GROUP, clip_actions=True, device=device,
                                 return_state=has_state, **vector_kwargs)
            if seed is not None:
                env.set_seed(seed)
            return env

        return make

    def supports_continuous_actions(self) -> bool:
        return isinstance(self._action_space, spaces.Box)

    def supports_discrete_actions(self) -> bool:
        return isinstance(self._action_space, spaces.Discrete)

    def has_render(self, env: EnvBase) -> bool:
        return False

    def max_steps(self, env: EnvBase) -> int:
        return self._max_steps

    def group_map(self, env: EnvBase) -> dict[str, list[str]]:
        return {GROUP: list(self._agents)}

    # ---- specs (per copy) --------------------------------------------------------------------

    def observation_spec(self, env: EnvBase) -> Composite:
        spec = env.full_observation_spec_unbatched.clone()
        del spec[(GROUP, "mask")]
        if "state" in spec.keys():
            del spec["state"]
        return spec

    def info_spec(self, env: EnvBase) -> Composite | None:
        return None

    def state_spec(self, env: EnvBase) -> Composite | None:
        spec = env.full_observation_spec_unbatched
        if "state" not in spec.keys():
            return None
        return Composite({"state": spec["state"].clone()})

    def action_spec(self, env: EnvBase) -> Composite:
        return env.full_action_spec_unbatched.clone()

    def action_mask_spec(self, env: EnvBase) -> Composite | None:
        return None

    def get_replay_buffer_transforms(self, env: EnvBase, group: str) -> list[Transform]:
        return [MaskedAdvantage(group)]

    @staticmethod
    def env_name() -> str:
        return "seer"

    def __repr__(self) -> str:
        return f"seer.integrations.benchmarl.task({self.name!r}, **{self.config!r})"


def task(name: str, *, backend: str = "thread", workers: Any = None, **env_kwargs) -> SeerTask:
    """A BenchMARL task of the registered SEER env ``name``.

    Args:
        name: The env id (``seer info`` lists them): ``"uav_swarm_v0"``, ``"wireless_v0"``, ...
        backend: seer.vector's backend for the copies (default ``"thread"``:
            SEER's envs step all copies in one C call).
        workers: seer.vector's worker threads (None: its default).
        **env_kwargs: The env's arguments (``scenario=``, ``max_cycles=`` ...),
            BenchMARL's task config.

    Returns:
        A :class:`SeerTask` for ``benchmarl.experiment.Experiment(task=...)``.

    Raises:
        seer.UnknownEnvError: ``name`` is not registered (the message lists the envs).
        ValueError: the env has no ``max_cycles``.
    """
    vector_kwargs: dict[str, Any] = {"backend": backend}
    if workers is not None:
        vector_kwargs["workers"] = workers
    return SeerTask(name, env_kwargs, vector_kwargs=vector_kwargs)

