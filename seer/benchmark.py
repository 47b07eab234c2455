"""`seer bench`: SEER's headline comparisons, side by side, on this machine.

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
import json
import os
import platform
import sys
import time
from typing import Callable

import numpy as np

#: The SEER paper's headline reductions, shown beside ours.
PAPER_REDUCTION = {"uav": 16.2, "wireless": 64.9}


@dataclasses.dataclass
class Row:
    domain: str          # "uav" or "wireless"
    scenario: str
    entities: int
    system: str
    kind: str            # "seer", "same model", "indicative"
    workers: int | None = None
    mean_ms: float = float("nan")
    p50_ms: float = float("nan")
    p99_ms: float = float("nan")
    steps: int = 0
    note: str = ""

    @property
    def ok(self) -> bool:
        return self.steps > 0


def machine_info(packages: tuple[str, ...] = ()) -> dict:
    """A description of this machine, recorded with every benchmark run.

    ``packages``: distributions whose versions to add (key: the name with
    dashes as underscores; None when not installed).
    """
    import importlib.metadata
    import subprocess

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count()
    mem = None
    try:
        with open("/proc/meminfo") as f:
            mem = int(f.readline().split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip()
    except OSError:
        commit = ""
    import cffi

    import seer

    info = {"cpu": cpu, "cpu_model": cpu, "usable_cores": cores, "usable_cpus": cores, "nproc": os.cpu_count(),
            "logical_cpus": os.cpu_count(), "memory_bytes": mem, "python": platform.python_version(),
            "numpy": np.__version__, "cffi": cffi.__version__, "platform": platform.platform(),
            "seer": seer.__version__, "git_commit": commit, "loadavg_at_start": os.getloadavg()}
    for name in packages:
        try:
            info[name.replace("-", "_")] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            info[name.replace("-", "_")] = None
    return info


def _spin(seconds, q):
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        n += 1
    q.put(n)


def parallel_capacity(seconds: float = 0.2) -> float:
    """How many cores two busy processes get right now, relative to one (2.0
    on an idle 2-core machine; less while other jobs run)."""
    import multiprocessing as mp

    ctx = mp.get_context("forkserver")
    q = ctx.Queue()
    p = ctx.Process(target=_spin, args=(seconds, q))
    p.start()
    one = q.get()
    p.join()
    ps = [ctx.Process(target=_spin, args=(seconds, q)) for _ in range(2)]
    for p in ps:
        p.start()
    two = q.get() + q.get()
    for p in ps:
        p.join()
    return two / max(one, 1)


def time_loop(step: Callable[[int], None], reset: Callable[[int], None], steps: int, budget_s: float,
              warmup: int = 3) -> np.ndarray:
    """Latencies (s) of ``step(i)``; ``reset(episode)`` runs off the clock when
    ``step`` returns True (episode over)."""
    lat = []
    episode = 0
    reset(episode)
    deadline = None
    for i in range(warmup + steps):
        t0 = time.perf_counter()
        done = step(i)
        t1 = time.perf_counter()
        if i >= warmup:
            lat.append(t1 - t0)
            if deadline is None:
                deadline = t1 + budget_s
            elif t1 > deadline:
                break
        if done:
            episode += 1
            reset(episode)
    return np.asarray(lat)


def _fill(row: Row, lat: np.ndarray) -> Row:
    row.steps = int(lat.size)
    if lat.size:
        row.mean_ms = float(lat.mean() * 1e3)
        row.p50_ms = float(np.percentile(lat, 50) * 1e3)
        row.p99_ms = float(np.percentile(lat, 99) * 1e3)
    return row


# ---- PettingZoo-style envs ------------------------------------------------------------------


def _time_parallel_env(env, steps: int, budget_s: float, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    spaces = {a: env.action_space(a) for a in env.possible_agents}

    def draw(agents):
        out = {}
        for a in agents:
            sp = spaces[a]
            if hasattr(sp, "n"):
                out[a] = int(rng.integers(sp.n))
            else:
                out[a] = rng.uniform(sp.low, sp.high).astype(sp.dtype)
        return out

    pending = {}

    def reset(episode):
        env.reset(seed=seed + episode)
        pending["a"] = draw(env.agents)

    # Draw the next actions off the clock: time only env.step.
    lat = []
    reset(0)
    episode, deadline = 0, None
    for i in range(3 + steps):
        actions = pending["a"]
        t0 = time.perf_counter()
        env.step(actions)
        t1 = time.perf_counter()
        if i >= 3:
            lat.append(t1 - t0)
            deadline = deadline or t1 + budget_s
            if t1 > deadline:
                break
        if not env.agents:
            episode += 1
            reset(episode)
        else:
            pending["a"] = draw(env.agents)
    return np.asarray(lat)


def uav_rows(scenario: str, steps: int, budget_s: float) -> list[Row]:
    from seer import registry

    uav_swarm_v0 = registry.load("uav_swarm_v0")
    rows = []
    for label, kw, kind in (
        ("SEER (auto)", {"workers": "auto"}, "seer"),
        ("SEER (1 worker)", {"workers": 1}, "seer"),
        ("time-stepped reference", {"engine": "reference"}, "same model"),
    ):
        env = uav_swarm_v0.parallel_env(scenario=scenario, max_cycles=10**9, **kw)
        row = Row("uav", scenario, env.cfg.num_uavs, label, kind, getattr(env, "workers", None))
        rows.append(_fill(row, _time_parallel_env(env, steps, budget_s)))
        env.close()
    n = rows[0].entities
    rows.append(_mpe2_row(scenario, n, steps, budget_s))
    rows.append(_vmas_row(scenario, n, steps, budget_s))
    return rows


def _mpe2_row(scenario, n, steps, budget_s) -> Row:
    row = Row("uav", scenario, n, f"mpe2 simple_spread_v3 (N={n})", "indicative", 1)
    try:
        from mpe2 import simple_spread_v3
    except ImportError:
        row.note = "mpe2 not installed (pip install 'seer[bench]')"
        return row
    env = simple_spread_v3.parallel_env(N=n, max_cycles=25, continuous_actions=True)
    _fill(row, _time_parallel_env(env, steps, budget_s))
    env.close()
    return row


def _vmas_row(scenario, n, steps, budget_s) -> Row:
    row = Row("uav", scenario, n, f"VMAS flocking (n_agents={n})", "indicative", 1)
    try:
        import torch
        import vmas
    except ImportError:
        row.note = "VMAS not installed (optional: needs torch; pip install vmas)"
        return row
    env = vmas.make_env("flocking", num_envs=1, device="cpu", n_agents=n, continuous_actions=True, seed=0)
    env.reset()
    acts = [torch.zeros(1, env.get_agent_action_size(a)) for a in env.agents]
    lat = time_loop(lambda i: bool(env.step(acts)[2].any()), lambda e: env.reset(), steps, budget_s)
    return _fill(row, lat)


WIRELESS_CLASSES = {"small": "MComSmall", "medium": "MComMedium", "large": "MComLarge"}


def wireless_rows(scenario: str, steps: int, budget_s: float) -> list[Row]:
    from seer import registry

    wireless_v0 = registry.load("wireless_v0")
    rows = []
    for label, kw, kind in (
        ("SEER (auto)", {"workers": "auto"}, "seer"),
        ("SEER (1 worker)", {"workers": 1}, "seer"),
        ("time-stepped reference", {"engine": "reference"}, "same model"),
    ):
        env = wireless_v0.parallel_env(scenario=scenario, full_buffer=True, **kw)
        row = Row("wireless", scenario, env.num_bs + env.num_ue, label, kind, getattr(env, "workers", None))
        rows.append(_fill(row, _time_parallel_env(env, steps, budget_s)))
        env.close()
    rows.append(_mobile_env_row(scenario, rows[0].entities, steps, budget_s))
    return rows


def _mobile_env_row(scenario, entities, steps, budget_s) -> Row:
    row = Row("wireless", scenario, entities, "mobile-env (multi-agent)", "indicative", 1)
    if scenario not in WIRELESS_CLASSES:
        row.note = f"mobile-env has no {scenario!r} scenario"
        return row
    try:
        import importlib

        module = importlib.import_module(f"mobile_env.scenarios.{scenario}")
        from mobile_env.handlers.multi_agent import MComMAHandler
    except ImportError:
        row.note = "mobile-env not installed (pip install 'seer[bench]')"
        return row
    env = getattr(module, WIRELESS_CLASSES[scenario])(config={"handler": MComMAHandler})
    rng = np.random.default_rng(0)
    env.reset(seed=0)
    ids = sorted(env.users)
    acts = [dict(zip(ids, (int(x) for x in rng.integers(0, env.NUM_STATIONS + 1, len(ids))))) for _ in range(64)]
    lat = time_loop(lambda i: (env.step(acts[i % 64]), env.time_is_up)[1], lambda e: env.reset(seed=e),
                    steps, budget_s)
    env.close()
    return _fill(row, lat)


# ---- the run ------------------------------------------------------------------------------------


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


def plot(doc: dict, path: str) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise RuntimeError("--plot needs matplotlib: pip install 'seer[bench]'") from exc
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, domain, title in zip(axes, ("uav", "wireless"), ("UAV swarm control", "Wireless management")):
        rows = [r for r in doc["rows"] if r["domain"] == domain and r["steps"] > 0]
        for system in dict.fromkeys(r["system"].split(" (N=")[0].split(" (n_agents=")[0] for r in rows):
            pts = sorted((r["entities"], r["mean_ms"]) for r in rows if r["system"].startswith(system))
            ax.plot(*zip(*pts), marker="o", label=system)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("entities")
        ax.set_ylabel("mean step latency (ms)")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    from seer._io import atomic_writer

    with atomic_writer(path, "wb", what="--plot file") as f:  # atomic; never through a symlink
        fig.savefig(f, dpi=120, format=os.path.splitext(str(path))[1][1:].lower() or "png")
    plt.close(fig)


def markdown(doc: dict) -> str:
    """The step-latency rows and SEER's reductions as one markdown table."""
    red = {(d["domain"], d["scenario"], d["against"]): d for d in doc["reductions"]}
    lines = ["| domain | scenario | entities | system | model | mean ms | p50 ms | p99 ms | SEER (auto) reduction |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in doc["rows"]:
        if not r["steps"]:
            lines.append(f"| {r['domain']} | {r['scenario']} | {r['entities']} | {r['system']} | {r['kind']} | "
                         f"- | - | - | skipped: {r['note']} |")
            continue
        d = red.get((r["domain"], r["scenario"], r["system"]))
        cut = f"{d['reduction_pct']:.1f}% ({d['speedup']:.1f}x)" if d else ""
        lines.append(f"| {r['domain']} | {r['scenario']} | {r['entities']} | {r['system']} | {r['kind']} | "
                     f"{r['mean_ms']:.3f} | {r['p50_ms']:.3f} | {r['p99_ms']:.3f} | {cut} |")
    return "\n".join(lines)


def table(doc: dict):
    from rich.table import Table

    t = Table(title="seer bench: step latency")
    for col in ("domain", "scenario", "entities", "system", "model", "workers", "mean ms", "p50 ms", "p99 ms",
                "steps", "note"):
        t.add_column(col)
    for r in doc["rows"]:
        num = (lambda v: f"{v:.3f}") if r["steps"] else (lambda v: "-")
        t.add_row(r["domain"], r["scenario"], str(r["entities"]), r["system"], r["kind"], str(r["workers"] or "-"),
                  num(r["mean_ms"]), num(r["p50_ms"]), num(r["p99_ms"]), str(r["steps"]), r["note"])
    red = Table(title="latency reduction of SEER (auto), as the paper reports it")
    for col in ("domain", "scenario", "against", "reduction", "speedup", "paper"):
        red.add_column(col)
    for d in doc["reductions"]:
        red.add_row(d["domain"], d["scenario"], d["against"], f"{d['reduction_pct']:.1f}%", f"{d['speedup']:.2f}x",
                    f"{d['paper_reduction_pct']}%" + (" (up to)" if d["domain"] == "wireless" else ""))
    return t, red


def main(args) -> int:
    from rich.console import Console
    from rich.progress import Progress

    # Wide enough for the table when writing to a file or a CI log.
    console = Console() if sys.stdout.isatty() else Console(width=170)
    from seer.errors import EnvLoadError, UnknownEnvError

    try:
        with Progress(console=console, transient=True) as bar:
            task = bar.add_task("seer bench", total=len(plan(args.quick)))
            doc = run(args.quick, lambda label: bar.update(task, advance=1,
                                                           description=f"seer bench: done {label}"))
    except (UnknownEnvError, EnvLoadError) as exc:  # an env the comparison needs is missing here
        print(f"seer bench: error: {exc}", file=sys.stderr)
        return 1
    for t in table(doc):
        console.print(t)
    if args.json:
        from seer._io import atomic_write_text

        atomic_write_text(args.json, json.dumps(doc, indent=2), what="--json file")
        console.print(f"wrote {args.json}")
    if args.plot:
        plot(doc, args.plot)
        console.print(f"wrote {args.plot}")
    return 0


def add_bench_parser(sub) -> None:
    p = sub.add_parser("bench", help="SEER's headline comparisons on this machine",
                       description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="small scenarios and short runs (under a minute)")
    from seer.cli import OUTPUT_HELP, output_path_arg, plot_path_arg

    p.add_argument("--json", metavar="PATH", type=output_path_arg,
                   help=f"write every number, with the machine's features, as JSON; {OUTPUT_HELP}")
    p.add_argument("--plot", metavar="PATH", type=plot_path_arg,
                   help=f"write a PNG (or .pdf, .svg) of step latency against entities; {OUTPUT_HELP}")
    p.set_defaults(func=main)
