"""Workloads that ``seer tune`` measures, and how it times them.

* synthetic native, Python and mixed workloads (:mod:`seer.synthetic`, and
  :class:`MixedSyntheticModel` here: native ticks, Python message handlers)
  with varied sizes, handler costs, fan-outs and lookaheads, drawn at random
  from a seeded generator;
* the built-in environments ``uav_swarm_v0`` and ``wireless_v0`` at several
  sizes, found in the env registry (:mod:`seer.registry`), when they load.

Features always come from the same path ``workers="auto"`` takes
(:func:`seer.stpa.capture` around :func:`~seer.stpa.select_for_model` or
building the env with ``workers="auto"``), so what the
model learns from is what it is later asked about.
"""

from __future__ import annotations

import dataclasses
import gc
import math
import time
from typing import Any, Callable

import numpy as np

from seer.model import EventKind
from seer.synthetic import PythonSyntheticModel, SyntheticModel


class MixedSyntheticModel(SyntheticModel):
    """Native ticks (GIL released) whose messages run a batched Python handler.

    Args:
        py_work: numpy passes over the batch per message event batch.
        (others as :class:`seer.synthetic.SyntheticModel`)
    """

    def __init__(self, num_entities: int = 64, *, py_work: int = 0, **kw):
        super().__init__(num_entities, **kw)
        self.py_work = int(py_work)
        self.kinds = [self.kinds[0], EventKind("msg", self._msg)]

    def _msg(self, ctx, ev) -> None:
        e = ev["entity"]
        v = ctx.state["value"][e] * 0.5 + ev["payload"] * 1e-6
        for _ in range(self.py_work):
            v = v * 0.999999 + 1e-7
        ctx.state["value"][e] = v
        ctx.state["handled"][e] += 1


@dataclasses.dataclass
class Workload:
    """One workload: a model factory (``kind="model"``) or an env factory (``kind="env"``)."""

    name: str
    family: str
    params: dict
    kind: str = "model"
    factory: Callable[..., Any] | None = None  # model: () -> Model; env: (workers) -> ParallelEnv
    step_length: float = 1.0
    capacity: int | None = None

    def make_model(self):
        m = self.factory()
        m.step_length = self.step_length  # the probe steps by it
        return m


# ---- synthetic ---------------------------------------------------------------------------------

def _loguniform(rng, lo, hi) -> float:
    return float(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def _synthetic(family: str, E: int, fanout: int, work: int, period: float, delay: float,
               target_ms: float, py_work: int = 0) -> Workload:
    # Rough serial cost per event (ns) to pick a step length of ~target_ms.
    rate = E / period * (1 + fanout)
    if family == "synthetic-native":
        ns = 150 + 1.0 * work
        make = lambda: SyntheticModel(E, fanout=fanout, work=work, period=period, delay=delay)  # noqa: E731
    elif family == "synthetic-python":
        ns = 1500 + 40.0 * work * 1000 / max(E, 1) + 200 * work
        make = lambda: PythonSyntheticModel(E, fanout=fanout, work=work, period=period, delay=delay)  # noqa: E731
    else:
        ns = 300 + 1.0 * work + (1500 + 200 * py_work) * fanout / (1 + fanout)
        make = lambda: MixedSyntheticModel(E, fanout=fanout, work=work, period=period, delay=delay,  # noqa: E731
                                           py_work=py_work)
    step = min(1.0, max(1e-3, target_ms * 1e6 / (rate * ns)))
    step = float(f"{step:.3g}")
    short = family.split("-")[1]
    name = f"{short}-E{E}-f{fanout}-w{work}" + (f"-pw{py_work}" if family == "synthetic-mixed" else "") + \
        f"-p{period:.3g}-d{delay:.3g}-s{step:.3g}"
    params = {"entities": E, "fanout": fanout, "work": work, "period": period, "delay": delay, "step": step}
    if family == "synthetic-mixed":
        params["py_work"] = py_work
    return Workload(name, family, params, "model", make, step, max(1 << 16, 256 * E))


def sample_synthetic(rng: np.random.Generator, n: int, target_ms: float = 8.0) -> list[Workload]:
    """``n`` synthetic workloads drawn from ``rng``: half native, a quarter
    Python, a quarter mixed; entities 8..4096 (log-uniform), fan-out 0..8,
    native work 0..100k iterations, period and lookahead 0.01..1."""
    out = []
    for _ in range(n):
        u = rng.uniform()
        family = "synthetic-native" if u < 0.5 else ("synthetic-python" if u < 0.75 else "synthetic-mixed")
        E = int(round(_loguniform(rng, 8, 4096 if family != "synthetic-python" else 2048)))
        fanout = int(rng.choice([0, 1, 1, 2, 4, 8]))
        period = float(f"{_loguniform(rng, 0.02, 0.5):.3g}")
        delay = float(f"{_loguniform(rng, 0.01, 1.0):.3g}")
        py_work = 0
        if family == "synthetic-native":
            work = 0 if rng.uniform() < 0.15 else int(round(_loguniform(rng, 10, 100_000)))
        elif family == "synthetic-python":
            work = int(rng.choice([0, 0, 1, 2, 5, 10, 30]))
        else:
            work = int(round(_loguniform(rng, 10, 30_000)))
            fanout = max(fanout, 1)
            py_work = int(rng.choice([0, 1, 3, 10]))
        out.append(_synthetic(family, E, fanout, work, period, delay, target_ms, py_work))
    return out


# ---- environments ----------------------------------------------------------------------------

def _env_workloads(specs) -> list[Workload]:
    from seer import registry
    from seer.errors import EnvLoadError, UnknownEnvError

    out = []
    for mod_name, kwargs in specs:
        try:
            mod = registry.load(mod_name)  # checks parallel_env too
        except (UnknownEnvError, EnvLoadError):  # the envs are optional here
            continue

        def factory(workers, _mod=mod, _kw=dict(kwargs)):
            return _mod.parallel_env(workers=workers, max_cycles=1_000_000, **_kw)

        tag = "-".join(f"{k}{v}" for k, v in kwargs.items())
        out.append(Workload(f"{mod_name}-{tag}", f"env-{mod_name}", dict(kwargs), "env", factory))
    return out


TRAIN_ENVS = [("uav_swarm_v0", {"num_uavs": 8}), ("uav_swarm_v0", {"num_uavs": 96}),
              ("uav_swarm_v0", {"num_uavs": 512}), ("wireless_v0", {"scenario": "small"}),
              ("wireless_v0", {"scenario": "large"}), ("wireless_v0", {"scenario": "xlarge", "num_ue": 200})]
HELDOUT_ENVS = [("uav_swarm_v0", {"scenario": "default"}), ("uav_swarm_v0", {"scenario": "large"}),
                ("wireless_v0", {"scenario": "medium"}), ("wireless_v0", {"scenario": "xlarge"})]
QUICK_TRAIN_ENVS = [("uav_swarm_v0", {"num_uavs": 96}), ("wireless_v0", {"scenario": "large"})]
QUICK_HELDOUT_ENVS = [("uav_swarm_v0", {"scenario": "default"}), ("wireless_v0", {"scenario": "medium"})]


def training_workloads(n_synthetic: int, seed: int = 1, envs=True, quick: bool = False) -> list[Workload]:
    rng = np.random.default_rng(seed)
    out = sample_synthetic(rng, n_synthetic)
    if envs:
        out += _env_workloads(QUICK_TRAIN_ENVS if quick else TRAIN_ENVS)
    return out


def heldout_workloads(n_synthetic: int, seed: int = 1_000_003, envs=True, quick: bool = False) -> list[Workload]:
    """Workloads for evaluation: other random draws than training (another
    seed) and env sizes that are not in :data:`TRAIN_ENVS`."""
    rng = np.random.default_rng(seed)
    out = sample_synthetic(rng, n_synthetic)
    if envs:
        out += _env_workloads(QUICK_HELDOUT_ENVS if quick else HELDOUT_ENVS)
    return out


# ---- timing ------------------------------------------------------------------------------------

def workload_features(wl: Workload):
    """(features, object to time) of a workload, through the ``"auto"`` path."""
    from seer.stpa.selector import capture, select_for_model

    if wl.kind == "model":
        model = wl.make_model()
        with capture(features_only=True) as rec:
            select_for_model(model, capacity=wl.capacity)
        return (rec[0].features if rec else {}), model
    with capture(features_only=True) as rec:
        env = wl.factory("auto")
    env.close()
    return (rec[0].features if rec else {}), None


def time_model(model, workers: int, steps: int, step_length: float, capacity: int | None, warmup: int = 1) -> float:
    """Steps/s of ``model`` on a pool of ``workers`` (after ``warmup`` steps)."""
    from seer.runtime import Runtime

    with Runtime(model, workers=workers, capacity=capacity) as rt:
        t = 0.0
        for _ in range(warmup):
            t += step_length
            rt.step(t)
        gc_was = gc.isenabled()
        gc.disable()
        try:
            t0 = time.perf_counter()
            for _ in range(steps):
                t += step_length
                rt.step(t)
            el = time.perf_counter() - t0
        finally:
            if gc_was:
                gc.enable()
    return steps / el


def time_env(factory, workers: int, steps: int, warmup: int = 2) -> float:
    """Steps/s of a PettingZoo ParallelEnv (fixed random actions)."""
    env = factory(workers)
    try:
        env.reset(seed=0)
        acts = {}
        for i, a in enumerate(env.possible_agents):
            space = env.action_space(a)
            space.seed(i)
            acts[a] = space.sample()

        def one():
            if not env.agents:
                env.reset(seed=1)
            env.step({a: acts[a] for a in env.agents})

        for _ in range(warmup):
            one()
        gc_was = gc.isenabled()
        gc.disable()
        try:
            t0 = time.perf_counter()
            for _ in range(steps):
                one()
            el = time.perf_counter() - t0
        finally:
            if gc_was:
                gc.enable()
    finally:
        env.close()
    return steps / el


def plan_steps(seconds_per_step: float, target_s: float, lo: int = 3, hi: int = 400) -> int:
    if not (seconds_per_step > 0 and math.isfinite(seconds_per_step)):
        return lo
    return int(min(hi, max(lo, round(target_s / seconds_per_step))))


def measure(wl: Workload, sizes, reps: int = 2, target_s: float = 0.05, on_measure=None):
    """Features, best-of-``reps`` steps/s per pool size, steps per timing,
    and the timing function (``run(workers) -> steps/s``) of one workload.

    Sizes are measured round-robin, in a rotated order each repetition, so
    that drift in the machine's load hits all sizes alike.
    """
    feats, model = workload_features(wl)
    sizes = list(sizes)
    if wl.kind == "model":
        sps1 = time_model(model, 1, 2, wl.step_length, wl.capacity)
        steps = plan_steps(1.0 / sps1, target_s)
        run = lambda w: time_model(model, w, steps, wl.step_length, wl.capacity)  # noqa: E731
    else:
        sps1 = time_env(wl.factory, 1, 3, warmup=1)
        steps = plan_steps(1.0 / sps1, target_s, lo=3, hi=200)
        run = lambda w: time_env(wl.factory, w, steps)  # noqa: E731
    best: dict[int, float] = {}
    for r in range(reps):
        k = r % len(sizes)
        for w in sizes[k:] + sizes[:k]:
            sps = run(w)
            best[w] = max(best.get(w, 0.0), sps)
            if on_measure is not None:
                on_measure(wl, w)
    return feats, best, steps, run
