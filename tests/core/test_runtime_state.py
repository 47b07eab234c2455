"""A model's state arrays as the runtime takes them: plain data only, and
rebound arrays followed (Python models) or refused (native models), never
read after they were freed.  Handlers act only as the entities they were
handed."""

import gc

import numpy as np
import pytest

import seer
from seer.synthetic import SyntheticModel

pytestmark = pytest.mark.timeout(60)

TICK = 0


class RingModel(seer.Model):
    """Every entity ticks every 0.5 and records its right neighbour's
    snapshot of ``x``; ``reset`` rebinds ``x`` the way Python code usually
    does (a fresh array), filled with the seed."""

    lookahead = 0.5

    def __init__(self, n=6, dtype=np.float64):
        self.num_entities = n
        self.dtype = dtype
        self.kinds = [seer.EventKind("tick", self.on_tick)]
        self.state = {"x": np.zeros(n), "seen": np.zeros(n)}
        self.shared_state = ("x",)

    def reset(self, runtime, seed):
        self.state["x"] = np.full(self.num_entities, float(seed), self.dtype)  # rebound, not changed in place
        self.state["seen"] = np.zeros(self.num_entities)
        runtime.schedule(np.arange(self.num_entities), np.zeros(self.num_entities), np.zeros(self.num_entities, np.int32))

    def on_tick(self, ctx, events):
        e = events["entity"]
        ctx.state["seen"][e] = ctx.snapshot["x"][(e + 1) % self.num_entities]
        ctx.state["x"][e] += 1.0
        ctx.emit(e, events["time"] + 0.5, TICK)


@pytest.mark.parametrize("state", [
    {"x": np.empty(4, object)},
    {"x": np.zeros(4, [("a", np.float64), ("b", object)])},
], ids=["object", "struct-with-object"])
def test_a_state_array_holding_python_objects_is_refused_at_construction(state):
    class ObjectModel(seer.Model):
        num_entities, lookahead = 4, 1.0
        kinds = [seer.EventKind("tick", lambda ctx, ev: None)]

        def reset(self, runtime, seed):
            pass

    model = ObjectModel()
    model.state = state
    with pytest.raises(seer.InvalidArgumentError, match="model.state\\['x'\\] has dtype .*Python objects"):
        seer.Runtime(model)


def test_a_non_contiguous_state_array_is_refused_at_construction():
    model = RingModel()
    model.state["x"] = np.zeros((6, 2))[:, 0]
    with pytest.raises(seer.InvalidArgumentError, match="model.state\\['x'\\] is not C-contiguous"):
        seer.Runtime(model)


@pytest.mark.parametrize("workers", [1, 2])
def test_state_rebound_in_reset_is_what_the_next_snapshots_copy(workers):
    model = RingModel()
    with seer.Runtime(model, workers=workers, seed=3) as rt:
        rt.step(0.25)
        assert model.state["seen"].tolist() == [3.0] * 6
        for seed in (7, 11):
            rt.reset(seed)
            gc.collect()  # the arrays reset() dropped are gone (unless the runtime keeps them)
            junk = [np.full(6, -1.0) for _ in range(50)]  # reuse freed memory
            rt.step(0.25)
            assert model.state["seen"].tolist() == [float(seed)] * 6
            rt.step(0.75)  # the second window's snapshot: everyone ticked once
            assert model.state["seen"].tolist() == [seed + 1.0] * 6
            del junk


def test_state_rebound_to_another_dtype_or_shape_is_refused_at_the_next_step():
    model = RingModel(dtype=np.float32)
    with seer.Runtime(model, workers=1) as rt:  # built on the float64 arrays of __init__
        with pytest.raises(seer.InvalidArgumentError, match="model.state\\['x'\\] is now a float32 array .*expected "
                                                             "float64"):
            rt.step(1.0)
        model.state["x"] = np.zeros(6)
        rt.step(1.0)
        model.state["x"] = np.zeros(7)
        with pytest.raises(seer.InvalidArgumentError, match="shape \\(7,\\)"):
            rt.step(2.0)


def test_a_native_model_rebinding_its_state_is_told_to_change_it_in_place():
    model = SyntheticModel(8)
    with seer.Runtime(model, workers=2) as rt:
        rt.step(0.5)
        model.state["value"] = np.zeros(8)
        with pytest.raises(seer.InvalidArgumentError, match="'value'.* was rebound .*native code .*in place"):
            rt.step(1.0)


class OneEntityBatches(seer.Model):
    """Batches of one entity (python_batch=1); ``act(ctx, events)`` runs in
    entity 0's handler."""

    lookahead = 0.5

    def __init__(self, act):
        self.num_entities = 4
        self.act = act
        self.kinds = [seer.EventKind("tick", self.on_tick)]
        self.state = {"n": np.zeros(4, np.int64)}

    def reset(self, runtime, seed):
        self.state["n"][:] = 0
        runtime.schedule(np.arange(4), np.zeros(4), np.zeros(4, np.int32))

    def on_tick(self, ctx, events):
        if events["entity"][0] == 0 and self.act is not None:
            self.act(ctx, events)
        ctx.state["n"][events["entity"]] += 1
        ctx.emit(events["entity"], events["time"] + 0.5, TICK)


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("act, what", [
    (lambda ctx, ev: ctx.emit([2], ev["time"] + 1.0, TICK, sources=[3]), "ctx.emit\\(sources=...\\)"),
    (lambda ctx, ev: ctx.emit([2, 2], ev["time"] + 1.0, TICK, sources=[0, 3]), "ctx.emit\\(sources=...\\)"),
    (lambda ctx, ev: ctx.uniform([0, 3]), "ctx.uniform\\(\\)"),
], ids=["emit", "emit-mixed", "uniform"])
def test_a_handler_acting_as_an_entity_outside_its_batch_is_refused(workers, act, what):
    model = OneEntityBatches(act)
    with seer.Runtime(model, workers=workers, python_batch=1) as rt:
        with pytest.raises(seer.MisuseError, match=what + ": entity 3 .* not in the batch being handled "
                                                          "\\(entities \\[0\\]\\)"):
            rt.step(1.0)
        model.act = None
        rt.reset(0)
        rt.step(1.0)
        assert model.state["n"].tolist() == [2] * 4


def test_a_handler_may_emit_and_draw_as_any_entity_of_its_batch():
    draws = []

    def act(ctx, events):
        e = events["entity"]
        draws.append(ctx.uniform(np.repeat(e, 2)))
        ctx.emit(np.repeat(e, 2)[::-1], np.repeat(events["time"], 2) + 10.0, TICK, sources=np.repeat(e, 2))

    model = OneEntityBatches(act)
    with seer.Runtime(model, workers=1) as rt:  # one batch of all four entities
        rt.step(0.25)
    assert len(draws) == 1 and draws[0].shape == (8,)
