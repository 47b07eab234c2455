"""Turn-based AEC envs (pettingzoo.classic) and action masks through seer.vector and seer.wrap."""

import numpy as np
import pytest

import seer
import seer.vector
from seer.vector.turns import TurnBasedEnv, as_parallel

pytest.importorskip("pettingzoo.classic")
from pettingzoo.classic import connect_four_v3, tictactoe_v3  # noqa: E402

GAMES = {"connect_four": connect_four_v3.env, "tictactoe": tictactoe_v3.env}


def play(env_fn, backend: str, steps: int, copies: int = 3):
    """Random legal games through the vector env; every array of every step, for comparing backends."""
    record = []
    with seer.vector.make(env_fn, copies, backend=backend, workers=2) as envs:
        A = envs.agents_per_copy
        n = envs.single_action_space.n
        obs, infos = envs.reset(seed=7)
        assert infos["action_mask"].shape == (copies * A, n) and infos["action_mask"].dtype == np.bool_
        # one live row per copy: the player to move
        assert infos["alive"].reshape(copies, A).sum(axis=1).tolist() == [1] * copies
        games = 0
        for _ in range(steps):
            alive, legal = infos["alive"], infos["action_mask"]
            assert (legal.any(axis=1) == alive).all()  # only the player to move has legal actions
            actions = envs.sample_actions()
            for r in np.flatnonzero(alive):
                assert legal[r, actions[r]], f"row {r} chose illegal action {actions[r]}"
            obs, rew, term, trunc, infos = envs.step(actions)
            record.append((obs, rew, term, trunc, infos["mask"], infos["alive"], infos["action_mask"]))
            ended = (term | trunc).reshape(copies, A)
            # a game ends for both players in the same step, the loser's row is reported too
            assert (ended.all(axis=1) == ended.any(axis=1)).all()
            assert (infos["mask"][term | trunc]).all()
            games += int(ended.all(axis=1).sum())
            if ended.any():  # zero-sum: +1/-1 or a draw
                assert rew.reshape(copies, A)[ended.all(axis=1)].sum(axis=1).tolist() == \
                    [0.0] * int(ended.all(axis=1).sum())
        assert games >= copies, "no game ended: autoreset was not exercised"
    return record


@pytest.mark.parametrize("game", sorted(GAMES))
def test_classic_games_run_identically_on_both_backends(game):
    steps = 60 if game == "connect_four" else 30
    thread = play(GAMES[game], "thread", steps)
    process = play(GAMES[game], "process", steps)
    for t, (a, b) in enumerate(zip(thread, process)):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y, err_msg=f"step {t}")


def test_masked_observations_split_into_rows_and_masks():
    with seer.vector.make(GAMES["tictactoe"], 2, backend="thread") as envs:
        assert envs.single_observation_space == tictactoe_v3.env().observation_space("player_1")["observation"]
        obs, infos = envs.reset(seed=0)
        assert obs.shape == (4, 3, 3, 2)
        # the masks given here are used, and the masks of rows that do not act are ignored
        masks = np.zeros((4, 9), bool)
        masks[0, 4] = masks[2, 8] = True
        assert envs.sample_actions(masks)[[0, 2]].tolist() == [4, 8]
        with pytest.raises(ValueError, match="action_mask has shape"):
            envs.sample_actions(np.ones((3, 9), bool))
        # Gymnasium's own masked sampling gives legal actions too
        a = envs.action_space.sample(mask=tuple(infos["action_mask"].astype(np.int8)))
        assert all(infos["action_mask"][r, a[r]] for r in np.flatnonzero(infos["alive"]))
        # the other rows' actions are ignored: any value (here out of range) is fine
        a[~infos["alive"]] = 99
        envs.step(a)


def test_turn_based_env_reports_both_players_at_the_end():
    env = as_parallel(GAMES["tictactoe"]())
    assert isinstance(env, TurnBasedEnv)
    obs, _ = env.reset(seed=0)
    assert env.agents == ["player_1"] and list(obs) == ["player_1"]
    with pytest.raises(ValueError, match="player_1"):
        env.step({"player_2": 0})
    # player_1 takes the top row: 0, 1, 2 (player_2 plays 3, 4)
    for cell in (0, 3, 1, 4):
        obs, rew, term, trunc, _ = env.step({env.agents[0]: cell})
        assert list(rew) == env.reported and not any(term.values())
        assert env.agents[0] in obs  # the next player's observation comes along
    obs, rew, term, trunc, _ = env.step({"player_1": 2})
    assert env.reported == ["player_1", "player_2"] and rew == {"player_1": 1.0, "player_2": -1.0}
    assert all(term.values()) and env.agents == []


def test_wrap_plays_a_turn_based_game():
    env = seer.wrap(GAMES["connect_four"]())
    obs, _ = env.reset(seed=0)
    rng = np.random.default_rng(0)
    moves = 0
    while env.agents:
        (agent,) = env.agents
        legal = np.flatnonzero(obs[agent]["action_mask"])
        obs, rew, term, trunc, _ = env.step({agent: int(rng.choice(legal))})
        moves += 1
    assert 7 <= moves <= 42 and all(term.values()) and sorted(rew.values()) in ([-1.0, 1.0], [0.0, 0.0])
    env.close()


def test_mixed_masked_and_plain_observations_are_refused():
    from gymnasium import spaces

    from seer.errors import SpaceMismatchError
    from seer.vector._layout import build_layout, CopySpec

    box = spaces.Box(0, 1, (2,))
    masked = spaces.Dict({"observation": box, "action_mask": spaces.Box(0, 1, (3,), np.int8)})
    spec = CopySpec(["a", "b"], [masked, box], [spaces.Discrete(3)] * 2, {}, None)
    with pytest.raises(SpaceMismatchError, match="action mask"):
        build_layout([spec], pad=False, same_step=False)
