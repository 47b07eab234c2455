"""`seer bench`'s plan and run: SEER against its time-stepped reference and its peers, per scenario.

UAV swarm control: step latency of ``uav_swarm_v0`` (SEER with
``workers="auto"`` and with 1 worker), its time-stepped numpy reference (the
same model), and, when installed, mpe2's ``simple_spread_v3`` and VMAS's
``flocking`` with as many agents (other simulators' models: indicative).

Wireless management: ``wireless_v0`` (mobile-env's model) next to its
reference and to mobile-env itself on the same scenario.

Both envs are looked up in the env registry (:mod:`seer.registry`); their
time-stepped references are the factories' ``engine="reference"``.

Every row is timed through the PettingZoo-style dict API with actions drawn
before the clock starts, for a fixed number of steps or a time budget,
whichever ends first.  The latency reduction is reported the way the SEER
paper does: ``1 - latency(SEER) / latency(other)``.
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Callable

from seer import registry
from seer.bench.common import machine_info
from seer.bench.peers import mobile_env_row, mpe2_row, vmas_row
from seer.bench.timing import Row, fill, time_parallel_env

#: The SEER paper's headline reductions, shown beside ours.
PAPER_REDUCTION = {"uav": 16.2, "wireless": 64.9}


#: SEER with STPA's choice and with one worker, and the same model time-stepped in numpy.
OWN_SYSTEMS = (
    ("SEER (auto)", {"workers": "auto"}, "seer"),
    ("SEER (1 worker)", {"workers": 1}, "seer"),
    ("time-stepped reference", {"engine": "reference"}, "same model"),
)


def own_rows(domain: str, scenario: str, make: Callable[..., object], entities: Callable[[object], int],
             steps: int, budget_s: float) -> list[Row]:
    """One row per :data:`OWN_SYSTEMS` entry; ``make(**kw)`` builds the env, ``entities(env)`` counts it."""
    rows = []
    for label, kw, kind in OWN_SYSTEMS:
        env = make(**kw)
        row = Row(domain, scenario, entities(env), label, kind, getattr(env, "workers", None))
        rows.append(fill(row, time_parallel_env(env, steps, budget_s)))
        env.close()
    return rows


def uav_rows(scenario: str, steps: int, budget_s: float) -> list[Row]:
    uav_swarm_v0 = registry.load("uav_swarm_v0")
    rows = own_rows("uav", scenario, lambda **kw: uav_swarm_v0.parallel_env(scenario=scenario, max_cycles=10**9, **kw),
                    lambda env: env.cfg.num_uavs, steps, budget_s)
    n = rows[0].entities
    return rows + [mpe2_row(scenario, n, steps, budget_s), vmas_row(scenario, n, steps, budget_s)]


def wireless_rows(scenario: str, steps: int, budget_s: float) -> list[Row]:
    wireless_v0 = registry.load("wireless_v0")
    rows = own_rows("wireless", scenario, lambda **kw: wireless_v0.parallel_env(scenario=scenario, full_buffer=True, **kw),
                    lambda env: env.num_bs + env.num_ue, steps, budget_s)
    return rows + [mobile_env_row(scenario, rows[0].entities, steps, budget_s)]


def reductions(rows: list[Row]) -> list[dict]:
    """Latency reduction of SEER (auto) against every other row of its scenario."""
    out = []
    for r in rows:
        if r.system != "SEER (auto)" or not r.ok:
            continue
        for o in rows:
            if o.domain == r.domain and o.scenario == r.scenario and o.kind != "seer" and o.ok:
                out.append({"domain": r.domain, "scenario": r.scenario, "against": o.system, "kind": o.kind,
                            "reduction_pct": 100.0 * (1.0 - r.mean_ms / o.mean_ms),
                            "speedup": o.mean_ms / r.mean_ms,
                            "paper_reduction_pct": PAPER_REDUCTION[r.domain]})
    return out


def plan(quick: bool) -> list[tuple[str, str]]:
    uav = ["small", "default"] if quick else ["small", "default", "large"]
    wireless = ["small", "large"] if quick else ["small", "medium", "large"]
    return [("uav", s) for s in uav] + [("wireless", s) for s in wireless]


def run(quick: bool = False, progress: Callable[[str], None] | None = None) -> dict:
    """Every row of the plan; ``progress(label)`` is called after each block."""
    steps, budget = (200, 1.0) if quick else (2000, 10.0)
    rows: list[Row] = []
    for domain, scenario in plan(quick):
        rows += (uav_rows if domain == "uav" else wireless_rows)(scenario, steps, budget)
        if progress:
            progress(f"{domain} {scenario}")
    return {"machine": machine_info(), "quick": quick, "command": " ".join(["seer"] + sys.argv[1:]),
            "rows": [dataclasses.asdict(r) for r in rows], "reductions": reductions(rows),
            "paper_reduction_pct": PAPER_REDUCTION}
