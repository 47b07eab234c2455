"""Debug mode (``seer.Runtime(..., debug=True)`` or ``SEER_DEBUG=1``): a
Python handler that writes another entity's row fails the step with an
error naming kind, entity, array and row; without it the same model runs
silently; results are unchanged by it."""

import numpy as np
import pytest

import seer

pytestmark = pytest.mark.timeout(60)

TICK = 0


class NeighbourModel(seer.Model):
    """Each entity ticks every 0.5; with ``bad`` entity 2 also writes entity 3's ``x`` row
    (``x`` is shared state: other entities read it through ``ctx.snapshot``, only its owner writes it)."""

    lookahead = 0.5

    def __init__(self, n=6, bad=True, batched=True):
        self.num_entities = n
        self.bad = bad
        self.kinds = [seer.EventKind("tick", self.on_tick, batched=batched)]
        self.state = {"x": np.zeros(n), "v": np.zeros((n, 2), np.int32)}
        self.shared_state = ("x",)

    def reset(self, runtime, seed):
        for a in self.state.values():
            a[...] = 0
        runtime.schedule(np.arange(self.num_entities), np.zeros(self.num_entities),
                         np.zeros(self.num_entities, np.int32))

    def on_tick(self, ctx, events):
        e = np.atleast_1d(events["entity"])
        n = self.num_entities
        ctx.state["x"][e] = ctx.snapshot["x"][(e + 1) % n] + ctx.uniform(e)
        ctx.state["v"][e, 0] += 1
        if self.bad and 2 in e:
            ctx.state["x"][3] = -1.0
        ctx.emit(e, np.atleast_1d(events["time"]) + 0.5, TICK)


@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("workers", [1, 3])
def test_a_handler_writing_a_neighbours_row_fails_the_step_in_debug_mode(workers, batched):
    with seer.Runtime(NeighbourModel(batched=batched), workers, debug=True, python_batch=1) as rt:
        assert rt.debug is True
        # as ctx.emit's misuse errors: the step raises the SEER error itself, with kind and worker added
        with pytest.raises(seer.EntityWriteError) as info:
            rt.step(3.0)
        with pytest.raises(seer.ClosedError, match="reset"):
            rt.step(4.0)  # the failed step needs a reset, as after any handler error
    assert isinstance(info.value, seer.MisuseError)
    msg = str(info.value)
    assert "'tick'" in msg and "model.state['x'][3]" in msg and "entity 3" in msg and "[2]" in msg


def test_the_same_handler_runs_silently_without_debug_mode(monkeypatch):
    monkeypatch.delenv("SEER_DEBUG", raising=False)
    with seer.Runtime(NeighbourModel(), 2) as rt:
        assert rt.debug is False
        assert rt.step(3.0).events > 0


def test_seer_debug_env_var_turns_debug_mode_on_and_an_argument_overrides_it(monkeypatch):
    monkeypatch.setenv("SEER_DEBUG", "1")
    # python_batch=1: entity 2's call holds entity 2 only (a batch holding 3 too may write its row)
    with seer.Runtime(NeighbourModel(), 2, python_batch=1) as rt:
        assert rt.debug is True
        with pytest.raises(seer.EntityWriteError):
            rt.step(3.0)
    with seer.Runtime(NeighbourModel(), 2, debug=False) as rt:
        assert rt.debug is False
        rt.step(3.0)
    monkeypatch.setenv("SEER_DEBUG", "maybe")
    with pytest.raises(seer.InvalidArgumentError, match="SEER_DEBUG='maybe'"):
        seer.Runtime(NeighbourModel())


@pytest.mark.parametrize("bad", ["yes", 1, 0, None.__class__])
def test_a_debug_value_that_is_no_bool_is_refused_by_name(bad):
    with pytest.raises(seer.InvalidArgumentError, match=f"debug={bad!r}".replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[")):
        seer.Runtime(NeighbourModel(bad=False), debug=bad)


def test_results_are_identical_with_and_without_debug_mode():
    out = []
    for debug, workers in [(False, 1), (True, 1), (True, 3), (False, 3)]:
        model = NeighbourModel(bad=False)
        with seer.Runtime(model, workers, debug=debug, seed=7) as rt:
            ev = rt.step(4.0).events
        out.append((ev, model.state["x"].tobytes(), model.state["v"].tobytes()))
    assert all(o == out[0] for o in out[1:])
