"""Env step throughput of this tree against an earlier commit, built side by side and measured in one run.

The earlier commit is checked out into a temporary worktree, built and
installed into a temporary folder (``pip install --target``, no network),
and both builds time the same workloads in alternating rounds, each in a
fresh subprocess, so load from other jobs hits both alike.  The ratio
new/old per workload (median over rounds) says whether a change (e.g. moving
the built-in envs into plug-in modules) cost speed.

Workloads: ``ParallelEnv.step`` of uav_swarm_v0 (small, default, large) and
wireless_v0 (small, large) at workers=1, and seer.vector's thread backend
over 8 uav_swarm_v0 ``default`` copies at workers=2.

    python bench/bench_against_commit.py --commit de979e5 --json bench/results/plugin_move.json \\
        --md bench/results/plugin_move.md
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

from seer.bench.common import add_report_args, machine_info, markdown_table, write_report

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

DRIVER = r"""
import json, sys, time
import numpy as np

def env_rate(module, scenario, steps):
    import importlib
    mod = importlib.import_module("seer.envs." + module)
    env = mod.parallel_env(scenario=scenario, workers=1)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    pools = []
    for i, a in enumerate(env.agents):  # seeded: both builds run the same episodes (losses change a step's cost)
        env.action_space(a).seed(i)
    for _ in range(4):
        pools.append({a: env.action_space(a).sample() for a in env.agents})
    best = 0.0
    for r in range(3):
        t0 = time.perf_counter()
        n = 0
        for k in range(steps):
            if not env.agents:
                env.reset(seed=k)
                continue
            acts = pools[k % 4]
            env.step({a: acts[a] for a in env.agents if a in acts} if len(acts) != len(env.agents) else acts)
            n += 1
        best = max(best, n / (time.perf_counter() - t0))
    env.close()
    return best

def vector_rate(steps):
    import seer.vector
    from seer.envs import uav_swarm_v0
    envs = seer.vector.make(lambda: uav_swarm_v0.parallel_env(scenario="default", workers=1), 8, backend="thread",
                            workers=2)
    envs.reset(seed=0)
    acts = np.random.default_rng(0).uniform(-1, 1, (4, *envs.action_space.shape)).astype(np.float32)
    best = 0.0
    for r in range(3):
        t0 = time.perf_counter()
        for k in range(steps):
            envs.step(acts[k % 4])
        best = max(best, steps / (time.perf_counter() - t0))
    envs.close()
    return best

out = {
    "uav_swarm_v0/small": env_rate("uav_swarm_v0", "small", 400),
    "uav_swarm_v0/default": env_rate("uav_swarm_v0", "default", 400),
    "uav_swarm_v0/large": env_rate("uav_swarm_v0", "large", 150),
    "wireless_v0/small": env_rate("wireless_v0", "small", 400),
    "wireless_v0/large": env_rate("wireless_v0", "large", 200),
    "vector_uav_default_x8_w2": vector_rate(200),
}
import seer
print(json.dumps({"seer_file": seer.__file__, "rates": out}))
"""


def build_old(commit: str, tmp: str) -> str:
    tree, site = os.path.join(tmp, "tree"), os.path.join(tmp, "site")
    subprocess.run(["git", "-C", ROOT, "worktree", "add", "--detach", tree, commit], check=True, capture_output=True)
    try:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                        "--target", site, tree], check=True, capture_output=True)
    finally:
        subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", tree], capture_output=True)
    return site


def measure(site: str | None) -> dict:
    env = dict(os.environ)
    cwd = tempfile.gettempdir()  # never the repo root: its seer/ would shadow the build under test
    if site:
        env["PYTHONPATH"] = site
    out = subprocess.run([sys.executable, "-c", DRIVER], capture_output=True, text=True, env=env, cwd=cwd,
                         check=True)
    doc = json.loads(out.stdout.strip().splitlines()[-1])
    if site and not doc["seer_file"].startswith(site):
        raise RuntimeError(f"the old build was not the one imported: {doc['seer_file']}")
    return doc["rates"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--commit", required=True, help="the earlier commit to build beside this tree")
    ap.add_argument("--rounds", type=int, default=5)
    add_report_args(ap)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        site = build_old(args.commit, tmp)
        old, new = [], []
        for _ in range(args.rounds):
            old.append(measure(site))
            new.append(measure(None))
    keys = list(new[0])
    ratios = {k: float(np.median([n[k] / o[k] for n, o in zip(new, old)])) for k in keys}
    doc = {"machine": machine_info(), "commit_old": args.commit, "rounds": args.rounds,
           "old_steps_per_s": {k: float(np.median([o[k] for o in old])) for k in keys},
           "new_steps_per_s": {k: float(np.median([n[k] for n in new])) for k in keys},
           "new_over_old": ratios}
    m = doc["machine"]
    lines = ["# This tree against an earlier commit", "",
             f"Machine: {m['cpu']}, {m['usable_cores']} usable cores, load at start {m['loadavg_at_start']}. "
             f"This tree: {m['git_commit']} (+ working tree); old: {args.commit}; {args.rounds} alternating rounds, "
             f"each workload the best of 3 repeats in a fresh process.", "",
             f"Command: `python bench/bench_against_commit.py --commit {args.commit} --rounds {args.rounds}`", "",
             markdown_table(["workload", "old steps/s", "new steps/s", "new / old"],
                            [[k, f"{doc['old_steps_per_s'][k]:,.1f}", f"{doc['new_steps_per_s'][k]:,.1f}",
                              f"{ratios[k]:.3f}"] for k in keys])]
    text = "\n".join(lines) + "\n"
    print(text)
    write_report(doc, args.json, args.md, text)


if __name__ == "__main__":
    main()
