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
    assert env.agents == ["player_0", "player_1"]  # both players are in the game until it ends
    rng = np.random.default_rng(0)
    moves = 0
    while env.agents:
        agent = env.to_act
        legal = np.flatnonzero(obs[agent]["action_mask"])
        obs, rew, term, trunc, _ = env.step({agent: int(rng.choice(legal))})
        assert set(term) == {"player_0", "player_1"}  # every player in the game hears of every turn
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


def _classic_games():
    """Every classic PettingZoo game whose dependencies are here (chess, rlcard: the test extra)."""
    import importlib

    names = {"connect_four": "connect_four_v3", "tictactoe": "tictactoe_v3", "texas_holdem": "texas_holdem_v4",
             "texas_holdem_no_limit": "texas_holdem_no_limit_v6", "leduc_holdem": "leduc_holdem_v4",
             "go": "go_v5", "chess": "chess_v6", "rps": "rps_v2"}
    out = []
    for game, mod in names.items():
        try:
            m = importlib.import_module(f"pettingzoo.classic.{mod}")
        except ImportError as e:  # a game whose package is missing is reported, not hidden
            out.append(pytest.param(game, None, marks=pytest.mark.skip(reason=f"{mod}: {e}")))
            continue
        fn = (lambda m=m: m.env(board_size=9)) if game == "go" else m.env
        out.append(pytest.param(game, fn))
    return out


@pytest.mark.timeout(300)
@pytest.mark.parametrize("game, env_fn", _classic_games())
def test_wrap_passes_pettingzoo_api_tests_on_classic_games(game, env_fn):
    from pettingzoo.test import api_test, parallel_api_test
    from pettingzoo.utils.conversions import parallel_to_aec

    env = seer.wrap(env_fn())
    parallel_api_test(env, num_cycles=300)
    env.close()
    api_test(parallel_to_aec(seer.wrap(env_fn())), num_cycles=300)


def test_wrap_refuses_a_masked_out_move_naming_it():
    env = seer.wrap(GAMES["tictactoe"]())
    env.reset(seed=0)
    env.step({"player_1": 4})
    with pytest.raises(seer.InvalidArgumentError, match=r"action 4 of agent 'player_2' is masked out.*legal moves"):
        env.step({"player_2": 4})
    # nothing was played: the same player is still to move, and a legal move goes through
    assert env.to_act == "player_2"
    obs, rew, term, trunc, _ = env.step({"player_2": 0})
    assert not any(term.values())
    # opt-out: the game gets the illegal move and applies its own rule (the mover loses)
    loose = seer.wrap(GAMES["tictactoe"](), check_action_masks=False)
    loose.reset(seed=0)
    loose.step({"player_1": 4})
    _, rew, term, _, _ = loose.step({"player_2": 4})
    assert all(term.values()) and rew["player_2"] < 0


def test_wrap_ignores_the_waiting_players_actions():
    env = seer.wrap(GAMES["connect_four"]())
    env.reset(seed=0)
    assert env.to_act == "player_0"
    env.step({"player_0": 3, "player_1": 99})  # player_1's value is never looked at
    assert env.to_act == "player_1"
    with pytest.raises(ValueError, match="it is 'player_1''s turn"):
        env.step({"player_0": 3})


def test_vector_refuses_masked_out_actions_naming_row_agent_and_action():
    with seer.vector.make(GAMES["tictactoe"], 2, backend="thread", workers=1) as envs:
        _, infos = envs.reset(seed=0)
        a = envs.sample_actions()
        envs.step(a)
        taken = int(a[0])  # copy 0's first player took this cell: now masked out for player_2
        *_, infos = envs.step(envs.sample_actions())  # copy 0: player_2 to move
        rows = np.flatnonzero(infos["alive"])
        b = envs.sample_actions()
        r0 = int(rows[0])
        if infos["action_mask"][r0, taken]:
            taken = int(np.flatnonzero(~infos["action_mask"][r0])[0])
        b[r0] = taken
        with pytest.raises(ValueError, match=rf"row {r0} \(copy 0, agent '.*'\) is {taken}: its infos\['action_mask'\] "
                                             r"rules it out, legal actions are \["):
            envs.step(b)
        # nothing was stepped: the legal actions go through afterwards
        envs.step(envs.sample_actions())


def test_vector_action_masks_for_maskable_ppo():
    with seer.vector.make(GAMES["connect_four"], 3, backend="thread", workers=1) as envs:
        _, infos = envs.reset(seed=1)
        m = envs.action_masks()
        assert m.shape == (6, 7) and m.dtype == np.bool_
        alive = infos["alive"]
        np.testing.assert_array_equal(m[alive], infos["action_mask"][alive])
        assert m[~alive].all()  # rows that do not act allow everything: their action is ignored
    with pytest.raises(seer.InvalidArgumentError, match="check_action_masks='no'"):
        seer.vector.make(GAMES["connect_four"], 1, check_action_masks="no")


def test_vector_check_action_masks_false_hands_the_move_to_the_game():
    with seer.vector.make(GAMES["tictactoe"], 1, backend="thread", check_action_masks=False) as envs:
        envs.reset(seed=0)
        envs.step(np.array([4, 0]))
        _, rew, term, _, _ = envs.step(np.array([0, 4]))  # player_2 plays the taken cell: tictactoe's penalty
        assert term.all() and rew[1] < 0


def test_turn_based_env_observes_through_a_users_own_wrapper():
    """PettingZoo's own wrappers may be skipped for the waiting player's observation; a user's may not."""
    from pettingzoo.utils.wrappers import BaseWrapper

    class Counting(BaseWrapper):
        def __init__(self, env):
            super().__init__(env)
            self.seen = []

        def observe(self, agent):
            self.seen.append(agent)
            return super().observe(agent)

    env = Counting(GAMES["tictactoe"]())
    turns = as_parallel(env)
    turns.reset(seed=0)
    env.seen.clear()
    obs, *_ = turns.step({"player_1": 4})
    # the mover's observation after its move, and the next player's: both through the wrapper
    assert sorted(env.seen) == ["player_1", "player_2"] and sorted(obs) == ["player_1", "player_2"]
    assert obs["player_1"]["action_mask"][4] == 0


def _derived_games():
    import importlib

    out = []
    for game, mod, kwargs, count in (("chess", "chess_v6", {}, 4), ("go", "go_v5", {"board_size": 9}, 6),
                                     ("connect_four", "connect_four_v3", {}, 30),
                                     ("tictactoe", "tictactoe_v3", {}, 30)):
        try:
            m = importlib.import_module(f"pettingzoo.classic.{mod}")
        except ImportError as e:
            out.append(pytest.param(game, None, 0, marks=pytest.mark.skip(reason=f"{mod}: {e}")))
            continue
        out.append(pytest.param(game, lambda m=m, kwargs=kwargs: m.env(**kwargs), count))
    return out


@pytest.mark.parametrize("game, env_fn, games", _derived_games())
def test_waiting_players_observation_is_what_observe_returns(game, env_fn, games):
    """The player who just moved is reported with the game's own observe() of the position; in chess,
    go, connect four and tictactoe seer derives it from the next player's observation (seer.vector._waiting):
    the same values, dtypes and layout, at every move and game end (chess: through castling, en
    passant, promotions and repetitions)."""
    from seer.vector._waiting import GAMES as DERIVED, source_hash

    env = as_parallel(env_fn())
    raw = env.unwrapped
    if env._derive_waiting is None:
        name = type(raw).__module__
        pytest.skip(f"this pettingzoo's {game} is not the version seer.vector._waiting knows (source hash "
                    f"{source_hash(type(raw), DERIVED[name][0])}): observe() is used as it is")
    rng = np.random.default_rng(3)
    seen = dict.fromkeys(["en passant", "castling rights differ", "promotion", "repetition"], 0)
    ends = 0
    for g in range(games):
        obs, _ = env.reset(seed=g)
        while env.agents:
            actor = env.agents[0]
            obs, _, term, _, _ = env.step({actor: int(rng.choice(np.flatnonzero(obs[actor]["action_mask"])))})
            ends += all(term.values())
            if game == "chess":
                b = raw.board
                seen["en passant"] += b.ep_square is not None
                seen["castling rights differ"] += (b.castling_rights & 0xFF) != (b.castling_rights >> 56)
                seen["promotion"] += b.move_stack[-1].promotion is not None
                seen["repetition"] += b.is_repetition(2)
            assert actor in obs
            for agent, o in obs.items():
                want = raw.observe(agent)
                assert list(o) == list(want)
                for k in want:
                    assert o[k].dtype == want[k].dtype and o[k].strides == want[k].strides, (agent, k)
                    np.testing.assert_array_equal(o[k], want[k], err_msg=f"{agent} {k}")
    assert ends == games
    if game == "chess":
        assert all(seen.values()), seen


def test_waiting_observation_is_not_derived_for_a_changed_observe():
    """A game whose observe is its own (a subclass), or behind a user's wrapper, is observed as it is."""
    from pettingzoo.classic.connect_four.connect_four import raw_env
    from pettingzoo.utils.wrappers import BaseWrapper

    assert as_parallel(GAMES["connect_four"]())._derive_waiting is not None

    class Mine(raw_env):
        def observe(self, agent):
            return super().observe(agent)

    assert as_parallel(Mine())._derive_waiting is None
    assert as_parallel(BaseWrapper(raw_env()))._derive_waiting is not None  # a plain BaseWrapper passes it on

    class Counting(BaseWrapper):
        def observe(self, agent):
            return super().observe(agent)

    assert as_parallel(Counting(raw_env()))._derive_waiting is None


def test_sample_actions_draws_as_where_and_argmax_would():
    """masked_choice: the argmax of np.where(mask & live, rng.random(mask.shape), -1) per row (same picks,
    same generator state after)."""
    from seer.vector.actions import masked_choice

    g = np.random.default_rng(0)
    for trial in range(200):
        rows, n = int(g.integers(1, 12)), int(g.integers(1, 40))
        if trial % 10 == 0:  # wide masks (chess: 4672 actions) take another path
            rows, n = 16, 4672
        mask = g.random((rows, n)) < g.random() * (0.02 if n > 1000 else 1)
        live = g.random(rows) < 0.6 if trial % 2 else None
        seed = int(g.integers(2**32))
        mine, ref = np.random.default_rng(seed), np.random.default_rng(seed)
        want = np.where(mask if live is None else mask & live[:, None], ref.random(mask.shape), -1.0).argmax(axis=1)
        got = masked_choice(mask, mine, live)
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, want)
        assert mine.random() == ref.random()
