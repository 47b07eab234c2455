"""skrl's stock PettingZoo wrapper on SEER's envs made with black_death=True:
IPPO and MAPPO (whose critic reads ``state()``) run as skrl's docs set them up."""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("skrl")

import torch.nn as nn  # noqa: E402
from skrl.envs.wrappers.torch import wrap_env  # noqa: E402
from skrl.memories.torch import RandomMemory  # noqa: E402
from skrl.models.torch import CategoricalMixin, DeterministicMixin, GaussianMixin, Model  # noqa: E402
from skrl.multi_agents.torch.ippo import IPPO  # noqa: E402
from skrl.multi_agents.torch.mappo import MAPPO  # noqa: E402
from skrl.trainers.torch import SequentialTrainer  # noqa: E402

import seer  # noqa: E402
from seer.envs import uav_swarm_v0, wireless_v0  # noqa: E402

pytestmark = pytest.mark.timeout(600)


class Policy(GaussianMixin, Model):
    def __init__(self, observation_space, action_space, device):
        Model.__init__(self, observation_space=observation_space, action_space=action_space, device=device)
        GaussianMixin.__init__(self, clip_actions=True)
        self.net = nn.Sequential(nn.Linear(self.num_observations, 32), nn.Tanh(), nn.Linear(32, self.num_actions))
        self.log_std = nn.Parameter(torch.zeros(self.num_actions))

    def compute(self, inputs, role=""):
        return self.net(inputs["observations"]), {"log_std": self.log_std}


class DiscretePolicy(CategoricalMixin, Model):
    def __init__(self, observation_space, action_space, device):
        Model.__init__(self, observation_space=observation_space, action_space=action_space, device=device)
        CategoricalMixin.__init__(self)
        self.net = nn.Sequential(nn.Linear(self.num_observations, 32), nn.Tanh(), nn.Linear(32, self.num_actions))

    def compute(self, inputs, role=""):
        return self.net(inputs["observations"]), {}


class Value(DeterministicMixin, Model):
    def __init__(self, space, action_space, device, key):
        Model.__init__(self, observation_space=space, state_space=space, action_space=action_space, device=device)
        DeterministicMixin.__init__(self)
        self.key = key
        self.net = nn.Sequential(nn.Linear(self.num_observations if key == "observations" else self.num_states, 32),
                                 nn.Tanh(), nn.Linear(32, 1))

    def compute(self, inputs, role=""):
        return self.net(inputs[self.key]), {}


def _train(env, algo, timesteps=2000):
    env = wrap_env(env, wrapper="pettingzoo")
    discrete = not hasattr(env.action_space(env.possible_agents[0]), "low")
    models, memories = {}, {}
    for uid in env.possible_agents:
        obs_space, act_space = env.observation_space(uid), env.action_space(uid)
        value_space, key = (env.state_space(uid), "states") if algo is MAPPO else (obs_space, "observations")
        policy = (DiscretePolicy if discrete else Policy)(obs_space, act_space, env.device)
        models[uid] = {"policy": policy, "value": Value(value_space, act_space, env.device, key)}
        memories[uid] = RandomMemory(memory_size=64, num_envs=env.num_envs, device=env.device)
    cfg = {"rollouts": 64, "learning_epochs": 2, "mini_batches": 2,
           "experiment": {"write_interval": 0, "checkpoint_interval": 0}}
    # skrl 2.1 refuses its own empty-dict defaults of these (an empty dict names no agent): one per agent
    for key in ("learning_rate_scheduler_kwargs", "observation_preprocessor_kwargs", "state_preprocessor_kwargs",
                "value_preprocessor_kwargs"):
        cfg[key] = {uid: {} for uid in env.possible_agents}
    agent = algo(possible_agents=env.possible_agents, models=models, memories=memories,
                 observation_spaces=env.observation_spaces, state_spaces=env.state_spaces,
                 action_spaces=env.action_spaces, device=env.device, cfg=cfg)
    trainer = SequentialTrainer(env=env, agents=agent, cfg={"timesteps": timesteps, "headless": True,
                                                            "disable_progressbar": True,
                                                            "close_environment_at_exit": False})
    trainer.train()
    env.close()
    return env, agent


@pytest.mark.parametrize("algo", [IPPO, MAPPO], ids=["ippo", "mappo"])
def test_skrl_trains_on_the_swarm_through_its_stock_wrapper(algo):
    # max_cycles=50: 2,000 steps cross 40 episode ends (and the losses within them)
    env, agent = _train(uav_swarm_v0.parallel_env(scenario="small", workers=1, max_cycles=50, black_death=True),
                        algo)
    for uid in env.possible_agents:
        memory = agent.memories[uid]
        assert memory.get_tensor_by_name("observations").shape[-1] == 51
        if algo is MAPPO:
            assert memory.get_tensor_by_name("states").shape[-1] == 8 * 51
    assert all(torch.isfinite(p).all() for p in agent.policies["uav_0"].parameters())


@pytest.mark.parametrize("algo", [IPPO, MAPPO], ids=["ippo", "mappo"])
def test_skrl_trains_on_wireless_with_discrete_actions(algo):
    _train(wireless_v0.parallel_env(scenario="small", workers=1, max_cycles=50, black_death=True), algo, 500)


def test_skrl_trains_on_seer_wrap_with_black_death():
    env = seer.wrap(uav_swarm_v0.parallel_env(scenario="small", workers=1, max_cycles=50), black_death=True)
    _train(env, MAPPO, 500)
