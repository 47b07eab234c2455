"""Benchmark of seer.vector: agent-steps/s against a sequential loop, SuperSuit
and Gymnasium's AsyncVectorEnv; the thread backend's scaling on uav_swarm_v0;
resident memory over a long run.

    python bench/bench_vector.py                      # everything, writes bench/results/vector.{json,md}
    python bench/bench_vector.py --quick              # a short smoke run (no files unless --out)

Method.  All candidates of a section are built first, then measured in
interleaved rounds (each round times every candidate for ``--seconds``), and
each candidate's score is its best round: on a shared machine a burst of
foreign load then hits one round of every candidate rather than all rounds
of one.  Actions are uniform random (numpy, drawn the same way for all).

Agent-steps are agent transitions produced: a live agent stepped with an
action.  With NEXT_STEP autoreset (SEER's default, and Gymnasium's) the step
that resets a finished copy produces none (``infos["mask"]`` is False there);
SuperSuit resets within the step, so its every row counts.

Candidates on mpe2's simple_spread_v3 (N=3, max_cycles=25; 8 copies = 24 agents):

- ``sequential``: a Python loop over 8 ParallelEnvs (dict actions, reset when done).
- ``seer_process``: ``seer.vector.make(..., backend="process", workers=2)``
  (2 worker processes; the caller waits), and ``seer_process_inline``
  (``inline=True``: the caller steps a share, 1 worker process).
- ``seer_thread``: the thread backend, workers=2 (for reference: mpe2 is pure
  Python, so threads cannot help).
- ``supersuit``: ``concat_vec_envs_v1(pettingzoo_env_to_vec_env_v1(env), 8,
  num_cpus=2, base_class="gymnasium")`` (2 worker processes, pipes).
- ``gymnasium_async``: ``gymnasium.vector.AsyncVectorEnv`` over 8 copies of a
  single-agent view of the env: one gymnasium.Env whose observation is the 3
  agents' observations concatenated, whose action is MultiDiscrete([5, 5, 5])
  (one per agent) and whose reward is their sum; 3 agent-steps per env step.
  AsyncVectorEnv runs one process per env (8) and uses shared memory for
  observations.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import sys
import time

import gymnasium
import numpy as np
from gymnasium import spaces

HERE = os.path.dirname(os.path.abspath(__file__))
SPREAD = dict(N=3, max_cycles=25)


# ---- environments ------------------------------------------------------------------------------


def spread_env():
    from mpe2 import simple_spread_v3

    return simple_spread_v3.parallel_env(**SPREAD)


def uav_env(scenario):
    from seer.envs import uav_swarm_v0

    return uav_swarm_v0.parallel_env(scenario=scenario, workers=1)


class JointSpread(gymnasium.Env):
    """The single-agent view for Gymnasium's AsyncVectorEnv: all agents of one
    copy as one agent (observations concatenated, one action per agent,
    rewards summed)."""

    metadata = {"render_modes": []}

    def __init__(self):
        self.env = spread_env()
        self.agents = list(self.env.possible_agents)
        self.observation_space = spaces.Box(-np.inf, np.inf, (18 * len(self.agents),), np.float32)
        self.action_space = spaces.MultiDiscrete([5] * len(self.agents))

    def reset(self, *, seed=None, options=None):
        obs, _ = self.env.reset(seed=seed)
        return np.concatenate([obs[a] for a in self.agents]), {}

    def step(self, action):
        obs, rew, term, trunc, _ = self.env.step(dict(zip(self.agents, action.tolist())))
        o = np.concatenate([obs[a] for a in self.agents])
        return o, float(sum(rew.values())), all(term.values()), all(trunc.values()), {}


# ---- candidates: each has step() -> agent-steps done, and close() --------------------------------


class Sequential:
    def __init__(self, make_env, copies, seed=0):
        self.envs = [make_env() for _ in range(copies)]
        for i, e in enumerate(self.envs):
            e.reset(seed=seed + i)
        self.rng = np.random.default_rng(seed)
        a0 = self.envs[0].possible_agents[0]
        self.space = self.envs[0].action_space(a0)

    def step(self):
        n = 0
        for e in self.envs:
            agents = e.agents
            if hasattr(self.space, "n"):
                acts = dict(zip(agents, self.rng.integers(0, self.space.n, len(agents)).tolist()))
            else:
                acts = dict(zip(agents, self.rng.uniform(-1, 1, (len(agents), *self.space.shape)).astype(np.float32)))
            e.step(acts)
            n += len(agents)
            if not e.agents:
                e.reset()
        return n

    def close(self):
        for e in self.envs:
            e.close()


class SeerVec:
    def __init__(self, make_env, copies, seed=0, **kw):
        import seer.vector

        self.envs = seer.vector.make(make_env, copies, **kw)
        self.envs.reset(seed=seed)
        self.rng = np.random.default_rng(seed)
        self.space = self.envs.single_action_space

    def actions(self):
        n = self.envs.num_envs
        if hasattr(self.space, "n"):
            return self.rng.integers(0, self.space.n, n)
        return self.rng.uniform(-1, 1, (n, *self.space.shape)).astype(np.float32)

    def step(self):
        *_, infos = self.envs.step(self.actions())
        return int(infos["mask"].sum())

    def pids(self):
        return self.envs.worker_pids()

    def close(self):
        self.envs.close()


class SuperSuit:
    def __init__(self, copies, seed=0, num_cpus=2):
        import supersuit as ss

        env = ss.pettingzoo_env_to_vec_env_v1(spread_env())
        self.venv = ss.concat_vec_envs_v1(env, copies, num_cpus=num_cpus, base_class="gymnasium")
        self.venv.reset(seed=seed)
        self.rng = np.random.default_rng(seed)

    def step(self):
        self.venv.step(self.rng.integers(0, 5, self.venv.num_envs))
        return self.venv.num_envs

    def close(self):
        self.venv.close()


class GymAsync:
    def __init__(self, copies, seed=0):
        self.venv = gymnasium.vector.AsyncVectorEnv([JointSpread] * copies)
        self.venv.reset(seed=seed)
        self.rng = np.random.default_rng(seed)
        self.resetting = np.zeros(copies, bool)

    def step(self):
        _, _, term, trunc, _ = self.venv.step(self.rng.integers(0, 5, (self.venv.num_envs, 3)))
        n = 3 * int((~self.resetting).sum())  # NEXT_STEP: a resetting env produced no transitions
        self.resetting = term | trunc
        return n

    def close(self):
        self.venv.close()


def measure(cands: dict, rounds: int, seconds: float, warmup: float) -> dict:
    for c in cands.values():  # warm-up
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < warmup:
            c.step()
    scores = {k: [] for k in cands}
    for r in range(rounds):
        for k, c in cands.items():
            n, t0 = 0, time.perf_counter()
            while True:
                n += c.step()
                dt = time.perf_counter() - t0
                if dt >= seconds:
                    break
            scores[k].append(n / dt)
        print(f"  round {r + 1}/{rounds}: " + ", ".join(f"{k} {v[-1]:,.0f}" for k, v in scores.items()), flush=True)
    return {k: {"best": max(v), "median": float(np.median(v)), "rounds": v} for k, v in scores.items()}


# ---- sections ----------------------------------------------------------------------------------


def bench_spread(args) -> dict:
    copies = 8
    cands = {}
    cands["sequential"] = Sequential(spread_env, copies)
    cands["seer_process"] = SeerVec(spread_env, copies, backend="process", workers=2)
    cands["seer_process_inline"] = SeerVec(spread_env, copies, backend="process", workers=2, inline=True)
    cands["seer_thread"] = SeerVec(spread_env, copies, backend="thread", workers=2)
    try:
        cands["supersuit"] = SuperSuit(copies)
    except ImportError as exc:
        print(f"  supersuit skipped: {exc}")
    cands["gymnasium_async"] = GymAsync(copies)
    try:
        res = measure(cands, args.rounds, args.seconds, args.warmup)
    finally:
        for c in cands.values():
            c.close()
    seq = res["sequential"]["best"]
    seer_best = max(res["seer_process"]["best"], res["seer_process_inline"]["best"])
    others = {k: res[k]["best"] for k in ("supersuit", "gymnasium_async") if k in res}
    best_other = max(others.values())
    return {
        "env": "mpe2 simple_spread_v3", "env_kwargs": SPREAD, "copies": copies, "agents": 3 * copies,
        "agent_steps_per_s": res,
        "seer_process_vs_sequential": res["seer_process"]["best"] / seq,
        "seer_process_inline_vs_sequential": res["seer_process_inline"]["best"] / seq,
        "seer_best_vs_sequential": seer_best / seq,
        "seer_best_vs_best_other": seer_best / best_other,
        "best_other": max(others, key=others.get),
        "targets": {"vs_sequential": 1.7, "vs_best_other": 1.3},
    }


def bench_uav(args) -> dict:
    try:
        import seer.envs.uav_swarm_v0  # noqa: F401
    except ImportError as exc:
        return {"skipped": f"uav_swarm_v0 is not available: {exc}"}
    out = {}
    for scenario, copies in (("default", 8), ("small", 8)):
        fn = functools.partial(uav_env, scenario)
        cands = {
            "sequential": Sequential(fn, copies),
            "thread_w1": SeerVec(fn, copies, backend="thread", workers=1),
            "thread_w2": SeerVec(fn, copies, backend="thread", workers=2),
            "process_w2": SeerVec(fn, copies, backend="process", workers=2),
        }
        try:
            res = measure(cands, args.rounds, args.seconds, args.warmup)
        finally:
            for c in cands.values():
                c.close()
        out[scenario] = {"copies": copies, "agent_steps_per_s": res,
                         "thread_w2_vs_w1": res["thread_w2"]["best"] / res["thread_w1"]["best"],
                         "process_w2_vs_thread_w1": res["process_w2"]["best"] / res["thread_w1"]["best"]}
    out["target_thread_w2_vs_w1"] = 1.7
    return out


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def bench_memory(args) -> dict:
    steps, every = args.memory_steps, max(1, args.memory_steps // 20)
    cand = SeerVec(spread_env, 8, backend="process", workers=2)
    pids = [os.getpid()] + cand.pids()
    samples = []
    t0 = time.perf_counter()
    try:
        for k in range(steps + 1):
            if k % every == 0:
                samples.append({"step": k, "rss_kib": [rss_kib(p) for p in pids]})
            if k < steps:
                cand.step()
    finally:
        cand.close()
    wall = time.perf_counter() - t0
    base = samples[1]["rss_kib"] if len(samples) > 1 else samples[0]["rss_kib"]  # after the first stretch
    last = samples[-1]["rss_kib"]
    return {"backend": "process", "workers": 2, "copies": 8, "env": "mpe2 simple_spread_v3", "vector_steps": steps,
            "agent_steps": steps * 24, "seconds": wall, "pids": ["parent"] + [f"worker {i}" for i in range(len(pids) - 1)],
            "samples": samples,
            "growth_kib_after_first_sample": [b - a for a, b in zip(base, last)]}


# ---- report ------------------------------------------------------------------------------------


def machine() -> dict:
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = "?"
    try:
        with open("/proc/meminfo") as f:
            mem = f.readline().split(":", 1)[1].strip()
    except OSError:
        pass
    vers = {}
    for mod in ("numpy", "gymnasium", "pettingzoo", "mpe2", "supersuit"):
        try:
            m = __import__(mod)
            vers[mod] = getattr(m, "__version__", "?")
        except ImportError:
            vers[mod] = None
    return {"cpu": cpu, "cores": os.cpu_count(), "usable_cores": len(os.sched_getaffinity(0)), "memory": mem,
            "kernel": platform.release(), "python": sys.version.split()[0], "packages": vers,
            "loadavg_at_start": os.getloadavg()}


def markdown(res: dict) -> str:
    m = res["machine"]
    L = ["# seer.vector benchmark", "",
         f"Command: `{res['command']}`", "",
         f"Machine: {m['cpu']}, {m['cores']} cores ({m['usable_cores']} usable), {m['memory']} RAM, Linux "
         f"{m['kernel']}, Python {m['python']}; " + ", ".join(f"{k} {v}" for k, v in m["packages"].items()) + ".",
         f"Load average at start {tuple(round(x, 2) for x in m['loadavg_at_start'])}, at end "
         f"{tuple(round(x, 2) for x in res['loadavg_at_end'])} (the machine is shared: other processes ran too).",
         "", f"Method: {res['method']}", ""]
    s = res.get("spread")
    if s:
        L += ["## simple_spread_v3 (N=3), 8 copies = 24 agents, agent-steps/s", "",
              "| candidate | best | median | x sequential |", "| --- | ---: | ---: | ---: |"]
        seq = s["agent_steps_per_s"]["sequential"]["best"]
        for k, v in s["agent_steps_per_s"].items():
            L.append(f"| {k} | {v['best']:,.0f} | {v['median']:,.0f} | {v['best'] / seq:.2f} |")
        L += ["", f"- SEER process backend vs sequential: {s['seer_process_vs_sequential']:.2f}x "
                  f"(inline: {s['seer_process_inline_vs_sequential']:.2f}x); target 1.7x",
              f"- best SEER vs best other ({s['best_other']}): {s['seer_best_vs_best_other']:.2f}x; target 1.3x", ""]
    u = res.get("uav")
    if u:
        if "skipped" in u:
            L += ["## uav_swarm_v0", "", u["skipped"], ""]
        else:
            for sc in ("default", "small"):
                if sc not in u:
                    continue
                d = u[sc]
                L += [f"## uav_swarm_v0 scenario {sc!r}, {d['copies']} copies, agent-steps/s", "",
                      "| candidate | best | median |", "| --- | ---: | ---: |"]
                for k, v in d["agent_steps_per_s"].items():
                    L.append(f"| {k} | {v['best']:,.0f} | {v['median']:,.0f} |")
                L += ["", f"- thread backend workers=2 vs workers=1: {d['thread_w2_vs_w1']:.2f}x (target 1.7x)",
                      f"- process backend workers=2 vs thread workers=1: {d['process_w2_vs_thread_w1']:.2f}x", ""]
    mem = res.get("memory")
    if mem:
        L += [f"## Resident memory over {mem['vector_steps']:,} vector steps ({mem['agent_steps']:,} agent-steps), "
              f"process backend, 8 copies, 2 workers", "",
              "| step | " + " | ".join(mem["pids"]) + " |", "| ---: | " + " | ".join(["---:"] * len(mem["pids"])) + " |"]
        for smp in mem["samples"]:
            L.append(f"| {smp['step']:,} | " + " | ".join(f"{x / 1024:.1f} MiB" for x in smp["rss_kib"]) + " |")
        L += ["", "Growth from the second sample to the last (KiB): "
              + ", ".join(f"{p} {g:+d}" for p, g in zip(mem["pids"], mem["growth_kib_after_first_sample"]))
              + f"; {mem['seconds']:.0f} s.", ""]
    return "\n".join(L)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--seconds", type=float, default=2.0, help="length of one timed round per candidate")
    p.add_argument("--warmup", type=float, default=0.5)
    p.add_argument("--memory-steps", type=int, default=100_000)
    p.add_argument("--only", choices=["spread", "uav", "memory"], action="append")
    p.add_argument("--quick", action="store_true", help="1 round of 0.3 s, 2,000 memory steps, no files")
    p.add_argument("--out", default=None, help="results folder (default bench/results unless --quick)")
    args = p.parse_args(argv)
    if args.quick:
        args.rounds, args.seconds, args.warmup, args.memory_steps = 1, 0.3, 0.1, 2000
    out_dir = args.out or (None if args.quick else os.path.join(HERE, "results"))
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)
    except ImportError:
        pass
    sections = args.only or ["spread", "uav", "memory"]
    res = {"command": "python " + " ".join([os.path.relpath(__file__, os.path.dirname(HERE))] + (argv or sys.argv[1:])),
           "method": __doc__.split("Method.  ", 1)[1].split("\n\n")[0].replace("\n", " "),
           "machine": machine()}
    if "spread" in sections:
        print("simple_spread_v3, 8 copies:", flush=True)
        res["spread"] = bench_spread(args)
    if "uav" in sections:
        print("uav_swarm_v0:", flush=True)
        res["uav"] = bench_uav(args)
    if "memory" in sections:
        print(f"memory over {args.memory_steps:,} steps:", flush=True)
        res["memory"] = bench_memory(args)
    res["loadavg_at_end"] = os.getloadavg()
    md = markdown(res)
    print(md)
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
        with open(os.path.join(out_dir, "vector.json"), "w") as f:
            json.dump(res, f, indent=1)
        with open(os.path.join(out_dir, "vector.md"), "w") as f:
            f.write(md + "\n")
    return res


if __name__ == "__main__":
    main()
