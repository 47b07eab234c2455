"""Benchmark of seer.envs.uav_swarm_v0: SEER against the time-stepped numpy
reference of the same model, at every scenario size.

What is timed: ``ParallelEnv.step(actions)`` (action checks, the step, the
readout and PettingZoo's dicts), for the SEER engine with workers 1, 2 and
"auto", and for the reference engine (``engine="reference"``, the same env
class around the time-stepped simulator).  Actions are prepared outside the
timer by a hover policy (hold the start position, damp the velocity, add
noise), which keeps the swarm and its workload stationary.

Also measured: the extra resident memory of an ``xlarge`` env, and resident
memory over 10,000 steps of ``large`` (xlarge would take too long here).

Usage::

    python bench/bench_uav.py --json bench/results/uav_swarm.json --md bench/results/uav_swarm.md
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import os
import subprocess
import sys
import time

import numpy as np

from seer.benchmark import machine_info

PAGE = os.sysconf("SC_PAGE_SIZE")

# steps timed per scenario (reference, seer); warm-up steps are extra
STEPS = {"small": (1000, 2000), "default": (1000, 2000), "large": (500, 1000), "xlarge": (50, 200)}
WARMUP = {"small": 50, "default": 50, "large": 20, "xlarge": 5}


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


def machine() -> dict:
    return machine_info()


class HoverPolicy:
    """Hold the start position: a = clip(0.05 (p0 - p) - 0.5 v + noise)."""

    def __init__(self, env, seed=0):
        self.env = env
        self.rng = np.random.default_rng(seed)
        self.p0 = env.state_arrays["pos"].copy()

    def __call__(self):
        env = self.env
        st = env.state_arrays
        live = np.fromiter((int(a[4:]) for a in env.agents), np.int64, len(env.agents))
        act = 0.05 * (self.p0[live] - st["pos"][live]) - 0.5 * st["vel"][live]
        act += self.rng.normal(0.0, 0.1, act.shape)
        act = np.clip(act, -1.0, 1.0).astype(np.float32)
        return dict(zip(env.agents, act))


def time_env(scenario, engine, workers, steps, warmup, seed=0):
    from seer.envs import uav_swarm_v0

    env = uav_swarm_v0.parallel_env(scenario=scenario, engine=engine, workers=workers,
                                    max_cycles=steps + warmup + 10)
    env.reset(seed=seed)
    policy = HoverPolicy(env, seed)
    lat = np.empty(steps)
    events = 0
    for k in range(warmup + steps):
        actions = policy()
        t0 = time.perf_counter_ns()
        env.step(actions)
        t1 = time.perf_counter_ns()
        if k >= warmup:
            lat[k - warmup] = (t1 - t0) / 1e6
            events += env._sim.last_events
    row = {
        "scenario": scenario, "num_uavs": env.cfg.num_uavs, "engine": engine,
        "workers": workers, "workers_used": env.workers, "steps": steps,
        "mean_ms": float(lat.mean()), "p50_ms": float(np.percentile(lat, 50)),
        "p99_ms": float(np.percentile(lat, 99)), "steps_per_s": float(1e3 / lat.mean()),
        "uav_steps_per_s": float(env.cfg.num_uavs * 1e3 / lat.mean()),
        "live_at_end": len(env.agents),
        "events_per_step": events / steps,
    }
    env.close()
    return row


def memory_xlarge(workers="auto", steps=20):
    from seer.envs import uav_swarm_v0

    gc.collect()
    before = rss_bytes()
    env = uav_swarm_v0.parallel_env(scenario="xlarge", workers=workers, max_cycles=steps + 10)
    env.reset(seed=0)
    policy = HoverPolicy(env)
    for _ in range(steps):
        env.step(policy())
    gc.collect()
    after = rss_bytes()
    out = {"scenario": "xlarge", "rss_before_mib": before / 2**20, "rss_after_mib": after / 2**20,
           "added_mib": (after - before) / 2**20, "steps": steps, "workers_used": env.workers}
    env.close()
    return out


def memory_growth(scenario="large", steps=10_000, every=1000, workers="auto"):
    from seer.envs import uav_swarm_v0

    env = uav_swarm_v0.parallel_env(scenario=scenario, workers=workers, max_cycles=steps + 10)
    env.reset(seed=0)
    policy = HoverPolicy(env)
    samples = []
    for k in range(steps):
        env.step(policy())
        if (k + 1) % every == 0:
            samples.append(((k + 1), rss_bytes() / 2**20))
    out = {"scenario": scenario, "steps": steps, "workers_used": env.workers,
           "rss_mib_by_step": samples, "live_at_end": len(env.agents),
           "growth_after_first_sample_mib": samples[-1][1] - samples[0][1]}
    env.close()
    return out


def in_child(name: str) -> dict:
    """Run a memory measurement in a fresh interpreter (this one's heap has
    been through the timing runs) and return its JSON result."""
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", name], check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    if argv is None and len(sys.argv) == 3 and sys.argv[1] == "--child":
        import seer.envs.uav_swarm_v0  # noqa: F401  (imports are part of the baseline)

        print(json.dumps(globals()[sys.argv[2]]()))
        return None
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", help="write results as JSON here")
    ap.add_argument("--md", help="write a markdown report here")
    ap.add_argument("--scenarios", default="small,default,large,xlarge")
    ap.add_argument("--quick", action="store_true", help="a tenth of the steps, no 10k-step memory run")
    args = ap.parse_args(argv)
    scenarios = args.scenarios.split(",")
    info = machine()
    print(json.dumps(info, indent=1), flush=True)
    rows = []
    for sc in scenarios:
        ref_steps, seer_steps = STEPS[sc]
        if args.quick:
            ref_steps, seer_steps = max(5, ref_steps // 10), max(10, seer_steps // 10)
        for engine, workers, steps in [("reference", 1, ref_steps), ("seer", 1, seer_steps),
                                        ("seer", 2, seer_steps), ("seer", "auto", seer_steps)]:
            row = time_env(sc, engine, workers, steps, WARMUP[sc])
            rows.append(row)
            print(f"{sc:8s} {engine:9s} workers={str(workers):4s}(used {row['workers_used']}) "
                  f"mean {row['mean_ms']:8.3f} ms  p50 {row['p50_ms']:8.3f}  p99 {row['p99_ms']:8.3f}  "
                  f"{row['steps_per_s']:9.1f} steps/s  live {row['live_at_end']}", flush=True)
    ref = {r["scenario"]: r for r in rows if r["engine"] == "reference"}
    for r in rows:
        r["speedup_vs_reference"] = ref[r["scenario"]]["mean_ms"] / r["mean_ms"]
    targets = {}
    best = {}
    for r in rows:
        if r["engine"] == "seer":
            key = r["scenario"]
            if key not in best or r["mean_ms"] < best[key]["mean_ms"]:
                best[key] = r
    if "large" in best:
        targets["large_speedup_best"] = best["large"]["speedup_vs_reference"]
        targets["large_speedup_by_workers"] = {str(r["workers"]): r["speedup_vs_reference"] for r in rows
                                               if r["engine"] == "seer" and r["scenario"] == "large"}
        targets["large_speedup_ok"] = targets["large_speedup_best"] >= 2.0
    if "large" in best and "xlarge" in best:
        by_w = {}
        for w in (1, 2, "auto"):
            lg = [r for r in rows if r["engine"] == "seer" and r["scenario"] == "large" and r["workers"] == w]
            xl = [r for r in rows if r["engine"] == "seer" and r["scenario"] == "xlarge" and r["workers"] == w]
            if lg and xl:
                by_w[str(w)] = xl[0]["mean_ms"] / lg[0]["mean_ms"]
        targets["xlarge_over_large_step_cost"] = by_w
        targets["uav_ratio"] = 4096 / 256
        targets["scaling_ok"] = all(v <= 20.0 for v in by_w.values())
    mem = {}
    if "xlarge" in scenarios:
        mem["xlarge"] = in_child("memory_xlarge")
        print("memory xlarge:", mem["xlarge"], flush=True)
        targets["xlarge_memory_ok"] = mem["xlarge"]["added_mib"] <= 200
    if not args.quick:
        mem["growth"] = in_child("memory_growth")
        print("memory growth:", mem["growth"], flush=True)
        targets["memory_flat_ok"] = mem["growth"]["growth_after_first_sample_mib"] <= 1.0
    info["loadavg_at_end"] = os.getloadavg()
    command = "python " + " ".join([os.path.relpath(__file__, os.getcwd())] + (argv if argv is not None else sys.argv[1:]))
    result = {"benchmark": "uav_swarm_v0", "date": datetime.datetime.now(datetime.timezone.utc).isoformat(
        timespec="seconds"), "command": command, "machine": info, "policy": HoverPolicy.__doc__,
        "rows": rows, "memory": mem, "targets": targets}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    if args.md:
        with open(args.md, "w") as f:
            f.write(markdown(result))
    print(json.dumps(targets, indent=1))
    return result


def markdown(res) -> str:
    m = res["machine"]
    out = [
        "# uav_swarm_v0: SEER vs the time-stepped numpy reference",
        "",
        f"Command: `{res['command']}`  ",
        f"Date: {res['date']}  ",
        f"Machine: {m['cpu_model']}, nproc {m['nproc']} ({m['usable_cores']} usable), {m['platform']}, "
        f"Python {m['python']}, numpy {m['numpy']}, cffi {m['cffi']}, seer {m['seer']} (git {m['git_commit']}); "
        f"load average at start {tuple(round(x, 2) for x in m['loadavg_at_start'])}, "
        f"at end {tuple(round(x, 2) for x in m['loadavg_at_end'])}",
        "",
        "Timed: `ParallelEnv.step(actions)` per call (action checks, the step, the step-end readout and "
        "PettingZoo's dicts), dt = 0.1 s. Reference: the same env class with `engine=\"reference\"` "
        "(a global 0.01 s tick, vectorized numpy). Policy (outside the timer): "
        f"{res['policy'].strip()} Events/step: mean over the timed steps of TICK + RECV events "
        "(for the reference: due UAV updates + message deliveries, the same work items).",
        "",
        "| scenario | UAVs | engine | workers (used) | steps | mean ms | p50 ms | p99 ms | steps/s | "
        "UAV-steps/s | vs reference | events/step |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in res["rows"]:
        out.append(
            f"| {r['scenario']} | {r['num_uavs']} | {r['engine']} | {r['workers']} ({r['workers_used']}) | "
            f"{r['steps']} | {r['mean_ms']:.3f} | {r['p50_ms']:.3f} | {r['p99_ms']:.3f} | {r['steps_per_s']:.1f} | "
            f"{r['uav_steps_per_s']:.0f} | {r['speedup_vs_reference']:.2f}x | {r['events_per_step']:.0f} |")
    t = res["targets"]
    out += ["", "## Targets", ""]
    if "large_speedup_best" in t:
        by = ", ".join(f"workers={k}: {v:.2f}x" for k, v in t["large_speedup_by_workers"].items())
        out.append(f"- SEER >= 2x the reference at `large`: best {t['large_speedup_best']:.2f}x ({by}) -> "
                   f"{'met' if t['large_speedup_ok'] else 'NOT met'}")
    if "xlarge_over_large_step_cost" in t:
        by = ", ".join(f"workers={k}: {v:.1f}x" for k, v in t["xlarge_over_large_step_cost"].items())
        out.append(f"- step cost xlarge / large <= 20x (for 16x the UAVs): {by} -> "
                   f"{'met' if t['scaling_ok'] else 'NOT met'}")
    mem = res["memory"]
    if "xlarge" in mem:
        x = mem["xlarge"]
        out.append(f"- an `xlarge` env adds <= 200 MiB resident: {x['added_mib']:.1f} MiB "
                   f"(RSS {x['rss_before_mib']:.1f} -> {x['rss_after_mib']:.1f} MiB after reset and {x['steps']} "
                   f"steps) -> {'met' if t['xlarge_memory_ok'] else 'NOT met'}")
    if "growth" in mem:
        g = mem["growth"]
        pts = ", ".join(f"{k}: {v:.1f}" for k, v in g["rss_mib_by_step"])
        out.append(f"- resident memory flat over {g['steps']} steps (measured on `{g['scenario']}`, xlarge "
                   f"would take too long here): RSS MiB by step {pts}; growth after the first sample "
                   f"{g['growth_after_first_sample_mib']:.2f} MiB -> {'met' if t['memory_flat_ok'] else 'NOT met'}")
    out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    main()
