"""Bulk paths of `seer.EventQueue` against a plain-Python reference.

Batches of hundreds to thousands of events over a few to a few hundred
entities: push_many groups such a batch by entity in one pass, and a pop whose
lane held only what was pushed since its last pop hands the events out
straight from the sorted inbox.  These run with random arrival order, ties
(settled by source, then seq), -0.0, horizons and per-entity or max_events
limits that leave part of a lane behind, and pushes onto lanes that still
hold events; every popped entity group must be exactly what the reference
says comes next for that entity.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from seer import EVENT_DTYPE, EventQueue

INF = math.inf


class Reference:
    """Pending events per entity, kept sorted by (time, source, seq)."""

    def __init__(self, num_entities):
        self.lanes = [[] for _ in range(num_entities)]

    def push(self, ents, times, sources, seqs, payloads):
        touched = set()
        for e, t, s, q, p in zip(ents.tolist(), times.tolist(), sources.tolist(), seqs.tolist(),
                                 payloads.tolist()):
            self.lanes[e].append((t + 0.0, s, q, p))
            touched.add(e)
        for e in touched:
            self.lanes[e].sort(key=lambda r: r[:3])

    def check_group(self, e, rows, horizon, per_entity):
        lane = self.lanes[e]
        want = lane[:len(rows)]
        assert rows == want, f"entity {e}: got {rows[:5]}..., expected {want[:5]}..."
        assert all(r[0] < horizon for r in rows)
        if per_entity is not None:
            assert len(rows) <= per_entity
        del lane[:len(rows)]

    def __len__(self):
        return sum(len(lane) for lane in self.lanes)


def _pop_check(q, ref, horizon, max_events, per_entity, out):
    batch = q.pop(horizon, max_events=max_events, per_entity=per_entity, out=out)
    assert len(batch) <= max_events
    ents = batch["entity"].tolist()
    groups = {}
    for i, e in enumerate(ents):
        if i and ents[i - 1] == e:
            continue
        assert e not in groups, f"entity {e} in two groups"
        groups[e] = i
    bounds = sorted(groups.values()) + [len(ents)]
    for lo, hi in zip(bounds, bounds[1:]):
        e = ents[lo]
        rows = list(zip(batch["time"][lo:hi].tolist(), batch["source"][lo:hi].tolist(),
                        batch["seq"][lo:hi].tolist(), batch["payload"][lo:hi].tolist()))
        ref.check_group(e, rows, horizon, per_entity)
    return batch


@pytest.mark.parametrize("entities,batch", [(7, 300), (64, 256), (300, 2048), (1024, 4096), (50, 5000)])
def test_bulk_rounds_match_the_reference(entities, batch):
    rng = np.random.default_rng(entities * 7919 + batch)
    q = EventQueue(num_entities=entities, capacity=4 * batch, num_kinds=4)
    ref = Reference(entities)
    out = np.empty(batch, EVENT_DTYPE)
    clock, payload, seq = 0.0, 0, 0
    for rnd in range(12):
        n = int(rng.integers(batch // 2, batch + 1))
        if len(ref) + n > q.capacity:
            n = q.capacity - len(ref)
        ents = rng.integers(0, entities, n).astype(np.int32)
        # some rounds bunch the times (ties, settled by source then seq), some
        # push a lane's events in order, the rest at random
        style = rnd % 3
        if style == 0:
            times = clock + rng.integers(0, 4, n).astype(float) * 0.5
        elif style == 1:
            times = np.sort(clock + rng.random(n) * 10.0)
        else:
            times = clock + rng.random(n) * 10.0
        times[rng.random(n) < 0.05] = clock  # equal to the clock: a tie with what is left
        if clock == 0.0:
            times[:4] = -0.0
        sources = rng.integers(-1, 5, n).astype(np.int32)
        seqs = (seq + rng.permutation(n)).astype(np.uint32)
        seq += n
        payloads = np.arange(payload, payload + n, dtype=np.int64)
        payload += n
        q.push_many(ents, times, rng.integers(0, 4, n).astype(np.int32), payloads, sources=sources, seqs=seqs)
        ref.push(ents, times, sources, seqs, payloads)
        assert len(q) == len(ref)
        # pops with a horizon inside the round, and limits, leave events behind
        # in lanes that the next round pushes to again
        # (below the next round's clock: nothing pushed later is in the past)
        for horizon, max_events, per_entity in ((clock + 2.0, batch // 3, None), (clock + 5.0, batch, 2),
                                                (clock + 5.0, batch, None)):
            while True:
                b = _pop_check(q, ref, horizon, max_events, per_entity, out)
                if len(b) == 0:
                    break
                q.release(b["entity"])
        assert len(q) == len(ref)
        clock += 5.0
    while True:
        b = _pop_check(q, ref, INF, batch, None, out)
        if len(b) == 0:
            break
        q.release(b["entity"])
    assert len(q) == len(ref) == 0
    assert q.min_time() == INF


def test_bulk_push_without_sources_numbers_events_in_push_order():
    """External events tie on time by the queue-wide counter: push order,
    within a grouped batch as across batches."""
    q = EventQueue(num_entities=16, capacity=1 << 14)
    rng = np.random.default_rng(3)
    n = 2048
    ents = rng.integers(0, 16, n).astype(np.int32)
    times = rng.integers(0, 3, n).astype(np.float64)
    q.push_many(ents, times, np.zeros(n, np.int32), np.arange(n, dtype=np.int64))
    q.push_many(ents, times, np.zeros(n, np.int32), np.arange(n, 2 * n, dtype=np.int64))
    got = {}
    while True:
        b = q.pop(INF, max_events=1000)
        if len(b) == 0:
            break
        for e, p in zip(b["entity"].tolist(), b["payload"].tolist()):
            got.setdefault(e, []).append(p)
        q.release(b["entity"])
    all_t = np.concatenate([times, times])
    all_e = np.concatenate([ents, ents])
    for e in range(16):
        idx = np.flatnonzero(all_e == e)
        assert got[e] == sorted(idx.tolist(), key=lambda i: (all_t[i], i))


def test_pop_reusing_out_sees_changes_to_out():
    """The pop of an out array seen before takes a short path; it still
    honours max_events, the array's length, and a switch to another array."""
    q = EventQueue(num_entities=4, capacity=256)
    q.push_many(np.arange(40, dtype=np.int32) % 4, np.arange(40.0), np.zeros(40, np.int32),
                np.arange(40, dtype=np.int64))
    out = np.empty(8, EVENT_DTYPE)
    b = q.pop(INF, max_events=3, out=out)
    assert len(b) == 3 and np.shares_memory(b, out)
    q.release(b["entity"])
    b = q.pop(INF, max_events=100, out=out)  # capped by len(out)
    assert len(b) == 8
    q.release(b["entity"])
    b = q.pop(0.5, max_events=100, out=out)  # a horizon below everything left
    assert len(b) == 0
    other = np.empty(64, EVENT_DTYPE)
    b = q.pop(INF, max_events=100, out=other)
    assert len(b) > 8 and np.shares_memory(b, other)
    q.release(b["entity"])
    with pytest.raises(ValueError, match="horizon"):
        q.pop(math.nan, out=other)
    with pytest.raises(ValueError, match="max_events"):
        q.pop(INF, max_events=0, out=other)
    other.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        q.pop(INF, out=other)


def test_release_takes_a_popped_column_and_other_integer_arrays():
    q = EventQueue(num_entities=8, capacity=64)
    q.push_many(np.arange(8, dtype=np.int32), np.ones(8), np.zeros(8, np.int32), np.zeros(8, np.int64))
    b = q.pop(INF)
    assert not b["entity"].flags.c_contiguous
    q.release(b["entity"][:4])
    q.release(b["entity"][4:].astype(np.int64))
    assert not any(q.is_claimed(e) for e in range(8))


@pytest.mark.parametrize("depth", [2, 3, 4, 5, 8, 9, 15, 16, 17, 31, 32, 33, 40])
def test_short_chains_sort_near_and_full_ties(depth):
    """A lane's inbox of up to 32 events is sorted on the stack by a sorting
    network on the times' keys with a few low bits given up to the events'
    places: times a few ulps apart, equal times (settled by source, then
    seq) and full ties (push order) must all come out in order, whether the
    inbox is all the lane holds (handed out directly) or joins a list."""
    rng = np.random.default_rng(depth)
    ents = 64
    for trial in range(30):
        joins = trial % 3 == 0
        base = np.array([1.0, 2.5, 3e7] + ([] if joins else [1e-300]), np.float64)
        q = EventQueue(num_entities=ents, capacity=ents * depth * 2 + 256, num_kinds=2)
        n = ents * depth
        e = np.repeat(np.arange(ents, dtype=np.int32), depth)
        # times a few ulps apart around a few bases, many equal
        t = base[rng.integers(0, len(base), n)]
        for _ in range(int(rng.integers(0, 6))):
            bump = rng.random(n) < 0.5
            t[bump] = np.nextafter(t[bump], np.inf)
        src = rng.integers(-1, 3, n).astype(np.int32)
        seq = rng.integers(0, 3, n).astype(np.uint32)  # repeats: full ties too
        order = rng.permutation(n)
        if joins:
            # each lane pops one event and keeps one (time 2.0) in its list,
            # which the events below then join
            two = np.repeat(np.arange(ents, dtype=np.int32), 2)
            q.push_many(two, np.tile([0.5, 2.0], ents), np.zeros(2 * ents, np.int32),
                        np.full(2 * ents, -1, np.int64), sources=np.full(2 * ents, -1, np.int32),
                        seqs=np.zeros(2 * ents, np.uint32))
            b = q.pop(1.0, max_events=1 << 16)
            assert len(b) == ents
            q.release(b["entity"])
        q.push_many(e[order], t[order], np.zeros(n, np.int32), order.astype(np.int64), sources=src[order],
                    seqs=seq[order])
        got = {}
        while True:
            b = q.pop(INF, max_events=1 << 16)
            if len(b) == 0:
                break
            for ee, p in zip(b["entity"].tolist(), b["payload"].tolist()):
                got.setdefault(ee, []).append(p)
            q.release(b["entity"])
        pos = np.empty(n, np.int64)
        pos[order] = np.arange(n)  # push position of each original event
        for lane in range(ents):
            idx = np.flatnonzero(e == lane)
            rows = [(t[i], int(src[i]), int(seq[i]), int(pos[i]), i) for i in idx]
            if joins:
                rows.append((2.0, -1, 0, -1, -1))  # the one left behind, pushed first
            want = [r[4] for r in sorted(rows)]
            assert got[lane] == want, f"depth {depth}, trial {trial}, entity {lane}"
