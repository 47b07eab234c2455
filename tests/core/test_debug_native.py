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


# ---- a seer.numba copy step (seer.vector's native path) -----------------------------------------

from seer.vector.native import NativeCopy  # noqa: E402
from test_numba_errors import SPEC, CountEnv  # noqa: E402  (pytest puts this folder on sys.path)
TOTAL = snb.State(total="f8[:]")
OUT_OF_RANGE = 7  # the action that makes the step write the observation row of agent 2 + 7


@TOTAL.copy_step(SPEC)
def total_step(rows, op, s):
    if op != 1:  # SEER_COPY_STEP; resets are left to Python
        return -12
    for i in range(2):
        s.total[i] += rows.act[i]
        at = i + 7 if rows.act[i] == OUT_OF_RANGE else i
        rows.obs[at, 0] = s.total[i]
        rows.rew[i] = 0.0
        rows.term[i] = 0
        rows.trunc[i] = 0
        rows.mask[i] = 1
        rows.alive[i] = 1
    rows.ended[0] = 0
    return 0


class TotalEnv(CountEnv):
    """test_numba_errors' env, stepped by ``total_step`` (in debug mode or not)."""

    def __init__(self, debug=None):
        self.total = np.zeros(2)
        self.bound = TOTAL.bind({"total": self.total})
        self.debug = debug

    def seer_native_copy(self):
        return NativeCopy(SPEC, step=total_step, state=self.bound, autoreset=False, debug=self.debug)


def test_a_copy_step_in_debug_mode_runs_its_bounds_checked_variant(monkeypatch):
    monkeypatch.delenv("SEER_DEBUG", raising=False)
    env = TotalEnv()
    assert NativeCopy(SPEC, step=total_step, state=env.bound).step_address == total_step.address
    checked = NativeCopy(SPEC, step=total_step, state=env.bound, debug=True)
    assert checked.step_address == total_step.compile(debug=True).address != total_step.address
    monkeypatch.setenv("SEER_DEBUG", "1")
    assert NativeCopy(SPEC, step=total_step, state=env.bound).step_address == checked.step_address
    assert NativeCopy(SPEC, step=total_step, state=env.bound, debug=False).step_address == total_step.address


def test_an_out_of_range_row_in_a_copy_step_is_a_handler_error_in_debug_mode():
    envs = seer.vector.make(lambda: TotalEnv(debug=True), 2, backend="thread", workers=1)
    try:
        envs.reset(seed=1)
        assert envs.step(np.full(4, 3))[0].ravel().tolist() == [3.0] * 4
        with pytest.raises(seer.HandlerError, match="IndexError: index is out of bounds") as info:
            envs.step(np.array([1, 2, OUT_OF_RANGE, 4]))
        assert "copy 1" in str(info.value)
    finally:
        envs.close()
