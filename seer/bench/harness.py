"""`seer bench`'s plan and run: SEER against its time-stepped reference and its peers, per scenario.

UAV swarm control: step latency of ``uav_swarm_v0`` (SEER with
``workers="auto"`` and with fixed pool sizes: 1, 2, 4, ... up to the usable
cores), its time-stepped numpy reference (the
same model), and, when installed, mpe2's ``simple_spread_v3`` and VMAS's
``flocking`` with as many agents (other simulators' models: indicative).

Wireless management: ``wireless_v0`` (mobile-env's model) next to its
reference and to mobile-env itself on the same scenario.

Both envs are looked up in the env registry (:mod:`seer.registry`); their
time-stepped references are the factories' ``engine="reference"``.

SEER's own rows (auto and the fixed sizes) are timed twice: "quiet" (nothing
started beside them) and "loaded", beside one busy process pinned to a usable
core (:func:`seer.stpa.load.background_load`: a training loop's learner),
the envs built inside the loaded block so that auto's probe sees the load
it then runs under.  The references and the peers are timed quiet only.

Every row is timed through the PettingZoo-style dict API with actions drawn
before the clock starts, for a fixed number of steps or a time budget,
whichever ends first; SEER's own rows of a scenario (auto, the fixed sizes,
the reference) are timed in interleaved rounds, and in the full run for at
least :data:`MIN_OWN_S` seconds each.  The latency reduction is
reported the way the SEER paper does: ``1 - latency(SEER) / latency(other)``.
:func:`auto_vs_fixed` puts auto's choice beside the best fixed pool size
measured in the same run, with a warning where auto lost by more than 5%.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from typing import Callable

import numpy as np

from seer import registry
from seer._host import usable_cores
from seer.bench.common import machine_info
from seer.bench.peers import mobile_env_row, mpe2_row, vmas_row
from seer.bench.timing import Row, fill, time_parallel_env

#: The SEER paper's headline reductions, shown beside ours.
PAPER_REDUCTION = {"uav": 16.2, "wireless": 64.9}


#: SEER with STPA's choice, and the same model time-stepped in numpy; fixed
#: pool sizes (:func:`fixed_sizes`) are added between them.
AUTO_SYSTEM = ("SEER (auto)", {"workers": "auto"}, "seer")
REFERENCE_SYSTEM = ("time-stepped reference", {"engine": "reference"}, "same model")
#: Rounds the own rows of a scenario are timed in, interleaved, so drift in
#: the machine's load hits auto and the fixed sizes alike.
ROUNDS = 8
#: `auto` below this fraction of the best fixed size's throughput gets a warning line.
AUTO_WARN_FRAC = 0.95


def fixed_label(w: int) -> str:
    return f"SEER ({w} worker{'s' if w != 1 else ''})"


def fixed_sizes(cores: int | None = None) -> list[int]:
    """The fixed pool sizes every scenario is also timed with: 1, 2, 4, ... up
    to the usable cores, and the usable cores themselves."""
    cores = max(1, usable_cores() if cores is None else int(cores))
    out, w = [], 1
    while w < cores:
        out.append(w)
        w *= 2
    return out + [cores]


def own_systems(cores: int | None = None, reference: bool = True) -> list[tuple[str, dict, str]]:
    """SEER (auto), each fixed size, then the time-stepped reference (unless ``reference=False``)."""
    return ([AUTO_SYSTEM] + [(fixed_label(w), {"workers": w}, "seer") for w in fixed_sizes(cores)]
            + ([REFERENCE_SYSTEM] if reference else []))


#: The conditions SEER's own rows are timed in, and the busy processes started for each.
CONDITIONS = {"quiet": 0, "loaded": 1}


def check_conditions(conditions) -> tuple[str, ...]:
    """``conditions`` as a tuple of :data:`CONDITIONS` names, "quiet" first where present.

    Raises:
        ValueError: a name that is not a condition, or none at all.
    """
    names = tuple(conditions)
    bad = [c for c in names if c not in CONDITIONS]
    if bad or not names:
        raise ValueError(f"conditions={list(names)!r} is invalid: expected one or more of {list(CONDITIONS)}")
    return tuple(c for c in CONDITIONS if c in names)


def own_rows(domain: str, scenario: str, make: Callable[..., object], entities: Callable[[object], int],
             steps: int, budget_s: float, rounds: int = ROUNDS, min_s: float = 0.0,
             condition: str = "quiet") -> list[Row]:
    """One row per :func:`own_systems` entry; ``make(**kw)`` builds the env, ``entities(env)`` counts it.

    Every env is built first (auto's probe runs then, off the clock), then
    timed in ``rounds`` interleaved rounds of ``steps / rounds`` steps (and
    at least ``min_s / rounds`` seconds, within the budget), each round in a
    rotated order.  ``condition="loaded"``: all of it beside one busy
    process, without the reference row."""
    from seer.stpa.load import background_load

    with background_load(CONDITIONS[check_conditions([condition])[0]]):
        return _own_rows(domain, scenario, make, entities, steps, budget_s, rounds, min_s, condition)


def _own_rows(domain, scenario, make, entities, steps, budget_s, rounds, min_s, condition) -> list[Row]:
    systems = own_systems(reference=condition == "quiet")
    envs = [make(**kw) for _, kw, _ in systems]
    try:
        if AUTO_SYSTEM[0] == systems[0][0]:  # a size auto chose beyond the fixed ones is timed as fixed too
            chosen = getattr(envs[0], "workers", None)
            if isinstance(chosen, int) and chosen not in fixed_sizes():
                at = len(systems) - (1 if systems[-1] == REFERENCE_SYSTEM else 0)
                systems.insert(at, (fixed_label(chosen), {"workers": chosen}, "seer"))
                envs.insert(at, make(workers=chosen))
        lat: list[list] = [[] for _ in systems]
        per = max(1, steps // rounds)
        for r in range(rounds):
            order = list(range(len(systems)))
            order = order[r % len(order):] + order[:r % len(order)]
            for i in order:
                lat[i].append(time_parallel_env(envs[i], per, budget_s / rounds, seed=r, min_s=min_s / rounds))
        rows = []
        for (label, _, kind), env, parts in zip(systems, envs, lat):
            row = Row(domain, scenario, entities(env), label, kind, getattr(env, "workers", None),
                      condition=condition)
            rows.append(fill(row, np.concatenate(parts) if parts else np.zeros(0)))
        return rows
    finally:
        for env in envs:
            env.close()


def _n_workers(w) -> str:
    return f"{w} worker{'s' if w != 1 else ''}"


def auto_vs_fixed(rows: list[dict | Row]) -> list[dict]:
    """Per scenario: what ``auto`` chose, the best fixed pool size measured in
    the same run, and auto's throughput (1 / mean step latency) as a
    fraction of it; ``warning`` is set where auto lost by more than
    ``1 - AUTO_WARN_FRAC`` (5%)."""
    rows = [dataclasses.asdict(r) if isinstance(r, Row) else r for r in rows]
    out = []
    for r in rows:
        if r["system"] != AUTO_SYSTEM[0] or not r["steps"]:
            continue
        cond = r.get("condition", "quiet")
        fixed = [o for o in rows if o["domain"] == r["domain"] and o["scenario"] == r["scenario"]
                 and o.get("condition", "quiet") == cond
                 and o["kind"] == "seer" and o["system"] != AUTO_SYSTEM[0] and o["steps"]]
        if not fixed:
            continue
        best = min(fixed, key=lambda o: o["mean_ms"])
        frac = best["mean_ms"] / r["mean_ms"]
        d = {"domain": r["domain"], "scenario": r["scenario"], "condition": cond, "auto_workers": r["workers"],
             "auto_mean_ms": r["mean_ms"], "best_fixed_workers": best["workers"], "best_fixed_system": best["system"],
             "best_fixed_mean_ms": best["mean_ms"], "auto_frac_of_best": frac,
             "fixed_mean_ms": {str(o["workers"]): o["mean_ms"] for o in fixed}, "warning": ""}
        if frac < AUTO_WARN_FRAC:
            same = (" (the same pool size: the gap is measurement noise, e.g. foreign load during auto's rounds)"
                    if r["workers"] == best["workers"] else "")
            where = f"{r['domain']} {r['scenario']}" + ("" if cond == "quiet" else f" ({cond})")
            d["warning"] = (f"warning: {where}: auto ({_n_workers(r['workers'])}) reached "
                            f"{frac:.1%} of the best fixed pool size's throughput ({_n_workers(best['workers'])}) "
                            f"in this run, {1 / frac - 1:.0%} slower per step{same}")
        out.append(d)
    return out


#: Seconds each of SEER's own rows is timed at least (the full run; see :func:`own_rows`).
MIN_OWN_S = 2.0


def _conditions_rows(domain, scenario, make, entities, steps, budget_s, min_s, conditions) -> list[Row]:
    rows: list[Row] = []
    for cond in check_conditions(conditions):
        rows += own_rows(domain, scenario, make, entities, steps, budget_s, min_s=min_s, condition=cond)
    return rows


def uav_rows(scenario: str, steps: int, budget_s: float, min_s: float = 0.0,
             conditions=("quiet",)) -> list[Row]:
    uav_swarm_v0 = registry.load("uav_swarm_v0")
    rows = _conditions_rows("uav", scenario,
                            lambda **kw: uav_swarm_v0.parallel_env(scenario=scenario, max_cycles=10**9, **kw),
                            lambda env: env.cfg.num_uavs, steps, budget_s, min_s, conditions)
    n = rows[0].entities
    return rows + [mpe2_row(scenario, n, steps, budget_s), vmas_row(scenario, n, steps, budget_s)]


def wireless_rows(scenario: str, steps: int, budget_s: float, min_s: float = 0.0,
                  conditions=("quiet",)) -> list[Row]:
    wireless_v0 = registry.load("wireless_v0")
    rows = _conditions_rows("wireless", scenario,
                            lambda **kw: wireless_v0.parallel_env(scenario=scenario, full_buffer=True, **kw),
                            lambda env: env.num_bs + env.num_ue, steps, budget_s, min_s, conditions)
    return rows + [mobile_env_row(scenario, rows[0].entities, steps, budget_s)]


def load_state() -> dict:
    """What else the machine was doing: load average, the cores free to this
    process (seer.stpa's probe measurement) and CPU pressure where reported."""
    from seer.stpa.load import cpu_pressure, free_cores

    return {"loadavg": list(os.getloadavg()) if hasattr(os, "getloadavg") else None, "free_cores": free_cores(),
            "usable_cores": usable_cores(), "cpu_pressure": cpu_pressure()}


def reductions(rows: list[Row]) -> list[dict]:
    """Latency reduction of SEER (auto) against every other row of its scenario."""
    out = []
    for r in rows:
        if r.system != "SEER (auto)" or not r.ok or r.condition != "quiet":  # the others ran quiet
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


def run(quick: bool = False, progress: Callable[[str], None] | None = None,
        conditions=tuple(CONDITIONS)) -> dict:
    """Every row of the plan, SEER's own in each of ``conditions``; ``progress(label)`` is called after each block."""
    conditions = check_conditions(conditions)
    steps, budget, min_s = (200, 1.0, 0.0) if quick else (2000, 10.0, MIN_OWN_S)
    machine = machine_info()
    machine["load_at_start"] = load_state()
    rows: list[Row] = []
    for domain, scenario in plan(quick):
        rows += (uav_rows if domain == "uav" else wireless_rows)(scenario, steps, budget, min_s, conditions)
        if progress:
            progress(f"{domain} {scenario}")
    machine["load_at_end"] = load_state()
    return {"machine": machine, "quick": quick, "conditions": list(conditions),
            "command": " ".join(["seer"] + sys.argv[1:]),
            "rows": [dataclasses.asdict(r) for r in rows], "reductions": reductions(rows),
            "auto_vs_fixed": auto_vs_fixed(rows), "paper_reduction_pct": PAPER_REDUCTION}
