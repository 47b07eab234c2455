"""Model-based fuzzing of `seer.Runtime`'s caller-facing paths.

Hypothesis drives two runtimes over the same Python model, one on 1 worker
and one on 2, through random sequences of schedule (times before ``rt.now``
among them), step, reset, handlers that try to act as an entity outside
their batch (``ctx.emit(sources=X)``, ``ctx.uniform(X)``), and a third,
throwaway runtime closed by a timer thread while its caller keeps calling.
Each call must end as the reference says (success, PastEventError,
MisuseError naming X, ClosedError asking for reset), identically on both
pool sizes, with bit-identical state after every step.
"""

from __future__ import annotations

import math
import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

import seer

N = 6
TICK, MSG = 0, 1
PERIOD = 0.25  # entity 0 ticks at 0, 0.25, 0.5, ... after every reset
STEPS = [0.125, 0.375, 0.625, 1.0]  # binary fractions: rt.now stays exact


class FuzzModel(seer.Model):
    lookahead = PERIOD

    def __init__(self):
        self.num_entities = N
        self.kinds = [seer.EventKind("tick", self.on_tick, batched=False),
                      seer.EventKind("msg", self.on_msg, batched=False)]
        self.state = {"value": np.zeros(N), "msgs": np.zeros(N, np.int64)}
        self.shared_state = ("value",)
        self.foreign: tuple[str, int] | None = None  # entity 0's handler acts as this entity

    def reset(self, runtime, seed):
        self.state["value"][:] = np.arange(N) * 0.5
        self.state["msgs"][:] = 0
        runtime.schedule(np.arange(N), np.zeros(N), np.full(N, TICK, np.int32))

    def on_tick(self, ctx, ev):
        e, t = int(ev["entity"]), float(ev["time"])
        if e == 0 and self.foreign is not None:
            how, x = self.foreign
            if how == "emit":
                ctx.emit([1], [t + 1.0], [MSG], sources=[x])
            else:
                ctx.uniform([x])
        u = float(ctx.uniform(e)[0])
        ctx.state["value"][e] += u + 0.01 * ctx.snapshot["value"][(e + 1) % N]
        ctx.emit(min(int(u * N), N - 1), t + PERIOD, MSG, int(u * 1000))
        ctx.emit(e, t + PERIOD, TICK)

    def on_msg(self, ctx, ev):
        e = int(ev["entity"])
        ctx.state["value"][e] = ctx.state["value"][e] * 0.5 + float(ev["payload"]) * 1e-3
        ctx.state["msgs"][e] += 1


def pool_block(rt):
    with rt.pool_stats():
        rt.step(rt.now + 0.125)


def outcome(call):
    try:
        call()
    except seer.SeerError as exc:
        return type(exc), str(exc).partition("\n")[0]
    return None, ""


class RuntimeFuzz(RuleBasedStateMachine):
    @initialize()
    def setup(self):
        self.models = [FuzzModel(), FuzzModel()]
        self.rts = [seer.Runtime(m, workers=w, python_batch=1) for m, w in zip(self.models, (1, 2))]
        self.now = 0.0
        self.failed = False

    def teardown(self):
        for rt in getattr(self, "rts", []):
            rt.close()

    def both(self, call):
        got = [outcome(lambda: call(rt)) for rt in self.rts]
        assert got[0][0] is got[1][0], f"1 worker: {got[0]}, 2 workers: {got[1]}"
        return got[0]

    @rule(e=st.integers(0, N - 1), back=st.sampled_from([-0.5, -0.125, 0.0, 0.25, 1.0]),
          payload=st.integers(0, 999))
    def schedule(self, e, back, payload):
        t = self.now + back
        pending = [len(rt.queue) for rt in self.rts]
        cls, msg = self.both(lambda rt: rt.schedule([e], [t], [MSG], [payload]))
        if self.failed:
            assert cls is seer.ClosedError and "reset() before scheduling again" in msg
        elif back < 0:
            assert cls is seer.PastEventError and f"before the runtime's current time {self.now}" in msg
        else:
            assert cls is None, msg
            return
        assert [len(rt.queue) for rt in self.rts] == pending  # a refusal pushes nothing

    @rule(dt=st.sampled_from(STEPS), foreign=st.none() | st.tuples(st.sampled_from(["emit", "uniform"]),
                                                                    st.integers(0, N - 1)))
    def step(self, dt, foreign):
        for m in self.models:
            m.foreign = foreign
        h = self.now + dt
        cls, msg = self.both(lambda rt: rt.step(h))
        for m in self.models:
            m.foreign = None
        zero_ticks = math.ceil(self.now / PERIOD) * PERIOD < h  # entity 0 handles a tick in [now, h)
        if self.failed:
            assert cls is seer.ClosedError and "reset() before stepping again" in msg
        elif foreign is not None and foreign[1] != 0 and zero_ticks:
            assert cls is seer.MisuseError, msg
            assert f"entity {foreign[1]} (at index 0) is not in the batch being handled (entities [0])" in msg
            self.failed = True
        else:
            assert cls is None, msg
            self.now = h
            a, b = (m.state for m in self.models)
            assert a["value"].tobytes() == b["value"].tobytes() and a["msgs"].tolist() == b["msgs"].tolist()

    @rule(seed=st.integers(0, 2**64 - 1))
    def reset(self, seed):
        assert self.both(lambda rt: rt.reset(seed)) == (None, "")
        self.now, self.failed = 0.0, False

    @rule(delay=st.sampled_from([0.0, 0.0005, 0.002, 0.01]),
          ops=st.lists(st.sampled_from(["step", "reset", "schedule", "events_total", "relabel", "resize",
                                        "pool_stats"]), min_size=1, max_size=6))
    def close_race(self, delay, ops):
        rt = seer.Runtime(FuzzModel(), workers=2)
        timer = threading.Timer(delay, rt.close)
        timer.start()
        calls = {
            "step": lambda: rt.step(rt.now + 0.125),
            "reset": lambda: rt.reset(1),
            "schedule": lambda: rt.schedule([0], [rt.now + 1.0], [MSG]),
            "events_total": rt.events_total,
            "relabel": lambda: rt.relabel(np.roll(np.arange(N), 1)),
            "resize": lambda: rt.resize(1 + (rt.workers % 2)),
            "pool_stats": lambda: pool_block(rt),
        }
        closed = False
        try:
            for k in range(400):
                cls, msg = outcome(calls[ops[k % len(ops)]])
                if cls is not None:
                    assert cls is seer.ClosedError and "closed" in msg, (cls, msg)
                    closed = True
                elif closed:
                    raise AssertionError(f"{ops[k % len(ops)]} succeeded after the runtime was closed")
                if closed and rt.closed:
                    break
        finally:
            timer.join(10)
            rt.close()
        assert rt.closed and not timer.is_alive()

    @invariant()
    def same_clock(self):
        if hasattr(self, "rts"):
            assert self.rts[0].now == self.rts[1].now


RuntimeFuzz.TestCase.settings = settings(
    max_examples=60, stateful_step_count=25, deadline=None, suppress_health_check=[HealthCheck.too_slow],
)
TestRuntimeFuzz = pytest.mark.timeout(600)(RuntimeFuzz.TestCase)
