"""Stable-Baselines3 PPO on SEER's uav_swarm_v0 through ``seer.integrations.sb3``.

Every UAV slot of every env copy is one SB3 env, and all of them share one
policy.  ``MaskedPPO`` is SB3's PPO whose rollout buffer drops the
transitions of UAVs that crashed or left the world (SEER's
``infos["mask"]``), so PPO never learns from rows with no agent behind them.

    pip install 'seer-marl[sb3]'
    python examples/sb3_ppo_uav.py                             # 20k agent-steps, a quick check
    python examples/sb3_ppo_uav.py --timesteps 300000 --log    # long enough to see the return rise

Returns are per UAV per episode (SB3's ``ep_rew_mean``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:  # also when loaded by file path (the tests, bench/)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
import ppo_common  # noqa: E402


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--scenario", default="small", help="uav_swarm_v0 scenario (small: 8 UAVs)")
    p.add_argument("--max-cycles", type=int, default=100, help="episode length in steps")
    p.add_argument("--num-copies", type=int, default=4, help="env copies (SB3 envs = copies x UAVs)")
    p.add_argument("--backend", default="thread", help="seer.vector backend (SEER's envs step in C on threads)")
    p.add_argument("--workers", default="1",
                   help='SEER pool threads, or "auto" (default 1: on a small machine the learner needs the other '
                        'cores, and one thread steps small copies fastest)')
    p.add_argument("--timesteps", type=int, default=20_000, help="SB3 timesteps (rows x steps, dead rows included)")
    p.add_argument("--n-steps", type=int, default=128)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--plain", action="store_true",
                   help="step plain ParallelEnvs in a Python loop instead of seer.vector (bench/bench_trainers.py)")
    p.add_argument("--log", action="store_true", help="print one line per rollout")
    p.add_argument("--json", default=None, help="write the per-rollout history here")
    return p.parse_args(argv)


def make_env(args):
    """The SB3 VecEnv: seer.vector's rows, or (``--plain``) the same rows from a Python loop."""
    from seer.integrations.sb3 import SeerVecEnv, make_vec_env

    env_fn = ppo_common.env_fn("uav", args.scenario, args.max_cycles)
    if args.plain:
        return SeerVecEnv(ppo_common.plain_vector_env(env_fn, args.num_copies, autoreset_mode="same_step"))
    return make_vec_env(env_fn, args.num_copies, backend=args.backend, workers=ppo_common.workers_arg(args.workers))


def train(args) -> dict:
    import numpy as np
    import torch
    from stable_baselines3.common.callbacks import BaseCallback

    from seer.integrations.sb3 import MaskedPPO

    torch.set_num_threads(1)  # small MLPs: more torch threads only fight the env for the cores
    venv = make_env(args)
    history: list[dict] = []

    class Record(BaseCallback):
        """Agent-steps (real transitions only) and the mean episode return per rollout."""

        def __init__(self):
            super().__init__()
            self.agent_steps = 0
            self.t0 = time.perf_counter()

        def _on_step(self) -> bool:
            self.agent_steps += int(venv.transition_mask.sum())
            return True

        def _on_rollout_end(self) -> None:
            buf = self.model.ep_info_buffer
            ret = float(np.mean([e["r"] for e in buf])) if buf else None
            row = {"agent_steps": self.agent_steps, "episode_return": ret, "episodes": len(buf),
                   "wall_s": time.perf_counter() - self.t0}
            history.append(row)
            if args.log:
                print(f"agent-steps {self.agent_steps:8d}  return {'   n/a' if ret is None else f'{ret:8.3f}'}  "
                      f"agent-steps/s {self.agent_steps / row['wall_s']:8.0f}", flush=True)

    try:
        model = MaskedPPO("MlpPolicy", venv, n_steps=args.n_steps, batch_size=args.batch_size, learning_rate=args.lr,
                          seed=args.seed, verbose=0, device="cpu")
        t0 = time.perf_counter()
        model.learn(args.timesteps, callback=Record())
        wall = time.perf_counter() - t0
        losses = {k: float(v) for k, v in model.logger.name_to_value.items()}
        return {"args": vars(args), "history": history, "wall_s": wall, "losses": losses, "env": repr(venv)}
    finally:
        venv.close()


def main(argv=None) -> dict:
    args = parse(argv)
    result = train(args)
    ppo_common.save(result, args.json)
    h = ppo_common.episode_returns(result)
    steps = result["history"][-1]["agent_steps"] if result["history"] else 0
    if h:
        print(f"{result['env']}: {steps} agent-steps in {result['wall_s']:.1f} s; mean episode return "
              f"first rollout {h[0]:.3f}, last {h[-1]:.3f}")
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
