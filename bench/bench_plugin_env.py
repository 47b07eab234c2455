"""Benchmark of the example plug-in env (examples/seer_consensus, consensus_v0).

Two questions, each answered by ratios measured in one run:

1. Does an env built outside SEER, against its public C API, get the
   runtime's parallelism?  seer.vector's thread backend over 8 copies,
   workers=2 against workers=1 (vector steps per second).
2. What does the native path buy over the same env as plain Python?  The
   ParallelEnv's ``step`` with ``engine="seer"`` (C handlers on SEER's
   runtime, one C call per step) against ``engine="python"`` (the same model
   as a heap-driven Python event loop; bit-identical results).

Rounds alternate the configurations so that load from other jobs hits both
sides of each ratio alike; the median round decides.

Usage (needs ``pip install --no-build-isolation ./examples/seer_consensus``)::

    python bench/bench_plugin_env.py --json bench/results/plugin_env.json --md bench/results/plugin_env.md
"""

from __future__ import annotations

import numpy as np

from seer.bench.common import machine_info, markdown_table, parallel_capacity, rounds_main, steps_per_s


def _vector_rate(workers: int, copies: int, scenario: str, steps: int) -> float:
    import seer.vector
    from seer_consensus import consensus_v0

    envs = seer.vector.make(lambda: consensus_v0.parallel_env(scenario=scenario, max_cycles=10_000), copies,
                            backend="thread", workers=workers)
    try:
        envs.reset(seed=0)
        acts = np.random.default_rng(0).uniform(-1, 1, (8, *envs.action_space.shape)).astype(np.float32)
        return steps_per_s(envs.step, acts, steps, warmup=5)
    finally:
        envs.close()


def _env_rate(engine: str, scenario: str, steps: int) -> float:
    from seer_consensus import consensus_v0

    env = consensus_v0.parallel_env(scenario=scenario, engine=engine, max_cycles=10_000)
    try:
        env.reset(seed=0)
        rng = np.random.default_rng(0)
        pool = [{a: rng.uniform(-1, 1, 1).astype(np.float32) for a in env.agents} for _ in range(8)]
        return steps_per_s(env.step, pool, steps)
    finally:
        env.close()


def run(rounds: int) -> dict:
    vector = {1: [], 2: []}
    env = {("seer", "default"): [], ("python", "default"): [], ("seer", "large"): [], ("python", "large"): []}
    capacity = []
    for _ in range(rounds):
        capacity.append(parallel_capacity())
        for w in (1, 2):
            vector[w].append(_vector_rate(w, 8, "large", 200))
        for (engine, scenario), out in env.items():
            steps = 300 if engine == "seer" else (60 if scenario == "default" else 6)
            out.append(_env_rate(engine, scenario, steps))
    med = {k: float(np.median(v)) for k, v in vector.items()}
    ratios = [b / a for a, b in zip(vector[1], vector[2])]
    doc = {
        "machine": machine_info(),
        "rounds": rounds,
        "parallel_capacity": capacity,
        "vector_thread_8_copies_large": {
            "steps_per_s": {"workers=1": med[1], "workers=2": med[2]},
            "ratio_2_over_1_per_round": ratios,
            "ratio_2_over_1_median": float(np.median(ratios)),
        },
        "parallel_env_step_per_s": {f"{e}/{s}": float(np.median(v)) for (e, s), v in env.items()},
        "native_over_python": {
            s: float(np.median(np.array(env[("seer", s)]) / np.array(env[("python", s)]))) for s in ("default", "large")
        },
    }
    return doc


def markdown(doc: dict) -> str:
    m, v = doc["machine"], doc["vector_thread_8_copies_large"]
    lines = [
        "# Example plug-in env (consensus_v0) benchmark",
        "",
        f"Machine: {m.get('cpu', '?')}, {m.get('usable_cores', '?')} usable cores; load {m.get('loadavg_at_start', '?')}; "
        f"parallel capacity per round {[round(c, 2) for c in doc['parallel_capacity']]} (2.0 = two free cores).",
        "",
        "Command: `python bench/bench_plugin_env.py --json bench/results/plugin_env.json "
        "--md bench/results/plugin_env.md`",
        "",
        "## seer.vector thread backend, 8 copies of `large` (1024 agents each)",
        "",
        markdown_table(["workers", "vector steps/s"], [[w, f"{v['steps_per_s'][f'workers={w}']:.1f}"] for w in (1, 2)]),
        "",
        f"workers=2 / workers=1: median {v['ratio_2_over_1_median']:.2f}x "
        f"(per round {[round(r, 2) for r in v['ratio_2_over_1_per_round']]}).",
        "",
        "## ParallelEnv.step: native path vs the same env in plain Python",
        "",
        markdown_table(["engine / scenario", "steps/s"],
                       [[k, f"{r:.1f}"] for k, r in doc["parallel_env_step_per_s"].items()]),
    ]
    lines += ["", "Native over Python (median of per-round ratios): "
              + ", ".join(f"{s} {r:.0f}x" for s, r in doc["native_over_python"].items()), ""]
    return "\n".join(lines)


if __name__ == "__main__":
    rounds_main(__doc__.splitlines()[0], run, markdown, rounds=5)
