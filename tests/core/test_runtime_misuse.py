"""seer.Runtime under misuse: two threads on one runtime, calls after close,
close from another thread during a step, calls back into the runtime from
its own handlers.  Each ends in a SEER error within bounded time."""

import threading
import time

import numpy as np
import pytest

import seer
from seer.synthetic import PythonSyntheticModel, SyntheticModel

pytestmark = pytest.mark.timeout(60)

TICK = 0


class CallbackModel(seer.Model):
    """Entities tick every 0.1; the tick handler calls ``hook(ctx, events)``."""

    lookahead = 0.1

    def __init__(self, n=4, hook=None):
        self.num_entities = n
        self.hook = hook
        self.kinds = [seer.EventKind("tick", self.on_tick)]
        self.state = {"ticks": np.zeros(n, np.int64)}
        self.kept = []

    def reset(self, runtime, seed):
        self.state["ticks"][:] = 0
        runtime.schedule(np.arange(self.num_entities), np.zeros(self.num_entities), np.zeros(self.num_entities, np.int32))

    def on_tick(self, ctx, events):
        me = events["entity"]
        ctx.state["ticks"][me] += 1
        if self.hook is not None:
            self.hook(ctx, events)
        ctx.emit(me, events["time"] + 0.1, TICK)


def test_concurrent_step_is_refused_not_deadlocked():
    inside, release = threading.Event(), threading.Event()

    def hook(ctx, events):
        inside.set()
        release.wait(10)

    rt = seer.Runtime(CallbackModel(hook=hook), workers=2)
    errors = []
    t = threading.Thread(target=lambda: rt.step(0.05))
    t.start()
    try:
        assert inside.wait(10)
        for call in (lambda: rt.step(1.0), lambda: rt.reset(1), lambda: rt.schedule([0], [5.0], [0])):
            with pytest.raises(seer.MisuseError, match="another call .*step\\(\\).* another thread") as info:
                call()
            errors.append(info.value)
    finally:
        release.set()
        t.join(10)
    assert not t.is_alive()
    rt.step(0.5)  # the runtime is still usable afterwards
    assert rt.model.state["ticks"].tolist() == [5] * 4
    rt.close()
    assert all(isinstance(e, seer.SeerError) for e in errors)


@pytest.mark.parametrize("call, pattern", [
    (lambda rt: rt.step(1.0), "step\\(\\) called from inside a handler"),
    (lambda rt: rt.reset(3), "reset\\(\\) called from inside a handler"),
    (lambda rt: rt.close(), "close\\(\\) called from inside a handler"),
    (lambda rt: rt.schedule([0], [9.0], [0]), "schedule\\(\\) called from inside a handler"),
    (lambda rt: rt.relabel([3, 2, 1, 0]), "relabel\\(\\) called from inside a handler"),
    (lambda rt: rt.pool_stats().__enter__(), "pool_stats\\(\\) called from inside a handler"),
])
@pytest.mark.parametrize("workers", [1, 2])
def test_calls_into_the_runtime_from_its_own_handler_are_refused(workers, call, pattern):
    holder = {}
    model = CallbackModel(hook=lambda ctx, events: call(holder["rt"]))
    with seer.Runtime(model, workers=workers) as rt:
        holder["rt"] = rt
        with pytest.raises(seer.MisuseError, match=pattern):
            rt.step(0.05)
        assert not rt.closed
        model.hook = None
        rt.reset(0)  # usable again after a reset
        rt.step(0.25)
        assert model.state["ticks"].tolist() == [3] * 4


def test_every_method_after_close_raises_closed_error():
    rt = seer.Runtime(SyntheticModel(8), workers=2, trace=True)
    rt.step(0.5)
    rt.close()
    rt.close()  # idempotent
    for name, call in [
        ("step", lambda: rt.step(1.0)),
        ("step_quick", lambda: rt.step_quick(1.0)),
        ("reset", lambda: rt.reset(0)),
        ("schedule", lambda: rt.schedule([0], [1.0], [0])),
        ("events_total", rt.events_total),
        ("native_handle", lambda: rt.native_handle),
        ("collect_trace", rt.collect_trace),
        ("check_steppable", rt.check_steppable),
        ("pool_stats", lambda: rt.pool_stats().__enter__()),
    ]:
        with pytest.raises(seer.ClosedError, match="closed"):
            call()
    assert rt.closed and "closed" in repr(rt)
    assert isinstance(seer.ClosedError("x"), RuntimeError)


def test_handler_context_outside_its_call_is_refused():
    kept = []
    model = CallbackModel(hook=lambda ctx, events: kept.append(ctx))
    with seer.Runtime(model, workers=1) as rt:
        rt.step(0.05)
        ctx = kept[0]
        with pytest.raises(seer.MisuseError, match="outside a handler"):
            ctx.emit([0], [1.0], [0], sources=[0])
        with pytest.raises(seer.MisuseError, match="outside a handler"):
            ctx.uniform([0])
        with pytest.raises(seer.MisuseError, match="outside a handler"):
            ctx.window_end
    with pytest.raises(seer.ClosedError):
        ctx.emit([0], [1.0], [0], sources=[0])


@pytest.mark.parametrize("workers", [1, 2])
def test_event_batches_kept_by_a_handler_stay_valid(workers):
    kept = []
    model = CallbackModel(n=6, hook=lambda ctx, events: kept.append((events, events.copy())))
    rt = seer.Runtime(model, workers=workers)
    for k in range(1, 6):
        rt.step(k * 0.1)
    rt.close()
    assert len(kept) >= 5
    for batch, snapshot in kept:  # still what the handler was handed, after close
        assert batch.tobytes() == snapshot.tobytes()
        assert set(batch["kind"].tolist()) == {TICK}


@pytest.mark.parametrize("make", [lambda: SyntheticModel(64, work=2000, period=1e-3, delay=1e-3),
                                  lambda: PythonSyntheticModel(16, work=1, period=1e-3, delay=1e-3)],
                         ids=["native", "python"])
@pytest.mark.parametrize("workers", [1, 2])
def test_close_from_another_thread_interrupts_the_step(make, workers):
    rt = seer.Runtime(make(), workers=workers)
    outcome = {}

    def stepper():
        try:
            rt.step(1e9)  # would run for hours
            outcome["result"] = "returned"
        except BaseException as exc:
            outcome["result"] = exc

    t = threading.Thread(target=stepper)
    t.start()
    time.sleep(0.3)
    start = time.monotonic()
    rt.close()
    waited = time.monotonic() - start
    t.join(20)
    assert not t.is_alive()
    assert isinstance(outcome["result"], seer.ClosedError), outcome
    assert "closed by another thread during step()" in str(outcome["result"])
    assert rt.closed and waited < 10
    with pytest.raises(seer.ClosedError):
        rt.step(1.0)
    assert not [th for th in threading.enumerate() if th.name.startswith("seer-worker")
                and th.is_alive() and th in getattr(rt._core, "threads", [])]


@pytest.mark.parametrize("seed", [2**64, 2**70, -1, 1.5, True, "3"])
def test_seed_outside_64_bits_is_refused(seed):
    with pytest.raises(ValueError, match="seed=.*expected an integer in \\[0, 2\\*\\*64\\)"):
        seer.Runtime(SyntheticModel(4), seed=seed)
    with seer.Runtime(SyntheticModel(4)) as rt:
        with pytest.raises(ValueError, match="seed="):
            rt.reset(seed)


def test_largest_seed_is_accepted_and_distinct():
    states = []
    for seed in (2**64 - 1, 2**63):
        model = PythonSyntheticModel(8, fanout=1)
        with seer.Runtime(model, seed=seed) as rt:
            rt.step(1.0)
            states.append(model.state["value"].copy())
    assert states[0].tobytes() != states[1].tobytes()


def test_its_queue_takes_turns_with_the_runtime():
    # A runtime's steps take lanes without the push handshake, so its queue
    # refuses pushes, pops and releases from another thread during a step,
    # and from its handlers, instead of losing events.
    inside, release = threading.Event(), threading.Event()
    from_handler = []

    def hook(ctx, events):
        if not inside.is_set():
            try:
                rt.queue.push_many([1], [5.0], [TICK])
            except seer.MisuseError as exc:
                from_handler.append(exc)
            inside.set()
            release.wait(10)

    rt = seer.Runtime(CallbackModel(hook=hook), workers=2)
    rt.reset(0)
    t = threading.Thread(target=lambda: rt.step(0.05))
    t.start()
    try:
        assert inside.wait(10)
        calls = {"push_many": lambda: rt.queue.push_many([0], [5.0], [TICK]),
                 "push": lambda: rt.queue.push(0, 5.0, TICK),
                 "pop": lambda: rt.queue.pop(1.0),
                 "release": lambda: rt.queue.release([0]),
                 "clear": lambda: rt.queue.clear()}
        for name, call in calls.items():
            with pytest.raises(seer.MisuseError, match="another call .*step\\(\\).* another thread"):
                call()
    finally:
        release.set()
        t.join(10)
    assert not t.is_alive()
    assert len(from_handler) == 1 and "inside a handler" in str(from_handler[0])
    before = len(rt.queue)
    rt.queue.push_many([0], [5.0], [TICK])  # between steps: fine
    assert len(rt.queue) == before + 1
    rt.step(0.2)
    rt.close()
    rt.queue.push_many([1], [9.0], [TICK])  # closed: a plain queue again
    assert len(rt.queue) >= 1


@pytest.mark.parametrize("cap", [0, -1, "9", 9.0, True, 2**40])
def test_trace_capacity_is_a_positive_integer(cap):
    # "9" used to be taken as 9, and 0 recorded nothing without a word.
    with pytest.raises(seer.InvalidArgumentError, match=f"trace_capacity={cap!r} is invalid: expected an integer"):
        seer.Runtime(SyntheticModel(4), trace=True, trace_capacity=cap)
    with seer.Runtime(SyntheticModel(4), trace=True, trace_capacity=np.int64(3)) as rt:
        rt.step(1.0)
        assert len(rt.trace.events) == 3 and rt.trace.dropped > 0
