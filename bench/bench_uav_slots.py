"""uav_swarm_v0: what keeping the UAVs in slots ordered in space buys, by swarm size and pool size.

One process per (scenario, workers); in it, episodes with the slots in space
order (``slot_layout = 1``) and with slot = agent id (``slot_layout = -1``)
alternate, so the host's speed drifts hit both alike; medians of the C step
(``SeerSim.step``, hover policy outside the timer).  Results are identical
either way (the tests check it); only the speed differs.

    python bench/bench_uav_slots.py [--scenarios large,xlarge] [--rounds 8] [--md PATH] [--json PATH]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

STEPS = {"large": 300, "xlarge": 30, "xxlarge": 4}

DRIVER = r"""
import json, os, sys, time
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np
from seer.envs.uav_swarm import model as M
sc, w, block, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
sim = M.SeerSim(M.make_config(sc), workers=w)
lat = {"space": [], "id": []}
for r in range(rounds):
    for name in (("space", "id") if r % 2 == 0 else ("id", "space")):
        sim.model.native_env.slot_layout = 1 if name == "space" else -1
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
    ap.add_argument("--scenarios", default="large,xlarge")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--md")
    ap.add_argument("--json")
    args = ap.parse_args()
    from seer.bench.common import machine_info, parallel_capacity

    info = machine_info()
    rows = []
    for sc in args.scenarios.split(","):
        for w in (1, 2):
            cap = parallel_capacity()
            out = subprocess.run([sys.executable, "-c", DRIVER, sc, str(w), str(STEPS[sc]), str(args.rounds)],
                                 capture_output=True, text=True, env=dict(os.environ))
            if out.returncode != 0:
                raise SystemExit(f"{sc} w={w} failed:\n{out.stderr}")
            r = json.loads(out.stdout.strip().splitlines()[-1])
            rows.append({"scenario": sc, "workers": w, "space_ms": r["space"], "id_ms": r["id"],
                         "space_speedup": r["id"] / r["space"], "parallel_capacity": cap})
            print(f"{sc} w={w}: space {r['space']:.3f} ms, id order {r['id']:.3f} ms, "
                  f"space order {r['id'] / r['space']:.3f}x (capacity {cap:.2f})", flush=True)
    cmd = "python bench/bench_uav_slots.py " + " ".join(sys.argv[1:])
    lines = [
        "# uav_swarm_v0: slots in space order against slot = agent id, in one process", "",
        f"Command: `{cmd}`  ",
        f"Date: {time.strftime('%Y-%m-%dT%H:%M:%S%z')}  ",
        f"Machine: {info['cpu']}, {info['usable_cores']} usable cores, {info['platform']}, Python {info['python']}, "
        f"numpy {info['numpy']}, commit {info['git_commit']}; load average at start {info['loadavg_at_start']}", "",
        "Timed: the C step (`SeerSim.step`), hover policy outside the timer; per (scenario, workers) one process "
        f"in which {args.rounds} rounds of an episode in each layout alternate; medians of the steps after a "
        "fifth of each episode.  The env's default: space order from 1,024 UAVs on.", "",
        "| scenario | workers | space order ms/step | id order ms/step | space order speedup | parallel capacity |",
        "|---|---|---|---|---|---|",
    ]
    lines += [f"| {r['scenario']} | {r['workers']} | {r['space_ms']:.3f} | {r['id_ms']:.3f} | "
              f"{r['space_speedup']:.3f}x | {r['parallel_capacity']:.2f} |" for r in rows]
    if args.md:
        with open(args.md, "w") as f:
            f.write("\n".join(lines) + "\n")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": info, "rounds": args.rounds, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
