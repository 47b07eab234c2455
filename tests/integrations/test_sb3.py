"""seer.integrations.sb3: the VecEnv contract SB3 relies on, PPO running on it,
and the rows of dead agents kept out of PPO's rollout buffer."""

import functools
import importlib
import math
import sys

import numpy as np
import pytest

from _integration_toy import DyingAgents

sb3 = pytest.importorskip("stable_baselines3")
from stable_baselines3 import PPO  # noqa: E402
from stable_baselines3.common.monitor import Monitor  # noqa: E402
from stable_baselines3.common.vec_env import VecCheckNan, VecMonitor, VecNormalize  # noqa: E402

from seer.integrations.sb3 import MaskedA2C, MaskedPPO, MaskedRolloutBuffer, SeerVecEnv, make_vec_env  # noqa: E402

A = 3  # agents per copy
toy = functools.partial(DyingAgents, n_agents=A, max_steps=6, die={1: 2})


@pytest.fixture(autouse=True)
def sb3_logs_in_tmp_path(tmp_path, monkeypatch):
    """SB3's learn() without a log folder makes an empty SB3-<time> folder in
    the system's temp folder each time; these go to the test's own."""
    monkeypatch.setenv("SB3_LOGDIR", str(tmp_path / "sb3"))


@pytest.fixture
def venv():
    v = make_vec_env(functools.partial(toy, render_mode="rgb_array"), 2, backend="thread", workers=1)
    yield v
    v.close()


def zeros(v):
    return np.zeros((v.num_envs, *v.action_space.shape), np.float32)


def test_vecenv_contract(venv):
    """What SB3's own VecEnvs guarantee, checked step by step (check_env's
    checks, for a VecEnv: spaces, dtypes, shapes, done/terminal_observation)."""
    assert venv.num_envs == 2 * A
    assert venv.observation_space == venv.envs.single_observation_space
    obs = venv.reset()
    assert obs.shape == (2 * A, 4) and obs.dtype == np.float32
    assert all(venv.observation_space.contains(o) for o in obs)
    assert len(venv.reset_infos) == venv.num_envs
    returns = np.zeros(venv.num_envs)
    for step in range(1, 13):
        obs, rew, dones, infos = venv.step(zeros(venv))
        assert obs.shape == (2 * A, 4) and rew.shape == (2 * A,) and dones.shape == (2 * A,)
        assert rew.dtype == np.float32 and dones.dtype == np.bool_
        assert isinstance(infos, list) and len(infos) == venv.num_envs and all(isinstance(i, dict) for i in infos)
        returns += rew
        t = (step - 1) % 6 + 1  # the toy's clock; its episodes last 6 steps
        for r in range(venv.num_envs):
            agent = r % A
            info = infos[r]
            if agent == 1 and t == 2 or t == 6 and agent != 1:   # the agent's last step: dies, or truncated
                assert dones[r]
                term_obs = info["terminal_observation"]
                assert venv.observation_space.contains(term_obs)
                assert term_obs[1] == t and term_obs[2] == agent   # its own last observation
                assert info["TimeLimit.truncated"] == (agent != 1)
                assert info["episode"]["r"] == pytest.approx(returns[r]) and info["episode"]["l"] == t
                assert info["t"] == t                              # the env's own info of that step
                returns[r] = 0.0
            elif agent == 1 and t > 2:                             # dead: no transition
                assert not dones[r] and rew[r] == 0 and info["seer_masked"] and not venv.transition_mask[r]
                assert not obs[r].any() or t == 6   # zeros until the copy's next episode starts
            else:
                assert not dones[r] and rew[r] == 1 + agent and venv.transition_mask[r]
        if t == 6:  # SAME_STEP: the returned observation already starts the next episode
            assert (obs[:, 1] == 0).all() and (obs[:, 0] >= 1).all()


def test_seed_reset_is_deterministic(venv):
    seeds = venv.seed(7)
    assert seeds == [7 + r // A for r in range(venv.num_envs)]  # copy c gets seed + c
    a = venv.reset()
    venv.seed(7)
    b = venv.reset()
    np.testing.assert_array_equal(a, b)
    c = venv.reset()   # unseeded: the copies go on with their own streams
    assert not np.array_equal(a[:, 0], c[:, 0])
    with pytest.raises(ValueError, match="seed=-1"):
        venv.seed(-1)


def test_attrs_methods_wrappers_render(venv):
    venv.reset()
    assert venv.get_attr("max_steps") == [6] * venv.num_envs
    assert venv.get_attr("max_steps", indices=[0, A]) == [6, 6]
    venv.set_attr("max_steps", 9)
    assert venv.get_attr("max_steps") == [9] * venv.num_envs
    venv.set_attr("max_steps", 4, indices=[A])      # the rows of copy 1 only
    assert venv.get_attr("max_steps") == [9] * A + [4] * A
    assert venv.env_method("render")[0].shape == (4, 6, 3)
    # rows 0 and 1 belong to copy 0: it is called once and both rows get its result
    assert [f.shape for f in venv.env_method("render", indices=[0, 1])] == [(4, 6, 3)] * 2
    venv.set_attr("max_steps", 5, indices=[0])      # copy 0 only
    assert venv.env_method("__getattribute__", "max_steps", indices=[A, 0]) == [4, 5]
    with pytest.raises(IndexError, match="out of range"):
        venv.get_attr("max_steps", indices=[99])
    assert venv.env_is_wrapped(Monitor) == [False] * venv.num_envs
    assert venv.env_is_wrapped(DyingAgents) == [True] * venv.num_envs
    assert venv.render_mode == "rgb_array"
    frame = venv.render()
    assert frame.ndim == 3 and frame.shape[2] == 3   # the 2 copies tiled
    assert venv.has_attr("max_steps") and not venv.has_attr("no_such_attribute")


def test_sb3_wrappers_compose(venv):
    wrapped = VecNormalize(VecCheckNan(VecMonitor(venv), raise_exception=True))
    obs = wrapped.reset()
    for _ in range(8):
        obs, rew, dones, infos = wrapped.step(zeros(venv))
    assert np.isfinite(obs).all() and np.isfinite(rew).all()
    assert wrapped.unwrapped is venv


def test_refuses_disabled_autoreset():
    import seer.vector

    envs = seer.vector.make(toy, 1, backend="thread", workers=1, autoreset_mode="disabled")
    try:
        with pytest.raises(ValueError, match="autoreset_mode"):
            SeerVecEnv(envs)
    finally:
        envs.close()


def _rollout_with_obs_log(model, venv):
    """Collect one rollout, logging which (obs, acted) pairs SB3 fed the buffer."""
    from stable_baselines3.common.callbacks import BaseCallback

    seen = []

    class Log(BaseCallback):
        def _on_step(self):
            # the buffer's add() for this step stores the obs the actions were taken on
            seen.append((self.locals["obs_tensor"].numpy().copy(), venv.transition_mask.copy()))
            return True

    model._setup_learn(total_timesteps=model.n_steps * venv.num_envs, callback=None)
    cb = Log()
    cb.init_callback(model)
    model.collect_rollouts(model.env, cb, model.rollout_buffer, model.n_steps)
    return seen


@pytest.mark.parametrize("masked", [True, False])
def test_dead_rows_do_not_enter_the_rollout_buffer(masked):
    """Agent 1 dies at step 2 of every 6-step episode: its rows are dead for 4
    steps of 6.  MaskedPPO's buffer holds exactly the transitions of agents
    that acted; plain PPO's holds the dead rows' zero observations too."""
    venv = make_vec_env(toy, 2, backend="thread", workers=1)
    try:
        cls = MaskedPPO if masked else PPO
        model = cls("MlpPolicy", venv, n_steps=12, batch_size=24, seed=0, device="cpu")
        seen = _rollout_with_obs_log(model, venv)
        acted = np.concatenate([o[m] for o, m in seen])
        everything = np.concatenate([o for o, _ in seen])
        buf = model.rollout_buffer
        batch = np.concatenate([s.observations.numpy() for s in buf.get(None)])
        if masked:
            assert isinstance(buf, MaskedRolloutBuffer)
            assert len(acted) == buf.num_valid == 12 * 2 * A - 2 * 2 * 4   # 2 copies x 2 episodes x 4 dead steps
            # the same transitions, in another order
            key = lambda x: x[np.lexsort(x.T[::-1])]  # noqa: E731
            np.testing.assert_array_equal(key(batch), key(acted))
            assert (batch[:, 0] >= 1).all()  # no zero row of a dead agent
        else:
            assert len(batch) == len(everything)
            # the dead rows' junk: 4 transitions per dead spell, 3 of them on zero observations
            assert len(batch) == 12 * 2 * A and (~batch.any(axis=1)).sum() == 2 * 2 * 3
    finally:
        venv.close()


def _finite_losses(model):
    vals = model.logger.name_to_value
    policy_key = "train/policy_gradient_loss" if isinstance(model, PPO) else "train/policy_loss"
    for key in ("train/value_loss", policy_key, "train/entropy_loss"):
        assert key in vals and math.isfinite(vals[key]), (key, dict(vals))


def test_masked_ppo_and_a2c_train_on_toy():
    venv = make_vec_env(functools.partial(toy, discrete=True), 2, backend="thread", workers=1)
    try:
        for cls, kw in ((MaskedPPO, {"n_steps": 16, "batch_size": 32}), (MaskedA2C, {"n_steps": 8})):
            model = cls("MlpPolicy", venv, seed=0, device="cpu", **kw).learn(300)
            _finite_losses(model)
            assert model.num_timesteps >= 300
            assert len(model.ep_info_buffer) > 0
    finally:
        venv.close()


def test_masked_ppo_trains_on_uav_swarm():
    pytest.importorskip("seer.envs.uav_swarm_v0")
    from seer.envs import uav_swarm_v0

    venv = make_vec_env(lambda: uav_swarm_v0.parallel_env(scenario="small", max_cycles=20, workers=1), 2,
                        backend="thread", workers=1)
    try:
        model = MaskedPPO("MlpPolicy", venv, n_steps=32, batch_size=128, n_epochs=2, seed=0, device="cpu")
        model.learn(600)
        _finite_losses(model)
        assert np.isfinite([e["r"] for e in model.ep_info_buffer]).all() and len(model.ep_info_buffer) >= 16
        action, _ = model.predict(venv.reset(), deterministic=True)
        assert action.shape == (venv.num_envs, 3)
    finally:
        venv.close()


@pytest.mark.parametrize("extra", [[], ["--plain"]], ids=["seer", "plain"])
def test_example_runs(extra):
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).resolve().parents[2] / "examples" / "sb3_ppo_uav.py"
    spec = importlib.util.spec_from_file_location("sb3_ppo_uav_example", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = mod.main(["--timesteps", "1024", "--n-steps", "16", "--num-copies", "2", "--max-cycles", "10",
                    "--workers", "1", *extra])
    assert out["history"] and out["history"][-1]["agent_steps"] > 0
    assert all(math.isfinite(v) for v in out["losses"].values())


def test_missing_sb3_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "stable_baselines3", None)   # import fails as if not installed
    monkeypatch.delitem(sys.modules, "seer.integrations.sb3", raising=False)
    with pytest.raises(ImportError, match=r"pip install 'seer-marl\[sb3\]'"):
        importlib.import_module("seer.integrations.sb3")


def test_maskable_ppo_plays_only_legal_moves():
    """sb3-contrib's MaskablePPO finds the vector env's action masks (a move it
    could not see masked would be refused by seer.vector, failing learn())."""
    contrib = pytest.importorskip("sb3_contrib")
    from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported

    pytest.importorskip("pettingzoo.classic")
    from pettingzoo.classic import tictactoe_v3

    # seer.vector splits the games' Dict observations into board rows and infos["action_mask"]
    venv = make_vec_env(tictactoe_v3.env, 4, backend="thread", workers=1)
    try:
        assert is_masking_supported(venv)
        venv.reset()
        m = get_action_masks(venv)
        assert m.shape == (8, 9) and m.dtype == np.bool_
        model = contrib.MaskablePPO("MlpPolicy", venv, n_steps=32, batch_size=64, seed=0, device="cpu")
        model.learn(512)
        assert model.num_timesteps >= 512
    finally:
        venv.close()
