"""The observation of a player who is not to move, from the next player's (`waiting_observer`).

A turn-based step reports the player who just moved with its observation
(:mod:`seer.vector.turns`), which a plain AEC loop never asks for.  In some of
``pettingzoo.classic``'s games the two players' observations of a position
are the same planes seen from the other side, and ``observe`` costs a good
part of a move (chess builds its planes from the board, and for the black
player mirrors the board, copying its whole move stack).  There the waiting
player's observation is derived from the next player's, which the step
observes anyway:

- ``chess_v6``: the next player's planes flipped upside down, each side's
  castling planes and piece planes swapped, the colour plane set to the
  waiting player's;
- ``go_v5``: the same planes (the board history is the same for both
  players), the last one (the colour plane) set to the waiting player's;
- ``connect_four_v3``, ``tictactoe_v3``: the two planes (own marks, the
  other's) swapped.

The action mask of a waiting player is all zeros.  What a derivation returns
is equal to what ``observe`` returns: values, dtypes and the arrays' memory
layout.  It is used only for the game code it was written against (a hash
of the source of ``observe`` and the helpers it calls, with no subclass
overriding them); other versions of a game are observed as usual.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import inspect
import sys

import numpy as np


def _chess_planes() -> np.ndarray:
    """Chess: the waiting player's planes as indices into the (flipped) planes of the next player."""
    order = list(range(7 + 8 * 13))  # 7 planes of castling, colour and clocks, then 8 boards of 13 planes
    order[0:4] = [2, 3, 0, 1]  # our castling rights (kingside, queenside), theirs
    for i in range(1, 9):  # each board's 6 planes of our pieces and 6 of theirs, as observe swaps them
        ours, theirs = list(range(13 * i - 6, 13 * i)), list(range(13 * i, 13 * i + 6))
        order[13 * i - 6:13 * i], order[13 * i:13 * i + 6] = theirs, ours
    return np.array(order, np.intp)


CHESS_PLANES = _chess_planes()
CHESS_COLOUR = 4  # all True for the black player, all False for white


def _chess(players):
    def derive(agent, next_obs):
        planes = next_obs["observation"]
        # np.take makes a C-ordered array, as observe's np.dstack does
        if players.index(agent) == 0:  # white: observe's planes as they are
            out = np.take(planes[::-1], CHESS_PLANES, axis=2)
            out[:, :, CHESS_COLOUR] = False
        else:  # black: observe returns its planes flipped upside down (a view)
            out = np.flip(np.take(planes, CHESS_PLANES, axis=2), axis=0)
            out[:, :, CHESS_COLOUR] = True
        mask = next_obs["action_mask"]
        return {"observation": out, "action_mask": np.zeros(mask.shape, mask.dtype)}

    return derive


def _go(players):
    def derive(agent, next_obs):
        out = next_obs["observation"].copy()
        out[:, :, -1] = players.index(agent) != 0  # the colour plane: all True for the second player
        mask = next_obs["action_mask"]
        return {"observation": out, "action_mask": np.zeros(mask.shape, mask.dtype)}

    return derive


def _swap_two_planes(players):  # connect four, tictactoe
    def derive(agent, next_obs):
        planes, mask = next_obs["observation"], next_obs["action_mask"]
        return {"observation": planes[:, :, ::-1].copy(), "action_mask": np.zeros(mask.shape, mask.dtype)}

    return derive


# module of raw_env: (the methods of raw_env and the functions (module, name) whose source the
# derivation relies on, sha256 of those sources (each followed by a newline) per known version, derivation)
GAMES = {
    "pettingzoo.classic.chess.chess": (
        ("observe", ("pettingzoo.classic.chess.chess_utils", "get_observation"),
         ("pettingzoo.classic.chess.chess_utils", "boards_to_ndarray")),
        frozenset({"1835f6188d4ebacfbf915f86fbdcb9344dc89ff6568a2c045e9a2ca355739ffb"}),  # pettingzoo 1.27
        _chess),
    "pettingzoo.classic.go.go": (
        ("observe", "_encode_player_plane"),
        frozenset({"8b666c1b458d92481090e83212e8e2a490543f72b7e133bb11c09b4ddea46865"}),  # pettingzoo 1.27
        _go),
    "pettingzoo.classic.connect_four.connect_four": (
        ("observe",),
        frozenset({"96f8dd98733da338afa434ee5ad8a917238721468355e3e1aa9c818e8acfb3ca"}),  # pettingzoo 1.27
        _swap_two_planes),
    "pettingzoo.classic.tictactoe.tictactoe": (
        ("observe", "_get_mask"),
        frozenset({"a81fa6ebbd840941697ea61aafd555477721723e93101302c215681798ab71a3"}),  # pettingzoo 1.27
        _swap_two_planes),
}


def source_hash(raw_env_cls, parts) -> str:
    """sha256 of the source of ``parts``: names of ``raw_env_cls``'s methods, or (module, name)."""
    funcs = [getattr(raw_env_cls, p) if isinstance(p, str) else getattr(importlib.import_module(p[0]), p[1])
             for p in parts]
    return hashlib.sha256("".join(inspect.getsource(f) + "\n" for f in funcs).encode()).hexdigest()


@functools.lru_cache(maxsize=None)
def _known(module: str) -> type | None:
    """The raw_env class of ``module`` when its code is a known version, else None."""
    parts, hashes, _ = GAMES[module]
    try:
        cls = importlib.import_module(module).raw_env
        return cls if source_hash(cls, parts) in hashes else None
    except (ImportError, AttributeError, OSError, TypeError):  # no such game here, or no source to read
        return None


def waiting_observer(raw):
    """``derive(agent, next_obs)`` for ``raw``, the unwrapped env of a game
    listed in :data:`GAMES` (of a known version, its methods not overridden):
    the observation of ``agent``, a player who is not to move, from
    ``next_obs``, the player to move's observation of the same position.
    None for any other env."""
    for name, (parts, _, make) in GAMES.items():
        game = sys.modules.get(name)  # an env of the game has imported it
        if game is None or not isinstance(raw, getattr(game, "raw_env", ())):
            continue
        cls = _known(name)
        if cls is None or any(getattr(type(raw), p) is not getattr(cls, p) for p in parts if isinstance(p, str)):
            return None  # another version of the game, or a subclass that observes its own way
        players = list(raw.possible_agents)
        return make(players) if len(players) == 2 else None
    return None
