"""uav_swarm_v0 on a pool: its steps tiled on the pool against window by window, in one process.

    python bench/bench_uav_pool_tiles.py [--sizes 4096,16384,32768,65536] [--workers 2] [--rounds 15]
        [--conditions quiet,busy1] --json bench/results/uav_pool_tiles_c.json --md bench/results/uav_pool_tiles_c.md

A pool of several workers steps a big swarm either window by window (every
window, one per tick, sweeps every UAV, the workers meeting at its end) or
tiled on the pool (seer_rt_tiled_begin_pool: the threads run bands of tiles
of the broadcast grid through all of a step's ticks, each band two rows of
tiles behind the one to its left; uav_swarm_step.c, Pools).  Which one the
env picks by default follows from the swarm's size
(SEER_UAV_POOL_TILES_MIN); this script measures both on the same env, so
that the choice can be checked.

One env per size on the pool, its ``native_env.tiling`` flipped between
blocks (1: tiled on the pool, -1: window by window; the results are the
same either way, so the env's state does not care), and a 1-worker env of
the same size beside it (tiled, as by default) as the baseline, stepped in
lockstep with the same policy.  Each round times one block of each arm,
taking turns at going first; a ratio is of two blocks' median step times
in the same round.  Steps are ``SeerSim.step`` (the whole C step), the
policy written between steps outside the timer.  ``busy1``: one process
spinning on a core beside the run, as a learner would.

``--against COMMIT`` compares builds instead: COMMIT is built into a
temporary folder (bench_against_commit.build_old) and every round runs, each
in a fresh process and taking turns at going first, the pool's default
step (this tree, then COMMIT's) and this tree's 1-worker step, all of the
same size and policy:

    python bench/bench_uav_pool_tiles.py --against a2291d9 --sizes 32768,65536 --rounds 8 \
        --json bench/results/uav_band_sleep.json --md bench/results/uav_band_sleep.md
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

from seer.bench.common import add_report_args, machine_info, parallel_capacity, report_header, write_report
from seer.envs.uav_swarm import model as M

from bench_against_commit import build_old
from bench_under_load import start_busy, stop_busy

ARMS = ("pool tiled", "window by window", "1 worker")
CONDITIONS = {"quiet": 0, "busy1": 1}


def block_steps(n: int) -> int:
    """Steps per block: about 40 ms of work or more per block."""
    return max(1, 40960 // n)


class Swarm:
    """One SeerSim of n UAVs and its policy (steer back to the start, damped, with noise)."""

    def __init__(self, n: int, workers: int, seed: int = 0):
        self.sim = M.SeerSim(M.make_config("xlarge", num_uavs=n), workers=workers)
        self.sim.reset(seed, max_cycles=1 << 30)
        self.p0 = self.sim.agent_rows()["pos"].copy()
        self.rng = np.random.default_rng(seed)

    def block(self, steps: int, tiling: int = 0) -> float:
        """Median ms per step of `steps` steps, with the env's tiling set to `tiling`."""
        self.sim.model.native_env.tiling = tiling
        lat = []
        for _ in range(steps):
            rows = self.sim.agent_rows()
            live = self.sim.live_agents()
            act = np.clip(0.05 * (self.p0[live] - rows["pos"][live]) - 0.5 * rows["vel"][live]
                          + self.rng.normal(0, 0.1, (len(live), 3)), -1, 1)
            self.sim.set_actions(live, act)
            t = time.perf_counter()
            self.sim.step()
            lat.append(time.perf_counter() - t)
        return float(np.median(lat) * 1e3)


def size_rounds(n: int, workers: int, rounds: int, condition: str) -> list[dict]:
    pool, one = Swarm(n, workers), Swarm(n, 1)
    steps = block_steps(n)
    run = {"pool tiled": lambda: pool.block(steps, 1), "window by window": lambda: pool.block(steps, -1),
           "1 worker": lambda: one.block(steps)}
    busy = start_busy(CONDITIONS[condition])
    try:
        time.sleep(0.2 if busy else 0)
        for arm in ARMS:  # one warm block each
            run[arm]()
        rows = []
        for r in range(rounds):
            ms = {}
            for arm in ARMS[r % 3:] + ARMS[:r % 3]:
                ms[arm] = run[arm]()
            rows.append({"round": r + 1, **{arm: ms[arm] for arm in ARMS}})
            print(f"{n} UAVs {condition} round {r + 1}: " + ", ".join(f"{a} {ms[a]:.2f} ms" for a in ARMS), flush=True)
        return rows
    finally:
        stop_busy(busy)
        pool.sim.close()
        one.sim.close()


def _spread(values) -> dict:
    q1, med, q3 = np.percentile(values, [25, 50, 75])
    return {"median": float(med), "q1": float(q1), "q3": float(q3)}


def summary(rows: list[dict]) -> dict:
    col = {arm: np.array([r[arm] for r in rows]) for arm in ARMS}
    return {"ms": {arm: float(np.median(col[arm])) for arm in ARMS},
            "untiled_over_tiled": _spread(col["window by window"] / col["pool tiled"]),
            "tiled_speedup": _spread(col["1 worker"] / col["pool tiled"]),
            "untiled_speedup": _spread(col["1 worker"] / col["window by window"])}


def _ratio(s: dict) -> str:
    return f"{s['median']:.2f}x ({s['q1']:.2f}-{s['q3']:.2f})"


def markdown(doc: dict) -> str:
    w = doc["workers"]
    lines = report_header(doc, "uav_swarm_v0 on a pool: tiled on the pool against window by window") + [
             f"Timed: `SeerSim.step` (the whole C step), median per block; per round one block each of the pool "
             f"of {w} tiled on the pool, the same env window by window (its tiling flipped between blocks), and a "
             "1-worker env of the same size (tiled) in lockstep, taking turns at going first.  Ratios are of two "
             "blocks of the same round: medians over rounds, quartiles in brackets.  busy1: one process spinning "
             "beside the run.", "",
             f"| UAVs | condition | rounds | steps per block | pool tiled ms | window by window ms | 1 worker ms | "
             f"window by window / pool tiled | 1 worker / pool tiled | 1 worker / window by window |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for key, d in doc["runs"].items():
        n, cond = key.split("/")
        s = d["summary"]
        lines.append(f"| {n} | {cond} | {len(d['rounds'])} | {block_steps(int(n))} | {s['ms']['pool tiled']:.2f} | "
                     f"{s['ms']['window by window']:.2f} | {s['ms']['1 worker']:.2f} | "
                     f"{_ratio(s['untiled_over_tiled'])} | {_ratio(s['tiled_speedup'])} | "
                     f"{_ratio(s['untiled_speedup'])} |")
    return "\n".join(lines) + "\n"


# ---- --against: this tree's default pool step against an older build's, in fresh processes --------------

AGAINST_ARMS = ("this tree", "old", "1 worker")


def child_block(n: int, workers: int) -> float:
    """Median ms per step of a fresh env's default step (one warm step first)."""
    swarm = Swarm(n, workers)
    try:
        swarm.block(1)
        return swarm.block(max(4, block_steps(n)))
    finally:
        swarm.sim.close()


def fresh_block(n: int, workers: int, site: str | None) -> float:
    env = dict(os.environ)
    if site:
        env["PYTHONPATH"] = site + os.pathsep + os.path.dirname(os.path.abspath(__file__))
    else:
        env["PYTHONPATH"] = os.path.dirname(os.path.abspath(__file__))
    code = (f"import seer, bench_uav_pool_tiles as b; "
            f"assert {site!r} is None or seer.__file__.startswith({site!r}), seer.__file__; "
            f"print(b.child_block({n}, {workers}))")
    # never the repo root as cwd: its seer/ would shadow the build under test
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         cwd=tempfile.gettempdir())
    if out.returncode != 0:
        raise RuntimeError(f"a timed child ({n} UAVs, {workers} workers, build {site or 'this tree'}) failed:\n"
                           + out.stderr)
    return float(out.stdout.strip().splitlines()[-1])


def against_rounds(n: int, workers: int, rounds: int, condition: str, site: str) -> list[dict]:
    run = {"this tree": lambda: fresh_block(n, workers, None), "old": lambda: fresh_block(n, workers, site),
           "1 worker": lambda: fresh_block(n, 1, None)}
    busy = start_busy(CONDITIONS[condition])
    try:
        time.sleep(0.2 if busy else 0)
        rows = []
        for r in range(rounds):
            ms = {}
            for arm in AGAINST_ARMS[r % 3:] + AGAINST_ARMS[:r % 3]:
                ms[arm] = run[arm]()
            rows.append({"round": r + 1, **ms})
            print(f"{n} UAVs {condition} round {r + 1}: " + ", ".join(f"{a} {ms[a]:.2f} ms" for a in AGAINST_ARMS),
                  flush=True)
        return rows
    finally:
        stop_busy(busy)


def against_markdown(doc: dict) -> str:
    w, label = doc["workers"], doc["against"]
    lines = report_header(doc, f"uav_swarm_v0 on a pool of {w}: this tree against {label}") + [
             f"Timed: `SeerSim.step` (the whole C step, each env's default schedule), median per block; per round "
             f"one fresh process each of this tree on {w} workers, {label} on {w} workers and this tree on 1 "
             "worker, taking turns at going first.  Ratios are of two blocks of the same round: medians over "
             "rounds, quartiles in brackets.  busy1: one process spinning beside the run.", "",
             f"| UAVs | condition | rounds | steps per block | this tree ms | {label} ms | 1 worker ms | "
             f"{label} / this tree | 1 worker / this tree | 1 worker / {label} |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for key, d in doc["runs"].items():
        n, cond = key.split("/")
        col = {a: np.array([r[a] for r in d["rounds"]]) for a in AGAINST_ARMS}
        lines.append(f"| {n} | {cond} | {len(d['rounds'])} | {max(4, block_steps(int(n)))} | "
                     + " | ".join(f"{np.median(col[a]):.2f}" for a in AGAINST_ARMS) + " | "
                     + " | ".join(_ratio(_spread(col[a] / col[b])) for a, b in
                                  (("old", "this tree"), ("1 worker", "this tree"), ("1 worker", "old"))) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="4096,16384,32768,65536")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--conditions", default="quiet,busy1")
    ap.add_argument("--against", metavar="COMMIT", help="compare this tree's default pool step with COMMIT's")
    add_report_args(ap)
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    conditions = args.conditions.split(",")
    bad = [c for c in conditions if c not in CONDITIONS]
    if bad or args.workers < 2 or any(n < 1 for n in sizes):
        ap.error(f"--conditions from {sorted(CONDITIONS)} (got {bad}), --workers >= 2, --sizes >= 1")
    doc = {"command": "python bench/bench_uav_pool_tiles.py " + " ".join(sys.argv[1:] if argv is None else argv),
           "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "machine": machine_info(), "workers": args.workers,
           "capacity_before": parallel_capacity(), "runs": {}}
    if args.against:
        with tempfile.TemporaryDirectory() as tmp:
            site = build_old(args.against, tmp)
            doc["against"] = args.against
            for n in sizes:
                for cond in conditions:
                    doc["runs"][f"{n}/{cond}"] = {"rounds": against_rounds(n, args.workers, args.rounds, cond, site)}
        doc["capacity_after"] = parallel_capacity()
        md = against_markdown(doc)
    else:
        for n in sizes:
            for cond in conditions:
                rows = size_rounds(n, args.workers, args.rounds, cond)
                doc["runs"][f"{n}/{cond}"] = {"rounds": rows, "summary": summary(rows)}
        doc["capacity_after"] = parallel_capacity()
        md = markdown(doc)
    write_report(doc, args.json, args.md, md, make_dirs=True)
    print(md)


if __name__ == "__main__":
    main()
