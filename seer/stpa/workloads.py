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
    """One workload: a model factory (``kind="model"``), an env factory
    (``kind="env"``) or a stepper factory (``kind="stepper"``: what only steps
    as a whole, as a vector env of copies)."""

    name: str
    family: str
    params: dict
    kind: str = "model"
    factory: Callable[..., Any] | None = None  # model: () -> Model; env: (workers) -> ParallelEnv;
    # stepper: (workers) -> (step, close)
    step_length: float = 1.0
    capacity: int | None = None
    env: str | None = None     # the registered env it runs (whole envs are held out together)
    static: dict | None = None  # stepper: what it declares (entities, kinds, native share)

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

#: Scenarios left out of the sweep: a step of them costs many times one of
#: the largest swept scenario, so one probe and twelve timings of each would
#: outlast the rest of the env sweep (uav_swarm_v0 xxlarge: 65536 UAVs;
#: wireless_v0 xxlarge: 10000 UEs).
SKIP_SCENARIOS = {"xxlarge"}
#: Extra keyword sets per env id: wireless_v0 runs as `seer bench` runs it
#: (mobile-env's full buffer) as well as event-driven (its default).
ENV_VARIANTS = {"wireless_v0": ({}, {"full_buffer": True})}
#: (env id, scenario, copies) run through seer.vector's thread backend (built by the CLI layer).
VECTOR_SPECS = [("uav_swarm_v0", "small", 16), ("uav_swarm_v0", "default", 8), ("wireless_v0", "medium", 8),
                ("consensus_v0", "default", 8)]
QUICK_ENV_SPECS = [("uav_swarm_v0", {"scenario": "default"}), ("wireless_v0", {"scenario": "large"})]


def registry_env_specs(skip=SKIP_SCENARIOS) -> list[tuple[str, dict]]:
    """(env id, kwargs) for every scenario of every registered env (outside
    packages' too), without the ``skip`` scenarios."""
    from seer import registry

    out = []
    for name in sorted(registry.available()):
        try:
            scenarios = list(registry.scenarios(registry.load(name)) or [])
        except Exception:  # noqa: BLE001  (a broken outside package must not sink the sweep)
            continue
        for sc in scenarios or [None]:
            if sc in skip:
                continue
            for extra in ENV_VARIANTS.get(name, ({},)):
                out.append((name, ({"scenario": sc} if sc is not None else {}) | dict(extra)))
    return out


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
            try:
                return _mod.parallel_env(workers=workers, max_cycles=1_000_000, **_kw)
            except TypeError:  # an outside env without max_cycles: its episode resets are timed too
                return _mod.parallel_env(workers=workers, **_kw)

        tag = "-".join(f"{k}{v}" for k, v in kwargs.items())
        out.append(Workload(f"{mod_name}-{tag}" if tag else mod_name, f"env-{mod_name}", dict(kwargs), "env",
                            factory, env=mod_name))
    return out


def env_workloads(quick: bool = False) -> list[Workload]:
    """Single-env workloads of the registered envs (a couple in ``quick`` mode)."""
    return _env_workloads(QUICK_ENV_SPECS if quick else registry_env_specs())


def training_workloads(n_synthetic: int, seed: int = 1, envs=True, quick: bool = False, extra=()) -> list[Workload]:
    """Synthetic draws of ``seed``, the registered envs' scenarios and ``extra`` (e.g. vector workloads)."""
    rng = np.random.default_rng(seed)
    out = sample_synthetic(rng, n_synthetic)
    if envs:
        out += env_workloads(quick) + list(extra)
    return out


def heldout_workloads(n_synthetic: int, seed: int = 1_000_003, envs=True, quick: bool = False, extra=()) -> list[Workload]:
    """Workloads for evaluation: other random draws than training (another
    seed), and the env workloads, which the evaluation decides with a model
    trained without that env's rows (whole envs held out)."""
    rng = np.random.default_rng(seed)
    out = sample_synthetic(rng, n_synthetic)
    if envs:
        out += env_workloads(quick) + list(extra)
    return out


def env_of(family: str) -> str | None:
    """The env id of a workload family (``env-X`` / ``vector-X`` -> ``X``); None for synthetic ones."""
    for prefix in ("env-", "vector-"):
        if family.startswith(prefix):
            return family[len(prefix):]
    return None


def stepper_workload(name: str, env: str, params: dict, make, static: dict) -> Workload:
    """A workload that only steps as a whole (a vector env of copies):
    ``make(workers) -> (step, close)``; ``static`` as for
    :func:`~seer.stpa.features.probe_stepper`."""
    return Workload(name, f"vector-{env}", dict(params), "stepper", make, env=env, static=dict(static))


def _env_step(env):
    """``step()`` of a ParallelEnv with fixed random actions (agent ``i``'s
    space seeded with ``i``): ``env`` is reset with seed 0 here, and with
    seed 1 whenever its episode is over."""
    env.reset(seed=0)
    acts = {}
    for i, a in enumerate(env.possible_agents):
        space = env.action_space(a)
        space.seed(i)
        acts[a] = space.sample()

    def step():
        if not env.agents:
            env.reset(seed=1)
        env.step({a: acts[a] for a in env.agents})

    return step


def vector_stepper(envs):
    """``(step, close)`` of a Gymnasium vector env stepped with one fixed random
    action (its action space seeded with 0), after ``reset(seed=0)``: how the
    ``vector-*`` workloads are timed, and how ``seer.vector`` probes copies."""
    try:
        envs.reset(seed=0)
        envs.action_space.seed(0)
        action = envs.action_space.sample()
    except BaseException:
        envs.close()
        raise
    return (lambda: envs.step(action)), envs.close


def _env_stepper(factory):
    """``make(workers) -> (step, close)`` for a ParallelEnv factory, fixed random actions."""
    def make(workers):
        env = factory(workers)
        return _env_step(env), env.close
    return make


# ---- timing ------------------------------------------------------------------------------------

def workload_features(wl: Workload):
    """(features, object to time) of a workload, through the path ``"auto"`` takes.

    A model goes through :func:`~seer.stpa.select_for_model`, an env through
    its constructor with ``workers="auto"``, a stepper through
    :func:`~seer.stpa.select_for_stepper`.  An env whose model cannot be
    probed through a runtime (its events are scheduled outside ``reset``,
    as consensus_v0's are) is probed by stepping whole env instances instead.
    """
    from seer.stpa.selector import capture, select_for_model, select_for_stepper

    if wl.kind == "model":
        model = wl.make_model()
        with capture(features_only=True) as rec:
            select_for_model(model, capacity=wl.capacity)
        return (rec[0].features if rec else {}), model
    if wl.kind == "stepper":
        with capture(features_only=True) as rec:
            select_for_stepper(wl.factory, wl.static or {})
        # the last record: building the copies inside the probe records their own (limited) choices first
        return (rec[-1].features if rec else {}), None
    with capture(features_only=True) as rec:
        env = wl.factory("auto")
    env.close()
    feats = rec[0].features if rec else {}
    if not rec or rec[0].reason:  # the runtime probe failed: step the env itself
        static = {k: feats[k] for k in ("entities", "kinds", "native_kind_share", "lookahead") if k in feats}
        with capture(features_only=True) as rec2:
            select_for_stepper(_env_stepper(wl.factory), static)
        feats = rec2[-1].features if rec2 else feats
    return feats, None


def _rate(step, steps: int, warmup: int) -> float:
    """Calls per second of ``step()`` over ``steps`` calls after ``warmup``
    untimed ones; the garbage collector is off while the clock runs, so a
    collection does not land in one pool size's timing and not another's."""
    for _ in range(warmup):
        step()
    gc_was = gc.isenabled()
    gc.disable()
    try:
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        el = time.perf_counter() - t0
    finally:
        if gc_was:
            gc.enable()
    return steps / el


def time_stepper(make, workers: int, steps: int, warmup: int = 2) -> float:
    """Steps/s of a stepper (``make(workers) -> (step, close)``) after ``warmup`` steps."""
    step, close = make(workers)
    try:
        return _rate(step, steps, warmup)
    finally:
        close()


def time_model(model, workers: int, steps: int, step_length: float, capacity: int | None, warmup: int = 1) -> float:
    """Steps/s of ``model`` on a pool of ``workers`` (after ``warmup`` steps)."""
    from seer.runtime import Runtime

    with Runtime(model, workers=workers, capacity=capacity) as rt:
        t = 0.0

        def one():
            nonlocal t
            t += step_length
            rt.step(t)

        return _rate(one, steps, warmup)


def time_env(factory, workers: int, steps: int, warmup: int = 2) -> float:
    """Steps/s of a PettingZoo ParallelEnv (fixed random actions)."""
    env = factory(workers)
    try:
        return _rate(_env_step(env), steps, warmup)
    finally:
        env.close()


def plan_steps(seconds_per_step: float, target_s: float, lo: int = 3, hi: int = 400) -> int:
    if not (seconds_per_step > 0 and math.isfinite(seconds_per_step)):
        return lo
    return int(min(hi, max(lo, round(target_s / seconds_per_step))))


class Throughputs(dict):
    """Steps/s per pool size: the throughput over all repetitions (total steps
    over total time, what a user of the pool size gets); ``best`` holds each
    size's best single repetition."""

    best: dict


def measure(wl: Workload, sizes, reps: int = 2, target_s: float = 0.05, on_measure=None):
    """Features, steps/s per pool size (:class:`Throughputs`), steps per
    timing, and the timing function (``run(workers) -> steps/s``) of one workload.

    Sizes are measured round-robin, in a rotated order each repetition, so
    that drift in the machine's load hits all sizes alike.  A size's figure
    is its throughput over all ``reps`` (the harmonic mean of the
    repetitions' steps/s), not its best repetition: on a loaded machine the
    best of a few runs rewards the sizes whose timings scatter most.
    """
    feats, model = workload_features(wl)
    sizes = list(sizes)
    if wl.kind == "model":
        sps1 = time_model(model, 1, 2, wl.step_length, wl.capacity)
        steps = plan_steps(1.0 / sps1, target_s)
        run = lambda w: time_model(model, w, steps, wl.step_length, wl.capacity)  # noqa: E731
    elif wl.kind == "stepper":
        sps1 = time_stepper(wl.factory, 1, 3, warmup=1)
        steps = plan_steps(1.0 / sps1, target_s, lo=3, hi=200)
        run = lambda w: time_stepper(wl.factory, w, steps)  # noqa: E731
    else:
        sps1 = time_env(wl.factory, 1, 3, warmup=1)
        steps = plan_steps(1.0 / sps1, target_s, lo=3, hi=200)
        run = lambda w: time_env(wl.factory, w, steps)  # noqa: E731
    seconds: dict[int, float] = {}
    best: dict[int, float] = {}
    for r in range(reps):
        k = r % len(sizes)
        for w in sizes[k:] + sizes[:k]:
            sps = run(w)
            seconds[w] = seconds.get(w, 0.0) + steps / sps
            best[w] = max(best.get(w, 0.0), sps)
            if on_measure is not None:
                on_measure(wl, w)
    out = Throughputs({w: reps * steps / seconds[w] for w in sizes})
    out.best = best
    return feats, out, steps, run
