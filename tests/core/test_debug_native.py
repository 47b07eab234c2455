"""Debug mode with native handlers (``seer.numba`` here, C the same way): a
handler that writes another entity's row fails the step with an
EntityWriteError naming kind, entity, array and row; without debug mode the
same model runs silently; a well-behaved model's results do not change."""

import numpy as np
import pytest

import seer

pytestmark = pytest.mark.timeout(240)
pytest.importorskip("numba", reason="seer.numba needs the seer-marl[numba] extra")
snb = pytest.importorskip("seer.numba")

S = snb.State(x="f8[:]", hits="i4[:, :]", cfg="i8[:]")  # cfg[0]: the entity that writes its neighbour's row


@S.handler
def tick(ctx, ev, s):
    e = ev.entity
    n = s.x.shape[0]
    s.x[e] = s.x[e] * 0.5 + snb.uniform(ctx)
    s.hits[e, 1] += 1
    if e == s.cfg[0] and ev.time >= 2.0:
        s.hits[(e + 1) % n, 0] = -7  # another entity's row
    return snb.emit(ctx, e, ev.time + 0.5, 0, 0)


class NeighbourModel(seer.Model):
    lookahead, shared_state = 0.5, ()

    def __init__(self, n=6, bad_entity=2):
        self.num_entities = n
        self.state = {"x": np.zeros(n), "hits": np.zeros((n, 2), np.int32)}
        self.cfg = np.array([bad_entity])
        self.kinds = [seer.EventKind("tick", seer.Native(tick))]
        self.native_model = S.bind({**self.state, "cfg": self.cfg})

    def reset(self, rt, seed):
        for a in self.state.values():
            a[...] = 0
        rt.schedule(np.arange(self.num_entities), np.zeros(self.num_entities), np.zeros(self.num_entities, np.int32))


@pytest.mark.parametrize("workers", [1, 2, 4])
def test_a_native_handler_writing_a_neighbours_row_fails_the_step_in_debug_mode(workers):
    with seer.Runtime(NeighbourModel(), workers, debug=True) as rt:
        with pytest.raises(seer.EntityWriteError) as info:
            rt.step(4.0)
        with pytest.raises(seer.ClosedError, match="reset"):
            rt.step(5.0)
        rt.reset(seed=1)  # and the runtime is usable again after a reset
        with pytest.raises(seer.EntityWriteError):
            rt.step(4.0)
    msg = str(info.value)
    assert "'tick'" in msg and "entity 2" in msg and "model.state['hits'][3]" in msg, msg
    assert "time 2.0" in msg, msg


def test_the_same_native_handler_runs_silently_without_debug_mode(monkeypatch):
    monkeypatch.delenv("SEER_DEBUG", raising=False)
    model = NeighbourModel()
    with seer.Runtime(model, 2) as rt:
        assert rt.step(4.0).events > 0
    assert model.state["hits"][3, 0] == -7  # the write happened, unnoticed


def test_the_last_entity_wraps_to_row_zero_and_is_named():
    with seer.Runtime(NeighbourModel(bad_entity=5), 2, debug=True) as rt:
        with pytest.raises(seer.EntityWriteError, match=r"model.state\['hits'\]\[0\]"):
            rt.step(4.0)


def test_debug_mode_does_not_change_a_native_models_results():
    out = []
    for debug, workers in [(False, 1), (True, 1), (True, 3), (False, 3)]:
        model = NeighbourModel(bad_entity=-1)
        with seer.Runtime(model, workers, debug=debug, seed=11) as rt:
            events = rt.step(6.0).events
            events += rt.step(9.0).events
        out.append((events, model.state["x"].tobytes(), model.state["hits"].tobytes()))
    assert all(o == out[0] for o in out[1:])
