"""seer.numba: handlers written in Python, compiled by Numba, run by SEER's
workers like C handlers: bit-identical for every pool size, the same errors,
a clear error when they do not compile or Numba is missing."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import seer

numba = pytest.importorskip("numba", reason="seer.numba needs the seer-marl[numba] extra")
snb = pytest.importorskip("seer.numba")

TICK, MSG = 0, 1
STATE = snb.State(value="f8[:]", handled="i8[:]", cfg="f8[:]")  # cfg: period, delay, fail_entity, fail_time


@STATE.handler
def on_tick(ctx, ev, s):
    e = ev.entity
    n = s.value.shape[0]
    if e == np.int64(s.cfg[2]) and ev.time >= s.cfg[3]:
        return 1
    s.value[e] = s.value[e] * 0.5 + snb.uniform(ctx)
    s.handled[e] += 1
    to = np.int32(snb.random_u64(ctx) % np.uint64(n))
    rc = snb.emit(ctx, to, ev.time + s.cfg[1], MSG, np.int64(s.value[e] * 1000.0))
    if rc != 0:
        return rc
    return snb.emit(ctx, e, ev.time + s.cfg[0], TICK, 0)


@STATE.handler
def on_msg(ctx, ev, s):
    e = ev.entity
    s.value[e] = s.value[e] * 0.75 + ev.payload * 1e-6  # order-dependent
    s.handled[e] += 1
    return 0


class NumbaModel(seer.Model):
    def __init__(self, n=48, period=0.1, delay=0.05, lookahead=0.05, fail_entity=-1, fail_time=np.inf,
                 tick=None):
        self.num_entities = n
        self.lookahead = lookahead
        self.kinds = [seer.EventKind("tick", seer.Native(tick or on_tick)), seer.EventKind("msg", seer.Native(on_msg))]
        self.state = {"value": np.zeros(n), "handled": np.zeros(n, np.int64)}
        self.cfg = np.array([period, delay, fail_entity, fail_time])
        self.shared_state = ()
        self.native_model = STATE.bind({**self.state, "cfg": self.cfg})

    def reset(self, runtime, seed):
        self.state["value"][:] = np.arange(self.num_entities) % 5
        self.state["handled"][:] = 0
        e = np.arange(self.num_entities)
        runtime.schedule(e, (e % 7) * 0.01, np.zeros(self.num_entities, np.int32))


def run(model, workers, horizon=3.0, seed=5):
    with seer.Runtime(model, workers=workers, seed=seed) as rt:
        events = rt.step(horizon).events
    return {k: v.copy() for k, v in model.state.items()}, events


@STATE.handler
def self_tick(ctx, ev, s):
    e = ev.entity
    s.value[e] = s.value[e] * 0.5 + snb.uniform(ctx)  # order-sensitive: every draw counts
    s.handled[e] += 1
    return snb.emit(ctx, e, ev.time + s.cfg[0], TICK, 0)


@pytest.mark.parametrize("workers", [1, 2])
def test_relabel_moves_each_entitys_random_stream_with_it(workers):
    """Runtime.relabel between steps: a native handler's draws (seer_uniform)
    follow the renamed entity, so a run whose rows are renamed the same way
    ends exactly where the plain run ends."""
    plain, renamed = NumbaModel(tick=self_tick), NumbaModel(tick=self_tick)
    perm = np.random.default_rng(1).permutation(plain.num_entities)
    with seer.Runtime(plain, workers=workers, seed=5) as a, seer.Runtime(renamed, workers=workers, seed=5) as b:
        a.step(1.0)
        b.step(1.0)
        b.relabel(perm)
        for arr in renamed.state.values():  # the model's half: its rows move the same way
            arr[perm] = arr.copy()
        a.step(3.0)
        b.step(3.0)
    assert plain.state["handled"].sum() > 1000
    for k, arr in plain.state.items():
        assert renamed.state[k][perm].tobytes() == arr.tobytes(), k


def test_identical_for_1_2_and_4_workers():
    ref, events = run(NumbaModel(), 1)
    assert events > 2000 and ref["handled"].sum() == events
    for workers in (2, 4):
        got, ev = run(NumbaModel(), workers)
        assert ev == events
        for k in ref:
            assert got[k].tobytes() == ref[k].tobytes(), (workers, k)
    other, _ = run(NumbaModel(), 1, seed=6)
    assert other["value"].tobytes() != ref["value"].tobytes()  # the seed matters


def test_a_failing_handler_raises_handler_error_naming_the_event():
    with pytest.raises(seer.HandlerError, match=r"native handler 'tick' failed at entity 3, kind 0, time 1\.03"):
        run(NumbaModel(fail_entity=3, fail_time=1.0), 2)


def test_an_emit_sooner_than_the_lookahead_is_a_causality_error():
    with pytest.raises(seer.CausalityError, match="sooner than the lookahead"):
        run(NumbaModel(delay=0.01, lookahead=0.05), 2)


def test_a_handler_that_does_not_compile_names_itself():
    @STATE.handler
    def broken(ctx, ev, s):
        return {"not": object()}  # object mode only

    with pytest.raises(snb.NumbaCompileError, match="'test_a_handler_that_does_not_compile_names_itself.<locals>.broken' "
                                                     "does not compile in nopython mode"):
        NumbaModel(tick=broken)


def test_bind_checks_the_arrays():
    with pytest.raises(seer.InvalidArgumentError, match="array 'handled' is missing"):
        STATE.bind({"value": np.zeros(3), "cfg": np.zeros(4)})
    with pytest.raises(seer.InvalidArgumentError, match="array 'value' is float32"):
        STATE.bind({"value": np.zeros(3, np.float32), "handled": np.zeros(3, np.int64), "cfg": np.zeros(4)})
    with pytest.raises(seer.InvalidArgumentError, match="expected a Numba array type"):
        snb.State(x="float128[:]")


def test_calling_a_handler_from_python_is_refused():
    with pytest.raises(TypeError, match="SEER native handler"):
        on_tick(None, None, None)


def test_without_numba_the_decorator_names_the_extra(monkeypatch):
    monkeypatch.setattr(snb, "numba", None)
    with pytest.raises(ImportError, match=r"pip install 'seer-marl\[numba\]'"):
        snb.State(x="f8[:]")


def test_compiled_handlers_are_cached_on_disk(tmp_path):
    script = tmp_path / "model.py"
    script.write_text(textwrap.dedent("""
        import numpy as np, seer, seer.numba as snb
        S = snb.State(v="f8[:]")

        @S.handler
        def tick(ctx, ev, s):
            s.v[ev.entity] += 1.0
            return snb.emit(ctx, ev.entity, ev.time + 1.0, 0, 0)

        class M(seer.Model):
            num_entities, lookahead, shared_state = 4, 1.0, ()
            def __init__(self):
                self.state = {"v": np.zeros(4)}
                self.kinds = [seer.EventKind("tick", seer.Native(tick))]
                self.native_model = S.bind(self.state)
            def reset(self, rt, seed):
                rt.schedule(np.arange(4), np.zeros(4), np.zeros(4, np.int32))

        if __name__ == "__main__":
            m = M()
            with seer.Runtime(m, workers=2) as rt:
                rt.step(3.5)
            print(m.state["v"].tolist())
    """))
    env = {**os.environ, "SEER_CACHE_DIR": str(tmp_path / "cache"), "NUMBA_CACHE_DIR": str(tmp_path / "nbcache")}
    for _ in range(2):
        out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=240)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == "[4.0, 4.0, 4.0, 4.0]"
    cached = list((tmp_path / "nbcache").rglob("*.nbi"))
    assert any("seer_numba_" in p.name for p in cached), cached
    assert oct((tmp_path / "cache" / "numba").stat().st_mode & 0o777) == "0o700"
