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

import os

# The env's own worker pool is what is measured: keep numpy's BLAS pool
# from spinning on the same cores (it showed up in profiles of xlarge).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import datetime  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from seer.bench.common import add_report_args, latency_stats, machine_info, write_report  # noqa: E402

PAGE = os.sysconf("SC_PAGE_SIZE")

# steps timed per scenario (reference, seer); warm-up steps are extra
STEPS = {"small": (1000, 2000), "default": (1000, 2000), "large": (500, 1000), "xlarge": (50, 200),
         "xxlarge": (3, 12)}
WARMUP = {"small": 50, "default": 50, "large": 20, "xlarge": 5, "xxlarge": 2}
NUM_UAVS = {"small": 8, "default": 32, "large": 256, "xlarge": 4096, "xxlarge": 65536}


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


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
            lat[k - warmup] = (t1 - t0) / 1e9
            events += env._sim.last_events
    row = {
        "scenario": scenario, "num_uavs": env.cfg.num_uavs, "engine": engine,
        "workers": workers, "workers_used": env.workers, "steps": steps,
        **latency_stats(lat, "ms"), "steps_per_s": float(1.0 / lat.mean()),
        "uav_steps_per_s": float(env.cfg.num_uavs / lat.mean()),
        "live_at_end": len(env.agents),
        "events_per_step": events / steps,
    }
    env.close()
    return row


def memory_xlarge(workers="auto", steps=20, scenario="xlarge"):
    from seer.envs import uav_swarm_v0

    gc.collect()
    before = rss_bytes()
    env = uav_swarm_v0.parallel_env(scenario=scenario, workers=workers, max_cycles=steps + 10)
    env.reset(seed=0)
    policy = HoverPolicy(env)
    for _ in range(steps):
        env.step(policy())
    gc.collect()
    after = rss_bytes()
    out = {"scenario": scenario, "rss_before_mib": before / 2**20, "rss_after_mib": after / 2**20,
           "added_mib": (after - before) / 2**20, "steps": steps, "workers_used": env.workers,
           "added_kib_per_uav": (after - before) / 1024 / env.cfg.num_uavs}
    env.close()
    return out


def memory_xxlarge():
    return memory_xlarge(steps=3, scenario="xxlarge")


def bookkeeping(scenario, steps, rounds=3, workers=2):
    """Window bookkeeping shared by the pool, in rounds of one env: ms per
    step and worker 0's bookkeeping per window and share of the step
    (``Runtime.pool_stats``)."""
    from seer.envs import uav_swarm_v0

    env = uav_swarm_v0.parallel_env(scenario=scenario, workers=workers, max_cycles=10**9)
    env.reset(seed=0)
    policy = HoverPolicy(env)
    rows = []
    for _ in range(3):
        env.step(policy())
    for _ in range(rounds):
        with env.runtime.pool_stats() as st:
            t0 = time.perf_counter()
            for _ in range(steps):
                env.step(policy())
            wall = time.perf_counter() - t0
        w0 = st.workers[0]
        rows.append({"ms_per_step": wall / steps * 1e3, "windows_per_step": st.windows / steps,
                     "runtime_ms_per_step": st.step_s / steps * 1e3,
                     "bookkeeping_us_per_window": w0.bookkeeping_s / max(st.windows, 1) * 1e6,
                     "bookkeeping_fraction": st.bookkeeping_fraction,
                     "barrier_fraction": st.barrier_fraction})
    env.close()
    med = {k: float(np.median([r[k] for r in rows])) for k in rows[0]}
    return {"scenario": scenario, "workers": workers, "steps_per_round": steps, "rounds": rounds,
            "median": med, "rounds_raw": rows}


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


AB_DRIVER = r"""
import json, os, sys, time
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np
from seer.envs import uav_swarm_v0
sc, w, steps, warm = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
env = uav_swarm_v0.parallel_env(scenario=sc, workers=w, max_cycles=10**9)
env.reset(seed=0)
rng = np.random.default_rng(0)
p0 = env.state_arrays["pos"].copy()
def pol():
    st = env.state_arrays
    live = np.fromiter((int(a[4:]) for a in env.agents), np.int64, len(env.agents))
    act = 0.05 * (p0[live] - st["pos"][live]) - 0.5 * st["vel"][live] + rng.normal(0, 0.1, (len(live), 3))
    return dict(zip(env.agents, np.clip(act, -1, 1).astype(np.float32)))
for _ in range(warm):
    env.step(pol())
# the engine's own step inside ParallelEnv.step (NativeEnv builds): the rest is the dicts and checks
inner = [0.0]
cls = type(env.unwrapped)
if hasattr(cls, "_run_step"):
    run = cls._run_step
    def timed(self):
        t = time.perf_counter(); run(self); inner[0] += time.perf_counter() - t
    cls._run_step = timed
lat = []
for _ in range(steps):
    a = pol(); t = time.perf_counter(); env.step(a); lat.append(time.perf_counter() - t)
dicts = (sum(lat) - inner[0]) / steps * 1e3 if inner[0] else None
print(json.dumps({"mean_ms": float(np.mean(lat) * 1e3), "dicts_ms": dicts, "workers_used": env.workers}))
"""


AB_DRIVER_C = r"""
import json, os, sys, time
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np
from seer.envs.uav_swarm import model as M
sc, w, steps, warm = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
# wall: perf_counter; thread: the stepping thread's CPU time (all of a 1-worker step's work)
clock = time.thread_time if len(sys.argv) > 5 and sys.argv[5] == "thread" else time.perf_counter
cfg = M.make_config(sc)
sim = M.SeerSim(cfg, workers=w)
sim.reset(0)
rng = np.random.default_rng(0)
# by agent id where the engine keeps its rows in slots (builds from 2026-12 on)
by_agent = hasattr(sim, "agent_rows")
rows = sim.agent_rows if by_agent else (lambda: sim.state)
p0 = rows()["pos"].copy()
lat = []
for k in range(steps + warm):
    st = rows()
    live = sim.live_agents() if by_agent else np.flatnonzero(st["alive"])
    act = np.clip(0.05 * (p0[live] - st["pos"][live]) - 0.5 * st["vel"][live]
                  + rng.normal(0, 0.1, (len(live), 3)), -1, 1)
    if by_agent:
        sim.set_actions(live, act)
    else:
        M.set_actions(cfg, st, live, act)
    t = clock(); sim.step(); dt = clock() - t
    if k >= warm:
        lat.append(dt)
print(json.dumps({"mean_ms": float(np.mean(lat) * 1e3), "workers_used": w}))
"""


def against(baseline_path: str, scenarios, rounds: int, level: str = "env", workers=(1, 2),
            clock: str = "wall") -> dict:
    """`ParallelEnv.step` of this tree and of a build of an earlier commit
    (installed with `pip install --target baseline_path`), in alternating
    fresh processes, so load from other jobs hits both alike; per round the
    machine's parallel capacity is measured too.  Medians over rounds.
    clock "thread" (level c): the stepping thread's CPU time instead of the
    wall clock, which a busy machine's time slicing inflates (with 1 worker
    it holds all of the step's work; with more, only the stepping thread's)."""
    from seer.bench.common import parallel_capacity

    steps = {"large": (300, 20), "xlarge": (30, 3), "xxlarge": (4, 1), "default": (1000, 50), "small": (1000, 50)}
    env_new = dict(os.environ)
    env_old = dict(os.environ, PYTHONPATH=baseline_path or "")
    rows, dicts = {}, {}
    caps = []
    for r in range(rounds):
        caps.append(parallel_capacity())
        for sc in scenarios:
            n, warm = steps.get(sc, (50, 5))
            for w in workers:
                pair = (("new", env_new), ("old", env_old))
                for name, env in (pair if r % 2 == 0 else pair[::-1]):  # who goes first alternates
                    if name == "old" and not baseline_path:
                        continue
                    drv = AB_DRIVER if level == "env" else AB_DRIVER_C
                    p = subprocess.run([sys.executable, "-c", drv, sc, str(w), str(n), str(warm), clock],
                                       capture_output=True, text=True, check=True, env=env, cwd="/")
                    res = json.loads(p.stdout.strip().splitlines()[-1])
                    rows.setdefault(f"{sc} w={w} {name}", []).append(res["mean_ms"])
                    if res.get("dicts_ms") is not None:
                        dicts.setdefault(f"{sc} w={w} {name}", []).append(res["dicts_ms"])
        print(f"round {r + 1}: parallel capacity {caps[-1]:.2f}; " + ", ".join(
            f"{k} {v[-1]:.3f}" for k, v in rows.items()), flush=True)
    med = {k: float(np.median(v)) for k, v in rows.items()}
    return {"baseline_path": baseline_path, "level": level, "rounds": rounds, "parallel_capacity_per_round": caps,
            "clock": clock, "ms_per_step_median": med, "ms_per_step_rounds": rows,
            "dicts_ms_median": {k: float(np.median(v)) for k, v in dicts.items()}}


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
    add_report_args(ap)
    ap.add_argument("--scenarios", default="small,default,large,xlarge,xxlarge")
    ap.add_argument("--quick", action="store_true", help="a tenth of the steps, no 10k-step memory run")
    ap.add_argument("--against", metavar="DIR", help="also time a build of an earlier commit installed in DIR "
                    "(pip install --target DIR), alternating with this tree, and report both")
    ap.add_argument("--against-scenarios", default="large,xlarge")
    ap.add_argument("--level", choices=["env", "c"], default="env",
                    help="--against times ParallelEnv.step (env) or the C step alone (SeerSim.step: grid, events, "
                         "readout, losses; no PettingZoo dicts)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of --against")
    ap.add_argument("--skip-main", action="store_true", help="only the --against comparison")
    ap.add_argument("--against-label", help="what --against DIR holds, for the report (default: an earlier commit "
                    "installed with pip install --target)")
    ap.add_argument("--against-workers", default="1,2", help="pool sizes of --against")
    ap.add_argument("--clock", choices=["wall", "thread"], default="wall",
                    help="--level c: time steps by the wall clock or by the stepping thread's CPU time (all of a "
                         "1-worker step's work; on a busy machine the wall clock also counts the time the OS gives "
                         "other processes)")
    args = ap.parse_args(argv)
    if args.skip_main:
        info = machine_info()  # before the runs: its load average is the one at the start
        ab = against(args.against, args.against_scenarios.split(","), args.rounds, args.level,
                     tuple(int(w) for w in args.against_workers.split(",")), args.clock)
        if args.against_label:
            ab["baseline_label"] = args.against_label
        md = against_markdown(ab, "python " + " ".join([os.path.relpath(__file__, os.getcwd())] + (
            argv if argv is not None else sys.argv[1:])), info)
        print(md)
        write_report(ab, args.json, args.md, md, indent=1)
        return ab
    scenarios = args.scenarios.split(",")
    info = machine_info()
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
    # intra-env scaling: workers=2 over workers=1 (and auto over 1), same run
    scaling = {}
    for sc in scenarios:
        one = [r for r in rows if r["engine"] == "seer" and r["scenario"] == sc and r["workers"] == 1]
        if one:
            scaling[sc] = {str(r["workers"]): one[0]["mean_ms"] / r["mean_ms"] for r in rows
                           if r["engine"] == "seer" and r["scenario"] == sc}
    targets["intra_env_speedup_vs_1"] = scaling
    if "xlarge" in scaling:
        targets["xlarge_w2_ok"] = scaling["xlarge"].get("2", 0) >= 1.7
    if "large" in scaling:
        targets["large_w2_ok"] = scaling["large"].get("2", 0) >= 1.3
    targets["auto_never_below_1_ok"] = all(v.get("auto", 1.0) >= 1.0 for v in scaling.values())
    if "xlarge" in best and "xxlarge" in best:
        xl = [r for r in rows if r["engine"] == "seer" and r["scenario"] == "xlarge" and r["workers"] == 1]
        xx = [r for r in rows if r["engine"] == "seer" and r["scenario"] == "xxlarge" and r["workers"] == 1]
        targets["xxlarge_over_xlarge_step_cost_w1"] = xx[0]["mean_ms"] / xl[0]["mean_ms"]
        targets["xxlarge_scaling_ok"] = targets["xxlarge_over_xlarge_step_cost_w1"] <= 17.0
    if "xlarge_over_large_step_cost" in targets:
        targets["scaling17_ok"] = targets["xlarge_over_large_step_cost"].get("1", 99) <= 17.0
    book = {}
    for sc in ("large", "xlarge"):
        if sc in scenarios and not args.quick:
            book[sc] = bookkeeping(sc, 100 if sc == "large" else 10)
            print("bookkeeping", sc, json.dumps(book[sc]["median"]), flush=True)
    mem = {}
    if "xxlarge" in scenarios:
        mem["xxlarge"] = in_child("memory_xxlarge")
        print("memory xxlarge:", mem["xxlarge"], flush=True)
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
        "rows": rows, "memory": mem, "targets": targets, "bookkeeping": book}
    write_report(result, args.json, args.md, markdown(result) if args.md else None, indent=1)
    print(json.dumps(targets, indent=1))
    return result


def against_markdown(ab, command, m) -> str:
    med = ab["ms_per_step_median"]
    out = ["# uav_swarm_v0: this tree against the previous commit, one env across cores", "",
           f"Command: `{command}`  ",
           f"Date: {datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')}  ",
           f"Machine: {m['cpu_model']}, nproc {m['nproc']} ({m['usable_cores']} usable), {m['platform']}, "
           f"Python {m['python']}, numpy {m['numpy']}; load average at start "
           f"{tuple(round(x, 2) for x in m['loadavg_at_start'])}, at end {tuple(round(x, 2) for x in os.getloadavg())}",
           f"Parallel capacity per round (throughput of 2 spinning processes over 1: 2.0 = both cores free, 1.0 = one): "
           + ", ".join(f"{c:.2f}" for c in ab["parallel_capacity_per_round"]), "",
           ("Timed: `ParallelEnv.step(actions)`" if ab.get("level", "env") == "env" else
            "Timed: the C step alone (`SeerSim.step`: broadcast grid, the step's events, readout, losses; no "
            "PettingZoo dicts)") + (", by the stepping thread's CPU time (`time.thread_time`)"
                                      if ab.get("clock") == "thread" and ab.get("level") == "c" else "")
           + " (hover policy, outside the timer), each configuration in a fresh "
           f"process, old and new alternating (who goes first alternates too); medians over {ab['rounds']} rounds. Old: "
           + (ab.get("baseline_label") or f"the previous commit built with `pip install --target` into "
              f"`{ab['baseline_path']}`") + ".", "",
           "| scenario | workers | old ms/step | new ms/step | new vs old | old w=2 / w=1 | new w=2 / w=1 |",
           "|---|---|---|---|---|---|---|"]
    scen = sorted({k.split()[0] for k in med}, key=lambda x: NUM_UAVS.get(x, 0))
    for sc in scen:
        for w in (1, 2):
            o, n = med.get(f"{sc} w={w} old"), med.get(f"{sc} w={w} new")
            if n is None:
                continue
            both = f"{sc} w=2 new" in med and f"{sc} w=1 new" in med
            sn = f"{med[f'{sc} w=1 new'] / med[f'{sc} w=2 new']:.2f}x" if both else "-"
            if o is None:
                out.append(f"| {sc} | {w} | - | {n:.3f} | - | - | {sn} |")
                continue
            so = f"{med[f'{sc} w=1 old'] / med[f'{sc} w=2 old']:.2f}x" if both and f"{sc} w=2 old" in med else "-"
            out.append(f"| {sc} | {w} | {o:.3f} | {n:.3f} | {o / n:.2f}x | {so} | {sn} |")
    growth = []
    for a, b in (("large", "xlarge"), ("xlarge", "xxlarge")):
        for name in ("old", "new"):
            if f"{a} w=1 {name}" in med and f"{b} w=1 {name}" in med:
                growth.append(f"{b}/{a} at 1 worker ({name}): {med[f'{b} w=1 {name}'] / med[f'{a} w=1 {name}']:.1f}x")
    if growth:
        out += ["", "Cost growth (16x the UAVs each; 16x is linear): " + "; ".join(growth) + "."]
    # the same ratios taken within each round (both sizes timed minutes apart, in the same host state), medians
    rounds = ab.get("ms_per_step_rounds", {})
    per_round = []
    for a, b in (("large", "xlarge"), ("xlarge", "xxlarge")):
        for name in ("old", "new"):
            ra, rb = rounds.get(f"{a} w=1 {name}"), rounds.get(f"{b} w=1 {name}")
            if ra and rb and len(ra) == len(rb):
                g = sorted(y / x for x, y in zip(ra, rb))
                per_round.append(f"{b}/{a} ({name}) {np.median(g):.1f}x (quartiles {np.percentile(g, 25):.1f}-"
                                 f"{np.percentile(g, 75):.1f}x)")
    if per_round:
        out += ["", "Per round, then the median over rounds: " + "; ".join(per_round) + "."]
    share = ab.get("dicts_ms_median") or {}
    if share:
        out += ["", "The step outside the engine's own (`ParallelEnv.step` less the C copy step: action checks, "
                "the five dicts), ms and share of the step:", "",
                "| scenario | workers | old | new |", "|---|---|---|---|"]
        for sc in scen:
            for w in (1, 2):
                cells = []
                for name in ("old", "new"):
                    k = f"{sc} w={w} {name}"
                    cells.append(f"{share[k]:.3f} ({share[k] / med[k]:.0%})" if k in share else "-")
                out.append(f"| {sc} | {w} | {cells[0]} | {cells[1]} |")
    out.append("")
    return "\n".join(out)


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
    out += ["", "## Targets", "",
            "Each row above is one run of one configuration, the rows timed one after another, so a ratio of two "
            "rows carries whatever the host did in between; `bench/bench_uav_intra_env.py` times workers=1, 2 and "
            "\"auto\" in alternating blocks in one process for the scaling figures.", ""]
    if "large_speedup_best" in t:
        by = ", ".join(f"workers={k}: {v:.2f}x" for k, v in t["large_speedup_by_workers"].items())
        out.append(f"- SEER >= 2x the reference at `large`: best {t['large_speedup_best']:.2f}x ({by}) -> "
                   f"{'met' if t['large_speedup_ok'] else 'NOT met'}")
    if "xlarge_over_large_step_cost" in t:
        by = ", ".join(f"workers={k}: {v:.1f}x" for k, v in t["xlarge_over_large_step_cost"].items())
        out.append(f"- step cost xlarge / large <= 20x (for 16x the UAVs): {by} -> "
                   f"{'met' if t['scaling_ok'] else 'NOT met'}")
    sc = t.get("intra_env_speedup_vs_1", {})
    if sc:
        out.append("- intra-env scaling (same run, mean step time of workers=1 / workers=N): " + "; ".join(
            f"{k}: " + ", ".join(f"w={w} {v:.2f}x" for w, v in d.items() if w != "1") for k, d in sc.items()))
        if "xlarge" in sc:
            out.append(f"  - xlarge workers=2 >= 1.7x: {sc['xlarge'].get('2', 0):.2f}x -> "
                       f"{'met' if t.get('xlarge_w2_ok') else 'NOT met'}")
        if "large" in sc:
            out.append(f"  - large workers=2 >= 1.3x: {sc['large'].get('2', 0):.2f}x -> "
                       f"{'met' if t.get('large_w2_ok') else 'NOT met'}")
        out.append(f"  - workers=\"auto\" never below 1.0x: "
                   f"{'met' if t.get('auto_never_below_1_ok') else 'NOT met'}")
    if "xlarge_over_large_step_cost" in t:
        out.append(f"- xlarge / large <= 17x at 1 worker (issue 15): "
                   f"{t['xlarge_over_large_step_cost'].get('1', float('nan')):.1f}x -> "
                   f"{'met' if t.get('scaling17_ok') else 'NOT met'}")
    if "xxlarge_over_xlarge_step_cost_w1" in t:
        out.append(f"- xxlarge / xlarge <= 17x at 1 worker: {t['xxlarge_over_xlarge_step_cost_w1']:.1f}x -> "
                   f"{'met' if t['xxlarge_scaling_ok'] else 'NOT met'}")
    for scn, b in res.get("bookkeeping", {}).items():
        m = b["median"]
        out.append(f"- window bookkeeping on `{scn}`, workers={b['workers']} (medians of {b['rounds']} rounds of "
                   f"{b['steps_per_round']} steps): {m['ms_per_step']:.3f} ms/step, worker 0's share "
                   f"{m['bookkeeping_us_per_window']:.1f} us/window ({m['bookkeeping_fraction'] * 100:.1f}%), "
                   f"barrier waits {m['barrier_fraction'] * 100:.1f}%")
    mem = res["memory"]
    if "xxlarge" in mem:
        x = mem["xxlarge"]
        out.append(f"- memory of an `xxlarge` env (65,536 UAVs): adds {x['added_mib']:.1f} MiB resident "
                   f"({x['added_kib_per_uav']:.2f} KiB per UAV; RSS {x['rss_before_mib']:.1f} -> "
                   f"{x['rss_after_mib']:.1f} MiB after reset and {x['steps']} steps)")
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
