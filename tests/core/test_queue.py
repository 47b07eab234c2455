"""Unit tests of `seer.EventQueue`, the Python face of the C dual-layer queue."""

from __future__ import annotations

import math

import numpy as np
import pytest

import seer
from seer import (
    EVENT_DTYPE,
    EventQueue,
    InvalidEventError,
    NotClaimedError,
    PastEventError,
    QueueFullError,
    SeerError,
)

INF = math.inf


def push(q, entities, times, kinds=None, payloads=None, **kw):
    entities = np.asarray(entities, np.int32)
    kinds = np.zeros(len(entities), np.int32) if kinds is None else np.asarray(kinds, np.int32)
    payloads = None if payloads is None else np.asarray(payloads, np.int64)
    q.push_many(entities, np.asarray(times, np.float64), kinds, payloads, **kw)


def rows(batch):
    """(entity, time, kind, payload) tuples of a popped batch, in order."""
    return [(int(e), float(t), int(k), int(p)) for e, t, k, p in zip(
        batch["entity"], batch["time"], batch["kind"], batch["payload"])]


def drain(q, horizon=INF):
    """Pop everything before horizon, releasing as we go; events per entity."""
    per_entity = {}
    while True:
        batch = q.pop(horizon, max_events=1 << 16)
        if len(batch) == 0:
            return per_entity
        for row in rows(batch):
            per_entity.setdefault(row[0], []).append(row)
        q.release(batch["entity"])


def assert_grouped(batch):
    ents = batch["entity"].tolist()
    seen = set()
    for i, e in enumerate(ents):
        if i == 0 or ents[i - 1] != e:
            assert e not in seen, f"entity {e} appears in two groups: {ents}"
            seen.add(e)


# ---- construction -------------------------------------------------------------


def test_construct_and_repr():
    q = EventQueue(num_entities=16, capacity=128, num_kinds=4)
    assert (q.num_entities, q.capacity, q.num_kinds) == (16, 128, 4)
    assert len(q) == 0
    assert q.min_time() == INF
    assert "num_entities=16" in repr(q) and "capacity=128" in repr(q)
    assert seer.EventQueue is EventQueue


@pytest.mark.parametrize(
    "kwargs, name, shown",
    [
        (dict(num_entities=0, capacity=8), "num_entities", "0"),
        (dict(num_entities=-3, capacity=8), "num_entities", "-3"),
        (dict(num_entities="x", capacity=8), "num_entities", "'x'"),
        (dict(num_entities=2.5, capacity=8), "num_entities", "2.5"),
        (dict(num_entities=True, capacity=8), "num_entities", "True"),
        (dict(num_entities=4, capacity=-1), "capacity", "-1"),
        (dict(num_entities=4, capacity=0), "capacity", "0"),
        (dict(num_entities=4, capacity="x"), "capacity", "'x'"),
        (dict(num_entities=4, capacity=(1 << 31) + 1), "capacity", str((1 << 31) + 1)),
        (dict(num_entities=4, capacity=8, num_kinds=0), "num_kinds", "0"),
    ],
)
def test_bad_constructor_args(kwargs, name, shown):
    with pytest.raises(ValueError) as info:
        EventQueue(**kwargs)
    msg = str(info.value)
    assert f"{name}={shown}" in msg
    assert "expected an integer in [1, " in msg


def test_nbytes_for_a_million_events():
    q = EventQueue(num_entities=1024, capacity=1 << 20)
    assert (1 << 20) * EVENT_DTYPE.itemsize <= q.nbytes <= 64 * 1024 * 1024
    small = EventQueue(num_entities=4, capacity=64)
    assert 0 < small.nbytes < q.nbytes


# ---- push / pop / release ------------------------------------------------------


def test_push_pop_release_roundtrip():
    q = EventQueue(num_entities=4, capacity=64)
    q.push(2, 0.5, kind=3, payload=-7)
    assert len(q) == 1
    assert q.min_time() == 0.5
    batch = q.pop(1.0)
    assert batch.dtype == EVENT_DTYPE
    assert rows(batch) == [(2, 0.5, 3, -7)]
    assert batch["source"].tolist() == [-1]
    assert len(q) == 0
    assert q.is_claimed(2) and not q.is_claimed(1)
    q.release(2)
    assert not q.is_claimed(2)
    assert len(q.pop(INF)) == 0


def test_prepared_push_reuses_its_arrays_with_push_many_checks():
    q = EventQueue(num_entities=4, capacity=8, num_kinds=2)
    ent, tim = np.arange(4, dtype=np.int32), np.zeros(4)
    knd, pay = np.zeros(4, np.int32), np.arange(4, dtype=np.int64)
    prep = q.prepare_push(ent, tim, knd, pay)
    q.push_prepared(prep, 3)                   # the first n entries
    tim[:] = 1.0                               # written in place, pushed again
    knd[:] = 1
    q.push_prepared(prep, 4)
    got = drain(q)
    assert got[0] == [(0, 0.0, 0, 0), (0, 1.0, 1, 0)] and got[3] == [(3, 1.0, 1, 3)]
    ent[0] = 9
    with pytest.raises(InvalidEventError, match="entity 9 at index 0 is out of range"):
        q.push_prepared(prep, 1)
    ent[0] = 0
    q.push_prepared(prep, 4)
    q.push_prepared(prep, 4)
    with pytest.raises(QueueFullError):         # all or nothing, as push_many
        q.push_prepared(prep, 4)
    assert len(q) == 8
    with pytest.raises(ValueError, match="n=5 is invalid"):
        q.push_prepared(prep, 5)
    with pytest.raises(TypeError, match="times must be a C-contiguous 1-d float64"):
        q.prepare_push(ent, tim.astype(np.float32), knd, pay)
    with pytest.raises(ValueError, match="kinds has 3 entries: expected 4"):
        q.prepare_push(ent, tim, knd[:3].copy(), pay)


def test_pop_groups_by_entity_and_orders_each_entity():
    q = EventQueue(num_entities=8, capacity=256)
    rng = np.random.default_rng(1)
    ents = rng.integers(0, 8, 120)
    times = rng.integers(0, 10, 120).astype(float)  # many ties
    payloads = np.arange(120)
    push(q, ents, times, payloads=payloads)
    batch = q.pop(INF, max_events=1000)
    assert len(batch) == 120
    assert_grouped(batch)
    for e in range(8):
        got = batch[batch["entity"] == e]
        # (time, source, seq): all external, so ties keep push order (seq).
        want = sorted(np.flatnonzero(ents == e), key=lambda i: (times[i], i))
        assert got["payload"].tolist() == [int(payloads[i]) for i in want]
        assert np.all(np.diff(got["seq"].astype(np.int64))[np.diff(got["time"]) == 0] > 0)


def _times(kind, rng, n):
    """Arrival times that stress a drain's sort in different ways."""
    if kind == "uniform":
        return rng.random(n) * 100.0
    if kind == "binades":  # from 1e-30 to 1e30: the keys' top bits hold most of the spread
        return 10.0 ** rng.uniform(-30, 30, n) * rng.choice([-1.0, 1.0], n)
    if kind == "bunched":  # most times within 1e-12 of each other, a few far off: crowded buckets
        t = 5.0 + rng.random(n) * 1e-12
        t[rng.random(n) < 0.05] = rng.random() * 1e6
        return t
    if kind == "few_values":  # long runs of equal times: ties settled by (source, seq)
        return rng.integers(0, 4, n).astype(float) - 0.0 * rng.integers(0, 2, n)
    if kind == "descending":
        return np.linspace(1.0, 0.0, n)
    raise AssertionError(kind)


@pytest.mark.parametrize("depth", [3, 16, 40, 256, 5000, 20000])
@pytest.mark.parametrize("kind", ["uniform", "binades", "bunched", "few_values", "descending"])
def test_deep_lanes_pop_in_time_source_seq_order(kind, depth):
    """A lane's inbox is sorted when it is drained, whatever the arrivals:
    each entity's events come out in (time, source, seq) order, all of them,
    once each."""
    rng = np.random.default_rng(depth)
    n = 3 * depth
    ents = np.repeat(np.arange(3), depth)
    rng.shuffle(ents)
    times = _times(kind, rng, n)
    sources = rng.integers(-1, 3, n).astype(np.int32)
    seqs = rng.permutation(n).astype(np.uint32)
    q = EventQueue(num_entities=3, capacity=n)
    # two pushes, so a drain also merges into a list that is already sorted
    half = n // 2
    for sl in (slice(0, half), slice(half, n)):
        push(q, ents[sl], times[sl], payloads=np.arange(n)[sl], sources=sources[sl], seqs=seqs[sl])
    got = {}
    while True:
        batch = q.pop(INF, max_events=1 << 16)
        if len(batch) == 0:
            break
        for e, p in zip(batch["entity"].tolist(), batch["payload"].tolist()):
            got.setdefault(e, []).append(p)
        q.release(batch["entity"])
    for e in range(3):
        idx = np.flatnonzero(ents == e)
        want = sorted(idx.tolist(), key=lambda i: (times[i] + 0.0, int(sources[i]), int(seqs[i])))
        assert got[e] == want, f"entity {e}: {kind} arrivals, depth {depth}"


def test_order_breaks_ties_by_source_then_seq():
    q = EventQueue(num_entities=6, capacity=64)
    # Same entity and time; pushed in scrambled (source, seq) order.
    src = np.array([3, 1, 3, -1, 1, 2], np.int32)
    seq = np.array([7, 9, 2, 0, 4, 1], np.uint32)
    push(q, [0] * 6, [1.0] * 6, payloads=np.arange(6), sources=src, seqs=seq)
    push(q, [0], [0.5], payloads=[99], sources=[5], seqs=[0])
    batch = q.pop(INF)
    keys = list(zip(batch["time"].tolist(), batch["source"].tolist(), batch["seq"].tolist()))
    assert keys == sorted(keys)
    assert batch["payload"].tolist() == [99, 3, 4, 1, 5, 2, 0]


def test_negative_zero_is_zero():
    q = EventQueue(num_entities=2, capacity=8)
    push(q, [0, 0], [0.0, -0.0], sources=[1, 0], seqs=[0, 0], payloads=[1, 2])
    batch = q.pop(INF)
    assert batch["payload"].tolist() == [2, 1]  # equal times: source 0 first
    assert not np.signbit(batch["time"]).any()


def test_horizon_is_exclusive():
    q = EventQueue(num_entities=3, capacity=16)
    push(q, [0, 1, 2], [1.0, 0.999, 2.0])
    assert rows(q.pop(1.0)) == [(1, 0.999, 0, 0)]
    q.release(1)
    assert len(q.pop(1.0)) == 0
    assert len(q.pop(-INF)) == 0
    batch = q.pop(np.nextafter(1.0, 2.0))
    assert rows(batch) == [(0, 1.0, 0, 0)]
    q.release(batch["entity"])
    assert rows(q.pop(INF)) == [(2, 2.0, 0, 0)]


def test_lower_horizon_after_higher_one():
    q = EventQueue(num_entities=4, capacity=16)
    push(q, [0, 1, 2, 3], [5.0, 1.0, 7.0, 0.5])
    b = q.pop(10.0, max_events=1)
    assert len(b) == 1
    q.release(b["entity"])
    # An earlier horizon after a later one still only returns earlier events.
    b = q.pop(2.0)
    assert set(rows(b)) <= {(1, 1.0, 0, 0), (3, 0.5, 0, 0)}
    assert all(t < 2.0 for t in b["time"])


def test_claimed_entity_is_skipped_until_released():
    q = EventQueue(num_entities=4, capacity=64)
    push(q, [0, 0, 1], [1.0, 2.0, 1.5])
    first = q.pop(10.0)
    assert sorted(set(first["entity"].tolist())) == [0, 1]
    push(q, [0, 2], [3.0, 3.0])
    second = q.pop(10.0)
    assert rows(second) == [(2, 3.0, 0, 0)]  # entity 0 is held: its new event waits
    assert q.is_claimed(0) and q.is_claimed(1) and q.is_claimed(2)
    assert len(q) == 1
    q.release(first["entity"])  # repeats of one entity count once
    third = q.pop(10.0)
    assert rows(third) == [(0, 3.0, 0, 0)]
    q.release(np.array([0, 2]))
    assert len(q) == 0


def test_entities_without_events_before_horizon_are_not_claimed():
    q = EventQueue(num_entities=2, capacity=8)
    push(q, [0, 1], [1.0, 5.0])
    b = q.pop(2.0)
    assert b["entity"].tolist() == [0]
    assert not q.is_claimed(1)
    with pytest.raises(NotClaimedError):
        q.release(1)


def test_release_of_unclaimed_raises():
    q = EventQueue(num_entities=4, capacity=8)
    with pytest.raises(NotClaimedError) as info:
        q.release(3)
    assert "entity 3" in str(info.value) and "not claimed" in str(info.value)
    assert isinstance(info.value, ValueError) and isinstance(info.value, SeerError)
    push(q, [1], [0.0])
    q.pop(1.0)
    # The ones before the bad entity are released; the message names it.
    with pytest.raises(NotClaimedError) as info:
        q.release(np.array([1, 2]))
    assert "entity 2 at index 1" in str(info.value)
    assert not q.is_claimed(1)
    with pytest.raises(NotClaimedError):
        q.release(1)  # a second release of the same claim


def test_release_bad_input():
    q = EventQueue(num_entities=4, capacity=8)
    with pytest.raises(InvalidEventError) as info:
        q.release(4)
    assert "entity 4" in str(info.value) and "< 4" in str(info.value)
    with pytest.raises(InvalidEventError) as info:
        q.release(np.array([0.5]))
    assert "must hold integers" in str(info.value) and "float64" in str(info.value)
    q.release([])  # an empty release is a no-op
    q.release(np.array([], np.int32))


def test_per_entity_limit():
    q = EventQueue(num_entities=3, capacity=64)
    push(q, [0] * 5 + [1] * 2 + [2] * 4, [float(i) for i in range(11)])
    b = q.pop(INF, per_entity=2)
    assert_grouped(b)
    counts = {e: int((b["entity"] == e).sum()) for e in range(3)}
    assert counts == {0: 2, 1: 2, 2: 2}
    assert b[b["entity"] == 0]["time"].tolist() == [0.0, 1.0]
    assert len(q) == 5
    q.release(b["entity"])
    b = q.pop(INF, per_entity=1)
    assert sorted(b["entity"].tolist()) == [0, 2]
    assert b[b["entity"] == 0]["time"].tolist() == [2.0]
    q.release(b["entity"])
    rest = drain(q)
    assert [r[1] for r in rest[0]] == [3.0, 4.0] and [r[1] for r in rest[2]] == [10.0]


def test_max_events_limit_keeps_rest_and_claim():
    q = EventQueue(num_entities=2, capacity=64)
    push(q, [0] * 10, np.arange(10.0), payloads=np.arange(10))
    b = q.pop(INF, max_events=4)
    assert b["payload"].tolist() == [0, 1, 2, 3]
    assert len(q) == 6
    assert q.is_claimed(0)
    assert len(q.pop(INF)) == 0  # still held: nobody else gets the rest
    q.release(b["entity"])
    b = q.pop(INF, max_events=100)
    assert b["payload"].tolist() == [4, 5, 6, 7, 8, 9]
    q.release(0)
    assert len(q) == 0


def test_max_events_across_entities():
    q = EventQueue(num_entities=8, capacity=64)
    push(q, np.repeat(np.arange(8), 3), np.tile([0.0, 1.0, 2.0], 8))
    seen = []
    while len(q):
        b = q.pop(INF, max_events=5)
        assert 1 <= len(b) <= 5
        assert_grouped(b)
        seen.extend(rows(b))
        q.release(b["entity"])
    assert len(seen) == 24
    for e in range(8):
        assert [r[1] for r in seen if r[0] == e] == [0.0, 1.0, 2.0]


def test_len_and_min_time():
    q = EventQueue(num_entities=4, capacity=64)
    assert len(q) == 0 and q.min_time() == INF
    push(q, [3, 1, 2], [4.0, 2.5, 9.0])
    assert len(q) == 3 and q.min_time() == 2.5
    b = q.pop(3.0)
    q.release(b["entity"])
    assert len(q) == 2 and q.min_time() == 4.0
    drain(q)
    assert len(q) == 0 and q.min_time() == INF


def test_clear_drops_events_claims_and_floors():
    q = EventQueue(num_entities=4, capacity=16)
    push(q, [0, 1, 1, 2], [5.0, 1.0, 2.0, 3.0])
    b = q.pop(2.0)
    assert b["entity"].tolist() == [1]
    q.clear()
    assert len(q) == 0 and q.min_time() == INF
    assert not any(q.is_claimed(e) for e in range(4))
    assert len(q.pop(INF)) == 0
    with pytest.raises(NotClaimedError):
        q.release(1)
    # Entity 1 was handed 1.0: after clear an earlier time is fine again.
    push(q, [1], [0.0])
    # The whole pool is free again.
    push(q, np.zeros(15, np.int32), np.arange(15.0) + 1)
    assert len(q) == 16
    assert drain(q)[1] == [(1, 0.0, 0, 0)]


def full_rows(batch):
    return [(int(e), float(t), int(k), int(p), int(s), int(q)) for e, t, k, p, s, q in zip(
        batch["entity"], batch["time"], batch["kind"], batch["payload"], batch["source"], batch["seq"])]


def test_relabel_moves_every_event_with_its_entity_and_source():
    """Each pending event goes to the new name of its entity, its source is
    renamed too, nothing is lost or duplicated, each entity's events come out
    in (time, new source, seq) order, and the floors move with the entities."""
    rng = np.random.default_rng(3)
    E, n = 40, 3000
    q = EventQueue(num_entities=E, capacity=4096, num_kinds=3)
    ent = rng.integers(0, E, n).astype(np.int32)
    times = np.round(rng.uniform(0.0, 5.0, n), 1)  # many ties
    src = rng.integers(-1, E, n).astype(np.int32)
    q.push_many(ent, times, rng.integers(0, 3, n).astype(np.int32), rng.integers(-9, 9, n), sources=src,
                seqs=np.arange(n, dtype=np.uint32))
    handed = {}
    for row in full_rows(q.pop(1.0, max_events=n)):  # set floors, then let go
        handed[row[0]] = max(handed.get(row[0], -INF), row[1])
    q.release(np.arange(E, dtype=np.int32)[[q.is_claimed(e) for e in range(E)]])
    before = {}
    for row in full_rows(q.pop(INF, max_events=n)):
        before.setdefault(row[0], []).append(row)
    q.clear()
    # the same pending events again, with the same floors
    for e, t in handed.items():
        push(q, [e], [t])
        q.release(q.pop(INF)["entity"])
    rest = [r for rs in before.values() for r in rs]
    q.push_many([r[0] for r in rest], [r[1] for r in rest], [r[2] for r in rest], [r[3] for r in rest],
                sources=[r[4] for r in rest], seqs=np.array([r[5] for r in rest], np.uint32))
    perm = rng.permutation(E)
    q.relabel(perm)
    assert len(q) == len(rest)
    after = {}
    while len(q):
        b = q.pop(INF, max_events=n)
        for row in full_rows(b):
            after.setdefault(row[0], []).append(row)
        q.release(b["entity"])
    want = {}
    for e, t, k, p, s, sq in rest:
        want.setdefault(int(perm[e]), []).append((int(perm[e]), t, k, p, int(perm[s]) if s >= 0 else -1, sq))
    for e in want:
        assert after[e] == sorted(want[e], key=lambda r: (r[1], r[4], r[5])), e
    assert set(after) == set(want)
    for e, t in handed.items():  # the floor moved with its entity
        with pytest.raises(PastEventError):
            push(q, [int(perm[e])], [t - 0.05])


def test_relabel_refuses_what_is_not_a_permutation_and_held_entities():
    q = EventQueue(num_entities=3, capacity=8)
    push(q, [0, 1, 2], [1.0, 2.0, 3.0])
    for bad, shown in (([0, 0, 1], r"new_of_old\[1\]=0 is a repeat"), ([0, 1, 3], r"new_of_old\[2\]=3 is out of range"),
                       ([1, 0], "expected 3 integers"), ([0.0, 1.0, 2.0], "expected 3 integers")):
        with pytest.raises(ValueError, match=shown):
            q.relabel(bad)
    assert len(q) == 3
    b = q.pop(1.5)
    with pytest.raises(ValueError, match="entity 0 is held"):
        q.relabel([2, 1, 0])
    q.release(b["entity"])
    q.relabel([2, 1, 0])
    assert drain(q) == {1: [(1, 2.0, 0, 0)], 0: [(0, 3.0, 0, 0)]}  # 1 stays 1, 2 becomes 0


def test_out_parameter():
    q = EventQueue(num_entities=4, capacity=64)
    push(q, [0, 1, 2, 3] * 3, np.arange(12.0))
    out = np.zeros(5, EVENT_DTYPE)
    b = q.pop(INF, max_events=100, out=out)
    assert len(b) == 5  # min(max_events, len(out))
    assert np.shares_memory(b, out)
    assert rows(b) == rows(out[:5])
    q.release(b["entity"])
    out2 = np.zeros(64, EVENT_DTYPE)
    b2 = q.pop(INF, max_events=3, out=out2)
    assert len(b2) == 3
    with pytest.raises(ValueError, match="EVENT_DTYPE"):
        q.pop(INF, out=np.zeros(4, np.float64))
    with pytest.raises(ValueError, match="EVENT_DTYPE"):
        q.pop(INF, out=np.zeros((2, 2), EVENT_DTYPE))


def test_bad_pop_args():
    q = EventQueue(num_entities=2, capacity=8)
    with pytest.raises(InvalidEventError, match="horizon=nan"):
        q.pop(math.nan)
    with pytest.raises(ValueError, match="max_events=0"):
        q.pop(1.0, max_events=0)
    with pytest.raises(ValueError, match="per_entity=0"):
        q.pop(1.0, per_entity=0)


def test_push_with_sources_and_seqs_and_payload_types():
    q = EventQueue(num_entities=2, capacity=8, num_kinds=4)
    q.push_many([0, 1], [1.0, 2.0], [3, 2], [2**62, -(2**62)], sources=[1, 0], seqs=[4, 5])
    b = q.pop(INF)
    assert rows(b) == [(0, 1.0, 3, 2**62), (1, 2.0, 2, -(2**62))] or rows(b) == [
        (1, 2.0, 2, -(2**62)), (0, 1.0, 3, 2**62)]
    assert sorted(zip(b["source"].tolist(), b["seq"].tolist())) == [(0, 5), (1, 4)]


def test_empty_push_is_a_noop():
    q = EventQueue(num_entities=2, capacity=8)
    q.push_many([], [], [])
    q.push_many(np.array([], np.int32), np.array([]), np.array([], np.int32))
    assert len(q) == 0


# ---- bad input -------------------------------------------------------------------


@pytest.fixture
def loaded():
    """A queue holding a few known events, entity 1 already handed time 2.0."""
    q = EventQueue(num_entities=4, capacity=16, num_kinds=8)
    push(q, [1], [2.0], payloads=[100])
    b = q.pop(INF)
    q.release(b["entity"])
    base = [(0, 3.0, 1, 10), (1, 4.0, 2, 11), (3, 1.0, 3, 12), (0, 5.0, 4, 13)]
    push(q, [r[0] for r in base], [r[1] for r in base], [r[2] for r in base], [r[3] for r in base])
    return q, base


def assert_unchanged(q, base):
    assert len(q) == len(base)
    got = drain(q)
    want = {}
    for r in sorted(base, key=lambda r: r[1]):
        want.setdefault(r[0], []).append(r)
    assert got == want


BAD_PUSHES = [
    # (entities, times, kinds, exception, message substrings)
    ([0, 4], [1.0, 1.0], [0, 0], InvalidEventError, ["entity 4", "index 1", "< 4"]),
    ([0, -1], [1.0, 1.0], [0, 0], InvalidEventError, ["entity -1", "index 1", "0 <= entity < 4"]),
    ([0, 2**40], [1.0, 1.0], [0, 0], InvalidEventError, [str(2**40), "int32"]),
    ([0, 1], [1.0, 5.0], [0, 8], InvalidEventError, ["kind 8", "index 1", "< 8"]),
    ([0, 1], [1.0, 5.0], [-2, 0], InvalidEventError, ["kind -2", "index 0", "0 <= kind < 8"]),
    ([0, 1], [1.0, math.nan], [0, 0], InvalidEventError, ["time nan", "index 1", "finite"]),
    ([0, 1], [math.inf, 5.0], [0, 0], InvalidEventError, ["time inf", "index 0", "finite"]),
    ([0, 1], [1.0, -math.inf], [0, 0], InvalidEventError, ["time -inf", "index 1", "finite"]),
    ([0, 1], [1.0, 1.5], [0, 0], PastEventError, ["time 1.5", "entity 1", "past", ">= 2.0"]),
]


@pytest.mark.parametrize("ents, times, kinds, exc, parts", BAD_PUSHES)
def test_bad_push_many_raises_and_changes_nothing(loaded, ents, times, kinds, exc, parts):
    q, base = loaded
    with pytest.raises(exc) as info:
        q.push_many(np.array(ents, np.int64), np.array(times), np.array(kinds, np.int64))
    for part in parts:
        assert part in str(info.value), (part, str(info.value))
    assert isinstance(info.value, ValueError)
    assert_unchanged(q, base)


def test_past_time_at_the_floor_is_allowed(loaded):
    q, base = loaded
    push(q, [1], [2.0])  # equal to what entity 1 was handed: not in the past
    assert len(q) == len(base) + 1


@pytest.mark.parametrize(
    "kwargs, parts",
    [
        (dict(entities=[0, 1], times=[1.0], kinds=[0, 0]), ["times has 1 elements", "entities has 2", "same length"]),
        (dict(entities=[0, 1], times=[1.0, 2.0], kinds=[0]), ["kinds has 1 elements", "entities has 2"]),
        (dict(entities=[0], times=[1.0], kinds=[0], payloads=[1, 2]), ["payloads has 2 elements", "entities has 1"]),
        (dict(entities=[0], times=[1.0], kinds=[0], sources=[1, 2]), ["sources has 2 elements"]),
        (dict(entities=[0], times=[1.0], kinds=[0], seqs=[1, 2, 3]), ["seqs has 3 elements"]),
        (dict(entities=np.array([0.0, 1.0]), times=[1.0, 2.0], kinds=[0, 0]), ["entities", "integers", "float64"]),
        (dict(entities=np.array(["a", "b"]), times=[1.0, 2.0], kinds=[0, 0]), ["entities", "integers", "<U1"]),
        (dict(entities=[0, 1], times=np.array(["a", "b"]), kinds=[0, 0]), ["times", "real numbers", "<U1"]),
        (dict(entities=[0, 1], times=[1.0, 2.0], kinds=np.array([0.5, 1.0])), ["kinds", "integers", "float64"]),
        (dict(entities=[0], times=[1.0], kinds=[0], payloads=np.array([1.5])), ["payloads", "integers", "float64"]),
        (dict(entities=np.array([True]), times=[1.0], kinds=[0]), ["entities", "integers", "bool"]),
        (dict(entities=np.array([[0, 1]]), times=[1.0, 2.0], kinds=[0, 0]), ["entities", "1-D", "(1, 2)"]),
        (dict(entities=[0], times=[1.0], kinds=[0], seqs=np.array([-1], np.int32)), ["seqs value -1", "uint32"]),
    ],
)
def test_bad_arrays_raise_and_change_nothing(loaded, kwargs, parts):
    q, base = loaded
    with pytest.raises(InvalidEventError) as info:
        q.push_many(**kwargs)
    for part in parts:
        assert part in str(info.value), (part, str(info.value))
    assert_unchanged(q, base)


@pytest.mark.parametrize(
    "args, parts",
    [
        ((4, 1.0, 0), ["entity 4", "< 4"]),
        ((-1, 1.0, 0), ["entity -1"]),
        ((0, 1.0, 8), ["kind 8", "< 8"]),
        ((0, math.nan, 0), ["time nan", "finite"]),
        ((0, math.inf, 0), ["time inf", "finite"]),
        ((1, 0.5, 0), ["time 0.5", "past", "entity 1"]),
        ((0.5, 1.0, 0), ["entity=0.5", "integer"]),
        ((0, "1.0", 0), ["time='1.0'", "finite float"]),
        ((0, 1.0, None), ["kind=None", "integer"]),
    ],
)
def test_bad_single_push(loaded, args, parts):
    q, base = loaded
    with pytest.raises(InvalidEventError) as info:
        q.push(*args)
    for part in parts:
        assert part in str(info.value), (part, str(info.value))
    assert_unchanged(q, base)


def test_pool_exhausted(loaded):
    q, base = loaded  # capacity 16, 4 pending
    with pytest.raises(QueueFullError) as info:
        push(q, np.zeros(13, np.int32), np.arange(13.0) + 10)
    err = info.value
    assert isinstance(err, OverflowError) and isinstance(err, SeerError)
    assert issubclass(QueueFullError, OverflowError)
    msg = str(err)
    assert "pushing 13 events" in msg and "4 pending" in msg and "capacity 16" in msg
    assert "capacity >= 17" in msg  # says how to size it
    assert_unchanged(q, base)
    # Exactly full is fine; one more is not.
    push(q, np.zeros(16, np.int32), np.arange(16.0) + 10)
    assert len(q) == 16
    with pytest.raises(QueueFullError):
        q.push(1, 50.0, 0)
    assert len(q) == 16
    b = q.pop(INF, max_events=1)
    q.release(b["entity"])
    q.push(1, 50.0, 0)  # a pop made room
    assert len(q) == 16


def test_batch_bigger_than_capacity(loaded):
    q, base = loaded
    with pytest.raises(QueueFullError, match="pushing 100 events"):
        push(q, np.zeros(100, np.int32), np.arange(100.0) + 10)
    assert_unchanged(q, base)


@pytest.mark.parametrize("capacity", [5_000, 40_000])  # under and over the nodes the free ring starts with
def test_every_node_of_a_pool_is_used_and_comes_back(capacity):
    """A pool whose nodes never used are handed out only when the freed ones run short still holds
    exactly ``capacity`` events, loses none and duplicates none, round after round."""
    q = EventQueue(num_entities=64, capacity=capacity)
    rng = np.random.default_rng(capacity)
    for rnd in range(3):
        for k, fill in enumerate((capacity, capacity // 3)):  # the whole pool, then part: freed and fresh mixed
            start = (2 * rnd + k) * 10.0  # each fill after what the last one handed out
            ents = rng.integers(0, 64, fill).astype(np.int32)
            times = start + rng.random(fill)
            pays = np.arange(fill, dtype=np.int64) + 1_000_000 * rnd
            q.push_many(ents, times, np.zeros(fill, np.int32), pays)
            if fill == capacity:
                with pytest.raises(QueueFullError):
                    q.push_many(np.zeros(1, np.int32), [start + 5], np.zeros(1, np.int32), [0])
            got = drain(q)
            payloads = sorted(p for evs in got.values() for (_, _, _, p) in evs)
            assert payloads == pays.tolist() and len(q) == 0  # every event back once, nothing left
            for e, evs in got.items():
                assert [t for (_, t, _, _) in evs] == sorted(t for (_, t, _, _) in evs)
                assert all(p in set(pays[ents == e].tolist()) for (_, _, _, p) in evs)
