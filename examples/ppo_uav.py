"""PPO on SEER's uav_swarm_v0 through ``seer.vector.make``: one file, numpy only.

CleanRL-style (https://docs.cleanrl.dev/rl-algorithms/ppo/): clipped
surrogate, GAE, minibatch Adam, global gradient-norm clipping; the networks
are two-layer tanh MLPs with hand-written backward passes, so nothing beyond
numpy is needed.  All agents share one policy (parameter sharing): every row
of the vector env is one agent slot, and only the rows whose ``infos["mask"]``
is True (the agent acted in that step) enter the loss.

    pip install seer-marl                               # 'seer-marl[bench]' for --env simple_spread (mpe2)
    python examples/ppo_uav.py                          # uav_swarm_v0, small scenario (8 UAVs), 4 copies
    python examples/ppo_uav.py --env simple_spread      # mpe2 simple_spread_v3 (N=3)
    python examples/ppo_uav.py --iterations 150 --log   # the longer run that shows the return rising
    python examples/ppo_uav.py --backend process        # copies in worker processes instead of SEER's threads

Episode returns are per agent, from Gymnasium's
``gymnasium.wrappers.vector.RecordEpisodeStatistics`` over the vector env.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from gymnasium import spaces

if str(Path(__file__).resolve().parent) not in sys.path:  # also when loaded by file path (the tests, bench/)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
import ppo_common  # noqa: E402


# ---- environment -------------------------------------------------------------------------------


def make_envs(args):
    import seer.vector
    from gymnasium.wrappers.vector import RecordEpisodeStatistics

    env_fn = ppo_common.env_fn(args.env, args.scenario, args.max_cycles)
    workers = ppo_common.workers_arg(args.workers)
    envs = seer.vector.make(env_fn, args.num_copies, backend=args.backend, workers=workers)
    return RecordEpisodeStatistics(envs, buffer_length=1000)


# ---- networks ----------------------------------------------------------------------------------


def orthogonal(rng, shape, gain):
    a = rng.normal(size=(max(shape), min(shape)))
    q, r = np.linalg.qr(a)
    q = q * np.sign(np.diag(r))
    q = q if q.shape == shape else q.T
    return (gain * q[: shape[0], : shape[1]]).astype(np.float64)


class MLP:
    """x -> tanh(x W0 + b0) -> tanh(. W1 + b1) -> . W2 + b2."""

    def __init__(self, rng, sizes, out_gain):
        self.params = []
        for i, (m, n) in enumerate(zip(sizes[:-1], sizes[1:])):
            gain = out_gain if i == len(sizes) - 2 else np.sqrt(2)
            self.params += [orthogonal(rng, (m, n), gain), np.zeros(n)]

    def forward(self, x):
        acts = [x]
        h = x
        n = len(self.params) // 2
        for i in range(n):
            h = h @ self.params[2 * i] + self.params[2 * i + 1]
            if i < n - 1:
                h = np.tanh(h)
            acts.append(h)
        return h, acts

    def backward(self, acts, dy):
        n = len(self.params) // 2
        grads = [None] * len(self.params)
        d = dy
        for i in reversed(range(n)):
            grads[2 * i] = acts[i].T @ d
            grads[2 * i + 1] = d.sum(axis=0)
            if i:
                d = (d @ self.params[2 * i].T) * (1.0 - acts[i] ** 2)
        return grads


class Adam:
    def __init__(self, params, lr, eps=1e-5):
        self.params, self.lr, self.eps = params, lr, eps
        self.m = [np.zeros_like(p) for p in params]
        self.v = [np.zeros_like(p) for p in params]
        self.t = 0

    def step(self, grads, lr=None):
        lr = self.lr if lr is None else lr
        self.t += 1
        b1, b2 = 0.9, 0.999
        for p, g, m, v in zip(self.params, grads, self.m, self.v):
            m *= b1
            m += (1 - b1) * g
            v *= b2
            v += (1 - b2) * g * g
            mhat = m / (1 - b1 ** self.t)
            vhat = v / (1 - b2 ** self.t)
            p -= lr * mhat / (np.sqrt(vhat) + self.eps)


class Agent:
    """Shared actor-critic: Gaussian (Box actions) or categorical (Discrete)."""

    def __init__(self, rng, obs_dim, action_space, hidden):
        self.discrete = isinstance(action_space, spaces.Discrete)
        out = int(action_space.n) if self.discrete else int(np.prod(action_space.shape))
        self.actor = MLP(rng, [obs_dim, hidden, hidden, out], 0.01)
        self.critic = MLP(rng, [obs_dim, hidden, hidden, 1], 1.0)
        self.logstd = np.zeros(out) if not self.discrete else None
        self.params = self.actor.params + self.critic.params + ([self.logstd] if not self.discrete else [])

    def value(self, obs):
        return self.critic.forward(obs)[0][:, 0]

    def act(self, rng, obs):
        out, _ = self.actor.forward(obs)
        if self.discrete:
            logp_all = out - _logsumexp(out)
            p = np.exp(logp_all)
            a = (p.cumsum(axis=1) > rng.random((len(p), 1))).argmax(axis=1)
            return a, logp_all[np.arange(len(a)), a], self.value(obs)
        std = np.exp(self.logstd)
        a = out + std * rng.normal(size=out.shape)
        return a, _gauss_logp(a, out, self.logstd), self.value(obs)

    def loss_grads(self, obs, act, old_logp, adv, ret, clip, ent_coef, vf_coef):
        n = len(obs)
        out, acts_a = self.actor.forward(obs)
        if self.discrete:
            logp_all = out - _logsumexp(out)
            p = np.exp(logp_all)
            logp = logp_all[np.arange(n), act]
            entropy = -(p * logp_all).sum(axis=1)
        else:
            logp = _gauss_logp(act, out, self.logstd)
            entropy = np.full(n, (self.logstd + 0.5 + 0.5 * np.log(2 * np.pi)).sum())
        ratio = np.exp(logp - old_logp)
        clipped = np.clip(ratio, 1 - clip, 1 + clip)
        pg_loss = -np.minimum(ratio * adv, clipped * adv).mean()
        # d loss / d logp: the unclipped branch is the one the min picked
        d_logp = -(adv * ratio) * (ratio * adv <= clipped * adv) / n
        if self.discrete:
            onehot = np.zeros_like(p)
            onehot[np.arange(n), act] = 1.0
            d_out = d_logp[:, None] * (onehot - p)
            d_out += ent_coef * (p * (logp_all + entropy[:, None])) / n  # - ent_coef * dH/dz
            d_logstd = None
        else:
            std = np.exp(self.logstd)
            z = (act - out) / std
            d_out = d_logp[:, None] * z / std
            d_logstd = (d_logp[:, None] * (z ** 2 - 1.0)).sum(axis=0) - ent_coef
        v, acts_c = self.critic.forward(obs)
        v = v[:, 0]
        v_loss = 0.5 * ((v - ret) ** 2).mean()
        grads = self.actor.backward(acts_a, d_out) + self.critic.backward(acts_c, (vf_coef * (v - ret) / n)[:, None])
        if d_logstd is not None:
            grads.append(d_logstd)
        return grads, {"pg_loss": float(pg_loss), "v_loss": float(v_loss), "entropy": float(entropy.mean()),
                       "clipfrac": float((np.abs(ratio - 1) > clip).mean()),
                       "approx_kl": float(((ratio - 1) - (logp - old_logp)).mean())}


def _logsumexp(x):
    m = x.max(axis=1, keepdims=True)
    return m + np.log(np.exp(x - m).sum(axis=1, keepdims=True))


def _gauss_logp(a, mean, logstd):
    z = (a - mean) / np.exp(logstd)
    return (-0.5 * z ** 2 - logstd - 0.5 * np.log(2 * np.pi)).sum(axis=1)


# ---- training ----------------------------------------------------------------------------------


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    ppo_common.add_env_args(p)
    p.add_argument("--backend", default="auto", choices=["auto", "process", "thread"],
                   help="auto (default): threads for uav_swarm_v0, whose copies step in C with the GIL\n"
                        "released, processes for a Python env such as simple_spread; or force one")
    p.add_argument("--workers", default="auto")
    ppo_common.add_ppo_args(p, iterations=30)
    return ppo_common.parse_args(p, argv)


def train(args) -> dict:
    rng = np.random.default_rng(args.seed)
    envs = make_envs(args)
    try:
        R = envs.num_envs
        obs_space, act_space = envs.single_observation_space, envs.single_action_space
        obs_dim = int(np.prod(obs_space.shape))
        agent = Agent(rng, obs_dim, act_space, args.hidden)
        opt = Adam(agent.params, args.lr)
        T = args.num_steps
        b_obs = np.zeros((T, R, obs_dim))
        b_act = np.zeros((T, R) if agent.discrete else (T, R, int(np.prod(act_space.shape))))
        b_logp, b_val, b_rew = np.zeros((T, R)), np.zeros((T, R)), np.zeros((T, R))
        b_done, b_mask = np.zeros((T, R), bool), np.zeros((T, R), bool)
        obs, _ = envs.reset(seed=args.seed)
        obs = obs.reshape(R, -1).astype(np.float64)
        history = []
        t_start = time.perf_counter()
        agent_steps = 0
        for it in range(1, args.iterations + 1):
            lr = args.lr * (1.0 - (it - 1) / args.iterations)
            t0 = time.perf_counter()
            for t in range(T):
                a, logp, v = agent.act(rng, obs)
                b_obs[t], b_act[t], b_logp[t], b_val[t] = obs, a, logp, v
                env_a = a if agent.discrete else np.clip(a, act_space.low, act_space.high).astype(act_space.dtype)
                obs, rew, term, trunc, infos = envs.step(env_a)
                obs = obs.reshape(R, -1).astype(np.float64)
                b_rew[t], b_done[t], b_mask[t] = rew, term | trunc, infos["mask"]
                agent_steps += int(infos["mask"].sum())
            t_roll = time.perf_counter() - t0
            # GAE (truncation treated as termination, as in CleanRL)
            next_v = agent.value(obs)
            adv = np.zeros((T, R))
            last = np.zeros(R)
            for t in reversed(range(T)):
                nonterm = 1.0 - b_done[t]
                nv = next_v if t == T - 1 else b_val[t + 1]
                delta = b_rew[t] + args.gamma * nv * nonterm - b_val[t]
                last = delta + args.gamma * args.gae_lambda * nonterm * last
                adv[t] = last
            ret = adv + b_val
            m = b_mask.reshape(-1)
            f_obs, f_act = b_obs.reshape(T * R, -1)[m], b_act.reshape((T * R,) + b_act.shape[2:])[m]
            f_logp, f_adv, f_ret = b_logp.reshape(-1)[m], adv.reshape(-1)[m], ret.reshape(-1)[m]
            if agent.discrete:
                f_act = f_act.astype(np.int64)
            n = len(f_obs)
            stats = {}
            for idx in ppo_common.minibatches(n, args.num_minibatches, args.update_epochs, rng.permutation):
                a_ = f_adv[idx]
                a_ = (a_ - a_.mean()) / (a_.std() + 1e-8)
                grads, stats = agent.loss_grads(f_obs[idx], f_act[idx], f_logp[idx], a_, f_ret[idx],
                                                args.clip_coef, args.ent_coef, args.vf_coef)
                norm = np.sqrt(sum(float((g ** 2).sum()) for g in grads))
                if norm > args.max_grad_norm:
                    grads = [g * (args.max_grad_norm / (norm + 1e-6)) for g in grads]
                opt.step(grads, lr)
            returns = list(envs.return_queue)
            row = {"iteration": it, "agent_steps": agent_steps,
                   "episode_return": float(np.mean(returns[-200:])) if returns else None,
                   "episodes": len(returns), "agent_steps_per_s": agent_steps / (time.perf_counter() - t_start),
                   "rollout_s": t_roll, **stats}
            history.append(row)
            if args.log:
                r = row["episode_return"]
                print(f"iter {it:4d}  agent-steps {agent_steps:8d}  return {'   n/a' if r is None else f'{r:8.3f}'}"
                      f"  v_loss {stats.get('v_loss', 0):8.3f}  entropy {stats.get('entropy', 0):6.3f}"
                      f"  sps {row['agent_steps_per_s']:8.0f}", flush=True)
        return {"args": vars(args), "history": history, "env": repr(envs.unwrapped)}
    finally:
        envs.close()


def main(argv=None) -> dict:
    args = parse(argv)
    try:  # small matrices: BLAS threads only fight the env workers for the cores
        from threadpoolctl import threadpool_limits
    except ImportError:
        result = train(args)
    else:
        with threadpool_limits(1):
            result = train(args)
    ppo_common.report(result, args.json)
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
