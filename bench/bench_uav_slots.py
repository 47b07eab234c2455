"""uav_swarm_v0: what keeping the UAVs in slots ordered in space buys, and what tiled steps buy, by swarm size and pool size.

One process per (swarm, workers); in it, episodes of two arms alternate, so
the host's speed drifts hit both alike; medians of the C step
(``SeerSim.step``, hover policy outside the timer).  ``--compare layout``:
the slots in space order (``slot_layout = 1``) against slot = agent id
(``slot_layout = -1``), tiling as the env decides.  ``--compare tiling``:
slots in space order, tiled steps (``tiling = 1``) against window by window
(``tiling = -1``), which is where ``SEER_UAV_TILES_MIN`` comes from.
Results are identical either way (the tests check it); only the speed
differs.  A swarm is a scenario's name or a number of UAVs.

    python bench/bench_uav_slots.py [--compare layout|tiling] [--scenarios large,xlarge,2048] [--workers 1,2]
                                    [--rounds 8] [--md PATH] [--json PATH]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

#: the two arms of each comparison: (name, slot_layout, tiling)
ARMS = {"layout": (("space", 1, 0), ("id", -1, 0)), "tiling": (("tiled", 1, 1), ("windows", 1, -1))}


def block_steps(num_uavs: int) -> int:
    """Steps per episode: some 80,000 UAV-steps ('large': 300, 'xlarge': 20), at least 4."""
    return max(4, min(300, 80_000 // num_uavs))

DRIVER = r"""
import json, os, sys, time
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np
from seer.envs.uav_swarm import model as M
sc, w, block, rounds, arms = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), json.loads(sys.argv[5])
sim = M.SeerSim(M.make_config(num_uavs=int(sc)) if sc.isdigit() else M.make_config(sc), workers=w)
lat = {name: [] for name, _, _ in arms}
for r in range(rounds):
    for name, layout, tiling in (arms if r % 2 == 0 else arms[::-1]):
        sim.model.native_env.slot_layout = layout
        sim.model.native_env.tiling = tiling
        sim.reset(0)
        rng = np.random.default_rng(0)
        p0 = sim.agent_rows()["pos"].copy()
        for s in range(block + max(1, block // 5)):
            st, live = sim.agent_rows(), sim.live_agents()
            act = np.clip(0.05 * (p0[live] - st["pos"][live]) - 0.5 * st["vel"][live]
                          + rng.normal(0, 0.1, (len(live), 3)), -1, 1)
            sim.set_actions(live, act)
            t = time.perf_counter(); sim.step(); dt = time.perf_counter() - t
            if s >= max(1, block // 5):
                lat[name].append(dt)
sim.close()
print(json.dumps({k: float(np.median(v) * 1e3) for k, v in lat.items()}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--compare", choices=sorted(ARMS), default="layout")
    ap.add_argument("--scenarios", default="large,xlarge")
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--md")
    ap.add_argument("--json")
    args = ap.parse_args()
    from seer.bench.common import machine_info, parallel_capacity
    from seer.envs.uav_swarm import model as M

    info = machine_info()
    (a, _, _), (b, _, _) = arms = ARMS[args.compare]
    rows = []
    for sc in args.scenarios.split(","):
        n = int(sc) if sc.isdigit() else M.SCENARIOS[sc]
        for w in (int(x) for x in args.workers.split(",")):
            cap = parallel_capacity()
            out = subprocess.run([sys.executable, "-c", DRIVER, sc, str(w), str(block_steps(n)), str(args.rounds),
                                  json.dumps(arms)], capture_output=True, text=True, env=dict(os.environ))
            if out.returncode != 0:
                raise SystemExit(f"{sc} w={w} failed:\n{out.stderr}")
            r = json.loads(out.stdout.strip().splitlines()[-1])
            rows.append({"swarm": sc, "uavs": n, "workers": w, f"{a}_ms": r[a], f"{b}_ms": r[b],
                         "speedup": r[b] / r[a], "parallel_capacity": cap})
            print(f"{sc} w={w}: {a} {r[a]:.3f} ms, {b} {r[b]:.3f} ms, {a} {r[b] / r[a]:.3f}x "
                  f"(capacity {cap:.2f})", flush=True)
    cmd = "python bench/bench_uav_slots.py " + " ".join(sys.argv[1:])
    what = {"layout": "slots in space order against slot = agent id",
            "tiling": "tiled steps against window by window, slots in space order"}[args.compare]
    defaults = (f"The env's defaults: space order from {M.lib.SEER_UAV_SPACE_MIN:,} UAVs on; on one worker tiled "
                f"from {M.lib.SEER_UAV_TILES_MIN:,}, on a pool from {M.lib.SEER_UAV_POOL_TILES_MIN:,} (when its "
                f"bands keep it busy).")
    lines = [
        f"# uav_swarm_v0: {what}, in one process", "",
        f"Command: `{cmd}`  ",
        f"Date: {time.strftime('%Y-%m-%dT%H:%M:%S%z')}  ",
        f"Machine: {info['cpu']}, {info['usable_cores']} usable cores, {info['platform']}, Python {info['python']}, "
        f"numpy {info['numpy']}, commit {info['git_commit']}; load average at start {info['loadavg_at_start']}", "",
        "Timed: the C step (`SeerSim.step`), hover policy outside the timer; per (swarm, workers) one process "
        f"in which {args.rounds} rounds of an episode of each arm alternate; medians of the steps after a "
        f"fifth of each episode.  {defaults}", "",
        f"| swarm | UAVs | workers | {a} ms/step | {b} ms/step | {a} speedup | parallel capacity |",
        "|---|---|---|---|---|---|---|",
    ]
    lines += [f"| {r['swarm']} | {r['uavs']:,} | {r['workers']} | {r[f'{a}_ms']:.3f} | {r[f'{b}_ms']:.3f} | "
              f"{r['speedup']:.3f}x | {r['parallel_capacity']:.2f} |" for r in rows]
    if args.md:
        with open(args.md, "w") as f:
            f.write("\n".join(lines) + "\n")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": info, "compare": args.compare, "rounds": args.rounds, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
