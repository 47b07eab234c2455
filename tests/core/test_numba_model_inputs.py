"""seer.numba: what a model hands its handlers besides per-entity rows --
parameters (scalars and small arrays, bound by name and kept alive by the
bound state) and the window-start snapshot of other entities' rows --
written as docs/tutorials/write-your-env.md shows them."""

import gc

import numpy as np
import pytest

import seer

numba = pytest.importorskip("numba", reason="seer.numba needs the seer-marl[numba] extra")
snb = pytest.importorskip("seer.numba")

P = snb.State(v="f8[:]", gain="f8", steps="i8", weights="f8[:]")


@P.handler
def grow(ctx, ev, s):
    i = ev.entity
    s.v[i] += s.gain * s.weights[i % s.weights.shape[0]]
    if ev.time + 1.0 < s.steps:
        return snb.emit(ctx, i, ev.time + 1.0, 0, 0)
    return 0


class Grow(seer.Model):
    num_entities, lookahead, shared_state = 4, 1.0, ()

    def __init__(self, gain, steps, weights):
        self.state = {"v": np.zeros(4)}
        self.kinds = [seer.EventKind("grow", seer.Native(grow))]
        self.native_model = P.bind(self.state, gain=gain, steps=steps, weights=np.asarray(weights, np.float64))

    def reset(self, rt, seed):
        self.state["v"][:] = 0
        rt.schedule(np.arange(4), np.zeros(4), np.zeros(4, np.int32))


def test_parameters_are_bound_by_name_kept_alive_and_changeable_between_runs():
    model = Grow(gain=0.5, steps=3, weights=[1.0, 10.0])
    gc.collect()  # the bound state holds the parameter buffers, not the caller
    with seer.Runtime(model, workers=2) as rt:
        rt.step(10.0)
        assert model.state["v"].tolist() == [1.5, 15.0, 1.5, 15.0]  # 3 steps of gain * weight
        model.native_model["gain"][()] = 2.0
        model.native_model["weights"][:] = [1.0, 0.0]
        rt.reset(seed=1)
        rt.step(10.0)
    assert model.state["v"].tolist() == [6.0, 0.0, 6.0, 0.0]
    assert model.native_model["steps"].dtype == np.int64 and model.native_model["steps"] == 3


def test_a_parameter_that_disagrees_with_the_state_is_refused_by_name():
    arrays = {"v": np.zeros(4)}
    w = np.ones(2)
    with pytest.raises(seer.InvalidArgumentError, match="parameter 'gain' is missing: expected a number"):
        P.bind(arrays, steps=3, weights=w)
    with pytest.raises(seer.InvalidArgumentError, match=r"parameter 'steps' is 2\.5 .*int64 holds exactly"):
        P.bind(arrays, gain=1.0, steps=2.5, weights=w)
    with pytest.raises(seer.InvalidArgumentError, match=r"parameter 'gain' is a str: expected a number"):
        P.bind(arrays, gain="fast", steps=3, weights=w)
    with pytest.raises(seer.InvalidArgumentError, match=r"parameter 'gain' is float64\[1\].*expected a number "
                                                        r"\(or a 0-d float64 array\)"):
        P.bind(arrays, gain=np.ones(1), steps=3, weights=w)
    with pytest.raises(seer.InvalidArgumentError, match=r"parameter 'gain' is float32\[\]"):
        P.bind(arrays, gain=np.array(1.0, np.float32), steps=3, weights=w)
    with pytest.raises(seer.InvalidArgumentError, match=r"array 'weights' is float64\[2, 1\].*1 dimension"):
        P.bind(arrays, gain=1.0, steps=3, weights=np.ones((2, 1)))
    with pytest.raises(seer.InvalidArgumentError, match=r"array 'weights' is int64\[2\].*float64"):
        P.bind(arrays, gain=1.0, steps=3, weights=np.ones(2, np.int64))
    with pytest.raises(seer.InvalidArgumentError, match=r"'gian' is no field of State\(v='f8\[:\]', gain='f8'"):
        P.bind(arrays, gian=1.0, gain=1.0, steps=3, weights=w)
    shared = np.array(0.25)  # a 0-d array of the dtype is bound as it is: one buffer for many models
    assert P.bind(arrays, gain=shared, steps=3, weights=w)["gain"] is shared


# ---- reading neighbours: the window-start snapshot ------------------------------------------------

D = snb.State(x="f8[:]", x_snap="f8[:]")
RATE = 0.1


@D.handler
def diffuse(ctx, ev, s):
    i = ev.entity
    n = s.x.shape[0]
    # neighbours from the snapshot (as every worker saw them at the window's start), the own row live
    s.x[i] += RATE * (s.x_snap[(i + 1) % n] + s.x_snap[(i - 1) % n] - 2.0 * s.x_snap[i])
    return snb.emit(ctx, i, ev.time + 1.0, 0, 0)


class Lattice(seer.Model):
    lookahead = 1.0
    shared_state = ("x",)

    def __init__(self, n=257):
        self.num_entities = n
        self.state = {"x": np.zeros(n)}
        self.kinds = [seer.EventKind("diffuse", seer.Native(diffuse))]
        self.native_model = D.bind({"x": self.state["x"], "x_snap": self.snapshot_targets()["x"]})

    def reset(self, rt, seed):
        self.state["x"][:] = np.sin(np.arange(self.num_entities) * 0.7) ** 3
        rt.schedule(np.arange(self.num_entities), np.zeros(self.num_entities),
                    np.zeros(self.num_entities, np.int32))


def test_neighbour_reads_from_the_snapshot_are_identical_for_1_2_and_4_workers():
    results = {}
    for workers in (1, 2, 4):
        model = Lattice()
        with seer.Runtime(model, workers=workers, seed=3) as rt:
            rt.step(40.0)
        results[workers] = model.state["x"].copy()
    assert results[1].tobytes() == results[2].tobytes() == results[4].tobytes()
    # and they are the synchronous (Jacobi) update, window by window
    x = np.sin(np.arange(257) * 0.7) ** 3
    for _ in range(40):
        x = x + RATE * (np.roll(x, -1) + np.roll(x, 1) - 2.0 * x)
    np.testing.assert_allclose(results[1], x, rtol=0, atol=1e-12)
