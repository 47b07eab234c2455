"""Benchmark of seer.numba's start-up: a fresh process that builds and steps the example's Numba engine.

Each round starts from empty cache folders (``SEER_CACHE_DIR`` and
``NUMBA_CACHE_DIR``, both private temp folders): one cold process, which
compiles and fills them, then ``--warm`` warm processes, which should load
everything.  Two workloads:

- ``env``: ``consensus_v0.parallel_env(engine="numba")``, reset, 3 steps;
- ``vector``: ``seer.vector.make(..., backend="process")`` over 2 copies
  (its workers are fresh processes too), reset, one step.

Times are the wall time of the whole ``python`` process (interpreter,
imports, compile or cache load, the steps, exit); medians decide.  It also
counts the Numba cache files after the cold run and after the warm ones (a
cache that misses in every process grows by one entry per process).

``--against PATH`` (a PYTHONPATH prefix holding an older checkout of
``seer`` and the example) runs the same rounds with that code too,
interleaved with this one, so both see the same load.

Needs the example installed (``pip install --no-build-isolation
./examples/seer_consensus``) or on ``PYTHONPATH``.

    python bench/bench_numba_startup.py --json bench/results/numba_startup.json --md bench/results/numba_startup.md
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time

from seer.bench.common import machine_info, markdown_table, rounds_main

_SCRIPTS = {
    "env": """
import numpy as np
from seer_consensus import consensus_v0
env = consensus_v0.parallel_env(scenario="small", engine=ENGINE, max_cycles=5)
env.reset(seed=1)
for _ in range(3):
    env.step({a: np.zeros(1, np.float32) for a in env.agents})
env.close()
""",
    "vector": """
import functools, numpy as np, seer.vector
from seer_consensus import consensus_v0
if __name__ == "__main__":
    envs = seer.vector.make(functools.partial(consensus_v0.parallel_env, scenario="small", engine=ENGINE), 2,
                            backend="process", workers=1)
    envs.reset(seed=3)
    envs.step(np.zeros(envs.action_space.shape, np.float32))
    envs.close()
""",
}
#: the Numba engine, and the C one (engine="seer") as the yardstick: nothing to compile there
SCRIPTS = {f"{name}/{engine}": f"ENGINE = {engine!r}\n" + text
           for name, text in _SCRIPTS.items() for engine in ("numba", "seer")}


def _process(script: str, env: dict, cwd: str) -> float:
    t0 = time.perf_counter()
    # cwd: not the checkout, whose seer/ would shadow the code on PYTHONPATH (python -c puts "" first)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=600,
                         cwd=cwd)
    seconds = time.perf_counter() - t0
    if out.returncode != 0:
        raise RuntimeError(f"the start-up process failed:\n{out.stderr}")
    return seconds


def _cache_entries(folder: str) -> int:
    return sum(name.endswith(".nbc") for _, _, files in os.walk(folder) for name in files)


AGAINST: str | None = None  # --against: a PYTHONPATH prefix with the code to compare with
AGAINST_LABEL = ""  # --against-label: what that code is (a commit)


def _round(script: str, warm: int, pythonpath: str | None) -> tuple[float, list[float], tuple[int, int]]:
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "SEER_CACHE_DIR": os.path.join(tmp, "seer_cache"),
               "NUMBA_CACHE_DIR": os.path.join(tmp, "numba_cache")}
        if pythonpath:
            env["PYTHONPATH"] = os.pathsep.join(p for p in (pythonpath, env.get("PYTHONPATH")) if p)
        cold = _process(script, env, tmp)
        after_cold = _cache_entries(tmp)
        hot = [_process(script, env, tmp) for _ in range(warm)]
        return cold, hot, (after_cold, _cache_entries(tmp))


def run(rounds: int, warm: int = 3) -> dict:
    res = {"machine": machine_info(["numba"]), "load_before": os.getloadavg(), "warm_per_round": warm,
           "against": AGAINST, "against_label": AGAINST_LABEL, "workloads": {}}
    for name, script in SCRIPTS.items():
        versions = {"": None} if AGAINST is None or name.endswith("/seer") else {"": None, " (before)": AGAINST}
        got = {v: ([], [], []) for v in versions}
        for _ in range(rounds):
            for v, path in versions.items():  # interleaved: both versions see the same load
                cold, hot, entries = _round(script, warm, path)
                got[v][0].append(cold)
                got[v][1].extend(hot)
                got[v][2].append(entries)
        for v, (cold, hot, entries) in got.items():
            res["workloads"][name + v] = {"cold_s": cold, "warm_s": hot, "cache_entries": entries,
                                          "cold_median_s": statistics.median(cold),
                                          "warm_median_s": statistics.median(hot)}
    res["load_after"] = os.getloadavg()
    return res


def markdown(res: dict) -> str:
    m = res["machine"]
    rows = []
    for name, w in res["workloads"].items():
        grew = sorted({b - a for a, b in w["cache_entries"]})
        rows.append((name, f"{w['cold_median_s']:.2f}", f"{w['warm_median_s']:.2f}", f"{max(w['warm_s']):.2f}",
                     f"{w['cache_entries'][0][0]}", ", ".join(map(str, grew))))
    return "\n\n".join([
        "# seer.numba start-up in a fresh process",
        f"Machine: {m.get('cpu', '?')}, {m.get('usable_cores', '?')} usable cores; load before "
        f"{tuple(round(x, 2) for x in res['load_before'])}, after {tuple(round(x, 2) for x in res['load_after'])} "
        f"(a shared host: other jobs ran meanwhile).",
        "Command: `python bench/bench_numba_startup.py --json bench/results/numba_startup.json "
        "--md bench/results/numba_startup.md" + (" --against PATH" if res.get("against") else "") + "`",
        markdown_table(("workload", "cold: median s", "warm: median s", "warm: worst s", "cache entries after cold",
                        "entries added by warm runs"), rows),
        "Whole-process wall time (interpreter start, imports, compile or cache load, the steps, exit). `env`: "
        "consensus_v0 `small`, reset and 3 steps; `vector`: seer.vector's process backend "
        "over 2 copies (2 worker processes), reset and one step. `/numba`: the Numba engine; `/seer`: the same env "
        "with C handlers, for comparison." + (f" `(before)`: {res.get('against_label') or res['against']}, in the "
                                              f"same rounds." if res.get("against") else ""),
    ])


if __name__ == "__main__":
    if "--against" in sys.argv:
        i = sys.argv.index("--against")
        AGAINST = sys.argv[i + 1]
        del sys.argv[i:i + 2]
    if "--against-label" in sys.argv:
        i = sys.argv.index("--against-label")
        AGAINST_LABEL = sys.argv[i + 1]
        del sys.argv[i:i + 2]
    rounds_main(__doc__.splitlines()[0], run, markdown, rounds=3)
