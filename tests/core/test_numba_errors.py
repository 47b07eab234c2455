"""seer.numba: what goes wrong in a Numba handler or copy step surfaces as
SEER's errors, as in C: an exception (raise, division by zero, a bounds
check) or a status becomes HandlerError naming the event, the message and
the code; a table bound by the wrong State, or a bad value bound, is refused."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import seer

numba = pytest.importorskip("numba", reason="seer.numba needs the seer-marl[numba] extra")
snb = pytest.importorskip("seer.numba")

S = snb.State(v="f8[:]", cfg="i8[:]")  # cfg: mode, numerator, denominator
RAISE, DIVIDE, INDEX, CODE = 0, 1, 2, 3


@S.handler
def tick(ctx, ev, s):
    e = ev.entity
    if e == 2 and ev.time >= 2.0:
        mode = s.cfg[0]
        if mode == RAISE:
            raise ValueError("entity 2 saw a bad value")
        if mode == DIVIDE:
            return s.cfg[1] // s.cfg[2]
        if mode == INDEX:
            s.v[e + 100] = 1.0
        if mode == CODE:
            return s.cfg[1]
    s.v[e] += 1.0
    return snb.emit(ctx, e, ev.time + 1.0, 0, 0)


class Model(seer.Model):
    num_entities, lookahead, shared_state = 4, 1.0, ()

    def __init__(self, mode, numerator=1, denominator=0, state=S, handler=tick):
        self.state = {"v": np.zeros(4)}
        self.cfg = np.array([mode, numerator, denominator])
        self.kinds = [seer.EventKind("tick", seer.Native(handler))]
        self.native_model = state.bind({**self.state, "cfg": self.cfg})

    def reset(self, rt, seed):
        rt.schedule(np.arange(4), np.zeros(4), np.zeros(4, np.int32))


def step(model, workers=2, horizon=4.5):
    with seer.Runtime(model, workers=workers) as rt:
        return rt.step(horizon)


@pytest.mark.parametrize("workers", [1, 2])
def test_an_exception_raised_in_a_handler_fails_the_step_with_its_message(workers):
    with pytest.raises(seer.HandlerError, match=r"native handler 'tick' failed at entity 2, kind 0, time 2\.0 .*"
                                                r"ValueError: entity 2 saw a bad value") as info:
        step(Model(RAISE), workers)
    err = info.value
    assert (err.entity, err.kind, err.time) == (2, 0, 2.0)
    assert isinstance(err.__cause__, ValueError) and err.code == -8 and err.code_name == "SEER_E_HANDLER"


def test_an_integer_division_by_zero_is_a_handler_error():
    with pytest.raises(seer.HandlerError, match="ZeroDivisionError: integer division by zero"):
        step(Model(DIVIDE))


def test_the_runtime_can_be_reset_and_stepped_after_a_raise():
    model = Model(RAISE)
    with seer.Runtime(model, workers=2) as rt:
        with pytest.raises(seer.HandlerError):
            rt.step(4.5)
        model.cfg[0] = CODE  # and a code of 0: no failure any more
        model.cfg[1] = 0
        model.state["v"][:] = 0
        rt.reset(seed=1)
        rt.step(4.5)
    assert model.state["v"].tolist() == [5.0, 5.0, 2.0, 5.0]  # entity 2 stopped at its first t >= 2


def test_the_code_a_handler_returns_is_carried_and_named():
    with pytest.raises(seer.HandlerError, match=r"returned 42$") as own:
        step(Model(CODE, numerator=42))
    with pytest.raises(seer.HandlerError, match=r"returned -10 \(SEER_E_ARG\)$") as seer_code:
        step(Model(CODE, numerator=-10))
    assert (own.value.code, own.value.code_name) == (42, None)
    assert (seer_code.value.code, seer_code.value.code_name) == (-10, "SEER_E_ARG")
    assert str(own.value) != str(seer_code.value)


@pytest.mark.timeout(240)
def test_an_out_of_bounds_index_under_numba_boundscheck_is_a_handler_error(tmp_path):
    script = tmp_path / "bounds.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        import seer, test_numba_errors as t
        try:
            t.step(t.Model(t.INDEX))
        except seer.HandlerError as exc:
            print("HandlerError:", exc)
        else:
            print("no error")
    """))
    env = {**os.environ, "NUMBA_BOUNDSCHECK": "1", "SEER_CACHE_DIR": str(tmp_path / "cache"),
           "NUMBA_CACHE_DIR": str(tmp_path / "nb")}
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=200)
    assert out.returncode == 0, out.stderr
    assert "HandlerError: native handler 'tick' failed at entity 2, kind 0, time 2.0" in out.stdout
    assert "IndexError: index is out of bounds" in out.stdout
    assert "Exception ignored" not in out.stderr


OTHER = snb.State(v="i8[:]", cfg="i8[:]")  # same names, another dtype


def test_a_table_bound_by_another_state_is_refused_when_the_runtime_is_built():
    model = Model(CODE, numerator=0)
    ints = np.zeros(4, np.int64)
    model.native_model = OTHER.bind({"v": ints, "cfg": model.cfg})
    with pytest.raises(seer.InvalidArgumentError, match=r"model.kinds\[0\] \(tick\) was compiled for State\(v='f8\[:\]', "
                                                        r"cfg='i8\[:\]'\), but .* bound by State\(v='i8\[:\]', "
                                                        r"cfg='i8\[:\]'\) \('v': expected 'f8\[:\]', got 'i8\[:\]'\)"):
        step(model)
    assert not ints.any()


def test_a_table_that_slips_past_the_check_is_refused_at_the_first_event_not_written():
    model = Model(CODE, numerator=0)
    ints = np.zeros(4, np.int64)
    bound = OTHER.bind({"v": ints, "cfg": model.cfg})
    model.native_model = bound.address  # a bare address: nothing to check it against until the handler runs
    with pytest.raises(seer.HandlerError, match=r"not bound by State\(v='f8\[:\]', cfg='i8\[:\]'\), which tick "
                                                r"was compiled for"):
        step(model)
    assert not ints.any()  # nothing wrote floats into the int array


def test_bind_names_the_field_expected_and_got():
    with pytest.raises(seer.InvalidArgumentError, match=r"array 'v' is int64\[4\].*expected a writeable "
                                                        r"C-contiguous float64 array with 1 dimension"):
        S.bind({"v": np.zeros(4, np.int64), "cfg": np.zeros(3, np.int64)})
    with pytest.raises(seer.InvalidArgumentError, match=r"array 'v' is float64\[4, 1\]"):
        S.bind({"v": np.zeros((4, 1)), "cfg": np.zeros(3, np.int64)})
    with pytest.raises(seer.InvalidArgumentError, match=r"takes a mapping .* got list"):
        S.bind([np.zeros(4), np.zeros(3, np.int64)])
    with pytest.raises(seer.InvalidArgumentError, match=r"array 'cfg' is a list"):
        S.bind({"v": np.zeros(4), "cfg": [1, 2, 3]})


def test_state_types_beyond_what_is_supported_are_refused():
    with pytest.raises(seer.InvalidArgumentError, match=r"has 34 dimensions: seer.numba supports at most 8"):
        snb.State(x="f8[" + ", ".join([":"] * 34) + "]")
    with pytest.raises(seer.InvalidArgumentError, match="expected a Numba array type"):
        snb.State(x="float128[:]")
    with pytest.raises(seer.InvalidArgumentError, match="expected a Numba array type"):
        snb.State(x=3)


# ---- a copy step (seer.vector's native path) ------------------------------------------------------

from gymnasium import spaces  # noqa: E402
from pettingzoo import ParallelEnv  # noqa: E402

from seer.vector.native import NativeCopy, NativeSpec  # noqa: E402

SPEC = NativeSpec(agents=["a", "b"], observation=spaces.Box(-1e9, 1e9, (1,), np.float64),
                  action=spaces.Discrete(1000))
COUNT = snb.State(total="f8[:]")
BAD_ACTION = 555


@COUNT.copy_step(SPEC)
def count_step(rows, op, s):
    if op != 1:  # SEER_COPY_STEP; the rest is left to Python
        return -12
    for i in range(2):
        if rows.act[i] == BAD_ACTION:
            raise ValueError("action 555 is cursed")
        s.total[i] += rows.act[i]
        rows.obs[i, 0] = s.total[i]
        rows.rew[i] = 0.0
        rows.term[i] = 0
        rows.trunc[i] = 0
        rows.mask[i] = 1
        rows.alive[i] = 1
    rows.ended[0] = 0
    return 0


class CountEnv(ParallelEnv):
    """Two agents adding their actions up, stepped only by its Numba copy step."""

    metadata = {"name": "count_v0"}
    possible_agents = ["a", "b"]

    def __init__(self):
        self.total = np.zeros(2)
        self.bound = COUNT.bind({"total": self.total})

    def observation_space(self, agent):
        return SPEC.observation

    def action_space(self, agent):
        return SPEC.action

    def reset(self, seed=None, options=None):
        self.agents = list(self.possible_agents)
        self.total[:] = 0
        return {a: self.total[i:i + 1].copy() for i, a in enumerate(self.agents)}, {a: {} for a in self.agents}

    def step(self, actions):
        raise AssertionError("seer.vector's native path steps this env")

    def seer_native_copy(self):
        return NativeCopy(SPEC, step=count_step, state=self.bound, autoreset=False)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("backend", ["thread", "process"])
def test_an_exception_in_a_copy_step_fails_the_vector_step_with_its_message(backend):
    envs = seer.vector.make(CountEnv, 2, backend=backend, workers=1)
    try:
        envs.reset(seed=1)
        obs = envs.step(np.full(4, 3))[0]
        assert obs.ravel().tolist() == [3.0] * 4
        with pytest.raises(seer.HandlerError, match="ValueError: action 555 is cursed") as info:
            envs.step(np.array([1, 2, BAD_ACTION, 4]))
        assert "copy 1" in str(info.value)
    finally:
        envs.close()


def test_a_copy_step_given_a_state_of_another_state_is_refused():
    wrong = snb.State(total="i8[:]").bind({"total": np.zeros(2, np.int64)})
    with pytest.raises(seer.InvalidArgumentError, match=r"NativeCopy.step \(count_step\) was compiled for "
                                                        r"State\(total='f8\[:\]'\)"):
        NativeCopy(SPEC, step=count_step, state=wrong)


def test_a_handler_that_returns_no_status_is_refused_when_compiled():
    @S.handler
    def forgot_return(ctx, ev, s):
        s.v[ev.entity] += 1.0

    with pytest.raises(snb.NumbaCompileError, match=r"(?s)'.*forgot_return' does not compile.*returns an integer "
                                                    r"status \(0, or a SEER_E_\* code\), but this one returns none"):
        Model(CODE, handler=forgot_return)
