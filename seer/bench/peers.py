"""`seer bench`'s peers: other simulators' models at the same number of agents (mpe2, VMAS, mobile-env).

Each adapter returns a :class:`~seer.bench.timing.Row`; a peer that is not
installed gives a row with the reason in ``note`` instead of numbers.
"""

from __future__ import annotations

import importlib

import numpy as np

from seer.bench.timing import Row, fill, time_loop, time_parallel_env


def _peer(row: Row, note: str, *modules: str) -> list | None:
    """The peer's modules, or None with ``note`` (why it is skipped) in ``row``."""
    try:
        return [importlib.import_module(m) for m in modules]
    except ImportError:
        row.note = note
        return None


def mpe2_row(scenario, n, steps, budget_s) -> Row:
    row = Row("uav", scenario, n, f"mpe2 simple_spread_v3 (N={n})", "indicative", 1)
    mods = _peer(row, "mpe2 not installed (pip install 'seer-marl[bench]')", "mpe2.simple_spread_v3")
    if mods is None:
        return row
    env = mods[0].parallel_env(N=n, max_cycles=25, continuous_actions=True)
    fill(row, time_parallel_env(env, steps, budget_s))
    env.close()
    return row


def vmas_row(scenario, n, steps, budget_s) -> Row:
    row = Row("uav", scenario, n, f"VMAS flocking (n_agents={n})", "indicative", 1)
    mods = _peer(row, "VMAS not installed (optional: needs torch; pip install vmas)", "torch", "vmas")
    if mods is None:
        return row
    torch, vmas = mods
    env = vmas.make_env("flocking", num_envs=1, device="cpu", n_agents=n, continuous_actions=True, seed=0)
    env.reset()
    acts = [torch.zeros(1, env.get_agent_action_size(a)) for a in env.agents]
    lat = time_loop(lambda i: bool(env.step(acts)[2].any()), lambda e: env.reset(), steps, budget_s)
    return fill(row, lat)


WIRELESS_CLASSES = {"small": "MComSmall", "medium": "MComMedium", "large": "MComLarge"}


def mobile_env_row(scenario, entities, steps, budget_s) -> Row:
    row = Row("wireless", scenario, entities, "mobile-env (multi-agent)", "indicative", 1)
    if scenario not in WIRELESS_CLASSES:
        row.note = f"mobile-env has no {scenario!r} scenario"
        return row
    mods = _peer(row, "mobile-env not installed (pip install 'seer-marl[bench]')", f"mobile_env.scenarios.{scenario}",
                 "mobile_env.handlers.multi_agent")
    if mods is None:
        return row
    module, handlers = mods
    env = getattr(module, WIRELESS_CLASSES[scenario])(config={"handler": handlers.MComMAHandler})
    rng = np.random.default_rng(0)
    env.reset(seed=0)
    ids = sorted(env.users)
    acts = [dict(zip(ids, (int(x) for x in rng.integers(0, env.NUM_STATIONS + 1, len(ids))))) for _ in range(64)]
    lat = time_loop(lambda i: (env.step(acts[i % 64]), env.time_is_up)[1], lambda e: env.reset(seed=e),
                    steps, budget_s)
    env.close()
    return fill(row, lat)
