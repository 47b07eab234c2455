"""TorchRL's two paths to SEER's envs as a user meets them: SeerTorchRLEnv's
state, unbatched mode and random actions, and PettingZooWrapper's flags that
keep SEER's episodes."""

import numpy as np
import pytest

pytest.importorskip("torchrl")
import torch  # noqa: E402
from torchrl.envs import PettingZooWrapper  # noqa: E402
from torchrl.envs.utils import check_env_specs  # noqa: E402

from seer.envs import uav_swarm_v0, wireless_v0  # noqa: E402
from seer.integrations.torchrl import SeerTorchRLEnv  # noqa: E402

pytestmark = pytest.mark.timeout(300)


def _uav(**kw):
    return uav_swarm_v0.parallel_env(scenario="small", workers=1, **kw)


def _outward(td):
    """uav_0 and uav_1 fly off in +x (lost at steps 39 and 30); the others hover."""
    act = torch.zeros(*td.batch_size, 8, 3)
    act[..., :2, 0] = 1.0
    return td.set(("agents", "action"), act)


def test_state_is_each_copys_env_state():
    env = SeerTorchRLEnv(lambda: _uav(max_cycles=35), 3, backend="thread", workers=1, return_state=True)
    try:
        check_env_specs(env)
        assert env.full_observation_spec["state"].shape == (3, 8 * 51)
        env.set_seed(0)
        td = env.rollout(35, policy=_outward, break_when_any_done=False)
        # the last step's state equals what each copy's state() says now
        states = np.stack(env.envs.call("state"))
        np.testing.assert_array_equal(td["next", "state"][:, -1].numpy(), states)
        lost = td["next", "agents", "terminated"][:, -1, :, 0]
        assert lost[0, 1] and not lost[0, 0] and not lost[:, 2:].any()  # copy 0: seed 0, as in tests/envs
        st = td["next", "state"][:, -1].reshape(3, 8, 51)
        assert (st[lost] == 0).all() and (st[~lost] != 0).any(-1).all()
        # before the end, every step's state is its rows with the lost ones zeroed
        rows = td["next", "agents", "observation"] * td["next", "agents", "terminated"].logical_not()
        torch.testing.assert_close(td["next", "state"], rows.flatten(-2))
    finally:
        env.close()


def test_state_through_state_calls_matches_the_rows(monkeypatch):
    # an env whose state is not its rows is asked for it: the numbers must agree
    monkeypatch.setattr(uav_swarm_v0.UavSwarmEnv, "state_from_observations", False)
    slow = SeerTorchRLEnv(lambda: _uav(max_cycles=30), 2, backend="thread", workers=1, return_state=True)
    monkeypatch.undo()
    fast = SeerTorchRLEnv(lambda: _uav(max_cycles=30), 2, backend="thread", workers=1, return_state=True)
    try:
        assert not slow._state_rows and fast._state_rows
        for env in (slow, fast):
            env.set_seed(4)
        torch.manual_seed(0)
        a = slow.rollout(25, break_when_any_done=False)
        torch.manual_seed(0)
        b = fast.rollout(25, break_when_any_done=False)
        torch.testing.assert_close(a["next", "state"], b["next", "state"])
    finally:
        slow.close()
        fast.close()


def test_no_state_unless_asked_and_a_clear_error_without_one():
    env = SeerTorchRLEnv(lambda: _uav(), 2, backend="thread", workers=1)  # as PettingZooWrapper: off
    try:
        assert "state" not in env.full_observation_spec.keys()
        assert "state" not in env.rollout(3).keys()
    finally:
        env.close()
    from _integration_toy import DyingAgents

    with pytest.raises(ValueError, match="no state_space"):
        SeerTorchRLEnv(lambda: DyingAgents(n_agents=2, max_steps=3), 1, backend="thread", workers=1,
                       return_state=True)


def test_unbatched_mode_is_one_copy_without_batch_dims():
    env = SeerTorchRLEnv(lambda: wireless_v0.parallel_env(scenario="small", workers=1, max_cycles=10),
                         batched=False, backend="thread", workers=1)
    try:
        check_env_specs(env)
        assert env.batch_size == ()
        td = env.rollout(10)
        assert td.batch_size == (10,)
        assert td["agents", "observation"].shape == (10, 5, 13)
        assert td["agents", "action"].dtype == torch.int64
        assert td["next", "done"][-1].all()
    finally:
        env.close()
    with pytest.raises(ValueError, match="num_copies=4"):
        SeerTorchRLEnv(lambda: _uav(), 4, batched=False)


def test_random_actions_cover_the_bounds():
    env = SeerTorchRLEnv(lambda: _uav(), 4, backend="thread", workers=1)
    try:
        a = torch.stack([env.rand_action()["agents", "action"] for _ in range(50)])
        assert a.shape == (50, 4, 8, 3) and a.min() >= -1 and a.max() <= 1
        assert a.min() < -0.9 and a.max() > 0.9
        assert env.full_action_spec["agents", "action"].is_in(a[0])
    finally:
        env.close()


def test_pettingzoo_wrapper_keeps_seers_episodes_only_with_use_mask_and_not_done_on_any():
    def policy(td):
        act = torch.zeros(8, 3)
        act[1, 0] = 1.0  # uav_1 flies off in +x and is lost at step 30
        return td.set(("uav", "action"), act)

    default = PettingZooWrapper(_uav(max_cycles=60))
    kept = PettingZooWrapper(_uav(max_cycles=60), use_mask=True, done_on_any=False)
    try:
        default.set_seed(0)
        kept.set_seed(0)
        short = default.rollout(100, policy=policy, break_when_any_done=True)
        full = kept.rollout(100, policy=policy, break_when_any_done=True)
        assert full.batch_size[0] == 60   # SEER's whole episode
        mask = full["next", "uav", "mask"]
        lost_at = int(mask[:, 1].logical_not().nonzero()[0]) + 1  # the step uav_1 is lost in
        assert lost_at < 60 and not mask[lost_at - 1:, 1].any() and mask[:59, 0].all()
        assert short.batch_size[0] == lost_at  # the default ends the episode at the first lost UAV
    finally:
        default.close()
        kept.close()
