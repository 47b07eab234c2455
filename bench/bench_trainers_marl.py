"""The MARL trainers' paths to uav_swarm_v0 small: what each costs per frame.

- TorchRL: ``SeerTorchRLEnv`` over 64 copies against ``seer.vector`` stepping
  the same 64 copies (random actions; TorchRL's ``rollout`` included), and
  TorchRL's ``PettingZooWrapper(use_mask=True, done_on_any=False)`` on one env.
- BenchMARL: collection frames/s of the same IPPO experiment on
  ``seer.integrations.benchmarl.task`` and on a task over TorchRL's
  ``PettingZooWrapper`` (which BenchMARL batches in a ``SerialEnv``), then
  IPPO trained on the SEER task for ``--train-frames`` frames (the episode
  reward per iteration).
- skrl: IPPO through skrl's stock ``wrap_env(env, wrapper="pettingzoo")`` on
  ``black_death=True``, training included.

A frame is one step of one env copy (BenchMARL's count; ``seer.vector``'s
copy-step).  Interleaved rounds, best of each.

    python bench/bench_trainers_marl.py            # ~6 minutes on 2 cores
    python bench/bench_trainers_marl.py --quick    # a smoke run
    python bench/bench_trainers_marl.py --only torchrl   # one part; the others kept from the last results

Writes bench/results/trainers_marl.json and trainers_marl.md.
"""

from __future__ import annotations

import argparse
import datetime
import functools
import json
import os
import pathlib
import tempfile
import time

import numpy as np

from seer.bench.common import machine_info, markdown_table, write_report

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
PACKAGES = ("numpy", "pettingzoo", "torch", "torchrl", "tensordict", "benchmarl", "skrl")
MAX_CYCLES = 100


def uav(**kw):
    from seer.envs import uav_swarm_v0

    return uav_swarm_v0.parallel_env(scenario="small", workers=1, max_cycles=MAX_CYCLES, **kw)


# ---- TorchRL --------------------------------------------------------------------------------------


def vector_rate(copies: int, seconds: float) -> float:
    import seer.vector

    envs = seer.vector.make(uav, copies, backend="thread", workers=1)
    envs.reset(seed=0)
    acts = np.random.default_rng(0).uniform(-1, 1, (64,) + envs.action_space.shape).astype(np.float32)
    for i in range(20):
        envs.step(acts[i])
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        envs.step(acts[n % 64])
        n += 1
    rate = n * copies / (time.perf_counter() - t0)
    envs.close()
    return rate


def rollout_rate(env, steps: int, seconds: float, copies: int) -> float:
    env.rollout(steps, break_when_any_done=False)
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        env.rollout(steps, break_when_any_done=False)
        n += steps
    return n * copies / (time.perf_counter() - t0)


def torchrl_rates(copies: int, seconds: float, rounds: int) -> dict:
    from torchrl.envs import PettingZooWrapper

    from seer.integrations.torchrl import SeerTorchRLEnv

    runs = {"seer.vector": [], "SeerTorchRLEnv": [], "PettingZooWrapper": []}
    for _ in range(rounds):  # interleaved: a burst of load on the shared machine hits every path
        runs["seer.vector"].append(vector_rate(copies, seconds))
        env = SeerTorchRLEnv(uav, copies, backend="thread", workers=1)
        runs["SeerTorchRLEnv"].append(rollout_rate(env, MAX_CYCLES, seconds, copies))
        env.close()
        pz = PettingZooWrapper(uav(), use_mask=True, done_on_any=False)
        runs["PettingZooWrapper"].append(rollout_rate(pz, MAX_CYCLES, seconds, 1))
        pz.close()
    return {k: {"runs": v, "best": max(v)} for k, v in runs.items()}


# ---- BenchMARL ------------------------------------------------------------------------------------


def _pettingzoo_task_class():
    """A BenchMARL task over TorchRL's PettingZooWrapper, as a user writes one for a PettingZoo env
    (built on first use: BenchMARL is imported only when this runs)."""
    from benchmarl.environments.common import TaskClass
    from torchrl.envs import PettingZooWrapper

    class PzTask(TaskClass):
        def get_env_fun(self, num_envs, continuous_actions, seed, device):
            return lambda: PettingZooWrapper(uav(), use_mask=True, done_on_any=False, seed=seed, device=device,
                                             group_map={"agents": [f"uav_{i}" for i in range(8)]})

        def supports_continuous_actions(self):
            return True

        def supports_discrete_actions(self):
            return False

        def has_render(self, env):
            return False

        def max_steps(self, env):
            return MAX_CYCLES

        def group_map(self, env):
            return env.group_map

        def observation_spec(self, env):
            spec = env.observation_spec.clone()
            del spec[("agents", "mask")]
            return spec

        def info_spec(self, env):
            return None

        def state_spec(self, env):
            return None

        def action_spec(self, env):
            return env.full_action_spec

        def action_mask_spec(self, env):
            return None

        @staticmethod
        def env_name():
            return "pettingzoo_uav"

    PzTask.__qualname__ = "PzTask"  # BenchMARL pickles the task: it must be found as a module attribute
    return PzTask


def pettingzoo_task():
    global PzTask
    if "PzTask" not in globals():
        PzTask = _pettingzoo_task_class()
    return PzTask("uav_swarm_v0", {})


def experiment(task, folder, *, frames_per_batch: int, n_envs: int, max_frames: int, minibatch_iters: int):
    import torch
    from benchmarl.algorithms import IppoConfig
    from benchmarl.experiment import Experiment, ExperimentConfig
    from benchmarl.models.mlp import MlpConfig

    cfg = ExperimentConfig.get_from_yaml()
    cfg.loggers, cfg.render, cfg.create_json, cfg.evaluation = [], False, False, False
    cfg.save_folder = folder
    cfg.max_n_frames = max_frames
    cfg.on_policy_collected_frames_per_batch = frames_per_batch
    cfg.on_policy_n_envs_per_worker = n_envs
    cfg.on_policy_n_minibatch_iters = minibatch_iters
    cfg.on_policy_minibatch_size = 400
    cfg.lr = 3e-4
    mlp = MlpConfig(num_cells=[64, 64], activation_class=torch.nn.Tanh, layer_class=torch.nn.Linear)
    return Experiment(task=task, algorithm_config=IppoConfig.get_from_yaml(), model_config=mlp,
                      critic_model_config=mlp, seed=0, config=cfg)


def collection_rate(task, batches: int) -> float:
    with tempfile.TemporaryDirectory() as folder:
        exp = experiment(task, folder, frames_per_batch=2000, n_envs=10, max_frames=10**9, minibatch_iters=1)
        it = iter(exp.collector)
        next(it)  # warm-up
        t0, frames = time.perf_counter(), 0
        for _ in range(batches):
            frames += next(it).numel()
        rate = frames / (time.perf_counter() - t0)
        exp.collector.shutdown()
        return rate


def benchmarl_rates(batches: int, rounds: int) -> dict:
    import seer.integrations.benchmarl as sb

    runs = {"seer": [], "PettingZooWrapper": []}
    for _ in range(rounds):
        runs["seer"].append(collection_rate(sb.task("uav_swarm_v0", scenario="small", max_cycles=MAX_CYCLES,
                                                    workers=1), batches))
        runs["PettingZooWrapper"].append(collection_rate(pettingzoo_task(), batches))
    return {k: {"runs": v, "best": max(v)} for k, v in runs.items()}


def benchmarl_training(frames: int) -> dict:
    import seer.integrations.benchmarl as sb

    with tempfile.TemporaryDirectory() as folder:
        exp = experiment(sb.task("uav_swarm_v0", scenario="small", max_cycles=MAX_CYCLES, workers=1), folder,
                         frames_per_batch=6000, n_envs=10, max_frames=frames, minibatch_iters=15)
        returns = []
        log = exp.logger.log_collection

        def record(*args, **kwargs):
            r = log(*args, **kwargs)
            returns.append(float(r))
            return r

        exp.logger.log_collection = record
        t0 = time.perf_counter()
        exp.run()
        return {"frames": exp.total_frames, "wall_s": time.perf_counter() - t0, "episode_reward": returns}


# ---- skrl ------------------------------------------------------------------------------------------


def skrl_rate(steps: int) -> dict:
    import torch.nn as nn
    from skrl.envs.wrappers.torch import wrap_env
    from skrl.memories.torch import RandomMemory
    from skrl.models.torch import DeterministicMixin, GaussianMixin, Model
    from skrl.multi_agents.torch.ippo import IPPO
    from skrl.trainers.torch import SequentialTrainer
    import torch

    class Policy(GaussianMixin, Model):
        def __init__(self, obs, act, device):
            Model.__init__(self, observation_space=obs, action_space=act, device=device)
            GaussianMixin.__init__(self, clip_actions=True)
            self.net = nn.Sequential(nn.Linear(self.num_observations, 64), nn.Tanh(), nn.Linear(64, self.num_actions))
            self.log_std = nn.Parameter(torch.zeros(self.num_actions))

        def compute(self, inputs, role=""):
            return self.net(inputs["observations"]), {"log_std": self.log_std}

    class Value(DeterministicMixin, Model):
        def __init__(self, obs, act, device):
            Model.__init__(self, observation_space=obs, action_space=act, device=device)
            DeterministicMixin.__init__(self)
            self.net = nn.Sequential(nn.Linear(self.num_observations, 64), nn.Tanh(), nn.Linear(64, 1))

        def compute(self, inputs, role=""):
            return self.net(inputs["observations"]), {}

    env = wrap_env(uav(black_death=True), wrapper="pettingzoo")
    agents = env.possible_agents
    models = {a: {"policy": Policy(env.observation_space(a), env.action_space(a), env.device),
                  "value": Value(env.observation_space(a), env.action_space(a), env.device)} for a in agents}
    memories = {a: RandomMemory(memory_size=256, num_envs=1, device=env.device) for a in agents}
    cfg = {"rollouts": 256, "learning_epochs": 4, "mini_batches": 2,
           "experiment": {"write_interval": 0, "checkpoint_interval": 0}}
    for key in ("learning_rate_scheduler_kwargs", "observation_preprocessor_kwargs", "state_preprocessor_kwargs",
                "value_preprocessor_kwargs"):
        cfg[key] = {a: {} for a in agents}  # skrl 2.1 refuses its own empty-dict defaults
    agent = IPPO(possible_agents=agents, models=models, memories=memories, observation_spaces=env.observation_spaces,
                 state_spaces=env.state_spaces, action_spaces=env.action_spaces, device=env.device, cfg=cfg)
    trainer = SequentialTrainer(env=env, agents=agent, cfg={"timesteps": steps, "headless": True,
                                                            "disable_progressbar": True,
                                                            "close_environment_at_exit": False})
    t0 = time.perf_counter()
    trainer.train()
    wall = time.perf_counter() - t0
    env.close()
    return {"steps": steps, "wall_s": wall, "frames_per_s": steps / wall}


# ---- report ----------------------------------------------------------------------------------------


def kept_note(res: dict, part: str) -> list[str]:
    """The line that says a part's numbers come from an earlier run (``--only``), or nothing."""
    when = res.get("kept", {}).get(part)
    return [f"(Not re-run: from the run of {when}, its own load and packages.)", ""] if when else []


def markdown(res: dict, quick: bool) -> str:
    m = res["machine"]
    t, b = res["torchrl"], res["benchmarl"]
    vec = t["seer.vector"]["best"]
    only = [part for part in PARTS if part not in res.get("kept", {})]
    flags = (" --quick" if quick else "") + (f" --only {' '.join(only)}" if len(only) < len(PARTS) else "")
    lines = [f"# MARL trainers' paths on uav_swarm_v0 small (`python bench/bench_trainers_marl.py{flags}`)", "",
             f"Run {res['started']} on {m['cpu']}, {m['usable_cores']} usable cores, Python {m['python']}; load "
             f"average {tuple(round(x, 2) for x in m['loadavg_at_start'])} -> "
             f"{tuple(round(x, 2) for x in res['loadavg_at_end'])} (a shared machine: other jobs ran too, so "
             f"compare the ratios of one run, not the rates across runs).",
             f"Packages: {', '.join(f'{k} {v}' for k, v in m['packages'].items() if v)}.", "",
             f"uav_swarm_v0 small (8 UAVs), max_cycles {MAX_CYCLES}, workers=1.  A frame is one step of one env copy.",
             "", f"## TorchRL: {res['copies']} copies, random actions, TorchRL's rollout included", "",
             *kept_note(res, "torchrl"),
             markdown_table(["path", "frames/s (best)", "vs seer.vector"],
                            [[k, f"{v['best']:,.0f}", f"{v['best'] / vec:.2f}x"] for k, v in t.items()]), "",
             "## BenchMARL IPPO: collection", "", *kept_note(res, "benchmarl"),
             markdown_table(["task", "frames/s (best)", "vs PettingZooWrapper"],
                            [[k, f"{v['best']:,.0f}", f"{v['best'] / b['PettingZooWrapper']['best']:.1f}x"]
                             for k, v in b.items()]), "",
             "10 env copies, 2,000 frames per batch; the PettingZooWrapper task runs the copies in BenchMARL's "
             "SerialEnv.", ""]
    tr = res["benchmarl_training"]
    if tr:
        r = tr["episode_reward"]
        lines += ["## BenchMARL IPPO: training on seer.integrations.benchmarl", "", *kept_note(res, "benchmarl"),
                  f"{tr['frames']:,} frames in {tr['wall_s']:.0f} s ({tr['frames'] / tr['wall_s']:,.0f} frames/s "
                  f"with training); mean episode reward per iteration (summed over the episode, mean over UAVs): "
                  f"first {r[0]:.2f}, last {r[-1]:.2f}, best {max(r):.2f}.", "",
                  "Per iteration: " + ", ".join(f"{x:.1f}" for x in r), ""]
    s = res["skrl"]
    lines += ["## skrl IPPO (stock `wrap_env(..., wrapper=\"pettingzoo\")`, black_death=True, one env)", "",
              *kept_note(res, "skrl"),
              f"{s['steps']:,} steps in {s['wall_s']:.1f} s: {s['frames_per_s']:,.0f} frames/s, training included.",
              ""]
    return "\n".join(lines)


PARTS = ("torchrl", "benchmarl", "skrl")
KEYS = {"torchrl": ("torchrl", "copies"), "benchmarl": ("benchmarl", "benchmarl_training"), "skrl": ("skrl",)}


def keep_parts(path: pathlib.Path, parts: list[str]) -> dict:
    """The results of ``parts`` from an earlier run's JSON, with ``kept``: each part's run date."""
    try:
        old = json.loads(path.read_text())
    except FileNotFoundError:
        raise SystemExit(f"--only leaves out {parts}: their numbers come from {path}, which does not exist") from None
    kept = dict(old.get("kept", {}))
    out = {"kept": {part: kept.get(part, old["started"]) for part in parts}}
    for part in parts:
        for key in KEYS[part]:
            out[key] = old[key]
    return out


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--copies", type=int, default=64)
    p.add_argument("--train-frames", type=int, default=120_000, help="0: skip the training run")
    p.add_argument("--out", default=str(RESULTS / "trainers_marl"))
    p.add_argument("--only", nargs="+", choices=PARTS, default=list(PARTS),
                   help="run these parts only; the others' numbers are kept from the --out results (and say so)")
    args = p.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    out = pathlib.Path(args.out)
    seconds, rounds = (0.5, 1) if args.quick else (3.0, 3)
    res = {"machine": machine_info(PACKAGES), "started": datetime.datetime.now().isoformat(timespec="seconds"),
           "copies": args.copies}
    skipped = [part for part in PARTS if part not in args.only]
    if skipped:
        res.update(keep_parts(out.with_suffix(".json"), skipped))
    if "torchrl" in args.only:
        res["torchrl"] = torchrl_rates(args.copies, seconds, rounds)
    if "benchmarl" in args.only:
        res["benchmarl"] = benchmarl_rates(1 if args.quick else 3, 1 if args.quick else 2)
        frames = min(args.train_frames, 12_000) if args.quick else args.train_frames
        res["benchmarl_training"] = benchmarl_training(frames) if frames else None
    if "skrl" in args.only:
        res["skrl"] = skrl_rate(500 if args.quick else 2000)
    res["loadavg_at_end"] = os.getloadavg()
    text = markdown(res, args.quick)
    write_report(res, out.with_suffix(".json"), out.with_suffix(".md"), text, indent=1, make_dirs=True)
    print(text)
    return res


if __name__ == "__main__":
    main()
