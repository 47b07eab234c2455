"""seer.Runtime.resize: a pool resized between steps gives the same results as
one fixed pool, joins the threads it drops, and refuses misuse; a runtime's
tuner is asked after every step and its answer becomes the next pool."""

import threading

import numpy as np
import pytest

import seer
from seer.synthetic import PythonSyntheticModel, SyntheticModel

pytestmark = pytest.mark.timeout(120)

MAKERS = {
    "native": lambda: SyntheticModel(97, fanout=3, work=50, period=0.1, delay=0.05),
    "python": lambda: PythonSyntheticModel(61, fanout=2, work=3, period=0.1, delay=0.05),
}


def run(make, sizes, dt=0.25, seed=5):
    model = make()
    with seer.Runtime(model, workers=sizes[0], seed=seed) as rt:
        events = []
        for k, w in enumerate(sizes):
            rt.resize(w)
            assert rt.workers == w
            events.append(rt.step((k + 1) * dt).events)
        total = rt.events_total()
        return {name: arr.copy() for name, arr in model.state.items()}, events, total, len(rt.queue)


def pool_threads():
    return sum(t.name.startswith("seer-worker-") for t in threading.enumerate())


@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_resizing_between_steps_gives_the_results_of_one_fixed_pool(kind):
    sizes = [1, 2, 4, 3, 1, 1, 2, 8, 2, 1, 3, 3, 4, 1, 2, 2]
    reference = run(MAKERS[kind], [1] * len(sizes))
    assert reference[2] > 1000  # the workload really ran
    got = run(MAKERS[kind], sizes)
    assert got[1] == reference[1]  # every step handled the same events
    assert got[2] == reference[2] and got[3] == reference[3]  # events_total spans the pools
    for name, arr in reference[0].items():
        assert arr.tobytes() == got[0][name].tobytes(), name


def test_resize_starts_and_joins_exactly_the_pool_threads():
    before = pool_threads()
    with seer.Runtime(SyntheticModel(32), workers=1) as rt:
        for k, w in enumerate((4, 2, 1, 3)):
            rt.resize(w)
            assert pool_threads() == before + w - 1
            rt.step(float(k + 1))
    assert pool_threads() == before


def test_resize_refuses_bad_values_traced_runtimes_and_closed_runtimes():
    rt = seer.Runtime(SyntheticModel(8), workers=2)
    for bad in (0, -1, 2.5, "2", True, None, 5000):
        with pytest.raises(ValueError, match=repr(bad) if not isinstance(bad, str) else "'2'"):
            rt.resize(bad)
    assert rt.workers == 2
    rt.close()
    with pytest.raises(seer.ClosedError):
        rt.resize(1)
    with seer.Runtime(SyntheticModel(8), workers=2, trace=True) as traced:
        with pytest.raises(seer.InvalidArgumentError, match="trace"):
            traced.resize(1)
        assert traced.workers == 2
        traced.step(1.0)


class TickModel(seer.Model):
    """Each entity ticks once at time 0; the tick handler calls ``hook(ctx, events)``."""

    lookahead = 0.1

    def __init__(self, n, hook):
        self.num_entities = n
        self.hook = hook
        self.kinds = [seer.EventKind("tick", lambda ctx, events: self.hook(ctx, events))]
        self.state = {"x": np.zeros(n)}

    def reset(self, runtime, seed):
        n = self.num_entities
        runtime.schedule(np.arange(n), np.zeros(n), np.zeros(n, np.int32))


def test_resize_from_a_handler_is_misuse_and_the_step_fails_cleanly():
    seen, target = [], []

    def hook(ctx, events):
        if not target:
            return
        try:
            target[0].resize(1)
        except seer.MisuseError as exc:
            seen.append(exc)
            raise

    with seer.Runtime(TickModel(4, hook), workers=2) as rt:
        target.append(rt)
        # a SEER error from a handler reaches the caller as itself, with the handler named
        with pytest.raises(seer.MisuseError, match="resize.*inside a handler.*in handler 'tick'"):
            rt.step(1.0)
        assert seen
        assert rt.workers == 2
        rt.reset(1)  # and the runtime goes on
        target.clear()
        rt.resize(1)
        assert rt.workers == 1


def test_resize_while_another_thread_steps_is_refused():
    inside, release = threading.Event(), threading.Event()

    def hook(ctx, events):
        inside.set()
        release.wait(10)

    with seer.Runtime(TickModel(2, hook), workers=2) as rt:
        t = threading.Thread(target=lambda: rt.step(0.05))
        t.start()
        try:
            assert inside.wait(10)
            with pytest.raises(seer.MisuseError, match="another thread"):
                rt.resize(1)
        finally:
            release.set()
            t.join(10)
        assert rt.workers == 2


class ScriptedTuner:
    """Answers the sizes of a script in turn, and records what it was told."""

    def __init__(self, script):
        self.script = list(script)
        self.told = []

    def next_workers(self, seconds, workers, steps):
        assert steps == 1  # no hold_s: called after every step
        self.told.append((seconds, workers))
        return self.script[len(self.told) - 1]


def test_a_tuner_is_told_every_step_and_its_answer_is_the_next_pool():
    script = [2, 3, 1, 1, 4, 2]
    reference = run(MAKERS["native"], [1] * (len(script) + 1))
    model = MAKERS["native"]()
    tuner = ScriptedTuner(script)
    with seer.Runtime(model, workers=1, seed=5) as rt:
        rt.tuner = tuner
        ran_on = []
        for k in range(len(script) + 1):
            if k == len(script):
                rt.tuner = None  # no more answers: the pool stays
            ran_on.append(rt.workers)
            rt.step((k + 1) * 0.25)
        state = {name: arr.copy() for name, arr in model.state.items()}
    assert ran_on == [1] + script
    assert [w for _, w in tuner.told] == ran_on[:-1]
    assert all(s > 0 for s, _ in tuner.told)
    for name, arr in reference[0].items():
        assert arr.tobytes() == state[name].tobytes(), name


class HoldingTuner:
    """Asks to be called once per ``hold_s`` of step time."""

    hold_s = 0.05

    def __init__(self):
        self.calls = []

    def next_workers(self, seconds, workers, steps):
        self.calls.append((seconds, steps))
        return workers


def test_a_tuner_with_hold_s_gets_the_steps_in_batches():
    with seer.Runtime(SyntheticModel(16), workers=1) as rt:
        tuner = HoldingTuner()
        rt.tuner = tuner
        for k in range(5):
            rt.report_step_time(0.02)  # what C-stepped envs report
        assert tuner.calls == [(pytest.approx(0.06), 3)]  # two steps (0.04 s) held back
        rt.report_step_time(0.01)
        assert tuner.calls[-1] == (pytest.approx(0.05), 3)


def test_tuner_must_have_next_workers():
    with seer.Runtime(SyntheticModel(8), workers=1) as rt:
        with pytest.raises(TypeError, match="next_workers"):
            rt.tuner = object()
        assert rt.tuner is None
