"""CleanRL-style PPO in PyTorch on SEER's uav_swarm_v0, one file.

As CleanRL's ``ppo_continuous_action.py`` (https://docs.cleanrl.dev/rl-algorithms/ppo/),
with one policy shared by every agent (parameter sharing): each row of
``seer.vector.make`` is one agent slot of one env copy.  What changes for a
multi-agent vector env is which transitions are real:

- ``infos["mask"]`` of a step says which rows' agents acted in it: only
  those transitions enter GAE and the loss (an agent that crashed, a padded
  slot, a copy being reset have no transition).
- An agent's last transition is cut from what follows by its own
  ``terminated`` / ``truncated`` (the value of its last observation is
  bootstrapped on truncation only); ``infos["alive"]`` of the rollout's last
  step says which rows go on into the next rollout.

    pip install seer-marl torch                                # a CPU build of torch is enough
    python examples/cleanrl_ppo_uav.py                         # a quick check (~30k agent-steps)
    python examples/cleanrl_ppo_uav.py --iterations 120 --log  # the return rises from about -25 to above 0
    python examples/cleanrl_ppo_uav.py --env simple_spread     # mpe2's simple_spread_v3 (Discrete actions)
    python examples/cleanrl_ppo_uav.py --plain                 # the same loop over plain ParallelEnvs

Episode returns are per agent, counted over the steps it acted.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

if str(Path(__file__).resolve().parent) not in sys.path:  # also when loaded by file path (the tests, bench/)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
import ppo_common  # noqa: E402


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    ppo_common.add_env_args(p)
    p.add_argument("--backend", default="thread", help="seer.vector backend (thread: SEER's envs step in C)")
    p.add_argument("--workers", default="1",
                   help='SEER pool threads, or "auto" (default 1: on a small machine the learner needs the other '
                        'cores, and one thread steps small copies fastest)')
    p.add_argument("--plain", action="store_true",
                   help="step plain ParallelEnvs in a Python loop instead (bench/bench_trainers.py)")
    ppo_common.add_ppo_args(p, iterations=8)
    return ppo_common.parse_args(p, argv)


def make_envs(args):
    """seer.vector's rows (NEXT_STEP autoreset: a finished agent's returned
    observation is its last one, which truncation bootstraps from)."""
    env_fn = ppo_common.env_fn(args.env, args.scenario, args.max_cycles)
    if args.plain:
        return ppo_common.plain_vector_env(env_fn, args.num_copies)
    import seer.vector

    return seer.vector.make(env_fn, args.num_copies, backend=args.backend, workers=ppo_common.workers_arg(args.workers))


def build_agent(obs_dim: int, action_space, hidden: int):
    import torch
    from gymnasium import spaces
    from torch import nn
    from torch.distributions import Categorical, Normal

    def layer(m, n, std=np.sqrt(2)):
        lin = nn.Linear(m, n)
        nn.init.orthogonal_(lin.weight, std)
        nn.init.constant_(lin.bias, 0.0)
        return lin

    discrete = isinstance(action_space, spaces.Discrete)
    out = int(action_space.n) if discrete else int(np.prod(action_space.shape))

    class Agent(nn.Module):
        """Shared actor-critic: a Gaussian (Box actions) or categorical (Discrete) policy."""

        def __init__(self):
            super().__init__()
            self.critic = nn.Sequential(layer(obs_dim, hidden), nn.Tanh(), layer(hidden, hidden), nn.Tanh(),
                                        layer(hidden, 1, 1.0))
            self.actor = nn.Sequential(layer(obs_dim, hidden), nn.Tanh(), layer(hidden, hidden), nn.Tanh(),
                                       layer(hidden, out, 0.01))
            self.logstd = None if discrete else nn.Parameter(torch.zeros(1, out))
            self.discrete = discrete

        def value(self, x):
            return self.critic(x).squeeze(-1)

        def act(self, x, action=None):
            z = self.actor(x)
            if self.discrete:
                dist = Categorical(logits=z)
                action = dist.sample() if action is None else action
                return action, dist.log_prob(action), dist.entropy(), self.value(x)
            dist = Normal(z, self.logstd.expand_as(z).exp())
            action = dist.sample() if action is None else action
            return action, dist.log_prob(action).sum(-1), dist.entropy().sum(-1), self.value(x)

    return Agent()


def train(args) -> dict:
    import torch

    torch.manual_seed(args.seed)
    torch.set_num_threads(1)  # small matrices: more threads only fight the env for the cores
    envs = make_envs(args)
    try:
        R, T = envs.num_envs, args.num_steps
        obs_space, act_space = envs.single_observation_space, envs.single_action_space
        obs_dim = int(np.prod(obs_space.shape))
        agent = build_agent(obs_dim, act_space, args.hidden)
        discrete = agent.discrete
        opt = torch.optim.Adam(agent.parameters(), lr=args.lr, eps=1e-5)
        act_shape = () if discrete else act_space.shape
        b_obs = torch.zeros((T, R, obs_dim))
        b_act = torch.zeros((T, R, *act_shape), dtype=torch.long if discrete else torch.float32)
        b_logp, b_val, b_rew = (torch.zeros((T, R)) for _ in range(3))
        b_term, b_done, b_mask = (torch.zeros((T, R), dtype=torch.bool) for _ in range(3))
        obs, infos = envs.reset(seed=args.seed)
        obs = torch.as_tensor(obs.reshape(R, -1), dtype=torch.float32)
        alive = torch.as_tensor(infos["alive"])
        ep_ret, ep_returns = np.zeros(R), []
        history, agent_steps, t_start = [], 0, time.perf_counter()
        low = None if discrete else torch.as_tensor(act_space.low)
        high = None if discrete else torch.as_tensor(act_space.high)
        for it in range(1, args.iterations + 1):
            for g in opt.param_groups:
                g["lr"] = args.lr * (1.0 - (it - 1) / args.iterations)
            t0 = time.perf_counter()
            for t in range(T):
                with torch.no_grad():
                    action, logp, _, value = agent.act(obs)
                b_obs[t], b_act[t], b_logp[t], b_val[t] = obs, action, logp, value
                env_action = action.numpy() if discrete else torch.clamp(action, low, high).numpy()
                nxt, rew, term, trunc, infos = envs.step(env_action)
                mask = infos["mask"]
                b_rew[t] = torch.as_tensor(rew, dtype=torch.float32)
                b_term[t] = torch.as_tensor(term & mask)
                b_done[t] = torch.as_tensor((term | trunc) & mask)
                b_mask[t] = torch.as_tensor(mask)
                obs = torch.as_tensor(nxt.reshape(R, -1), dtype=torch.float32)
                alive = torch.as_tensor(infos["alive"])
                agent_steps += int(mask.sum())
                ep_ret += np.where(mask, rew, 0.0)
                for r in np.flatnonzero((term | trunc) & mask):
                    ep_returns.append(float(ep_ret[r]))
                    ep_ret[r] = 0.0
            t_roll = time.perf_counter() - t0

            # GAE over each row's own transitions: a masked step has no
            # transition; an agent's terminal step cuts the chain; the value
            # of the step after is that of the observation the env returned.
            with torch.no_grad():
                next_value = agent.value(obs)
                adv = torch.zeros((T, R))
                last = torch.zeros(R)
                for t in reversed(range(T)):
                    nv = next_value if t == T - 1 else b_val[t + 1]
                    goes_on = alive if t == T - 1 else b_mask[t + 1]
                    cont = (~b_done[t] & goes_on).float()
                    delta = b_rew[t] + args.gamma * nv * (~b_term[t]).float() - b_val[t]
                    last = (delta + args.gamma * args.gae_lambda * cont * last) * b_mask[t].float()
                    adv[t] = last
                ret = adv + b_val

            m = b_mask.reshape(-1)
            f_obs, f_act = b_obs.reshape(T * R, -1)[m], b_act.reshape(T * R, *act_shape)[m]
            f_logp, f_adv, f_ret = b_logp.reshape(-1)[m], adv.reshape(-1)[m], ret.reshape(-1)[m]
            f_val = b_val.reshape(-1)[m]
            n = len(f_obs)
            stats = {}
            for idx in ppo_common.minibatches(n, args.num_minibatches, args.update_epochs, torch.randperm):
                _, logp, entropy, v = agent.act(f_obs[idx], f_act[idx])
                log_ratio = logp - f_logp[idx]
                ratio = log_ratio.exp()
                a = f_adv[idx]
                a = (a - a.mean()) / (a.std() + 1e-8) if len(a) > 1 else a
                clipped = torch.clamp(ratio, 1 - args.clip_coef, 1 + args.clip_coef)
                pg_loss = torch.max(-a * ratio, -a * clipped).mean()
                v_loss = 0.5 * ((v - f_ret[idx]) ** 2).mean()
                ent = entropy.mean()
                loss = pg_loss - args.ent_coef * ent + args.vf_coef * v_loss
                opt.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                opt.step()
                with torch.no_grad():
                    stats = {"pg_loss": float(pg_loss), "v_loss": float(v_loss), "entropy": float(ent),
                             "approx_kl": float(((ratio - 1) - log_ratio).mean()),
                             "clipfrac": float(((ratio - 1).abs() > args.clip_coef).float().mean())}
            var = float(f_ret.var()) if n > 1 else 0.0
            stats["explained_variance"] = float("nan") if var == 0 else 1 - float((f_ret - f_val).var()) / var
            recent = ep_returns[-200:]
            row = {"iteration": it, "agent_steps": agent_steps, "transitions": n,
                   "episode_return": float(np.mean(recent)) if recent else None, "episodes": len(ep_returns),
                   "agent_steps_per_s": agent_steps / (time.perf_counter() - t_start), "rollout_s": t_roll,
                   "wall_s": time.perf_counter() - t_start, **stats}
            history.append(row)
            if args.log:
                r = row["episode_return"]
                print(f"iter {it:4d}  agent-steps {agent_steps:8d}  return {'   n/a' if r is None else f'{r:8.3f}'}"
                      f"  v_loss {stats.get('v_loss', 0):8.3f}  sps {row['agent_steps_per_s']:7.0f}", flush=True)
        return {"args": vars(args), "history": history, "env": repr(envs)}
    finally:
        envs.close()


def main(argv=None) -> dict:
    args = parse(argv)
    result = train(args)
    ppo_common.report(result, args.json, agent_steps=True)
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
