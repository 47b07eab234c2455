"""STPA under foreign load and on other machine shapes: the free-cores feature
(its range, and that it reacts to a busy process we start), the background load
and affinity tools, the hard rule (never more workers than usable cores unless
a measurement says faster, with a monkeypatched usable-core count of 1), the
parallelism bound, and the env and seer.vector workloads of the sweep."""

import json
import math
import os
import statistics
import threading
import time
import warnings

import numpy as np
import pytest

from seer import stpa
from seer.stpa import features as F
from seer.stpa import load as LD
from seer.stpa import model as M
from seer.stpa import lookup as LK
from seer.stpa import selector as S
from seer.stpa import train as T
from seer.stpa import tune as TU
from seer.stpa import workloads as W
from seer.synthetic import SyntheticModel


# ---- the load feature ---------------------------------------------------------------------------

def test_free_cores_is_in_range():
    usable = len(os.sched_getaffinity(0))
    for _ in range(3):
        fc = stpa.free_cores()
        assert 0.0 <= fc <= usable and math.isfinite(fc)
    assert 0.0 <= stpa.free_cores(1, seconds=0.002, rounds=1) <= 1.0
    with pytest.raises(ValueError, match="threads=0 is invalid"):
        stpa.free_cores(0)
    with pytest.raises(ValueError, match="seconds=-1"):
        stpa.free_cores(1, seconds=-1)


def test_foreign_load_counts_other_processes_busy_time_on_our_cpus(tmp_path, monkeypatch):
    stat = tmp_path / "stat"

    def write(cpu0, cpu1, cpu5):  # busy fields: user nice system _ _ irq softirq steal
        stat.write_text("cpu  0 0 0 0 0 0 0 0 0 0\n"
                        + "".join(f"cpu{i} {b} 0 0 9999 7 0 0 0 0 0\n" for i, b in ((0, cpu0), (1, cpu1), (5, cpu5)))
                        + "intr 1 2 3\n")

    clock = {"t": 100.0}
    monkeypatch.setattr(LD.time, "monotonic", lambda: clock["t"])
    monkeypatch.setattr(LD.os, "times", lambda: os.times_result((0.0, 0.0, 0.0, 0.0, 0.0)))
    write(0, 0, 0)
    load = LD.ForeignLoad(cpus=[0, 1], proc_root=tmp_path)
    hz = load._hz
    assert load.available and load.read() is None  # the first reading starts the clock
    clock["t"] += 2.0
    write(int(1.5 * hz), int(0.5 * hz), int(9 * hz))  # cpu5 is not ours: not counted
    assert load.read() == pytest.approx(1.0)  # 2 s of busy time over 2 s: one core's worth
    clock["t"] += 1.0
    monkeypatch.setattr(LD.os, "times", lambda: os.times_result((0.5, 0.0, 0.0, 0.0, 0.0)))
    write(int(2.0 * hz), int(1.0 * hz), 0)  # 1 s more busy, half of it ours
    assert load.read() == pytest.approx(0.5)
    assert LD.ForeignLoad(proc_root=tmp_path / "none").read() is None  # no /proc/stat: no reading


@pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="needs /proc/stat")
def test_foreign_load_sees_a_busy_process_and_not_our_own_threads():
    """Behavioural, on a shared machine whose other jobs come and go: against
    a reading taken idle just before, our own spinning threads add nothing and
    a busy process we start adds most of a core.  A few tries are allowed."""
    seen = []
    for _ in range(6):
        load = LD.ForeignLoad()
        load.read()
        time.sleep(0.3)
        idle = load.read()
        stpa.free_cores(seconds=0.05, rounds=3)  # our own threads spinning: not foreign
        own = load.read()
        with stpa.background_load(1):
            load.read()
            time.sleep(0.3)
            busy = load.read()
        seen.append((round(idle, 2), round(own, 2), round(busy, 2)))
        if own <= idle + 0.3 and busy >= idle + 0.6:
            return
    pytest.fail(f"ForeignLoad (idle, own threads spinning, one busy process) per try: {seen}")


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two usable cores")
def test_free_cores_drops_when_a_busy_process_runs():
    """Behavioural, not timing-exact: beside busy processes (one per usable
    core, pinned) the estimate falls below the quiet one by a margin.  The
    machine is shared, so a few tries are allowed."""
    cores = len(os.sched_getaffinity(0))
    seen = []
    for _ in range(4):
        quiet = statistics.median(stpa.free_cores(seconds=0.01) for _ in range(3))
        with stpa.background_load(cores) as pinned:
            assert len(pinned) == cores
            loaded = statistics.median(stpa.free_cores(seconds=0.01) for _ in range(3))
        seen.append((quiet, loaded))
        if loaded < 0.85 * quiet:
            return
    pytest.fail(f"free_cores did not drop under load (quiet, loaded) per try: {seen}")


def test_background_load_ends_its_processes():
    import subprocess

    started = []
    real = subprocess.Popen

    def spy(*a, **kw):
        p = real(*a, **kw)
        started.append(p)
        return p

    subprocess.Popen = spy
    try:
        with stpa.background_load(2):
            assert len(started) == 2 and all(p.poll() is None for p in started)
    finally:
        subprocess.Popen = real
    assert all(p.poll() is not None for p in started)
    with pytest.raises(ValueError, match="processes=-1 is invalid"):
        with stpa.background_load(-1):
            pass


def test_restricted_affinity_is_a_smaller_machine():
    cpus = sorted(os.sched_getaffinity(0))
    with stpa.restricted_affinity(cpus[:1]) as got:
        assert got == {cpus[0]}
        assert os.sched_getaffinity(0) == {cpus[0]}
        assert stpa.machine_features()["usable_cores"] == 1
        inner = []
        t = threading.Thread(target=lambda: inner.append(os.sched_getaffinity(0)))
        t.start()
        t.join()
        assert inner == [{cpus[0]}]  # threads started inside inherit the narrowed set
    assert sorted(os.sched_getaffinity(0)) == cpus
    assert stpa.machine_features()["usable_cores"] == len(cpus)
    with pytest.raises(ValueError, match="expected a non-empty subset"):
        with stpa.restricted_affinity([10_000]):
            pass


def test_cpu_pressure_from_a_fake_proc(tmp_path):
    (tmp_path / "pressure").mkdir()
    (tmp_path / "pressure" / "cpu").write_text("some avg10=12.50 avg60=3.00 avg300=1.00 total=5\n"
                                               "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
    assert LD.cpu_pressure(tmp_path) == pytest.approx(0.125)
    assert LD.cpu_pressure(tmp_path / "nowhere") is None


def test_the_probe_records_the_load():
    f = F.probe(SyntheticModel(64, work=100), budget_s=0.01)
    assert f.ok and 0 <= f["free_cores"] <= len(os.sched_getaffinity(0)) and f["probe_traced"] == 1.0
    d = M.derived_features({**stpa.machine_features(), **f})
    assert 0 <= d["free_core_share"] <= 1
    # a row measured before the feature existed reads as a quiet machine
    old = M.derived_features({"usable_cores": 2})
    assert old["free_cores"] == 2 and old["free_core_share"] == 1


# ---- the hard rule ---------------------------------------------------------------------------

class _MoreIsBetter:
    """An estimator that predicts ever better efficiency for more workers: a
    model trained elsewhere that would talk any machine into a big pool."""

    def predict(self, X):
        return 0.5 * np.asarray(X)[:, M.FEATURE_SCHEMA.index("workers")]


@pytest.fixture
def greedy():
    return M.StpaModel(estimator=_MoreIsBetter(), family="fake")


def _one_core(monkeypatch, free=1.0):
    hw = {**stpa.machine_features(), "usable_cores": 1, "physical_cores": 1}
    monkeypatch.setattr(S, "machine_features", lambda: dict(hw))
    monkeypatch.setattr(F, "usable_cores", lambda: 1)
    # the load reading as on an idle 1-core machine (the real one is shared: its reading would vary)
    monkeypatch.setattr(F, "load_features", lambda: {"free_cores": free})


def test_never_more_workers_than_usable_cores_unless_measured_faster(monkeypatch, greedy):
    _one_core(monkeypatch)
    S.clear_cache()
    sel = S.select_for_model(SyntheticModel(512, work=5000), stpa_model=greedy, use_cache=False)
    assert sel.workers == 1 and sel.source == "model"
    assert "hard rule" in sel.reason and max(sel.scores, key=sel.scores.get) > 1  # the model wanted more
    assert sel.features["probe2_workers"] == 1.0  # with one usable core the probe measures no pool of 2
    # the feature-level API obeys the same rule
    assert S.select_workers({**sel.features, "usable_cores": 1}, model=greedy) == 1
    assert greedy.choose({"usable_cores": 1}, [1, 2, 3, 4], 1) == 1


def test_a_loaded_one_core_probe_times_a_pool_of_two(monkeypatch, greedy):
    _one_core(monkeypatch, free=0.5)
    sel = S.select_for_model(SyntheticModel(256, work=2000), stpa_model=greedy, use_cache=False)
    assert sel.features["probe2_workers"] == 2.0 and "probe3_workers" not in sel.features
    # 2 workers only if the probe measured them faster; the greedy model's wish alone never counts
    assert sel.workers == (2 if M.probe_measured(sel.features)[2] >= 1 + M.MEASURED_GAIN else 1)


def test_a_size_measured_faster_may_exceed_the_cores(monkeypatch, greedy):
    _one_core(monkeypatch)

    def fake_probe(model, **kw):
        r = F.ProbeResult(F.static_workload_features(model))
        r.update(probe2_speedup=speedup, probe2_workers=2.0, free_cores=1.0, parallelism=50.0, active_entities=500.0)
        return r

    monkeypatch.setattr(S, "probe", fake_probe)
    for speedup, want in ((2.2, 2), (1.5, 1), (1.02, 1), (0.7, 1)):
        sel = S.select_for_model(SyntheticModel(512), stpa_model=greedy, use_cache=False)
        assert sel.workers == want, (speedup, sel)


def test_a_size_above_the_cores_measured_faster_wins_outright():
    scores = {1: 0.0, 2: 0.3, 3: -1.0, 4: -1.0}  # the model prefers 2
    raw = {"probe2_workers": 2.0, "probe2_speedup": 0.8, "probe3_workers": 3.0, "probe3_speedup": 2.1}
    assert M.choose_by_rules(scores, 2, raw) == 3  # a measurement on the workload beats a prediction
    assert M.choose_by_rules(scores, 2, {**raw, "probe3_speedup": 1.55}) == 2  # within the noise margin
    assert M.choose_by_rules(scores, 2, {**raw, "probe2_speedup": 1.45}) == 2  # not 2x as fast as 2 workers
    assert M.choose_by_rules({1: 0.0, 2: 0.3}, 2, raw) == 2  # 3 is not a candidate (a cap): never chosen


def test_a_probe_timing_far_from_the_prediction_overrules_it():
    raw = {"probe2_workers": 2.0, "probe2_speedup": 1.65}
    prefers_1, prefers_2 = {1: 0.0, 2: -0.2, 3: -1.0}, {1: 0.0, 2: 0.3, 3: -1.0}
    assert M.choose_by_rules(prefers_1, 2, raw) == 2  # timed 1.65x: the measurement wins
    assert M.choose_by_rules(prefers_1, 2, {**raw, "probe2_speedup": 1.3}) == 1  # within the probe's noise
    assert M.choose_by_rules(prefers_2, 2, {**raw, "probe2_speedup": 0.64}) == 1  # 2 workers timed 1.56x slower
    assert M.choose_by_rules(prefers_2, 2, {**raw, "probe2_speedup": 0.8}) == 2
    # a size the hard rules forbid is never chosen this way (1 usable core: 2 workers only if measured
    # 1 + MEASURED_GAIN times as fast as 1, which 1.65x is not)
    assert M.choose_by_rules({1: 0.0, 2: -0.2}, 1, raw) == 1
    assert M.measured_overrule(3, {1, 2, 3}, raw) is None  # the choice was not timed: nothing to compare


def test_a_probe_with_a_core_free_for_each_thread_overrules_sooner():
    prefers_1 = {1: 0.0, 2: -0.2, 3: -1.0}
    raw = {"probe2_workers": 2.0, "probe2_speedup": 1.3, "free_cores": 1.5}
    assert M.choose_by_rules(prefers_1, 2, raw) == 2  # a second core was free: 1.3x is beyond the noise
    assert M.choose_by_rules(prefers_1, 2, {**raw, "free_cores": 1.05}) == 1  # shared with foreign load
    assert M.choose_by_rules(prefers_1, 2, {k: v for k, v in raw.items() if k != "free_cores"}) == 1  # unknown
    assert M.choose_by_rules(prefers_1, 2, {**raw, "probe2_speedup": 1.2}) == 1  # within the noise still
    # the other way too: 2 predicted, 1 timed 1.3x as fast with a core free for each
    assert M.choose_by_rules({1: 0.0, 2: 0.3, 3: -1.0}, 2, {**raw, "probe2_speedup": 1 / 1.3}) == 1


def test_the_probe_times_the_pools_again_untraced_for_the_rules(monkeypatch):
    calls = []
    real = F._run_probe

    def spy(model, workers, *args, traced=True, **kw):
        calls.append((workers, traced))
        return real(model, workers, *args, traced=traced, **kw)

    monkeypatch.setattr(F, "_run_probe", spy)
    monkeypatch.setattr(F, "usable_cores", lambda: 2)
    monkeypatch.setattr(F, "load_features", lambda: {"free_cores": 2.0})
    f = F.probe(SyntheticModel(64, work=200), budget_s=0.01)
    assert f.ok
    # traced: the adaptive run, W, then 1, W again; untraced: 1, W, 1, W
    assert calls == [(1, True), (2, True), (1, True), (2, True), (1, False), (2, False), (1, False), (2, False)]
    assert f["probe2_speedup_best"] > 0 and f["probe2_speedup"] > 0
    # the rules read the fastest runs, unless they beat the traced ones by more than tracing costs
    consistent = f["probe2_speedup"] * M.TRACE_COST_MAX >= f["probe2_speedup_best"]
    assert M.probe_measured(f)[2] == (f["probe2_speedup_best"] if consistent else f["probe2_speedup"])


def test_the_rules_compare_the_fastest_runs_where_the_probe_made_untraced_ones():
    prefers_1 = {1: 0.0, 2: -0.2, 3: -1.0}
    traced_only = {"probe2_workers": 2.0, "probe2_speedup": 1.05}
    assert M.choose_by_rules(prefers_1, 2, traced_only) == 1
    # tracing hid the gain: with the untraced runs, 2 workers ran 1.5x as fast
    assert M.choose_by_rules(prefers_1, 2, {**traced_only, "probe2_speedup_best": 1.5}) == 2
    assert M.probe_measured({**traced_only, "probe2_speedup_best": 1.5}) == {1: 1.0, 2: 1.5}
    assert M.probe_measured(traced_only) == {1: 1.0, 2: 1.05}
    # runs that scattered (traced 0.29x, the best 1.32x: foreign load) do not get the lucky one's say
    scattered = {"probe2_workers": 2.0, "probe2_speedup": 0.29, "probe2_speedup_best": 1.32}
    assert M.probe_measured(scattered) == {1: 1.0, 2: 0.29}
    assert M.choose_by_rules(prefers_1, 2, {**scattered, "free_cores": 1.5}) == 1


def test_whole_step_probes_overrule_sooner_and_thin_predictions_yield_to_timings():
    scores = {1: 0.0, 2: -0.2, 3: -1.0}
    stepper = {"probe2_workers": 2.0, "probe2_speedup": 1.3, "probe_traced": 0.0}
    assert M.choose_by_rules(scores, 2, stepper) == 2  # whole steps timed 1.3x: beyond STEPPER_OVERRULE
    assert M.choose_by_rules(scores, 2, {**stepper, "probe_traced": 1.0}) == 1  # a model probe needs 1.4x
    assert M.choose_by_rules(scores, 2, {**stepper, "probe2_speedup": 1.1}) == 1  # within the noise
    # the model predicts 2 workers 2% faster, the probe timed them slower: the measurement decides
    thin = {1: 0.0, 2: 0.02, 3: -1.0}
    timed_slower = {"probe2_workers": 2.0, "probe2_speedup": 0.93}
    assert M.choose_by_rules(thin, 2, timed_slower) == 1
    assert M.choose_by_rules({**thin, 2: 0.2}, 2, timed_slower) == 2  # a clear prediction stands
    assert M.choose_by_rules(thin, 2, {**timed_slower, "probe2_speedup": 1.02}) == 2  # not timed slower


def test_uav_auto_workers_are_timed_on_whole_c_steps():
    from seer.envs import uav_swarm_v0

    with S.capture() as rec:
        env = uav_swarm_v0.parallel_env(scenario="small", workers="auto")
    env.close()
    chosen = [r for r in rec if r.source != "limited"]
    assert len(chosen) == 1 and chosen[0].features["probe_traced"] == 0.0
    assert chosen[0].features["entities"] == 8.0 and env.workers == chosen[0].workers
    with S.capture() as rec:  # the same config again: the choice is kept, not probed again
        uav_swarm_v0.parallel_env(scenario="small", workers="auto").close()
    assert [r for r in rec if r.source != "limited"][0] is chosen[0]


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two usable cores")
def test_a_loaded_probe_also_times_one_thread_above_the_cores(monkeypatch):
    cores = len(os.sched_getaffinity(0))
    monkeypatch.setattr(F, "load_features", lambda: {"free_cores": cores - 1.0})
    f = F.probe(SyntheticModel(64, work=200), budget_s=0.01)
    assert f.ok and f["probe3_workers"] == cores + 1 and f["probe3_speedup"] > 0
    monkeypatch.setattr(F, "load_features", lambda: {"free_cores": float(cores)})
    assert "probe3_workers" not in F.probe(SyntheticModel(64, work=200), budget_s=0.01)

    def make(workers):
        return (lambda: None), (lambda: None)

    monkeypatch.setattr(F, "load_features", lambda: {"free_cores": cores - 1.0})
    g = F.probe_stepper(make, {"entities": 4.0}, budget_s=0.003)
    assert g.ok and g["probe3_workers"] == cores + 1 and g["probe2_workers"] == 2 and g["probe_traced"] == 0.0


def test_the_stepper_probe_times_steps_after_a_pause_as_in_a_training_loop():
    # A pool's workers sleep when nothing comes for a while; a training loop
    # (a policy between steps) wakes them every step, so the probe must too:
    # every timed step comes at least PARK_S after the previous one ended,
    # and only the steps themselves are timed.
    ends, starts = [], []

    def make(workers):
        def step():
            starts.append(time.perf_counter())
            time.sleep(0.0002)
            ends.append(time.perf_counter())
        return step, (lambda: None)

    f = F.probe_stepper(make, {"entities": 4.0}, budget_s=0.02, measure_load=False)
    assert f.ok and len(starts) >= 6
    gaps = [b - a for a, b in zip(ends, starts[1:])]
    # only the warm-up step of each throwaway instance (at most 6) comes without a pause
    assert sum(g < F.PARK_S for g in gaps) <= 5 < len(gaps)
    assert 0.0002 <= f["step_ms"] / 1e3 < F.PARK_S  # the pauses are not in the step time


def test_allowed_sizes():
    assert M.allowed_sizes([1, 2, 3, 4], 2, {}) == [1, 2]
    assert M.allowed_sizes([1, 2, 3, 4], 1, {"probe2_workers": 2, "probe2_speedup": 2.3}) == [1, 2]
    assert M.allowed_sizes([1, 2, 3, 4], 1, {"probe2_workers": 2, "probe2_speedup": 1.6}) == [1]
    # on a big machine, a traced probe's parallelism bounds the pool
    big = {"parallelism": 5.3, "active_entities": 100.0, "probe_traced": 1.0}
    assert M.allowed_sizes(range(1, 129), 64, big) == [1, 2, 3, 4, 5, 6]
    assert M.allowed_sizes(range(1, 129), 64, {**big, "active_entities": 3.0}) == [1, 2, 3]
    assert M.allowed_sizes(range(1, 9), 8, {**big, "probe_traced": 0.0}) == list(range(1, 9))  # no trace: no bound
    assert M.allowed_sizes([2, 3], 1, {}) == [2]  # never empty


def test_allowed_sizes_stay_within_the_free_cores_unless_timed_faster():
    # 16 usable cores, 6 of them free: nothing above 6 without a measurement
    busy = {"free_cores": 6.3, "probe2_workers": 2.0, "probe2_speedup": 1.8}
    assert M.allowed_sizes(range(1, 33), 16, busy) == [1, 2, 3, 4, 5, 6]
    assert M.free_bound(16, busy) == 6 and M.free_bound(16, {}) == 16 and M.free_bound(4, {"free_cores": 0.2}) == 1
    # two cores beside one busy process (1.33 free): two workers only where the probe timed them faster
    loaded = {"free_cores": 1.33, "probe2_workers": 2.0}
    assert M.allowed_sizes([1, 2, 3, 4], 2, {**loaded, "probe2_speedup": 0.9}) == [1]
    assert M.allowed_sizes([1, 2, 3, 4], 2, {**loaded, "probe2_speedup": 1.1}) == [1, 2]
    assert M.allowed_sizes([1, 2, 3, 4], 2, {**loaded, "free_cores": 1.8, "probe2_speedup": 0.9}) == [1, 2]


def test_the_shipped_model_extrapolates_sensibly():
    """On machine shapes it was not trained on, the shipped model stays within
    the usable cores and within what the probe showed the work can use."""
    m, _ = LK.active_model(warn=False)
    assert m is not None
    feats = {**stpa.machine_features(), "entities": 4096.0, "busy_us_per_window": 5000.0, "parallelism": 400.0,
             "active_entities": 4096.0, "probe2_speedup": 1.9, "probe2_workers": 2.0, "native_kind_share": 1.0,
             "native_event_share": 1.0}
    for cores in (1, 2, 4, 16, 64):
        hw = {**feats, "usable_cores": cores, "physical_cores": cores, "free_cores": float(cores)}
        w = m.choose(hw, M.candidate_sizes(cores), cores)
        assert 1 <= w <= max(cores, 2 if cores == 1 and hw["probe2_speedup"] >= 1.05 else 1), (cores, w)
    small = {**feats, "usable_cores": 64, "physical_cores": 64, "parallelism": 3.0, "active_entities": 8.0}
    assert m.choose(small, M.candidate_sizes(64), 64) <= 3


# ---- the sweep's workloads -------------------------------------------------------------------------

def test_every_registered_scenario_is_a_workload_except_the_slow_ones():
    from seer import registry

    specs = W.registry_env_specs()
    names = {n for n, _ in specs}
    assert {"uav_swarm_v0", "wireless_v0"} <= names <= set(registry.available())
    uav = sorted(kw["scenario"] for n, kw in specs if n == "uav_swarm_v0")
    assert uav == sorted(s for s in registry.scenarios(registry.load("uav_swarm_v0")) if s not in W.SKIP_SCENARIOS)
    assert not any(kw.get("scenario") in W.SKIP_SCENARIOS for _, kw in specs)
    assert ("wireless_v0", {"scenario": "small", "full_buffer": True}) in specs  # as `seer bench` runs it


def test_env_and_vector_workloads_appear_in_a_tiny_sweep(tmp_path, monkeypatch):
    from seer.cli.tune import vector_workloads

    monkeypatch.setenv("SEER_CACHE_DIR", str(tmp_path / "cache"))
    vec = vector_workloads([("uav_swarm_v0", "small", 2)])
    assert [w.name for w in vec] == ["vector-uav_swarm_v0-small-x2"] and vec[0].env == "uav_swarm_v0"
    TU.run_tune(quick=True, n_train=1, reps=1, target_s=0.003, sizes=[1, 2], include_shipped=False, progress=False,
                do_train=False, extra_workloads=vec, loaded_share=1.0, log=lambda *a: None)
    rows = [json.loads(line) for line in (tmp_path / "cache" / "stpa_dataset.jsonl").read_text().splitlines()]
    fams = {(r["family"], r["condition"]) for r in rows}
    for fam in ("env-uav_swarm_v0", "env-wireless_v0", "vector-uav_swarm_v0"):
        assert (fam, "quiet") in fams and (fam, "loaded") in fams, fams
    vrow = next(r for r in rows if r["family"] == "vector-uav_swarm_v0")
    assert vrow["features"]["probe_traced"] == 0.0 and vrow["features"]["entities"] == 2.0
    assert {r["workers"] for r in rows} == {1, 2}


def test_an_env_whose_model_cannot_be_probed_is_stepped_instead(monkeypatch):
    # the module, not the package: with examples/ on sys.path (the example scripts put their folder
    # there), an uninstalled seer_consensus/ imports as an empty namespace package
    consensus_v0 = pytest.importorskip("seer_consensus.consensus_v0", reason="the example plug-in env is not installed")

    # a model that schedules its events only in the env's own reset (as consensus_v0 did before it
    # scheduled its first ticks in Model.reset too): a runtime probe sees no events
    monkeypatch.setattr(consensus_v0.ConsensusModel, "reset", lambda self, runtime, seed: None)
    wl = W._env_workloads([("consensus_v0", {"scenario": "small"})])[0]
    feats, _ = W.workload_features(wl)
    assert feats["probe_traced"] == 0.0 and feats["entities"] == 8.0 and feats["step_ms"] > 0


def _rows(family, workload, speedup, n=2):
    feats = {"usable_cores": 2, "entities": 64.0, "busy_us_per_window": 100.0 * speedup, "probe2_speedup": speedup}
    return [T.make_row("s", workload, family, {}, w, 100.0 * (speedup if w == 2 else 1.0), feats) for w in (1, 2)]


def test_whole_envs_are_held_out():
    rows = []
    for i in range(6):
        rows += _rows("synthetic-native", f"syn{i}", 0.5 + 0.3 * i)
    for sc in ("a", "b"):
        rows += _rows("env-foo", f"foo-{sc}", 1.6) + _rows("vector-foo", f"vector-foo-{sc}", 1.7)
        rows += _rows("env-bar", f"bar-{sc}", 0.6)
    models = TU.env_held_out_models(rows, {"foo", None}, "gbr")
    assert set(models) == {"foo"}
    # trained on everything but foo's single and vector rows
    assert models["foo"].meta["workloads"] == 6 + 2 and "env-foo" not in models["foo"].meta["families"]
    assert "vector-foo" not in models["foo"].meta["families"]
    # cross-validation keeps an env's scenarios (single and vector) in one fold
    tab = T.build_table(rows)
    g = T.cv_groups(tab)
    foo = {int(x) for x, key in zip(g, [tab.keys[i] for i in tab.groups]) if "foo" in key[1]}
    assert len(foo) == 1


@pytest.fixture(autouse=True)
def _clear():
    yield
    S.clear_cache()
