"""seer.integrations.benchmarl: a registered SEER env as a BenchMARL task,
run by BenchMARL's own Experiment with on- and off-policy algorithms."""

import pytest

pytest.importorskip("torch")
pytest.importorskip("benchmarl")

import torch  # noqa: E402
from benchmarl.algorithms import IppoConfig, IqlConfig, MappoConfig, MasacConfig  # noqa: E402
from benchmarl.experiment import Experiment, ExperimentConfig  # noqa: E402
from benchmarl.models.mlp import MlpConfig  # noqa: E402

import seer  # noqa: E402
import seer.integrations.benchmarl as sb  # noqa: E402

pytestmark = pytest.mark.timeout(600)


def _config(tmp_path, on_policy: bool) -> ExperimentConfig:
    cfg = ExperimentConfig.get_from_yaml()
    cfg.loggers = []
    cfg.render = False
    cfg.create_json = False
    cfg.save_folder = str(tmp_path)
    cfg.max_n_iters = 2
    cfg.max_n_frames = None
    cfg.evaluation = True
    cfg.evaluation_interval = 400  # once, after the second iteration
    cfg.evaluation_episodes = 2
    cfg.on_policy_collected_frames_per_batch = 200
    cfg.on_policy_n_envs_per_worker = 4
    cfg.on_policy_n_minibatch_iters = 1
    cfg.on_policy_minibatch_size = 50
    cfg.off_policy_collected_frames_per_batch = 200
    cfg.off_policy_n_envs_per_worker = 4
    cfg.off_policy_n_optimizer_steps = 2
    cfg.off_policy_train_batch_size = 32
    cfg.off_policy_memory_size = 1000
    return cfg


def _run(task, algorithm, tmp_path, on_policy=True):
    mlp = MlpConfig(num_cells=[16], activation_class=torch.nn.Tanh, layer_class=torch.nn.Linear)
    exp = Experiment(task=task, algorithm_config=algorithm.get_from_yaml(), model_config=mlp,
                     critic_model_config=mlp, seed=0, config=_config(tmp_path, on_policy))
    exp.run()
    return exp


def test_task_specs_are_per_copy_with_state_and_mask():
    task = sb.task("uav_swarm_v0", scenario="small", max_cycles=20)
    env = task.get_env_fun(num_envs=3, continuous_actions=True, seed=0, device="cpu")()
    try:
        assert env.batch_size == (3,)
        assert task.group_map(env) == {"agents": [f"uav_{i}" for i in range(8)]}
        obs = task.observation_spec(env)
        assert obs["agents", "observation"].shape == (8, 51)
        assert "mask" not in obs["agents"].keys() and "state" not in obs.keys()
        assert task.state_spec(env)["state"].shape == (8 * 51,)
        assert task.action_spec(env)["agents", "action"].shape == (8, 3)
        assert task.max_steps(env) == 20
        assert task.supports_continuous_actions() and not task.supports_discrete_actions()
        # SEER's episodes: 20 steps whatever is lost on the way, the state is the rows
        td = env.rollout(20, break_when_any_done=False)
        assert td["next", "done"][:, -1].all() and not td["next", "done"][:, :-1].any()
        obs_rows = td["next", "agents", "observation"] * td["next", "agents", "terminated"].logical_not()
        torch.testing.assert_close(td["next", "state"], obs_rows.flatten(-2))
    finally:
        env.close()


def test_masked_rows_give_no_advantage():
    from tensordict import TensorDict

    td = TensorDict({"agents": TensorDict({"advantage": torch.ones(4, 3, 1),
                                           "mask": torch.tensor([[1, 0, 1]] * 4, dtype=torch.bool)}, [4, 3])}, [4])
    out = sb.MaskedAdvantage("agents")(td)
    assert out["agents", "advantage"][:, 1].abs().sum() == 0 and out["agents", "advantage"][:, 0].eq(1).all()


@pytest.mark.parametrize("algorithm", [IppoConfig, MappoConfig], ids=["ippo", "mappo"])
def test_on_policy_experiments_run_on_the_swarm(algorithm, tmp_path):
    exp = _run(sb.task("uav_swarm_v0", scenario="small", max_cycles=25), algorithm, tmp_path)
    assert exp.n_iters_performed == 2 and exp.total_frames == 400


def test_masac_runs_on_the_swarm(tmp_path):
    exp = _run(sb.task("uav_swarm_v0", scenario="small", max_cycles=25), MasacConfig, tmp_path, on_policy=False)
    assert exp.n_iters_performed == 2


def test_iql_runs_on_wireless_discrete_actions(tmp_path):
    task = sb.task("wireless_v0", scenario="small", max_cycles=25)
    assert task.supports_discrete_actions() and not task.supports_continuous_actions()
    exp = _run(task, IqlConfig, tmp_path, on_policy=False)
    assert exp.n_iters_performed == 2


def test_mappo_runs_on_wireless(tmp_path):
    exp = _run(sb.task("wireless_v0", scenario="small", max_cycles=25), MappoConfig, tmp_path)
    assert exp.n_iters_performed == 2


def test_unknown_env_is_named():
    with pytest.raises(seer.UnknownEnvError, match="no_such_env"):
        sb.task("no_such_env")
