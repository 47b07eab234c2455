"""Making a built-in env for a big swarm: the factory call, the first reset and the memory they add, this
tree against a build of an earlier commit, in alternating fresh processes.

Each measurement is a fresh interpreter that imports the env module first (imports are not timed), then
times ``parallel_env(scenario=..., workers=1)`` (or ``seer.vector.make`` over 4 copies, thread backend, the
pool size picked by its probe) and ``reset(seed=0)`` by the wall clock and reads the
resident memory they added (``/proc/self/statm``).  Medians over rounds; old and new alternate, and so does
who goes first, after an untimed run of the same workload.

    python bench/bench_env_make.py --against /tmp/site --against-label 19a4a71 --rounds 7 \\
        --json bench/results/env_make.json --md bench/results/env_make.md
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys

import numpy as np

from seer.bench.common import add_report_args, machine_info, markdown_table, write_report

DRIVER = r"""
import functools, importlib, json, os, sys, time
import seer.vector
module, copies = sys.argv[1].partition(" x")[::2]
mod = importlib.import_module("seer.envs." + module)
page = os.sysconf("SC_PAGE_SIZE")
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * page
r0 = rss()
t0 = time.perf_counter()
if copies:  # seer.vector over copies of the env, the pool size chosen by STPA's probe (its default)
    env = seer.vector.make(functools.partial(mod.parallel_env, scenario=sys.argv[2]), int(copies), backend="thread")
else:
    env = mod.parallel_env(scenario=sys.argv[2], workers=1)
t1 = time.perf_counter()
env.reset(seed=0)
t2 = time.perf_counter()
added = rss() - r0
agents = env.num_envs if copies else len(env.possible_agents)
env.close()
print(json.dumps({"make_s": t1 - t0, "reset_s": t2 - t1, "rss_added_mib": added / 2**20, "agents": agents}))
"""

WORKLOADS = (("uav_swarm_v0", "large"), ("uav_swarm_v0", "xlarge"), ("uav_swarm_v0", "xxlarge"),
             ("wireless_v0", "xxlarge"), ("uav_swarm_v0 x4", "xlarge"))


def measure(baseline: str | None, rounds: int, workloads) -> dict:
    builds = [("new", dict(os.environ))]
    if baseline:
        builds.append(("old", dict(os.environ, PYTHONPATH=baseline)))
    runs: dict = {}
    for r in range(rounds):
        for module, scenario in workloads:
            order = builds if r % 2 == 0 else builds[::-1]
            # an untimed run first: the first big process after another workload's finds the kernel's free
            # pages in another state (up to 3x slower at wireless_v0 xxlarge, whichever build it was)
            for i, (name, env) in enumerate([("primer", order[-1][1])] + order):
                p = subprocess.run([sys.executable, "-c", DRIVER, module, scenario], capture_output=True,
                                   text=True, env=env, cwd="/")
                if p.returncode != 0:
                    raise RuntimeError(f"the {name} build's {module} {scenario} failed:\n{p.stderr}")
                if i == 0:
                    continue
                res = json.loads(p.stdout.strip().splitlines()[-1])
                for k, v in res.items():
                    runs.setdefault(f"{module} {scenario} {name}", {}).setdefault(k, []).append(v)
        print(f"round {r + 1}: " + ", ".join(f"{k} {v['make_s'][-1]:.2f} s" for k, v in runs.items()), flush=True)
    return {k: {m: float(np.median(v)) for m, v in d.items()} | {"make_s_rounds": d["make_s"]}
            for k, d in runs.items()}


def markdown(doc: dict) -> str:
    med = doc["medians"]
    rows = []
    for module, scenario in doc["workloads"]:
        new, old = med[f"{module} {scenario} new"], med.get(f"{module} {scenario} old")
        cells = [f"{module} `{scenario}`", int(new["agents"])]
        for key, fmt in (("make_s", "{:.3f}"), ("reset_s", "{:.3f}"), ("rss_added_mib", "{:.0f}")):
            cells += [fmt.format(old[key]) if old else "-", fmt.format(new[key])]
        cells.append(f"{old['make_s'] / new['make_s']:.1f}x" if old else "-")
        rows.append(cells)
    info = doc["machine"]
    return "\n".join([
        "# Making a built-in env for a big swarm: this tree against an earlier build", "",
        f"Command: `{doc['command']}`  ", f"Date: {doc['date']}  ",
        f"Machine: {info['cpu']}, {info['usable_cores']} usable cores, {info['platform']}, Python {info['python']}, "
        f"numpy {info['numpy']}, commit {info['git_commit']}; load average at start {info['loadavg_at_start']}, "
        f"at end {doc['loadavg_at_end']}", "",
        f"Timed: `parallel_env(scenario=..., workers=1)` (`x4`: `seer.vector.make` over 4 copies, thread backend, "
        f"the pool size picked by STPA's probe; agents: rows) and its first `reset(seed=0)`, wall clock, each in a fresh "
        f"process after the env module's import and after an untimed run of the same workload; resident memory added "
        f"by the two.  Medians over {doc['rounds']} rounds, the builds alternating.  Old: {doc['baseline_label']}.", "",
        markdown_table(["env", "agents", "make s (old)", "make s (new)", "reset s (old)", "reset s (new)",
                        "MiB added (old)", "MiB added (new)", "make: old / new"], rows), ""])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_report_args(ap)
    ap.add_argument("--against", metavar="DIR", help="a build of an earlier commit (pip install --target DIR)")
    ap.add_argument("--against-label", default=None, help="what to call that build in the report")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)
    info = machine_info()
    doc = {"command": "python " + " ".join([os.path.relpath(__file__, os.getcwd())] + (argv or sys.argv[1:])),
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), "machine": info,
           "rounds": args.rounds, "workloads": WORKLOADS,
           "baseline_label": args.against_label or args.against or "none"}
    doc["medians"] = measure(args.against, args.rounds, WORKLOADS)
    doc["loadavg_at_end"] = os.getloadavg()
    text = markdown(doc)
    print(text)
    write_report(doc, args.json, args.md, text, make_dirs=True)
    return doc


if __name__ == "__main__":
    main()
