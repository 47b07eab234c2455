"""What the PPO examples share: their command line, the envs they train on, and how a run is saved and summed up.

Not an example itself: ``ppo_uav.py`` (numpy), ``cleanrl_ppo_uav.py``
(PyTorch) and ``sb3_ppo_uav.py`` (Stable-Baselines3) import it from this
folder, so that the same flags, envs and summaries mean the same thing in
each of them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parents[1] / "bench"


def add_env_args(p) -> None:
    """Which env, and how many copies of it: ``--env``, ``--scenario``, ``--max-cycles``, ``--num-copies``."""
    p.add_argument("--env", default="uav", choices=["uav", "simple_spread"])
    p.add_argument("--scenario", default="small", help="uav_swarm_v0 scenario (small: 8 UAVs)")
    p.add_argument("--max-cycles", type=int, default=None, help="episode length (default: uav 100, spread 25)")
    p.add_argument("--num-copies", type=int, default=4, help="env copies (rows = copies x agents)")


def add_ppo_args(p, iterations: int) -> None:
    """PPO's hyperparameters (CleanRL's defaults), the seed and the outputs."""
    p.add_argument("--iterations", type=int, default=iterations)
    p.add_argument("--num-steps", type=int, default=128, help="vector steps per rollout")
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--gamma", type=float, default=0.99)
    p.add_argument("--gae-lambda", type=float, default=0.95)
    p.add_argument("--update-epochs", type=int, default=4)
    p.add_argument("--num-minibatches", type=int, default=4)
    p.add_argument("--clip-coef", type=float, default=0.2)
    p.add_argument("--ent-coef", type=float, default=None, help="default: uav 0.0, spread 0.01")
    p.add_argument("--vf-coef", type=float, default=0.5)
    p.add_argument("--max-grad-norm", type=float, default=0.5)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--log", action="store_true", help="print one line per iteration")
    p.add_argument("--json", default=None, help="write the per-iteration history here")


def parse_args(p, argv):
    """``p``'s arguments, with the per-env defaults of ``--max-cycles`` and ``--ent-coef`` filled in."""
    args = p.parse_args(argv)
    if args.max_cycles is None:
        args.max_cycles = 100 if args.env == "uav" else 25
    if args.ent_coef is None:
        args.ent_coef = 0.0 if args.env == "uav" else 0.01
    return args


def env_fn(env: str, scenario: str, max_cycles: int):
    """The factory of one env copy: uav_swarm_v0 (one SEER worker per copy) or mpe2's simple_spread_v3 (N=3)."""
    if env == "uav":
        from seer.envs import uav_swarm_v0

        def make():
            return uav_swarm_v0.parallel_env(scenario=scenario, max_cycles=max_cycles, workers=1)
    elif env == "simple_spread":
        from mpe2 import simple_spread_v3

        def make():
            return simple_spread_v3.parallel_env(N=3, max_cycles=max_cycles)
    else:
        raise ValueError(f"--env {env!r} is unknown: expected uav or simple_spread")
    return make


def plain_vector_env(make, num_copies: int, **kwargs):
    """The same rows as seer.vector's, from a Python loop over plain ParallelEnvs (``bench/plain_vector.py``)."""
    sys.path.insert(0, str(BENCH))
    from plain_vector import PlainVectorEnv

    return PlainVectorEnv(make, num_copies, **kwargs)


def workers_arg(workers: str):
    """``--workers`` as ``seer.vector.make`` takes it: ``"auto"`` or an integer."""
    return workers if workers == "auto" else int(workers)


def minibatches(n: int, num_minibatches: int, update_epochs: int, permutation):
    """The indices of each PPO minibatch over ``n`` transitions: every epoch
    draws a fresh order, ``permutation(n)``, and cuts it into
    ``num_minibatches`` pieces (the last one shorter when they do not divide ``n``)."""
    mb = max(1, n // num_minibatches)
    for _ in range(update_epochs):
        perm = permutation(n)
        for s in range(0, n, mb):
            yield perm[s:s + mb]


def episode_returns(result: dict) -> list[float]:
    """The mean episode return of each row of the run's history that has one."""
    return [r["episode_return"] for r in result["history"] if r["episode_return"] is not None]


def save(result: dict, path: str | None) -> None:
    """The run as JSON at ``path`` (``--json``; None: nothing written)."""
    if path:
        with open(path, "w") as f:
            json.dump(result, f, indent=1)


def report(result: dict, json_path: str | None, agent_steps: bool = False) -> None:
    """Save the run (:func:`save`) and print the mean episode return over the
    first and the last fifth of its iterations (and the agent-steps done, if
    ``agent_steps``); nothing is printed before any episode ended."""
    save(result, json_path)
    h = episode_returns(result)
    if h:
        k = max(1, len(h) // 5)
        steps = f"{result['history'][-1]['agent_steps']} agent-steps; " if agent_steps else ""
        print(f"{result['env']}: {steps}mean episode return first {k} iterations {np.mean(h[:k]):.3f}, "
              f"last {k} {np.mean(h[-k:]):.3f}")
