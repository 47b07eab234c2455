"""Benchmark of seer.numba: Numba-compiled handlers against C handlers, side by side in one run.

1. Scaling: the synthetic workload (entities tick and message random others)
   with ~20 us of arithmetic per event, workers=2 against workers=1, for C
   handlers (seer.synthetic.SyntheticModel) and their Numba twin below.
2. Per-event overhead: the same workload with no arithmetic (work=0): ns per
   event of the runtime plus handler, Numba against C.
3. The ported env (examples/seer_consensus): ParallelEnv.step per second
   with engine="seer" (C), "numba" and "python", at 1 and 2 workers, and
   seer.vector's thread backend over 8 copies (C and Numba copy steps).
4. Start-up: a fresh process building a Numba model, with an empty cache
   and again with the cache the first run left.

Rounds alternate the configurations; medians decide.

    python bench/bench_numba.py --json bench/results/numba.json --md bench/results/numba.md
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
import time

import numpy as np

import seer
import seer.numba as snb
from seer.bench.common import machine_info, markdown_table, parallel_capacity, rounds_main, steps_per_s
from seer.synthetic import SyntheticModel

TICK, MSG = 0, 1
STATE = snb.State(value="f8[:]", snap="f8[:]", handled="i8[:]", cfg="f8[:]")  # cfg: fanout, work, period, delay


@snb.njit
def _burn(x, iters):
    for _ in range(iters):
        x = x * 0.999999 + 1e-7
    return x


@STATE.handler
def synth_tick(ctx, ev, s):
    e = ev.entity
    n = s.value.shape[0]
    right = (e + 1) % n
    v = _burn(s.value[e] + 0.001 * s.snap[right], np.int64(s.cfg[1]))
    s.value[e] = v
    s.handled[e] += 1
    for _ in range(np.int64(s.cfg[0])):
        to = np.int32(snb.random_u64(ctx) % np.uint64(n))
        if to == e:
            to = right
        payload = np.int64(np.fmod(abs(v), 1e6) * 1000.0)
        if snb.emit(ctx, to, ev.time + s.cfg[3], MSG, payload) != 0:
            return 0
    snb.emit(ctx, e, ev.time + s.cfg[2], TICK, 0)
    return 0


@STATE.handler
def synth_msg(ctx, ev, s):
    e = ev.entity
    s.value[e] = _burn(s.value[e] * 0.5 + np.float64(ev.payload) * 1e-6, np.int64(s.cfg[1]) // 2)
    s.handled[e] += 1
    return 0


class NumbaSynthetic(SyntheticModel):
    """SyntheticModel's workload with the Numba handlers above."""

    def __init__(self, num_entities, *, fanout, work, period, delay):
        super().__init__(num_entities, fanout=fanout, work=work, period=period, delay=delay)
        self.kinds = [seer.EventKind("tick", seer.Native(synth_tick)), seer.EventKind("msg", seer.Native(synth_msg))]
        self.cfg = np.array([fanout, work, period, delay], np.float64)
        snap = self.snapshot_targets()["value"]
        self.native_model = STATE.bind({"value": self.state["value"], "snap": snap,
                                        "handled": self.state["handled"], "cfg": self.cfg})


def _events_per_s(make, workers, horizon, repeats=5):
    """The best of ``repeats`` steps of ``horizon`` simulated seconds: the
    least disturbed by other jobs on a shared machine."""
    model = make()
    best = 0.0
    with seer.Runtime(model, workers=workers, seed=1) as rt:
        rt.step(horizon * 0.1)  # warm-up
        now = horizon * 0.1
        for _ in range(repeats):
            t0 = time.perf_counter()
            events = rt.step(now + horizon).events
            best = max(best, events / (time.perf_counter() - t0))
            now += horizon
        return best


def _synthetic(rounds):
    heavy = dict(fanout=1, work=16_000, period=0.1, delay=0.1)  # ~20 us per tick, ~10 us per message (~1.2 ns per iteration)
    empty = dict(fanout=1, work=0, period=0.1, delay=0.1)
    cases = {
        ("C", "heavy"): lambda: SyntheticModel(64, **heavy), ("Numba", "heavy"): lambda: NumbaSynthetic(64, **heavy),
        ("C", "empty"): lambda: SyntheticModel(4096, **empty), ("Numba", "empty"): lambda: NumbaSynthetic(4096, **empty),
    }
    out = {k: {1: [], 2: []} for k in cases}
    for _ in range(rounds):
        for (kind, load), make in cases.items():
            for w in (1, 2):
                out[(kind, load)][w].append(_events_per_s(make, w, 0.5 if load == "heavy" else 5.0))
    res = {}
    for (kind, load), by_w in out.items():
        ratios = [b / a for a, b in zip(by_w[1], by_w[2])]
        res[f"{kind}/{load}"] = {"events_per_s_w1": float(np.median(by_w[1])),
                                 "events_per_s_w2": float(np.median(by_w[2])),
                                 "ns_per_event_w1": 1e9 / float(np.median(by_w[1])),
                                 "w2_over_w1": float(np.median(ratios)), "w2_over_w1_rounds": ratios}
    res["numba_over_c_ns_per_event_empty"] = res["Numba/empty"]["ns_per_event_w1"] / res["C/empty"]["ns_per_event_w1"]
    return res


def _env_rates(rounds):
    try:
        from seer_consensus import consensus_v0
    except ImportError:
        return {"skipped": "pip install --no-build-isolation ./examples/seer_consensus"}
    import seer.vector

    def env_rate(engine, workers, steps):
        env = consensus_v0.parallel_env(scenario="large", engine=engine, workers=workers, max_cycles=10_000)
        env.reset(seed=0)
        rng = np.random.default_rng(0)
        pool = [{a: rng.uniform(-1, 1, 1).astype(np.float32) for a in env.agents} for _ in range(4)]
        rate = steps_per_s(env.step, pool, steps)
        env.close()
        return rate

    def vector_rate(engine, workers, steps=100):
        envs = seer.vector.make(lambda: consensus_v0.parallel_env(scenario="large", engine=engine, max_cycles=10_000),
                                8, backend="thread", workers=workers)
        envs.reset(seed=0)
        acts = np.random.default_rng(0).uniform(-1, 1, (4, *envs.action_space.shape)).astype(np.float32)
        rate = steps_per_s(envs.step, acts, steps)
        envs.close()
        return rate

    env = {(e, w): [] for e in ("seer", "numba", "python") for w in (1, 2)}
    vec = {(e, w): [] for e in ("seer", "numba") for w in (1, 2)}
    for _ in range(rounds):
        for (e, w), out in env.items():
            out.append(env_rate(e, w, 200 if e != "python" else 10))
        for (e, w), out in vec.items():
            out.append(vector_rate(e, w))
    return {"parallel_env_steps_per_s": {f"{e}/workers={w}": float(np.median(v)) for (e, w), v in env.items()},
            "vector_8_copies_steps_per_s": {f"{e}/workers={w}": float(np.median(v)) for (e, w), v in vec.items()}}


STARTUP = textwrap.dedent("""
    import time
    t0 = time.perf_counter()
    import sys
    sys.path.insert(0, {bench!r})
    import bench_numba as b
    m = b.NumbaSynthetic(8, fanout=1, work=10, period=0.1, delay=0.1)
    import seer
    with seer.Runtime(m, workers=1) as rt:
        rt.step(1.0)
    print(time.perf_counter() - t0)
""")


def _startup():
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "SEER_CACHE_DIR": os.path.join(tmp, "seer"), "NUMBA_CACHE_DIR": os.path.join(tmp, "nb")}
        code = STARTUP.format(bench=os.path.dirname(os.path.abspath(__file__)))
        times = []
        for _ in range(2):
            out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
            times.append(float(out.stdout.strip().splitlines()[-1]))
        return {"first_run_s": times[0], "second_run_s": times[1]}


def markdown(doc):
    s = doc["synthetic"]
    synthetic = [[k, f"{s[k]['events_per_s_w1']:,.0f}", f"{s[k]['events_per_s_w2']:,.0f}", f"{s[k]['w2_over_w1']:.2f}x",
                  f"{s[k]['ns_per_event_w1']:.0f}"] for k in ("C/heavy", "Numba/heavy", "C/empty", "Numba/empty")]
    lines = ["# seer.numba benchmark", "", f"Machine: {doc['machine']['cpu']}, {doc['machine']['usable_cores']} usable "
             f"cores, load at start {doc['machine']['loadavg_at_start']}; parallel capacity per round "
             f"{[round(c, 2) for c in doc['parallel_capacity']]} (2.0 = two free cores).", "",
             "Command: `python bench/bench_numba.py --json bench/results/numba.json --md bench/results/numba.md`", "",
             "## Synthetic workload", "",
             markdown_table(["handlers / work", "events/s, 1 worker", "events/s, 2 workers", "2 / 1",
                             "ns per event, 1 worker"], synthetic)]
    lines += ["", f"Per-event cost of an (almost) empty handler, Numba over C: "
              f"{s['numba_over_c_ns_per_event_empty']:.2f}x.", ""]
    e = doc["env"]
    if "skipped" not in e:
        lines += ["## consensus_v0 `large` (1024 agents): C, Numba and plain Python", "",
                  markdown_table(["engine / workers", "ParallelEnv.step/s"],
                                 [[k, f"{v:,.1f}"] for k, v in e["parallel_env_steps_per_s"].items()]), "",
                  markdown_table(["copy step / workers", "seer.vector thread backend, 8 copies: steps/s"],
                                 [[k, f"{v:,.1f}"] for k, v in e["vector_8_copies_steps_per_s"].items()]), ""]
    st = doc["startup"]
    lines += ["## Start-up", "", f"A fresh process importing SEER and Numba and building a two-handler Numba model: "
              f"{st['first_run_s']:.2f} s with an empty cache, {st['second_run_s']:.2f} s with the cache of the first "
              f"run.", ""]
    return "\n".join(lines)


def run(rounds):
    doc = {"machine": machine_info(("numba",)), "parallel_capacity": [], "rounds": rounds}
    doc["parallel_capacity"].append(parallel_capacity())
    doc["synthetic"] = _synthetic(rounds)
    doc["env"] = _env_rates(rounds)
    doc["parallel_capacity"].append(parallel_capacity())
    doc["startup"] = _startup()
    return doc


if __name__ == "__main__":
    rounds_main(__doc__.splitlines()[0], run, markdown, rounds=3)
