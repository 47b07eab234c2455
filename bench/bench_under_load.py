"""Parallel steps on a busy machine: workers=1, 2 and "auto", quiet and beside busy processes, in one run.

The case this measures is an RL training loop's: the env shares the cores
with a learner, a logger, another env.  Each row times one workload at
workers=1, 2 and ``"auto"`` in three conditions: quiet, beside one busy
process (a child spinning a Python loop), and beside two.  Workloads:

- ``uav_swarm_v0`` ``large``, ``xlarge`` and ``xxlarge`` through ``ParallelEnv.step`` (a
  hover policy's actions, prepared outside the timer);
- a synthetic model (``seer.synthetic.SyntheticModel``, native handlers) at
  about 0.5, 2 and 20 us per event, stepped through ``Runtime.step``;
- ``examples/seer_consensus`` ``large`` with C and with Numba handlers, when
  the package is installed (``pip install examples/seer_consensus``);
- the CleanRL-style PPO example (``examples/cleanrl_ppo_uav.py``, torch
  learner in the same process, ``uav_swarm_v0`` ``large``, 2 copies) end to
  end: a block is a few PPO iterations (rollout and update), its time per
  agent-step taken over all but the first; when torch is installed.

Rounds are interleaved (every condition, workload and pool size once per
round, the order rotating), since the machine is shared and its load moves;
the table gives medians over rounds and the same-run ratios workers=2/1 and
auto/best fixed size.  ``--against PATH`` times a second build in the same
rounds (a folder to put first on ``PYTHONPATH``, holding an older checkout
installed with ``pip install --target``), so the table shows before and
after under the same load.  Each build runs in a server subprocess of its
own that keeps its envs between rounds (``"auto"``'s tuner keeps what it
learnt); the busy processes run while both are timed.

    python bench/bench_under_load.py --rounds 5 --against /tmp/seer-before --against-label d59153d \\
        --json bench/results/under_load.json --md bench/results/under_load.md
"""

from __future__ import annotations

import os

# The runtime's pool is what is measured: keep numpy's BLAS pool off the cores.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))

# name -> (kind, arguments, steps per timed block at workers=1 quiet of ~0.3 s)
WORKLOADS = {
    "uav_large": ("uav", {"scenario": "large"}, 600),
    "uav_xlarge": ("uav", {"scenario": "xlarge"}, 50),
    "uav_xxlarge": ("uav", {"scenario": "xxlarge"}, 4),
    # work: iterations of ~1 ns; entities, step length (10 windows of 0.1 when 1.0)
    "synth_0.5us": ("synth", {"entities": 1024, "work": 350, "step": 1.0}, 25),
    "synth_2us": ("synth", {"entities": 1024, "work": 1850, "step": 0.5}, 12),
    "synth_20us": ("synth", {"entities": 512, "work": 19500, "step": 0.2}, 10),
    "consensus_c": ("consensus", {"scenario": "large", "engine": "seer"}, 300),
    "consensus_numba": ("consensus", {"scenario": "large", "engine": "numba"}, 300),
    # steps: PPO iterations per block (of 128 vector steps each)
    "ppo_uav_large": ("ppo", {"scenario": "large", "copies": 2}, 4),
}
POOLS = (1, 2, "auto")
CONDITIONS = ("quiet", "busy1", "busy2")


# ---- the server: one build's envs, timed on request ----------------------------------------------


class Workload:
    """One workload at one pool size, kept between blocks."""

    def __init__(self, name: str, workers):
        kind, args, _ = WORKLOADS[name]
        self.kind = kind
        self.runtime = None
        if kind == "ppo":
            sys.path.insert(0, os.path.join(os.path.dirname(HERE), "examples"))
            import cleanrl_ppo_uav

            self.argv = ["--scenario", args["scenario"], "--num-copies", str(args["copies"]), "--workers",
                         str(workers)]
            self.ppo = cleanrl_ppo_uav
        elif kind == "uav":
            from seer.envs import uav_swarm_v0

            self.env = uav_swarm_v0.parallel_env(scenario=args["scenario"], workers=workers, max_cycles=10**9)
            self.env.reset(seed=0)
            from bench_uav import HoverPolicy

            self.policy = HoverPolicy(self.env, 0)
            self.runtime = self.env.runtime
        elif kind == "consensus":
            from seer_consensus import consensus_v0

            self.env = consensus_v0.parallel_env(scenario=args["scenario"], engine=args["engine"], workers=workers,
                                                 max_cycles=10**9)
            self.env.reset(seed=0)
            rng = np.random.default_rng(0)
            self.actions = [{a: rng.uniform(-1, 1, 1).astype(np.float32) for a in self.env.agents} for _ in range(8)]
            self.runtime = self.env.runtime
        else:
            from seer.stpa import make_runtime
            from seer.synthetic import SyntheticModel

            model = SyntheticModel(args["entities"], fanout=1, work=args["work"], period=0.1, delay=0.1)
            self.runtime = make_runtime(model, workers)
            self.runtime.reset(0)
            self.t, self.dt = 0.0, args["step"]
        self.k = 0

    def step(self) -> int:
        self.k += 1
        if self.kind == "synth":
            self.t += self.dt
            return self.runtime.step(self.t).events
        env = self.env
        if not env.agents:
            env.reset(seed=self.k)
        acts = self.policy() if self.kind == "uav" else self.actions[self.k % len(self.actions)]
        env.step(acts)
        return 0

    def ppo_block(self, iterations: int) -> dict:
        """A fresh training run of ``iterations`` PPO iterations: seconds per agent-step after the first."""
        hist = self.ppo.train(self.ppo.parse(self.argv + ["--iterations", str(max(iterations, 2))]))["history"]
        steps = hist[-1]["agent_steps"] - hist[0]["agent_steps"]
        return {"s_per_step": (hist[-1]["wall_s"] - hist[0]["wall_s"]) / max(steps, 1), "events": 0,
                "workers_now": None}

    def block(self, steps: int, stats: bool) -> dict:
        if self.kind == "ppo":
            return self.ppo_block(steps)
        events = 0
        t0 = time.perf_counter()
        if stats and hasattr(self.runtime, "pool_stats"):
            with self.runtime.pool_stats() as ps:
                for _ in range(steps):
                    events += self.step()
            out = {"pool": pool_summary(ps)}
        else:
            for _ in range(steps):
                events += self.step()
            out = {}
        dt = time.perf_counter() - t0
        out.update({"s_per_step": dt / steps, "events": events, "workers_now": int(self.runtime.workers)})
        return out


def pool_summary(ps) -> dict:
    w = ps.workers
    out = {"steps": ps.steps, "windows": ps.windows, "step_s": ps.step_s,
           "barrier_fraction": ps.barrier_fraction, "bookkeeping_fraction": ps.bookkeeping_fraction,
           "pool_windows": [x.windows for x in w]}
    if hasattr(ps, "spin_s"):  # added with the chunked phases
        out.update({"spin_per_step_s": ps.spin_per_step_s, "parks_per_step": ps.parks / max(ps.steps, 1)})
    return out


def serve() -> None:
    sys.path.insert(0, HERE)  # bench_uav's hover policy
    import seer

    live: dict[tuple, Workload] = {}
    print(json.dumps({"ready": True, "seer": os.path.dirname(seer.__file__)}), flush=True)
    for line in sys.stdin:
        req = json.loads(line)
        if req.get("quit"):
            break
        key = (req["workload"], req["workers"])
        try:
            if key not in live:
                live[key] = Workload(*key)
                if live[key].kind != "ppo":  # a PPO block is a whole fresh run
                    live[key].block(max(2, req["steps"] // 5), False)  # warm-up
            res = live[key].block(req["steps"], req.get("stats", False))
        except Exception as exc:  # noqa: BLE001 - reported to the driver, which skips the row
            res = {"error": f"{type(exc).__name__}: {exc}"}
        print(json.dumps(res), flush=True)
    for w in live.values():
        if hasattr(w, "env"):
            w.env.close()
        elif w.runtime is not None:
            w.runtime.close()


# ---- the driver --------------------------------------------------------------------------------------


class Server:
    def __init__(self, label: str, pythonpath: str | None):
        env = dict(os.environ)
        if pythonpath:
            env["PYTHONPATH"] = pythonpath + os.pathsep + env.get("PYTHONPATH", "")
        # outside any checkout, so that the build on PYTHONPATH (or the installed one) is what imports
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--serve"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=env, cwd="/")
        hello = json.loads(self.proc.stdout.readline())
        self.label, self.seer = label, hello["seer"]

    def run(self, **req) -> dict:
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self) -> None:
        try:
            self.proc.stdin.write(json.dumps({"quit": True}) + "\n")
            self.proc.stdin.flush()
            self.proc.wait(timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()


def start_busy(n: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True:\n    pass"]) for _ in range(n)]


def stop_busy(procs) -> None:
    for p in procs:
        p.terminate()
    for p in procs:
        p.wait()


def uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


def consensus_available() -> bool:
    try:
        import seer_consensus  # noqa: F401
    except ImportError:
        return False
    return True


def torch_available() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def numba_available() -> bool:
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--scale", type=float, default=1.0, help="steps per block, times this")
    ap.add_argument("--workloads", default=",".join(WORKLOADS), help="comma-separated subset")
    ap.add_argument("--conditions", default=",".join(CONDITIONS))
    ap.add_argument("--against", action="append", default=[],
                    help="PYTHONPATH folder of a build to compare with (repeatable)")
    ap.add_argument("--against-label", action="append", default=[], help="its label, in the same order")
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    from seer.bench.common import add_report_args

    add_report_args(ap)
    args = ap.parse_args()
    if args.serve:
        serve()
        return
    from seer.bench.common import machine_info, markdown_table, write_report

    names = [n for n in args.workloads.split(",") if n]
    skipped = {}
    for n in list(names):
        if WORKLOADS[n][0] == "consensus" and not consensus_available():
            skipped[n] = "seer_consensus is not installed"
        elif n == "consensus_numba" and not numba_available():
            skipped[n] = "numba is not installed"
        elif WORKLOADS[n][0] == "ppo" and not torch_available():
            skipped[n] = "torch is not installed"
    names = [n for n in names if n not in skipped]
    conditions = [c for c in args.conditions.split(",") if c]
    builds = [Server("after", None)]
    for i, path in enumerate(args.against):
        builds.append(Server(args.against_label[i] if i < len(args.against_label) else f"before{i}", path))
    machine = machine_info()
    res = {"machine": machine, "nproc": machine["nproc"], "cpu": machine["cpu"], "uptime_before": uptime(),
           "rounds": args.rounds, "builds": {b.label: b.seer for b in builds}, "skipped": skipped, "rows": []}
    samples: dict[tuple, list] = {}
    pools: dict[tuple, dict] = {}
    t_start = time.time()
    for r in range(args.rounds):
        last = r == args.rounds - 1
        for ci in range(len(conditions)):
            cond = conditions[(ci + r) % len(conditions)]
            busy = start_busy({"quiet": 0, "busy1": 1, "busy2": 2}[cond])
            time.sleep(0.2)  # let the busy processes get going
            try:
                for name in names:
                    steps = max(2, int(WORKLOADS[name][2] * args.scale))
                    order = list(range(len(builds)))
                    if r % 2:
                        order.reverse()
                    for bi in order:
                        for pi in range(len(POOLS)):
                            workers = POOLS[(pi + r) % len(POOLS)]
                            out = builds[bi].run(workload=name, workers=workers, steps=steps,
                                                 stats=last and builds[bi].label == "after")
                            key = (builds[bi].label, cond, name, str(workers))
                            if "error" in out:
                                skipped[f"{name} ({builds[bi].label}, workers={workers})"] = out["error"]
                                continue
                            samples.setdefault(key, []).append(out["s_per_step"])
                            if "pool" in out:
                                pools[key] = dict(out["pool"], workers_now=out["workers_now"])
                            elif workers == "auto":
                                pools.setdefault(key, {})["workers_now"] = out["workers_now"]
            finally:
                stop_busy(busy)
        print(f"round {r + 1}/{args.rounds} done ({time.time() - t_start:.0f} s)", file=sys.stderr, flush=True)
    for b in builds:
        b.close()
    res["uptime_after"] = uptime()
    res["wall_s"] = time.time() - t_start
    for (label, cond, name, workers), xs in sorted(samples.items()):
        res["rows"].append({"build": label, "condition": cond, "workload": name, "workers": workers,
                            "s_per_step_median": float(np.median(xs)), "s_per_step": xs,
                            "pool": pools.get((label, cond, name, workers))})
    res["ratios"] = ratios(res["rows"])
    md = render_md(res, markdown_table)
    write_report(res, args.json, args.md, md, make_dirs=True)
    print(md)


def ratios(rows) -> list[dict]:
    med = {(r["build"], r["condition"], r["workload"], r["workers"]): r["s_per_step_median"] for r in rows}
    out = []
    for (label, cond, name) in sorted({k[:3] for k in med}):
        t = {w: med.get((label, cond, name, w)) for w in ("1", "2", "auto")}
        if t["1"] is None or t["2"] is None:
            continue
        best = min(v for v in (t["1"], t["2"]) if v is not None)
        out.append({"build": label, "condition": cond, "workload": name,
                    "ms_w1": t["1"] * 1e3, "ms_w2": t["2"] * 1e3, "ms_auto": t["auto"] * 1e3 if t["auto"] else None,
                    "w2_over_w1": t["1"] / t["2"],  # speed ratio: > 1 means 2 workers are faster
                    "auto_over_best": best / t["auto"] if t["auto"] else None})
    return out


def render_md(res, markdown_table) -> str:
    lines = ["# Parallel steps beside busy processes", "",
             f"Machine: {res['cpu']}, nproc {res['nproc']}. Load before: `{res['uptime_before']}`; "
             f"after: `{res['uptime_after']}`. {res['rounds']} interleaved rounds, {res['wall_s']:.0f} s; "
             "medians over rounds. Busy process: a child spinning a Python loop. `ppo_uav_large`: milliseconds per "
             "agent-step of the whole PPO loop (rollout and torch update), not per env step.", "",
             "Speed ratios (time per step of the one over the other, > 1: faster): `w2/w1` is workers=2 against "
             "workers=1, `auto/best` is `\"auto\"` against the faster of the two fixed sizes, all from the same "
             "run.", ""]
    builds = list(res["builds"])
    lines.append("Builds: " + ", ".join(f"`{k}` ({v})" for k, v in res["builds"].items()) + ".")
    lines.append("")
    by = {(r["build"], r["condition"], r["workload"]): r for r in res["ratios"]}
    header = ["workload", "condition"]
    for b in builds:
        header += [f"{b} ms w1", f"{b} ms w2", f"{b} w2/w1", f"{b} auto/best"]
    table = []
    for name in dict.fromkeys(r["workload"] for r in res["ratios"]):
        for cond in CONDITIONS:
            row = [name, cond]
            any_ = False
            for b in builds:
                x = by.get((b, cond, name))
                if x is None:
                    row += ["", "", "", ""]
                    continue
                any_ = True
                row += [f"{x['ms_w1']:.4g}", f"{x['ms_w2']:.4g}", f"{x['w2_over_w1']:.2f}",
                        "" if x["auto_over_best"] is None else f"{x['auto_over_best']:.2f}"]
            if any_:
                table.append(row)
    lines.append(markdown_table(header, table))
    lines.append("")
    pool_rows = []
    for r in res["rows"]:
        p = r.get("pool") or {}
        if r["build"] != "after" or "spin_per_step_s" not in p:
            continue
        pool_rows.append([r["workload"], r["condition"], r["workers"], str(p.get("workers_now", "")),
                          f"{p['barrier_fraction']:.2f}", f"{p['spin_per_step_s'] * 1e6:.1f}",
                          f"{p['parks_per_step']:.2f}", "/".join(str(x) for x in p["pool_windows"])])
    if pool_rows:
        lines += ["`pool_stats()` of the last round (build `after`): the stepping thread's share of a step spent "
                  "waiting for the others' units (`wait`), spin time per step over all workers, futex sleeps per "
                  "step, and the windows each worker took part in (worker 0 counts all).", ""]
        lines.append(markdown_table(["workload", "condition", "workers", "pool now", "wait", "spin us/step",
                                     "parks/step", "windows per worker"], pool_rows))
        lines.append("")
    if res["skipped"]:
        lines.append("Skipped: " + "; ".join(f"{k}: {v}" for k, v in res["skipped"].items()) + ".")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
