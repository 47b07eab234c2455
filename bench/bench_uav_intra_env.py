"""uav_swarm_v0, one env across cores: workers=1, 2 and "auto" in one
process, in alternating blocks of steps, so that all three see the same machine.

    python bench/bench_uav_intra_env.py [--scenarios large,xlarge,xxlarge] [--rounds 61] [--level c|env]
        --json bench/results/uav_intra_env.json --md bench/results/uav_intra_env.md

Why interleaved blocks rather than one process per configuration: on a
shared 2-vCPU VM the cost of moving a cache line between the two vCPUs
changes from second to second as the host moves them (two threads in C
bouncing one atomic between them measured 95 to 500 ns per round trip
within ten seconds on the AMD EPYC host of bench/results/uav_intra_env.md,
whose own rounds saw the pool's barrier wait on 'large' range from 0.2 to
8.9 us per window), and a pool of two pays it on every window's barrier
and every event that crosses to the other worker's lanes.  Fresh processes timed one after another land
in different host states; short blocks, alternated, land in the same one.
Each round times one block of each arm, the arms taking turns at going
first (the same seed and the same steps: the envs stay in lockstep,
bit-identical whatever the pool size), and a block's median step time over
workers=1's in the same round is that round's speedup; the report gives the
median, the quartiles and the extremes over rounds, and per block the
pool's barrier wait per window (``Runtime.pool_stats``), which shows the
host state a round ran in.

Steps are ``SeerSim.step`` (the whole C step: grid, events, readout,
losses), with a policy written between steps by Python outside the timer
(steer back to the start position, damped, with noise), as a training loop
would; with ``--level env`` they are ``ParallelEnv.step`` (the C step and
the PettingZoo dicts: what most users call), the same policy's action dict
made outside the timer.

``--against DIR --seconds S`` compares two builds the same way: this tree
and a build installed in DIR (``pip install --target DIR``) each run in a
server process of their own holding a workers=1 and a workers=2 env, and
for S seconds per scenario the two take turns at timing one block of each
(``--block`` steps), so both see the same host states.  The report gives
each build's 2-worker speedup over its own 1 worker (median, mean,
quartiles over rounds: a change that only helps in the host's bad states
moves the mean and the lower quartile, not the median) and the two builds'
2-worker step times per round:

    python bench/bench_uav_intra_env.py --against /tmp/site_prev --against-label 7ae24df --seconds 240 \
        --scenarios large,xlarge --json bench/results/steal_at_once.json --md bench/results/steal_at_once.md
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

# steps per block, blocks start after WARM steps of each env
BLOCK = {"large": 200, "xlarge": 20, "xxlarge": 2}
WARM = {"large": 20, "xlarge": 3, "xxlarge": 1}


class Timed:
    """One SeerSim and its policy; times its steps and reads its pool's stats."""

    def __init__(self, scenario, workers, seed=0):
        self.sim = M.SeerSim(M.make_config(scenario), workers=workers)
        self.sim.reset(seed, max_cycles=1 << 30)
        rows = self.sim.agent_rows()
        self.p0 = rows["pos"].copy()
        self.rng = np.random.default_rng(seed)

    def _act(self):
        rows = self.sim.agent_rows()
        live = self.sim.live_agents()
        act = np.clip(0.05 * (self.p0[live] - rows["pos"][live]) - 0.5 * rows["vel"][live]
                      + self.rng.normal(0, 0.1, (len(live), 3)), -1, 1)
        self.sim.set_actions(live, act)

    def block(self, steps):
        """Median ms per step of `steps` steps, and worker 0's barrier wait in us per window."""
        lat = []
        with self.sim.runtime.pool_stats() as st:
            for _ in range(steps):
                self._act()
                t = time.perf_counter()
                self.sim.step()
                lat.append(time.perf_counter() - t)
        return float(np.median(lat) * 1e3), st.workers[0].barrier_s / max(st.windows, 1) * 1e6

    def close(self):
        self.sim.close()


class TimedEnv(Timed):
    """One ``uav_swarm_v0.parallel_env`` and its policy (``--level env``): times ``ParallelEnv.step``."""

    def __init__(self, scenario, workers, seed=0):
        from seer.envs import uav_swarm_v0

        self.env = uav_swarm_v0.parallel_env(scenario=scenario, workers=workers, max_cycles=1 << 30)
        self.env.reset(seed=seed)
        self.sim = self.env.unwrapped  # .runtime and .workers, as Timed reads them
        self.p0 = self.env.state_arrays["pos"].copy()
        self.rng = np.random.default_rng(seed)

    def block(self, steps):
        env, lat = self.env, []
        with env.unwrapped.runtime.pool_stats() as st:
            for _ in range(steps):
                rows = env.state_arrays
                live = np.fromiter((int(a[4:]) for a in env.agents), np.int64, len(env.agents))
                act = np.clip(0.05 * (self.p0[live] - rows["pos"][live]) - 0.5 * rows["vel"][live]
                              + self.rng.normal(0, 0.1, (len(live), 3)), -1, 1).astype(np.float32)
                actions = dict(zip(env.agents, act))
                t = time.perf_counter()
                env.step(actions)
                lat.append(time.perf_counter() - t)
        return float(np.median(lat) * 1e3), st.workers[0].barrier_s / max(st.windows, 1) * 1e6

    def close(self):
        self.env.close()


ARMS = (1, 2, "auto")
LEVELS = {"c": (Timed, "`SeerSim.step` (the whole C step)"),
          "env": (TimedEnv, "`ParallelEnv.step` (the C step and the PettingZoo dicts)")}


def scenario_rounds(scenario, rounds, level="c"):
    arms = {w: LEVELS[level][0](scenario, w) for w in ARMS}
    try:
        for t in arms.values():
            t.block(WARM[scenario])
        rows = []
        for r in range(rounds):
            # the arms take turns at going first, so a drift of the host within a round favours none
            ms, barrier, pool = {}, {}, {}
            for w in ARMS[r % 3:] + ARMS[:r % 3]:
                ms[w], barrier[w] = arms[w].block(BLOCK[scenario])
                pool[w] = arms[w].sim.workers
            rows.append({"round": r + 1, "w1_ms": ms[1], "w2_ms": ms[2], "auto_ms": ms["auto"],
                         "speedup": ms[1] / ms[2], "auto_speedup": ms[1] / ms["auto"], "auto_workers": pool["auto"],
                         "w2_barrier_us_per_window": barrier[2]})
            print(f"{scenario} round {r + 1}: w1 {ms[1]:.3f} ms, w2 {ms[2]:.3f} ms ({ms[1] / ms[2]:.2f}x), "
                  f"auto {ms['auto']:.3f} ms ({ms[1] / ms['auto']:.2f}x, {pool['auto']} workers), "
                  f"w2 barrier {barrier[2]:.2f} us/window", flush=True)
        return rows
    finally:
        for t in arms.values():
            t.close()


def _spread(values):
    q1, med, q3 = np.percentile(values, [25, 50, 75])
    return {"median": float(med), "q1": float(q1), "q3": float(q3), "min": float(np.min(values)),
            "max": float(np.max(values))}


def summary(rows):
    return {"w1_ms": float(np.median([r["w1_ms"] for r in rows])),
            "w2_ms": float(np.median([r["w2_ms"] for r in rows])),
            "auto_ms": float(np.median([r["auto_ms"] for r in rows])),
            "speedup": _spread([r["speedup"] for r in rows]),
            "auto_speedup": _spread([r["auto_speedup"] for r in rows]),
            "auto_workers": [r["auto_workers"] for r in rows],
            "barrier_us_median": float(np.median([r["w2_barrier_us_per_window"] for r in rows]))}


def _pool_counts(pools):
    return ", ".join(f"{w}: {pools.count(w)}" for w in sorted(set(pools)))


def markdown(doc):
    title = 'uav_swarm_v0: one env across cores, workers=1, 2 and "auto" interleaved in one process'
    lines = report_header(doc, title) + [
             f"Timed: {LEVELS[doc.get('level', 'c')][1]}, policy outside the timer; per round one block each of "
             "workers=1, workers=2 and workers=\"auto\" (taking turns at going first), same seed, in lockstep; a "
             "speedup is the ratio of two blocks' median step times in the same round, over workers=1 (see the "
             "script's docstring for why).  Medians over rounds, quartiles and extremes beside them.", "",
             "| scenario | steps per block | rounds | w=1 ms/step | w=2 ms/step | auto ms/step | w=2 / w=1 | "
             "quartiles | min - max | auto / w=1 | quartiles | min - max | auto's pool size: rounds | "
             "w=2 barrier us/window |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for sc, d in doc["scenarios"].items():
        s, a, pools = d["summary"]["speedup"], d["summary"]["auto_speedup"], d["summary"]["auto_workers"]
        m = d["summary"]
        lines.append(f"| {sc} | {BLOCK[sc]} | {len(d['rounds'])} | {m['w1_ms']:.3f} | {m['w2_ms']:.3f} | "
                     f"{m['auto_ms']:.3f} | {s['median']:.2f}x | {s['q1']:.2f}x - {s['q3']:.2f}x | "
                     f"{s['min']:.2f}x - {s['max']:.2f}x | {a['median']:.2f}x | {a['q1']:.2f}x - {a['q3']:.2f}x | "
                     f"{a['min']:.2f}x - {a['max']:.2f}x | {_pool_counts(pools)} | "
                     f"{m['barrier_us_median']:.2f} |")
    lines += ["", "Per round:", "", "| scenario | round | w=1 ms | w=2 ms | auto ms | w=2 / w=1 | auto / w=1 | "
              "auto's pool | w=2 barrier us/window |", "|---|---|---|---|---|---|---|---|---|"]
    for sc, d in doc["scenarios"].items():
        lines += [f"| {sc} | {r['round']} | {r['w1_ms']:.3f} | {r['w2_ms']:.3f} | {r['auto_ms']:.3f} | "
                  f"{r['speedup']:.2f}x | {r['auto_speedup']:.2f}x | {r['auto_workers']} | "
                  f"{r['w2_barrier_us_per_window']:.2f} |" for r in d["rounds"]]
    return "\n".join(lines) + "\n"


# ---- --against: two builds, each in a server process, alternating short blocks ----------------------

def serve(scenario, level, steps):
    """A server: a workers=1 and a workers=2 env; per line read, one block of each, answered as JSON."""
    import json
    import seer

    arms = {w: LEVELS[level][0](scenario, w) for w in (1, 2)}
    for t in arms.values():
        t.block(WARM[scenario])
    print(json.dumps({"seer": seer.__file__}), flush=True)
    for _ in sys.stdin:
        w1, _b1 = arms[1].block(steps)
        w2, b2 = arms[2].block(steps)
        print(json.dumps({"w1_ms": w1, "w2_ms": w2, "w2_barrier_us_per_window": b2}), flush=True)
    for t in arms.values():
        t.close()


def start_server(site, scenario, level, steps):
    import json

    env = dict(os.environ)
    here = os.path.dirname(os.path.abspath(__file__))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (site, here) if p)
    # never the repo root as cwd: its seer/ would shadow the build under test
    proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--serve", scenario, "--level", level,
                             "--block", str(steps)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=tempfile.gettempdir())
    line = proc.stdout.readline()
    if not line:
        raise RuntimeError(f"the server of build {site or 'this tree'} died at start-up:\n{proc.stderr.read()}")
    got = json.loads(line)["seer"]
    if site and not got.startswith(os.path.abspath(site)):
        raise RuntimeError(f"the server of {site} imported {got}")
    return proc


def against_rounds(scenario, site, level, steps, seconds):
    import json

    servers = {"this tree": start_server(None, scenario, level, steps),
               "old": start_server(site, scenario, level, steps)}
    rows, t_end = [], time.monotonic() + seconds
    try:
        while time.monotonic() < t_end:
            names = list(servers) if len(rows) % 2 == 0 else list(servers)[::-1]
            row = {}
            for name in names:
                servers[name].stdin.write("go\n")
                servers[name].stdin.flush()
                got = json.loads(servers[name].stdout.readline())
                # thousands of rounds: a row per build as [w1 ms, w2 ms, w2 barrier us/window], rounded
                row[name] = [round(got[k], 4) for k in AGAINST_FIELDS]
            rows.append(row)
    finally:
        for proc in servers.values():
            proc.stdin.close()
            proc.wait(timeout=60)
    return rows


AGAINST_FIELDS = ("w1_ms", "w2_ms", "w2_barrier_us_per_window")


def against_summary(rows):
    out = {}
    for name in ("this tree", "old"):
        w1, w2, barrier = np.array([r[name] for r in rows]).T
        sp = w1 / w2
        out[name] = {"speedup": {**_spread(sp), "mean": float(sp.mean())}, "w1_ms": float(np.median(w1)),
                     "w2_ms": float(np.median(w2)), "barrier_us_median": float(np.median(barrier))}
    out["old_over_new_w2"] = _spread([r["old"][1] / r["this tree"][1] for r in rows])
    return out


def against_markdown(doc):
    label = doc["against_label"]
    lines = report_header(doc, f"uav_swarm_v0: one env across cores, this tree against {label}") + [
             f"Timed: {LEVELS[doc['level']][1]}, policy outside the timer; each build in a server process of its "
             "own with a workers=1 and a workers=2 env; per round each server times one block of each, the two "
             "taking turns at going first.  Speedup: a build's workers=2 over its own workers=1 in the same "
             "round (median, mean and quartiles over rounds); old / this tree: the two builds' workers=2 step "
             "times in the same round.", "",
             f"| scenario | steps per block | rounds | build | w=1 ms/step | w=2 ms/step | w=2 / w=1 median | mean | "
             f"quartiles | w=2 barrier us/window | {label} w=2 / this tree w=2 (quartiles) |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for sc, d in doc["scenarios"].items():
        s = d["summary"]
        o = s["old_over_new_w2"]
        for name, shown in (("this tree", "this tree"), ("old", label)):
            b = s[name]
            sp = b["speedup"]
            last = f"{o['median']:.3f} ({o['q1']:.3f}-{o['q3']:.3f})" if name == "this tree" else ""
            lines.append(f"| {sc} | {d['block']} | {len(d['rounds'])} | {shown} | {b['w1_ms']:.3f} | "
                         f"{b['w2_ms']:.3f} | {sp['median']:.2f}x | {sp['mean']:.2f}x | {sp['q1']:.2f}x - "
                         f"{sp['q3']:.2f}x | {b['barrier_us_median']:.2f} | {last} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenarios", default="large,xlarge,xxlarge")
    ap.add_argument("--rounds", type=int, default=61)
    ap.add_argument("--level", choices=sorted(LEVELS), default="c",
                    help="time the C step alone (c) or ParallelEnv.step (env)")
    ap.add_argument("--against", metavar="DIR", help="compare with the build installed in DIR (see above)")
    ap.add_argument("--against-label", help="what DIR holds, for the report")
    ap.add_argument("--seconds", type=float, default=240.0, help="per scenario, with --against")
    ap.add_argument("--block", type=int, help="steps per block (default: per scenario)")
    ap.add_argument("--serve", metavar="SCENARIO", help=argparse.SUPPRESS)
    add_report_args(ap)
    args = ap.parse_args(argv)
    if args.serve:
        return serve(args.serve, args.level, args.block or BLOCK[args.serve])
    scenarios = args.scenarios.split(",")
    bad = [s for s in scenarios if s not in BLOCK]
    if bad:
        ap.error(f"--scenarios: {bad} not among {sorted(BLOCK)}")
    doc = {"command": "python bench/bench_uav_intra_env.py " + " ".join(sys.argv[1:] if argv is None else argv),
           "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "machine": machine_info(),
           "capacity_before": parallel_capacity(), "level": args.level, "scenarios": {}}
    if args.against:
        doc["against_label"] = args.against_label or args.against
        for sc in scenarios:
            steps = args.block or BLOCK[sc] // 2
            rows = against_rounds(sc, args.against, args.level, steps, args.seconds)
            doc["scenarios"][sc] = {"block": steps, "fields": AGAINST_FIELDS, "rounds": rows,
                                    "summary": against_summary(rows)}
        doc["capacity_after"] = parallel_capacity()
        md = against_markdown(doc)
        write_report(doc, args.json, args.md, md, make_dirs=True)
        print(md)
        return
    for sc in scenarios:
        rows = scenario_rounds(sc, args.rounds, args.level)
        doc["scenarios"][sc] = {"rounds": rows, "summary": summary(rows)}
    doc["capacity_after"] = parallel_capacity()
    md = markdown(doc)
    write_report(doc, args.json, args.md, md, make_dirs=True)
    print(md)


if __name__ == "__main__":
    main()
