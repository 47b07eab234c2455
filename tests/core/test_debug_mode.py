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


@pytest.mark.timeout(240)
def test_an_out_of_bounds_numba_index_is_a_handler_error_in_debug_mode(tmp_path):
    # a fresh process: NUMBA_BOUNDSCHECK unset, caches of its own; the debug variant must bring the checks
    import os
    import subprocess
    import sys
    import textwrap

    pytest.importorskip("numba")
    script = tmp_path / "bounds.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        import seer, test_numba_errors as t
        model = t.Model(t.INDEX)
        with seer.Runtime(model, 2, debug=True) as rt:
            try:
                rt.step(4.5)
            except seer.HandlerError as exc:
                print("HandlerError:", exc)
            else:
                print("no error")
    """))
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_BOUNDSCHECK", "SEER_DEBUG")}
    env.update(SEER_CACHE_DIR=str(tmp_path / "cache"), NUMBA_CACHE_DIR=str(tmp_path / "nb"))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=200)
    assert out.returncode == 0, out.stderr
    assert "HandlerError: native handler 'tick' failed at entity 2, kind 0, time 2.0" in out.stdout, out.stdout
    assert "IndexError: index is out of bounds" in out.stdout


@pytest.mark.timeout(240)
def test_the_debug_variant_of_a_numba_handler_is_compiled_apart_from_the_normal_one(tmp_path, monkeypatch):
    pytest.importorskip("numba")
    import sys

    monkeypatch.setenv("SEER_CACHE_DIR", str(tmp_path / "cache"))
    sys.path.insert(0, __import__("os").path.dirname(__file__))
    try:
        import test_numba_errors as t
    finally:
        sys.path.pop(0)
    normal, debug = t.tick.compile(), t.tick.compile(debug=True)
    assert normal.address != debug.address
    assert t.tick.compile() is normal and t.tick.compile(debug=True) is debug
    model = t.Model(t.CODE, numerator=0)
    with seer.Runtime(model, 2, debug=True) as rt:
        rt.step(4.5)  # in range: runs as without debug mode
