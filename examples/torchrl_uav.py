"""TorchRL PPO on SEER's uav_swarm_v0 through ``seer.integrations.torchrl``.

All env copies are one batched TorchRL env (``SeerTorchRLEnv``: batch
``[copies]``, the UAVs a group ``"agents"`` of shape ``[copies, uavs]``); a
TorchRL collector gathers the batches, TorchRL's functional GAE computes
advantages per agent from the per-agent ``done`` / ``terminated`` keys, and
``ClipPPOLoss`` (``reduction="none"``) is averaged over the transitions
whose ``("agents", "mask")`` is True, so crashed UAVs teach nothing.
One policy is shared by every UAV.

    pip install 'seer-marl[torchrl]'
    python examples/torchrl_uav.py                      # a quick check
    python examples/torchrl_uav.py --iterations 60 --log
"""

from __future__ import annotations

import argparse
import sys
import time


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--scenario", default="small")
    p.add_argument("--max-cycles", type=int, default=100)
    p.add_argument("--num-copies", type=int, default=4)
    p.add_argument("--workers", default="1",
                   help='SEER pool threads, or "auto" (default 1: on a small machine the learner needs the other '
                        'cores, and one thread steps small copies fastest)')
    p.add_argument("--iterations", type=int, default=5)
    p.add_argument("--num-steps", type=int, default=128, help="env steps per batch")
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--minibatches", type=int, default=4)
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--log", action="store_true")
    return p.parse_args(argv)


def make_collector(env, policy, frames_per_batch, total_frames):
    try:  # TorchRL >= 0.11 names it Collector
        from torchrl.collectors import Collector
    except ImportError:
        from torchrl.collectors import SyncDataCollector as Collector
    return Collector(env, policy, frames_per_batch=frames_per_batch, total_frames=total_frames)


def main(argv=None) -> dict:
    args = parse(argv)
    import torch
    from tensordict.nn import NormalParamExtractor, TensorDictModule
    from torch import nn
    from torchrl.modules import MLP, ProbabilisticActor, TanhNormal, ValueOperator
    from torchrl.objectives import ClipPPOLoss
    from torchrl.objectives.value.functional import generalized_advantage_estimate

    from seer.envs import uav_swarm_v0
    from seer.integrations.torchrl import SeerTorchRLEnv

    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    workers = args.workers if args.workers == "auto" else int(args.workers)
    env = SeerTorchRLEnv(lambda: uav_swarm_v0.parallel_env(scenario=args.scenario, max_cycles=args.max_cycles,
                                                           workers=1),
                         args.num_copies, workers=workers, clip_actions=True)
    env.set_seed(args.seed)
    obs_dim = env.full_observation_spec["agents", "observation"].shape[-1]
    act_dim = env.full_action_spec["agents", "action"].shape[-1]
    g = "agents"
    actor = ProbabilisticActor(
        TensorDictModule(nn.Sequential(MLP(in_features=obs_dim, out_features=2 * act_dim, num_cells=[64, 64],
                                           activation_class=nn.Tanh), NormalParamExtractor()),
                         in_keys=[(g, "observation")], out_keys=[(g, "loc"), (g, "scale")]),
        in_keys={"loc": (g, "loc"), "scale": (g, "scale")}, out_keys=[(g, "action")],
        distribution_class=TanhNormal, distribution_kwargs={"low": -1.0, "high": 1.0},
        return_log_prob=True, log_prob_key=(g, "sample_log_prob"))
    critic = ValueOperator(MLP(in_features=obs_dim, out_features=1, num_cells=[64, 64], activation_class=nn.Tanh),
                           in_keys=[(g, "observation")], out_keys=[(g, "state_value")])
    loss = ClipPPOLoss(actor, critic, clip_epsilon=0.2, entropy_coeff=0.0, normalize_advantage=False,
                       reduction="none")
    loss.set_keys(reward=(g, "reward"), action=(g, "action"), sample_log_prob=(g, "sample_log_prob"),
                  value=(g, "state_value"), done=(g, "done"), terminated=(g, "terminated"),
                  advantage=(g, "advantage"), value_target=(g, "value_target"))

    def gae(data):
        """Advantages per agent along time ([copies, steps, agents, 1] -> time is dim 1)."""
        critic(data)
        critic(data.get("next"))
        adv, target = generalized_advantage_estimate(
            0.99, 0.95, data.get((g, "state_value")), data.get(("next", g, "state_value")),
            data.get(("next", g, "reward")), data.get(("next", g, "done")), data.get(("next", g, "terminated")),
            time_dim=1)
        data.set((g, "advantage"), adv)
        data.set((g, "value_target"), target)
    opt = torch.optim.Adam(loss.parameters(), lr=args.lr)
    frames = args.num_steps * args.num_copies   # TorchRL counts frames over the batch: copies x steps
    collector = make_collector(env, actor, frames, frames * args.iterations)
    history, agent_steps, t0 = [], 0, time.perf_counter()
    ep_ret, ep_returns = None, []   # per agent slot: the return of its running episode; finished ones
    try:
        for it, data in enumerate(collector, 1):
            with torch.no_grad():
                gae(data)
            # one row per agent transition; keep the real ones (the agent acted)
            flat = data.get(g).reshape(-1)
            flat = flat[flat.get("mask")]
            agent_steps += len(flat)
            adv = flat.get("advantage")
            flat.set("advantage", (adv - adv.mean()) / (adv.std() + 1e-8))
            batch = flat.exclude("next").clone()
            batch = type(batch)({g: batch}, batch_size=batch.batch_size)
            n = len(flat)
            for _ in range(args.epochs):
                perm = torch.randperm(n)
                for s in range(0, n, max(1, n // args.minibatches)):
                    mb = batch[perm[s:s + max(1, n // args.minibatches)]]
                    out = loss(mb)
                    total = out["loss_objective"].mean() + out["loss_critic"].mean()
                    opt.zero_grad()
                    total.backward()
                    torch.nn.utils.clip_grad_norm_(loss.parameters(), 0.5)
                    opt.step()
            done = data.get(("next", g, "done")) & data.get((g, "mask")).unsqueeze(-1)
            rew = data.get(("next", g, "reward"))
            ep_ret = episode_returns(rew, data.get((g, "mask")), done, ep_ret, ep_returns)
            recent = ep_returns[-200:]
            row = {"iteration": it, "agent_steps": agent_steps,
                   "episode_return": sum(recent) / len(recent) if recent else None, "episodes": len(ep_returns),
                   "mean_reward": float(rew[data.get((g, "mask"))].mean()), "agents_done": int(done.sum()),
                   "loss_objective": float(out["loss_objective"].detach().mean()),
                   "loss_critic": float(out["loss_critic"].detach().mean()),
                   "agent_steps_per_s": agent_steps / (time.perf_counter() - t0)}
            history.append(row)
            if args.log:
                ret = "   n/a" if row["episode_return"] is None else f"{row['episode_return']:8.3f}"
                print(f"iter {it:3d}  agent-steps {agent_steps:7d}  return {ret}  "
                      f"critic loss {row['loss_critic']:7.3f}  sps {row['agent_steps_per_s']:6.0f}", flush=True)
    finally:
        collector.shutdown()
        env.close()
    h = [r["episode_return"] for r in history if r["episode_return"] is not None]
    if h:
        k = max(1, len(h) // 5)
        print(f"{env!r}: {agent_steps} agent-steps; mean episode return first {k} iterations "
              f"{sum(h[:k]) / k:.3f}, last {k} {sum(h[-k:]) / k:.3f}")
    return {"history": history}


def episode_returns(rew, mask, done, ep_ret, finished: list):
    """Per-agent episode returns, the metric every trainer example reports: an
    agent's return sums its rewards over the steps it acted (``mask``), and its
    episode ends at its own ``done``. ``rew``/``done`` are ``[copies, steps,
    agents, 1]``, ``mask`` ``[copies, steps, agents]``; ``ep_ret`` carries the
    running returns across batches (None at the start). Appends each finished
    episode's return to ``finished``; returns the running ones."""
    rew, done = rew.squeeze(-1), done.squeeze(-1)
    if ep_ret is None:
        ep_ret = rew.new_zeros(rew.shape[0], rew.shape[2])
    for t in range(rew.shape[1]):
        ep_ret = ep_ret + rew[:, t] * mask[:, t]
        ended = done[:, t]
        finished.extend(ep_ret[ended].tolist())
        ep_ret = ep_ret.masked_fill(ended, 0.0)
    return ep_ret


if __name__ == "__main__":
    main(sys.argv[1:])
