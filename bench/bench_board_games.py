"""Board games through seer.vector against a plain AEC loop: the cost per move.

    python bench/bench_board_games.py            # writes bench/results/board_games.{json,md}
    python bench/bench_board_games.py --quick    # a short smoke run (no files unless --out)
    python bench/bench_board_games.py --games chess_v6   # some games only (no files unless --out)

Every candidate plays the same thing: ``--copies`` games of a pettingzoo.classic
game at once (each of tictactoe, connect four, Texas and Leduc hold'em, go and
chess), random legal moves, a finished game reset at once. The plain
loop is what a PettingZoo user writes over AEC envs (``agent_iter`` unrolled:
``last()``, pick a legal move from the mask, ``step``); seer.vector steps the
copies as rows (``backend="thread"``, one worker), with random legal moves
from ``envs.sample_actions()`` and its action-mask check on (the default) and
off; and ``seer.wrap`` of each game, played as the plain loop plays (a
runtime event per move: error reporting and tracing, not speed). Each
candidate's score is its best round of interleaved rounds, so a burst of
foreign load on this shared machine hits one round of every candidate; the
ratio is a candidate's time per move over the plain loop's.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from seer.bench.common import machine_info, markdown_table, write_report

HERE = os.path.dirname(os.path.abspath(__file__))


GAMES = ("tictactoe_v3", "connect_four_v3", "texas_holdem_v4", "leduc_holdem_v4", "go_v5", "chess_v6")


def games(names=GAMES):
    """pettingzoo.classic's turn-based games (chess and the card games need the ``chess`` and
    ``rlcard`` packages: a game whose package is missing is left out, and the report says so)."""
    import importlib

    out, missing = {}, []
    for name in names:
        try:
            out[name] = importlib.import_module(f"pettingzoo.classic.{name}").env
        except ImportError as e:
            missing.append(f"{name} ({e})")
    return out, missing


class PlainLoop:
    """``copies`` AEC games, one move of each per ``step``."""

    def __init__(self, env_fn, copies: int, seed: int = 0):
        self.envs = [env_fn() for _ in range(copies)]
        self.rng = np.random.default_rng(seed)
        for i, e in enumerate(self.envs):
            e.reset(seed=seed + i)

    def step(self) -> int:
        for e in self.envs:  # one real move of each game (agents that are done step out first)
            obs, _, term, trunc, _ = e.last()
            while term or trunc:
                e.step(None)
                if not e.agents:
                    e.reset()
                obs, _, term, trunc, _ = e.last()
            e.step(int(self.rng.choice(np.flatnonzero(obs["action_mask"]))))
        return len(self.envs)

    def close(self):
        for e in self.envs:
            e.close()


class Wrapped:
    """``copies`` games, each through ``seer.wrap``, played as the plain loop plays them."""

    def __init__(self, env_fn, copies: int, seed: int = 0):
        import seer

        self.envs = [seer.wrap(env_fn()) for _ in range(copies)]
        self.rng = np.random.default_rng(seed)
        self.obs = [e.reset(seed=seed + i)[0] for i, e in enumerate(self.envs)]

    def step(self) -> int:
        for i, e in enumerate(self.envs):
            if not e.agents:
                self.obs[i] = e.reset()[0]
            agent = e.to_act
            move = int(self.rng.choice(np.flatnonzero(self.obs[i][agent]["action_mask"])))
            self.obs[i] = e.step({agent: move})[0]
        return len(self.envs)

    def close(self):
        for e in self.envs:
            e.close()


class Vector:
    def __init__(self, env_fn, copies: int, check: bool, seed: int = 0):
        import seer.vector

        self.envs = seer.vector.make(env_fn, copies, backend="thread", workers=1, check_action_masks=check)
        self.envs.reset(seed=seed)
        self.copies = copies

    def step(self) -> int:
        self.envs.step(self.envs.sample_actions())
        return self.copies

    def close(self):
        self.envs.close()


def measure(cands: dict, seconds: float, rounds: int) -> dict:
    best = dict.fromkeys(cands, float("inf"))
    for _ in range(rounds):
        for name, c in cands.items():
            moves, t0 = 0, time.perf_counter()
            while time.perf_counter() - t0 < seconds:
                moves += c.step()
            best[name] = min(best[name], (time.perf_counter() - t0) / moves)
    return best


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--copies", type=int, default=8)
    p.add_argument("--seconds", type=float, default=0.5)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--games", nargs="+", choices=GAMES, default=list(GAMES), help="the games to play (default: all)")
    p.add_argument("--out", default=None,
                   help="folder for board_games.{json,md} (default bench/results, not with --quick or --games)")
    args = p.parse_args(argv)
    if args.quick:
        args.seconds, args.rounds = 0.1, 2
    some = set(args.games) != set(GAMES)  # a part of the record: not written over it
    out = args.out or (None if args.quick or some else os.path.join(HERE, "results"))
    load_before = os.getloadavg()
    rows, doc = [], {"machine": machine_info(["pettingzoo", "gymnasium", "numpy"]), "copies": args.copies, "games": {}}
    found, missing = games(args.games)
    doc["games_missing"] = missing
    for game, fn in found.items():
        cands = {"plain AEC loop": PlainLoop(fn, args.copies), "seer.vector (mask check on)": Vector(fn, args.copies, True),
                 "seer.vector (mask check off)": Vector(fn, args.copies, False),
                 "seer.wrap, one per game (mask check on)": Wrapped(fn, args.copies)}
        try:
            best = measure(cands, args.seconds, args.rounds)
        finally:
            for c in cands.values():
                c.close()
        base = best["plain AEC loop"]
        doc["games"][game] = {k: {"us_per_move": v * 1e6, "ratio": v / base} for k, v in best.items()}
        rows += [(game, k, f"{v * 1e6:.1f}", f"{v / base:.2f}x") for k, v in best.items()]
    doc["load_average"] = {"before": load_before, "after": os.getloadavg()}
    m = doc["machine"]
    text = (f"# Board games: seer.vector against a plain AEC loop (`python bench/bench_board_games.py`)\n\n"
            f"{m.get('cpu', '?')}, {m.get('usable_cores', '?')} usable cores; load average "
            f"{' '.join(f'{x:.2f}' for x in load_before)} -> {' '.join(f'{x:.2f}' for x in doc['load_average']['after'])}; {args.copies} copies, best of {args.rounds} interleaved rounds of "
            f"{args.seconds} s.\n\n"
            + markdown_table(["game", "candidate", "us per move", "vs plain loop"], rows) + "\n"
            + (f"\nLeft out (package missing): {', '.join(missing)}.\n" if missing else ""))
    print(text)
    if out:
        write_report(doc, os.path.join(out, "board_games.json"), os.path.join(out, "board_games.md"), text)


if __name__ == "__main__":
    main()
