"""seer._agent_dicts: a step's per-agent dicts from rows, answering what plain Python would.

RowViews recycles observation buffers; what a caller keeps (a dict, a row, a
slice or reshape of a row, a torch tensor of a row) must never change
afterwards, whatever else is kept or dropped.
"""

from __future__ import annotations

import gc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seer import _agent_dicts
from seer._agent_dicts import FloatDicts, InfoDicts, RowViews, float_dict, gather_actions, gather_in_box
from seer._rowdicts import empty_dicts, refill_floats, unheld


def reference(values):
    return np.array(values).astype(np.float64)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.int32, np.int64, np.uint16])
def test_gather_actions_equals_np_array(dtype):
    rng = np.random.default_rng(0)
    batch = (rng.normal(size=(50, 3)) * 100).astype(dtype)
    got = gather_actions(list(batch), (3,))
    np.testing.assert_array_equal(got, reference(list(batch)))
    assert got.dtype == np.float64 and got.shape == (50, 3)


def test_gather_actions_strided_scalar_and_multidimensional_rows():
    base = np.arange(40, dtype=np.float32).reshape(10, 4)
    strided = list(base[:, ::2])  # rows with a stride of 8 bytes
    np.testing.assert_array_equal(gather_actions(strided, (2,)), reference(strided))
    scalars = [np.float32(i) / 3 for i in range(7)]  # a Box of shape (): numpy scalars
    np.testing.assert_array_equal(gather_actions(scalars, ()), reference(scalars))
    cubes = list(np.arange(24.0).reshape(3, 2, 4)[:, :, ::-1])  # negative strides, 2-D rows
    np.testing.assert_array_equal(gather_actions(cubes, (2, 4)), reference(cubes))
    assert gather_actions([], (2,)).shape == (0, 2)


class Tagged(np.ndarray):
    """An ndarray subclass: read through its buffer, as any other object is."""


def test_gather_actions_reads_arrays_and_other_buffers_alike():
    rows = np.arange(12, dtype=np.float32).reshape(4, 3) / 7
    mixed = [rows[0], rows[1].view(Tagged), memoryview(rows[2].copy()), np.asarray(rows[3], np.int64)]
    np.testing.assert_array_equal(gather_actions(mixed, (3,)), reference(mixed))
    unaligned = np.frombuffer(b"\0" + rows.tobytes(), np.float32, 12, 1).reshape(4, 3)  # offset by one byte
    assert not unaligned.flags.aligned
    np.testing.assert_array_equal(gather_actions(list(unaligned), (3,)), reference(list(rows)))
    fortran = np.asfortranarray(np.arange(24.0).reshape(4, 2, 3))  # rows that are not C-contiguous
    np.testing.assert_array_equal(gather_actions(list(fortran), (2, 3)), reference(list(fortran)))


@pytest.mark.parametrize("values", [
    [[0.1, 0.2], [0.3, 0.4]],  # lists: numpy's path reads them
    [np.zeros(2), np.zeros(2, np.longdouble)],
    [np.zeros(2), np.zeros(2, ">i4").astype(">i4")],
    [np.zeros(2, ">f8").view(Tagged)],
    [np.zeros(2), np.zeros(3)],  # a row of another shape
    [np.zeros(2), np.zeros((1, 2))],
    [np.zeros(2), np.array([True, False])],  # bool is not a number of a Box
    [np.zeros(2), np.zeros(2, np.complex64)],
    [np.zeros(2), np.zeros(2, ">f4").astype(">f4")],  # byte-swapped
    [np.zeros(2), np.zeros(2, np.float16)],
    [np.zeros(2), np.array([None, None], dtype=object)],
    [np.zeros(2), b"\x00\x00"],  # a buffer of bytes is not a row of two numbers
    [np.zeros(2), "ab"],
])
def test_gather_actions_leaves_anything_else_to_numpy(values):
    assert gather_actions(values, (2,)) is None


def numpy_inside(rows, low, high, finite):
    """What NativeEnv's general path asks of a Box's actions: within the bounds and, with finite, finite."""
    inside = bool(((rows >= low) & (rows <= high)).all())
    return inside and (not finite or bool(np.isfinite(rows).all()))


special = st.sampled_from([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 1.0 + 2 ** -23, -1.0 - 2 ** -23, 3e38])


@settings(max_examples=150, deadline=None)
@given(rows=st.lists(st.lists(special | st.floats(-2, 2, width=32), min_size=3, max_size=3), max_size=12),
       dtype=st.sampled_from([np.float32, np.float64, np.int16]),
       bounds=st.sampled_from([(-1.0, 1.0), (-np.inf, np.inf), (-np.inf, 0.5), (0.0, 0.0)]),
       strided=st.booleans())
def test_gather_in_box_answers_as_numpys_bounds_check(rows, dtype, bounds, strided):
    with np.errstate(invalid="ignore", over="ignore"):
        batch = np.array(rows, np.float64).reshape(-1, 3)
        if np.dtype(dtype).kind == "i":
            batch = np.nan_to_num(batch, posinf=7, neginf=-7).astype(dtype)
        else:
            batch = batch.astype(dtype)
    values = list(np.repeat(batch, 2, axis=1)[:, ::2]) if strided else list(batch)
    low, high = np.full(3, bounds[0]), np.full(3, bounds[1])
    finite = not (np.isfinite(low).all() and np.isfinite(high).all())  # as NativeEnv asks
    got = gather_in_box(values, low, high, finite)
    assert got is not None
    arr, inside = got
    np.testing.assert_array_equal(arr, batch.astype(np.float64))
    assert inside == numpy_inside(batch.astype(np.float64), low, high, finite)


def test_gather_in_box_checks_each_element_against_its_own_bound():
    low, high = np.array([-1.0, 0.0, 5.0]), np.array([1.0, 0.0, 6.0])
    assert gather_in_box([np.array([1.0, 0.0, 5.5]), np.array([-1.0, 0.0, 6.0])], low, high, False)[1]
    assert not gather_in_box([np.array([1.0, 0.0, 5.5]), np.array([-1.0, 0.0, 6.5])], low, high, False)[1]
    assert not gather_in_box([np.array([0.0, 1e-300, 5.5])], low, high, False)[1]
    assert gather_in_box([np.zeros(2), np.zeros(3)], low, high, False) is None  # numpy's path names the bad one
    with pytest.raises(ValueError, match="low must be a contiguous float64 buffer of 3 elements"):
        gather_in_box([np.zeros(3)], low.astype(np.float32), high, False)


class Name(str):
    """A key equal to an agent's name that is not the env's own string."""


def test_gather_in_box_by_names_reads_each_agents_value_as_a_lookup_would():
    names = [f"uav_{i}" for i in range(40)]
    rows = {a: np.array([i, -i, 0.5], np.float32) / 40 for i, a in enumerate(names)}
    low, high = np.full(3, -1.0), np.full(3, 1.0)
    expect = np.array([rows[a] for a in names], np.float64)
    shuffled = [names[i] for i in np.random.default_rng(1).permutation(len(names))]
    for actions in (dict(rows),  # in the names' order: read in one walk
                    {a: rows[a] for a in reversed(names)},  # any other order: looked up
                    {a: rows[a] for a in shuffled},
                    {**rows, "uav_99": np.zeros(3)},  # a key that is no name: ignored
                    {a if i % 7 else Name(a): rows[a] for i, a in enumerate(names)},  # equal keys of another type
                    {a: rows[a] for a in names[:20]} | {"x": np.zeros(3)} | {a: rows[a] for a in names[20:]}):
        arr, inside = gather_in_box(actions, low, high, False, names=names)
        np.testing.assert_array_equal(arr, expect)
        assert inside
    assert gather_in_box({a: rows[a] for a in names[:-1]}, low, high, False, names=names) is None  # one missing
    missing_in_order = {a: rows[a] for a in names[:-1]} | {"other": np.zeros(3)}  # as many keys, one not a name
    assert gather_in_box(missing_in_order, low, high, False, names=names) is None
    assert gather_in_box({a: [0.1, 0.2, 0.3] for a in names}, low, high, False, names=names) is None  # numpy's path
    assert not gather_in_box(dict(rows) | {"uav_3": np.full(3, 2.0)}, low, high, False, names=names)[1]
    ids = list(range(300, 340))  # PettingZoo agents may be any hashable: ints past the small-int cache
    arr, _ = gather_in_box({k: rows[a] for k, a in zip(ids, names)}, low, high, False, names=[int(str(k)) for k in ids])
    np.testing.assert_array_equal(arr, expect)
    with pytest.raises(TypeError, match="names: list"):
        gather_in_box(list(rows.values()), low, high, False, names=names)


def test_float_and_empty_dicts_answer_as_python():
    names = [f"uav_{i}" for i in range(300)]
    template = dict.fromkeys(names, False)
    for rew in (np.linspace(-1, 1, 300), np.linspace(-1, 1, 300).astype(np.float32), np.arange(600.0)[::2]):
        got = float_dict(template, rew)
        assert got == dict(zip(names, rew.tolist())) and list(got) == names
        assert all(type(v) is float for v in got.values())
    infos = empty_dicts(template)
    assert infos == {a: {} for a in names} and list(infos) == names
    assert len({id(d) for d in infos.values()}) == len(names)  # each agent its own dict
    assert template == dict.fromkeys(names, False)  # the template is copied, never written
    with pytest.raises(ValueError, match="template has 300 keys for 2 values"):
        float_dict(template, np.zeros(2))
    with pytest.raises(ValueError, match="float32 or float64"):
        float_dict(template, np.zeros(300, np.int64))


def test_row_views_reuse_a_buffer_only_once_unheld(monkeypatch):
    made = []
    new_slot = RowViews._new_slot
    monkeypatch.setattr(RowViews, "_new_slot", staticmethod(lambda *a: made.append(1) or new_slot(*a)))
    views, names = RowViews(), [f"a{i}" for i in range(64)]
    rows = np.zeros((64, 5), np.float32)
    obs = views.take(rows, names)
    for k in range(50):  # a training loop holds the previous step's dict while it steps
        rows[:] = k
        obs = views.take(rows, names)
        assert obs["a3"][0] == k
    assert len(made) == 2  # two buffers took turns; none was allocated per step
    kept = [views.take(rows, names) for _ in range(5)]  # a caller that keeps every dict
    assert len(made) == 2 + 4


def test_unheld_counts_every_reference():
    holder = empty_dicts(dict.fromkeys("abc"))
    assert unheld(holder, True)
    inner = holder["b"]
    assert not unheld(holder, True) and not unheld(holder, False)
    del inner
    holder["c"]["x"] = 1
    assert not unheld(holder, True) and unheld(holder, False)


def test_refill_floats_writes_only_floats_that_the_holder_alone_holds():
    names = [f"uav_{i}" for i in range(200)]
    holder = float_dict(dict.fromkeys(names, False), np.zeros(200))
    for values in (np.linspace(-3, 3, 200), np.linspace(5, 6, 200).astype(np.float32), np.arange(400.0)[::2]):
        assert refill_floats(holder, values)
        assert holder == dict(zip(names, values.tolist())) and list(holder) == names
    kept = holder["uav_7"]
    assert not refill_floats(holder, np.full(200, 9.0))
    assert kept == 14.0 and type(kept) is float  # a float held elsewhere keeps its value
    del kept
    holder["uav_7"] = np.float64(1.0)  # a float subclass (numpy's): not written, even unheld
    assert not refill_floats(holder, np.zeros(200))
    holder["uav_7"] = 1
    assert not refill_floats(holder, np.zeros(200))
    with pytest.raises(ValueError, match="200 keys for 3 values"):
        refill_floats(holder, np.zeros(3))
    with pytest.raises(ValueError, match="float32 or float64"):
        refill_floats(holder, np.zeros(200, np.int64))
    with pytest.raises(TypeError, match="holder must be a dict"):
        refill_floats(list(holder.values()), np.zeros(200))


REWARD_HOLDS = st.sampled_from(["dict", "one float", "values", "items list", "sum", "nothing"])


@settings(max_examples=60, deadline=None)
@given(st.lists(REWARD_HOLDS, min_size=1, max_size=12), st.integers(1, 5))
def test_rewards_a_caller_keeps_never_change(holds, n):
    """Whatever a caller keeps of each step's rewards, later steps leave it as it was; each
    step's dict reads that step's values as exact floats."""
    rewards_of, names = FloatDicts(), dict.fromkeys(f"a{i}" for i in range(n))
    kept = []  # (the object kept, what it must still read as)
    for step, hold in enumerate(holds):
        values = np.arange(n, dtype=np.float64) + 10.0 * step + 0.5
        rew = rewards_of.take(names, values)
        assert rew == dict(zip(names, values.tolist())) and all(type(v) is float for v in rew.values())
        a = f"a{step % n}"
        thing = {"dict": lambda: rew, "one float": lambda: rew[a], "values": lambda: rew.values(),
                 "items list": lambda: list(rew.items()), "sum": lambda: sum(rew.values()),
                 "nothing": lambda: None}[hold]()
        if thing is not None:
            kept.append((thing, repr(list(thing) if not isinstance(thing, (dict, float)) else thing)))
        del rew, thing
        gc.collect()
        for thing, before in kept:
            assert repr(list(thing) if not isinstance(thing, (dict, float)) else thing) == before


def test_rewards_are_made_anew_only_while_someone_holds_them(monkeypatch):
    made = []
    monkeypatch.setattr(_agent_dicts, "float_dict", lambda *a: made.append(1) or float_dict(*a))
    rewards_of, names = FloatDicts(), dict.fromkeys(f"a{i}" for i in range(64))
    rew = rewards_of.take(names, np.zeros(64))
    for k in range(50):  # a training loop holds the previous step's dict while it steps
        rew = rewards_of.take(names, np.full(64, float(k)))
        assert rew["a3"] == k
    assert len(made) == 2  # two dicts of floats took turns
    kept = [rewards_of.take(names, np.ones(64)) for _ in range(5)]  # a caller that keeps every dict
    assert len(made) == 2 + 4 and all(d == dict.fromkeys(names, 1.0) for d in kept)
    rewards_of.take(dict(names), np.ones(64))  # another set of agents: the kept dicts are dropped
    assert len(made) == 2 + 4 + 1


INFO_MOVES = st.sampled_from(["keep infos", "keep one", "write one", "write and clear", "nothing"])


@settings(max_examples=60, deadline=None)
@given(st.lists(INFO_MOVES, min_size=1, max_size=12), st.integers(1, 5))
def test_infos_are_fresh_empty_dicts_whatever_was_done_with_the_last_ones(moves, n):
    infos_of, names = InfoDicts(), dict.fromkeys(f"a{i}" for i in range(n))
    kept = []
    for step, move in enumerate(moves):
        infos = infos_of.take(names)
        assert infos == {a: {} for a in names} and len({id(d) for d in infos.values()}) == n
        assert all(d is not k for d in infos.values() for k in kept)  # nothing kept is handed out again
        a = f"a{step % n}"
        if move == "keep infos":
            kept.extend(infos.values())
        elif move == "keep one":
            kept.append(infos[a])
        elif move == "write one":
            infos[a]["step"] = step
        elif move == "write and clear":
            infos[a]["step"] = step
            infos[a].clear()
        del infos
        gc.collect()


def test_row_views_index_gathers_the_rows_named():
    views = RowViews()
    rows = np.arange(30.0).reshape(10, 3)
    live = np.array([1, 4, 9])
    got = views.take(rows, ["x", "y", "z"], live)
    assert list(got) == ["x", "y", "z"]
    np.testing.assert_array_equal(np.stack(list(got.values())), rows[live])


HOLDS = st.sampled_from(["dict", "row", "slice", "reshape", "values", "memoryview", "nothing"])


@settings(max_examples=60, deadline=None)
@given(st.lists(HOLDS, min_size=1, max_size=12), st.integers(1, 6))
def test_what_a_caller_keeps_never_changes(holds, n):
    """Whatever a caller keeps of each step's dict, later steps leave it as it was."""
    views, names = RowViews(), [f"a{i}" for i in range(n)]
    rows = np.empty((n, 3), np.float32)
    kept = []  # (the object kept, what it must still read as)
    for step, hold in enumerate(holds):
        rows[:] = np.arange(n * 3, dtype=np.float32).reshape(n, 3) + 100 * step
        obs = views.take(rows, names)
        a = names[step % n]
        thing = {"dict": lambda: obs, "row": lambda: obs[a], "slice": lambda: obs[a][1:],
                 "reshape": lambda: obs[a].reshape(3, 1), "values": lambda: obs.values(),
                 "memoryview": lambda: memoryview(obs[a]), "nothing": lambda: None}[hold]()
        if thing is not None:
            kept.append((thing, snapshot(thing)))
        del obs, thing
        gc.collect()
        for thing, before in kept:
            assert snapshot(thing) == before


def snapshot(thing):
    if isinstance(thing, dict):
        return {k: v.tolist() for k, v in thing.items()}
    if isinstance(thing, memoryview):
        return thing.tolist()
    if isinstance(thing, np.ndarray):
        return thing.tolist()
    return [v.tolist() for v in thing]


def test_a_torch_tensor_of_a_row_keeps_its_values():
    torch = pytest.importorskip("torch")
    views, names = RowViews(), ["a", "b"]
    rows = np.ones((2, 4), np.float32)
    t = torch.from_numpy(views.take(rows, names)["a"])  # shares the buffer's memory
    for k in range(4):
        rows[:] = k + 5
        views.take(rows, names)
    assert t.tolist() == [1.0] * 4
