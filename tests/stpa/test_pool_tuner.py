"""seer.stpa.PoolTuner: the comparison of neighbouring pool sizes on the real
steps that ``workers="auto"`` attaches; driven here by step times of known
shape, then on real runtimes and envs (results unchanged by its resizes)."""

import threading
import time

import numpy as np
import pytest

import seer
from seer import stpa
from seer._host import usable_cores
from seer.envs import uav_swarm_v0, wireless_v0
from seer.synthetic import PythonSyntheticModel, SyntheticModel

pytestmark = pytest.mark.timeout(180)


def drive(tuner, seconds_of, steps, start):
    """Run ``steps`` steps: each on the size the tuner asked for, taking
    ``seconds_of(size, k)``; returns the sizes the steps ran on."""
    ran, w = [], start
    for k in range(steps):
        ran.append(w)
        w = tuner.next_workers(seconds_of(w, k), w)
    return ran


def test_climbs_to_the_fastest_size_and_settles():
    table = {1: 1.0, 2: 0.6, 3: 0.45, 4: 0.5, 5: 0.9}
    tuner = stpa.PoolTuner(1, cores=8, visit_s=0.0, recheck_s=1e9)
    ran = drive(tuner, lambda w, k: table[w], 200, 1)
    assert tuner.settled and tuner.workers == 3
    assert [(h["base"], h["candidate"], h["moved"]) for h in tuner.history] == [(1, 2, True), (2, 3, True),
                                                                                 (3, 4, False)]
    assert set(ran[-50:]) == {3}
    assert max(ran) == 4  # it never tried beyond the first size that lost


def test_looks_down_when_up_loses_and_keeps_a_size_within_min_gain():
    tuner = stpa.PoolTuner(3, cores=8, visit_s=0.0, recheck_s=1e9)
    drive(tuner, lambda w, k: {2: 0.5, 3: 0.7, 4: 0.8}.get(w, 1.0), 100, 3)
    assert tuner.workers == 2
    assert [(h["base"], h["candidate"]) for h in tuner.history][:2] == [(3, 4), (3, 2)]
    flat = stpa.PoolTuner(2, cores=8, visit_s=0.0, recheck_s=1e9, min_gain=0.05)
    drive(flat, lambda w, k: 1.0 - 0.02 * w, 100, 2)  # 2% faster per worker: inside min_gain
    assert flat.settled and flat.workers == 2


def test_tries_one_size_above_the_cores_and_takes_it_only_for_a_clear_gain():
    tuner = stpa.PoolTuner(1, cores=2, visit_s=0.0, recheck_s=1e9)
    ran = drive(tuner, lambda w, k: 1.0 / w, 300, 1)
    assert max(ran) == 3 and tuner.workers == 3  # a third more per step: taken
    small = stpa.PoolTuner(1, cores=2, visit_s=0.0, recheck_s=1e9)
    ran = drive(small, lambda w, k: {1: 1.0, 2: 0.6, 3: 0.57}[w], 300, 1)
    assert max(ran) == 3 and small.workers == 2  # 5% more: under above_gain, kept within the cores
    over = stpa.PoolTuner(3, cores=2, visit_s=0.0, recheck_s=1e9)
    ran = drive(over, lambda w, k: {1: 1.0, 2: 0.6, 3: 0.8, 4: 0.5, 5: 0.1}[w], 100, 3)
    assert max(ran) == 4 and over.workers == 4  # started above the cores: one more is tried from there
    down = stpa.PoolTuner(3, cores=2, visit_s=0.0, recheck_s=1e9, above_cores=False)
    drive(down, lambda w, k: {1: 1.0, 2: 0.5, 3: 0.48}[w], 100, 3)
    assert down.workers == 2  # above the cores, 4% faster is not enough to stay there
    # without above_cores (runtimes with Python handlers) it stays within the cores
    inside = stpa.PoolTuner(1, cores=2, visit_s=0.0, recheck_s=1e9, above_cores=False)
    ran = drive(inside, lambda w, k: 1.0 / w, 300, 1)
    assert max(ran) == 2 and inside.workers == 2
    capped = stpa.PoolTuner(1, cores=8, max_workers=2, visit_s=0.0)
    assert max(drive(capped, lambda w, k: 1.0 / w, 300, 1)) == 2


def test_nothing_to_try_costs_nothing():
    one = stpa.PoolTuner(1, cores=4, max_workers=1)
    assert one.settled
    assert drive(one, lambda w, k: 1.0, 1000, 1) == [1] * 1000
    assert one.history == []


def test_untimed_steps_after_a_resize_and_outliers_do_not_decide():
    # the first step on a new pool pays its threads' start: never timed
    def seconds(w, k, last=[None]):
        cold = last[0] is not None and last[0] != w
        last[0] = w
        return (50.0 if cold else 0.0) + {1: 1.0, 2: 0.7, 3: 0.9}[w]

    tuner = stpa.PoolTuner(1, cores=2, visit_s=0.0, settle_steps=1)
    drive(tuner, seconds, 100, 1)
    assert tuner.workers == 2
    # one slow visit (foreign load for a moment) is outvoted: each size scores its fastest visit
    noisy = stpa.PoolTuner(1, cores=2, visit_s=0.0, settle_steps=0, recheck_s=1e9)
    drive(noisy, lambda w, k: {1: 1.0, 2: 0.7, 3: 0.9}[w] * (9.0 if k == 1 else 1.0), 100, 1)
    assert noisy.workers == 2


def test_checks_again_when_settled_and_follows_a_change_of_load():
    state = {"load": False}

    def seconds(w, k):
        if k == 150:
            state["load"] = True  # from here on a second worker has no core
        return {1: 1.0, 2: 0.6, 3: 0.9}[w] if not state["load"] else {1: 1.0, 2: 1.8, 3: 2.5}[w]

    tuner = stpa.PoolTuner(1, cores=2, visit_s=0.0, recheck_s=30.0, recheck_max_s=30.0)
    ran = drive(tuner, seconds, 600, 1)
    assert 2 in ran[:150] and ran[149] == 2
    assert ran[-1] == 1 and tuner.workers == 1
    assert any(h["base"] == 2 and h["candidate"] == 1 and h["moved"] for h in tuner.history)


def test_rechecks_cost_a_bounded_share_of_the_stepping_time():
    # short steps, and a neighbour four times slower: what the rounds add stays small
    table = {1: 1e-5, 2: 4e-5}
    tuner = stpa.PoolTuner(1, cores=2, recheck_s=0.1)
    ran = drive(tuner, lambda w, k: table[w], 200_000, 1)
    spent = sum(table[w] for w in ran)
    ideal = len(ran) * table[1]
    assert tuner.workers == 1 and len(tuner.history) >= 3  # it did look again, several times
    assert spent / ideal < 1.05
    # the waits grew: the last rounds are further apart than the first
    steps = [h["step"] for h in tuner.history]
    assert steps[-1] - steps[-2] > steps[1] - steps[0]


def test_a_change_that_leaves_the_kept_size_as_fast_is_found_by_the_capped_rechecks():
    # a host where a second thread pays only some of the time: one worker's steps run as fast
    # throughout, so no alarm fires when two start paying again, and only a recheck finds it
    flip = 80_000  # 80 s of 1 ms steps on the slow-pool host: the waits have grown to their cap
    table = {"slow": {1: 1e-3, 2: 1.3e-3, 3: 1.6e-3}, "fast": {1: 1e-3, 2: 0.7e-3, 3: 0.9e-3}}
    tuner = stpa.PoolTuner(1, cores=2, load=False)

    def seconds(w, k):
        return table["slow" if k < flip else "fast"][w]

    ran = drive(tuner, seconds, flip + 20_000, 1)
    assert ran[flip - 1] == 1 and tuner.alarms == 0
    found = next((k for k in range(flip, len(ran)) if ran[k] == 2 and ran[k + 1:k + 200] == [2] * 199), None)
    assert found is not None, "two workers paid again for 20 s of steps and the tuner stayed on one"
    # within the longest wait (8 s of steps) and one round, where a minute's wait would leave it on 1
    assert (found - flip) * 1e-3 < tuner.recheck_max_s + 1.0
    assert ran[-1] == 2


def test_a_settled_tuner_looks_again_at_once_when_its_steps_slow_down():
    state = {"bad": False}

    def seconds(w, k):
        if k == 400:
            state["bad"] = True  # the kept pool turns slow (the scheduler, or load)
        if w == 2:
            return 3.0 if state["bad"] else 0.5
        return {1: 1.0, 3: 4.0}[w]

    tuner = stpa.PoolTuner(1, cores=2, visit_s=0.0, recheck_s=1e9)
    ran = drive(tuner, seconds, 700, 1)
    assert ran[399] == 2 and tuner.alarms == 1
    # not at the next recheck (1e9 s away): once the last round's cost floor
    # (20x its step time) has passed
    assert ran[-1] == 1 and tuner.workers == 1
    calm = stpa.PoolTuner(1, cores=2, visit_s=0.0, recheck_s=1e9)
    drive(calm, lambda w, k: {1: 1.0, 2: 0.5, 3: 0.9}[w] * (1.3 if k % 7 == 0 else 1.0), 400, 1)
    assert calm.alarms == 0 and calm.workers == 2  # ordinary scatter raises no alarm


def test_settled_it_takes_steps_in_batches_of_a_visit():
    tuner = stpa.PoolTuner(1, cores=2, visit_s=0.01, settle_steps=0, recheck_s=1e9, delay_s=0.0)
    drive(tuner, lambda w, k: 0.001 * {1: 1.0, 2: 2.0}[w], 200, 1)
    assert tuner.settled and tuner.hold_s == 0.01
    steps = tuner.steps
    assert tuner.next_workers(0.04, 1, 40) == 1 and tuner.steps == steps + 40  # 1 ms a step, as measured
    assert tuner.next_workers(2.0, 1, 400) == 1 and tuner.alarms == 0  # 5 ms a step: one slow block
    tuner.next_workers(2.0, 1, 400)  # a second one, past the rounds' cost floor: a round starts
    assert tuner.alarms == 1 and not tuner.settled and tuner.hold_s == 0.0


def test_a_short_run_pays_nothing_the_first_round_waits_for_delay_s():
    tuner = stpa.PoolTuner(1, cores=2, delay_s=0.5, settle_steps=0, recheck_s=1e9)
    ran = drive(tuner, lambda w, k: 0.001 * {1: 1.0, 2: 0.5, 3: 0.8}[w], 1000, 1)
    assert set(ran[:500]) == {1} and tuner.history  # 0.5 s of 1 ms steps on the start size, then a round
    assert 2 in ran[500:560] and tuner.workers == 2 and tuner.history[0]["step"] > 500
    # seer tune's evaluation (settle) starts the first round at once
    quick = stpa.PoolTuner(1, cores=2, delay_s=0.5, visit_s=0.0)
    assert quick.settle(lambda w: {1: 1.0, 2: 0.5, 3: 0.8}[w]) == 2


def test_visits_gather_short_steps_until_visit_s():
    tuner = stpa.PoolTuner(1, cores=2, visit_s=0.01, visit_steps=1000, settle_steps=0, recheck_s=1e9,
                           delay_s=0.0)
    ran = drive(tuner, lambda w, k: 0.001 * {1: 1.0, 2: 0.5, 3: 0.7}[w], 200, 1)
    # six visits of ten 1 ms steps each on the first pool (fewer on the faster one)
    assert ran[:10] == [1] * 10 and ran[10] == 2
    assert tuner.workers == 2


class ScriptedLoad:
    """A ForeignLoad stand-in: other processes' cores, set by the test."""

    def __init__(self):
        self.cores = 0.0
        self.readings = 0

    def read(self):
        self.readings += 1
        return self.cores


def test_load_that_arrives_or_leaves_starts_a_round_even_where_the_steps_run_no_slower(monkeypatch):
    # One worker beside a busy process on two cores runs as fast as quiet:
    # only the load reading can tell that the comparison is due.
    monkeypatch.setattr(stpa.PoolTuner, "LOAD_PERIOD_S", 0.0)
    load = ScriptedLoad()
    times = {1: 1.0, 2: 0.6, 3: 0.9}
    tuner = stpa.PoolTuner(1, cores=2, visit_s=0.0, recheck_s=1e9, load=load)
    ran = drive(tuner, lambda w, k: times[w], 300, 1)
    assert tuner.settled and tuner.workers == 2 and tuner.load_alarms == 0 and load.readings > 10
    times[2], times[3] = 1.2, 1.5  # the busy process arrives: more workers now lose
    load.cores = 1.0
    ran = drive(tuner, lambda w, k: times[w], 100, 2)
    assert tuner.load_alarms == 1 and tuner.workers == 1
    # at once (the last round was long ago): two far readings, 2 against 3, then 2 against 1
    assert ran.index(3) <= 3 and ran.index(1) <= 3 + 2 * 2 * tuner.visits
    times[2], times[3] = 0.6, 0.9  # it leaves: one worker's steps are unchanged, yet two win again
    load.cores = 0.0
    ran = drive(tuner, lambda w, k: times[w], 200, 1)
    assert tuner.load_alarms == 2 and tuner.workers == 2


def test_steady_or_flickering_load_starts_no_round(monkeypatch):
    monkeypatch.setattr(stpa.PoolTuner, "LOAD_PERIOD_S", 0.0)
    load = ScriptedLoad()
    tuner = stpa.PoolTuner(1, cores=2, visit_s=0.0, recheck_s=1e9, load=load)
    for k in range(400):
        load.cores = 1.0 if k % 2 else 0.3  # one far reading at a time: a burst, not a change
        tuner.next_workers({1: 1.0, 2: 0.6, 3: 0.9}[tuner.workers] if tuner.settled else 1.0, tuner.workers)
    assert tuner.load_alarms == 0
    assert stpa.PoolTuner(1, cores=2)._load is None  # a tuner of given cores reads no load
    with pytest.raises(ValueError, match="load=3"):
        stpa.PoolTuner(1, load=3)


def test_steps_that_turn_much_faster_start_a_round_too():
    def seconds(w, k):
        fast = k >= 300  # the load that slowed the kept pool is gone
        return {1: 0.5 if fast else 1.0, 2: 0.26 if fast else 1.2, 3: 2.0}[w]

    tuner = stpa.PoolTuner(1, cores=2, visit_s=0.0, recheck_s=1e9, load=False)
    ran = drive(tuner, seconds, 600, 1)
    assert ran[299] == 1 and tuner.alarms == 1 and tuner.workers == 2


@pytest.mark.parametrize("bad", [{"start": 0}, {"start": 1.5}, {"visits": 0}, {"min_gain": -0.1},
                                 {"min_gain": float("nan")}, {"cores": 0}, {"max_workers": True},
                                 {"visit_s": "1"}, {"settle_steps": -1}])
def test_bad_arguments_name_the_value(bad):
    kw = {"start": 1, **bad}
    name, value = next(iter(bad.items()))
    with pytest.raises(ValueError, match=f"{name}={value!r}".replace("(", r"\(").replace(")", r"\)")):
        stpa.PoolTuner(kw.pop("start"), **kw)


def test_on_a_runtime_results_do_not_change_while_it_tunes():
    def run(tuned):
        model = SyntheticModel(97, fanout=3, work=50, period=0.1, delay=0.05)
        with seer.Runtime(model, workers=1, seed=2) as rt:
            if tuned:  # compare on every step: as many resizes as it can make
                rt.tuner = stpa.PoolTuner(1, cores=4, visit_s=0.0, settle_steps=0, visits=2, recheck_s=0.0,
                                          delay_s=0.0)
            sizes = []
            for k in range(60):
                sizes.append(rt.workers)
                rt.step((k + 1) * 0.25)
            return {n: a.copy() for n, a in model.state.items()}, rt.events_total(), sizes

    ref, tuned = run(False), run(True)
    assert len(set(tuned[2])) >= 2  # it really resized
    assert tuned[1] == ref[1]
    for name, arr in ref[0].items():
        assert arr.tobytes() == tuned[0][name].tobytes(), name


def test_attach_tuner_respects_the_pool_limit_and_traces():
    with seer.Runtime(SyntheticModel(16), workers=1) as rt:
        with stpa.default_pool_limit(1):
            assert stpa.attach_tuner(rt) is None
        assert rt.tuner is None
        got = stpa.attach_tuner(rt)
        assert got is not None and rt.tuner is got and got.hi == usable_cores() + 1  # native handlers
    with seer.Runtime(PythonSyntheticModel(16), workers=1) as rt:
        inside = stpa.attach_tuner(rt)  # Python handlers: within the cores (one core: nothing to try)
        assert inside is None if usable_cores() == 1 else inside.hi == usable_cores()
    with seer.Runtime(SyntheticModel(16), workers=2, trace=True) as traced:
        assert stpa.attach_tuner(traced) is None


def _episode(mod, scenario, workers, steps, force_tuning=False):
    env = mod.parallel_env(scenario=scenario, workers=workers)
    try:
        if force_tuning:
            env.unwrapped.runtime.tuner = stpa.PoolTuner(1, cores=3, visit_s=0.0, settle_steps=0, visits=1,
                                                          recheck_s=0.0, delay_s=0.0)
        obs, _ = env.reset(seed=11)
        rng = np.random.default_rng(0)
        out, sizes = [], []
        for _ in range(steps):
            if not env.agents:
                break
            acts = {}
            for a in env.agents:
                space = env.action_space(a)
                acts[a] = (rng.uniform(space.low, space.high).astype(space.dtype)
                           if hasattr(space, "low") else int(rng.integers(space.n)))
            obs, rew, term, trunc, _ = env.step(acts)
            sizes.append(env.workers)
            out.append((sorted(obs), np.stack([obs[a] for a in sorted(obs)]), [rew[a] for a in sorted(rew)]))
        return out, sizes
    finally:
        env.close()


@pytest.mark.parametrize("mod,scenario", [(uav_swarm_v0, "small"), (wireless_v0, "small")], ids=["uav", "wireless"])
def test_envs_give_the_same_episode_while_their_pool_is_tuned(mod, scenario):
    ref, _ = _episode(mod, scenario, 1, 40)
    got, sizes = _episode(mod, scenario, 1, 40, force_tuning=True)
    assert len(set(sizes)) >= 2  # the pool really moved between steps
    assert len(got) == len(ref)
    for (a1, o1, r1), (a2, o2, r2) in zip(ref, got):
        assert a1 == a2 and o1.tobytes() == o2.tobytes() and r1 == r2


@pytest.mark.parametrize("mod", [uav_swarm_v0, wireless_v0], ids=["uav", "wireless"])
def test_auto_envs_attach_a_tuner_and_integers_do_not(mod):
    auto = mod.parallel_env(scenario="small", workers="auto")
    fixed = mod.parallel_env(scenario="small", workers=2)
    try:
        tuner = auto.unwrapped.runtime.tuner
        assert isinstance(tuner, stpa.PoolTuner) and tuner.workers == auto.workers
        assert fixed.unwrapped.runtime.tuner is None
    finally:
        auto.close()
        fixed.close()


def test_make_runtime_takes_an_integer_as_given_and_tunes_auto():
    with stpa.make_runtime(SyntheticModel(16), 2, capacity=4096) as rt:
        assert rt.workers == 2 and rt.tuner is None and rt.queue.capacity == 4096
    asked = []
    with stpa.make_runtime(SyntheticModel(16), "auto", choose=lambda: asked.append(1) or 2, max_workers=3) as rt:
        assert asked == [1] and rt.workers == 2  # the env's own choice
        assert isinstance(rt.tuner, stpa.PoolTuner) and rt.tuner.workers == 2 and rt.tuner.hi == 3
    with stpa.make_runtime(SyntheticModel(16), 3, choose=lambda: 1 / 0) as rt:  # only "auto" asks
        assert rt.workers == 3
    with pytest.raises(seer.InvalidArgumentError, match="workers='many' is invalid"):
        stpa.make_runtime(SyntheticModel(16), "many")
    with pytest.raises(seer.InvalidArgumentError, match=r"choose\(\) returned 0"):
        stpa.make_runtime(SyntheticModel(16), "auto", choose=lambda: 0)


class _Recorder:
    """A tuner that records what it is told and keeps the pool size."""

    def __init__(self):
        self.calls = []

    def next_workers(self, seconds, workers, steps):
        self.calls.append((seconds, workers, steps))
        return workers


def test_native_step_reports_the_body_time_and_nothing_when_it_fails():
    with seer.Runtime(SyntheticModel(16), workers=1) as rt:
        rt.tuner = rec = _Recorder()
        with rt.native_step():
            time.sleep(0.02)  # C code stepping the runtime would run here
        assert len(rec.calls) == 1
        seconds, workers, steps = rec.calls[0]
        assert 0.02 <= seconds < 5.0 and workers == 1 and steps == 1
        with pytest.raises(KeyError):
            with rt.native_step():
                raise KeyError("the env's step failed")
        assert len(rec.calls) == 1  # a failed step reports nothing
        with rt.native_step():  # held: another thread may not step meanwhile
            errors = []

            def other():
                try:
                    rt.step(1.0)
                except seer.MisuseError as exc:
                    errors.append(exc)

            t = threading.Thread(target=other)
            t.start()
            t.join(timeout=60)
            assert not t.is_alive() and len(errors) == 1
        rt.step(1.0)  # and free again after it
    with pytest.raises(seer.ClosedError):
        with rt.native_step():
            pass
