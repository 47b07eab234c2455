"""EventQueue from several Python threads: push_many / pop / release with numpy.

Three producers and three consumers share one queue (push_many and pop release
the GIL, so the C code really runs concurrently).  Checked: no loss, no
duplicate, per-entity (time, source, seq) order across all pops, and never two
holders of an entity (tracked in a dict behind a lock that only this test
uses).

Ordering is checkable with several producers per entity because producers
follow the runtime's conservative-window rule: producer p only pushes times
>= low[p], publishes low[p] after each push, and consumers pop below
min(low).  See csrc/tests/stress_queue.c for the same protocol in C.
"""

from __future__ import annotations

import math
import threading
import time

import numpy as np

from seer import EventQueue, QueueFullError

PRODUCERS = 3
CONSUMERS = 3
ENTITIES = 97
PER_PRODUCER = 60_000
MAX_BATCH = 256
LEAD = 4.0
MAX_OFFSET = 2.0
# Events that can wait at or past the horizon (see stress_queue.c), plus slack
# so that the pool also fills up with poppable events now and then.
CAPACITY = 8192
MAGIC = 0x5EE7_C0FF_EE15
TIMEOUT = 120.0


def canary(p, e, seq, t):
    """Payload check word; works on ints or on int64 arrays."""
    return ((p << 42) | (e << 32) | seq) ^ MAGIC ^ ((t * 4).astype(np.int64) << 20 if isinstance(t, np.ndarray)
                                                     else int(t * 4) << 20)


class Shared:
    def __init__(self):
        self.q = EventQueue(num_entities=ENTITIES, capacity=CAPACITY, num_kinds=8)
        self.low = [0.0] * PRODUCERS
        self.errors: list[BaseException] = []
        self.stop = threading.Event()
        # Consumers start once the pool first fills up, so every run
        # exercises QueueFullError and the retry.
        self.go = threading.Event()
        self.lock = threading.Lock()
        self.holders: dict[int, int] = {}  # entity -> consumer id, guarded by lock
        self.expect = np.zeros((ENTITIES, PRODUCERS), np.int64)  # next seq per (entity, producer)
        self.pushed = np.zeros((PRODUCERS, ENTITIES), np.int64)
        self.last: dict[int, tuple] = {}  # per-entity last key; only its holder touches it
        self.popped = 0
        self.full_retries = 0
        self.pops = 0

    def horizon(self):
        return min(self.low)


def producer(S: Shared, p: int):
    rng = np.random.default_rng(1000 + p)
    clock = 0.0
    last_time = np.zeros(ENTITIES)
    seq = np.zeros(ENTITIES, np.int64)
    sent = 0
    while sent < PER_PRODUCER and not S.stop.is_set():
        while clock >= S.horizon() + LEAD and not S.stop.is_set():
            time.sleep(0.0001)
        n = int(min(rng.integers(1, MAX_BATCH + 1), PER_PRODUCER - sent))
        ents = rng.integers(0, ENTITIES, n)
        hot = rng.random(n) < 0.25
        ents[hot] = ents[hot] % 4  # a few hot lanes
        times = clock + rng.choice([0.0, 0.0, 0.25, 0.5, 1.0, MAX_OFFSET], n)
        times = np.maximum(times, last_time[ents])  # non-decreasing per (producer, entity)
        # Number each entity's events in time order (stable), then push them
        # in a random order: the queue has to sort by (time, source, seq).
        order = np.lexsort((times, ents))
        se, st = ents[order], times[order]
        start = np.r_[0, np.flatnonzero(se[1:] != se[:-1]) + 1]
        rank = np.arange(n) - np.repeat(start, np.diff(np.r_[start, n]))
        seqs = seq[se] + rank
        np.add.at(seq, se, 1)
        np.maximum.at(last_time, se, st)
        shuffle = rng.permutation(n)
        se, st, seqs = se[shuffle], st[shuffle], seqs[shuffle]
        pay = canary(np.int64(p), se.astype(np.int64), seqs.astype(np.int64), st)
        kinds = (seqs + p) % 8
        while not S.stop.is_set():
            try:
                S.q.push_many(se, st, kinds, pay, sources=np.full(n, p, np.int32), seqs=seqs.astype(np.uint32))
                break
            except QueueFullError:
                S.full_retries += 1
                S.go.set()  # the pool is full: let the consumers in
                time.sleep(0.0002)
        np.add.at(S.pushed[p], se, 1)
        sent += n
        clock += 1.0
        S.low[p] = math.inf if sent == PER_PRODUCER else clock
    S.low[p] = math.inf
    S.go.set()


def consumer(S: Shared, c: int):
    rng = np.random.default_rng(2000 + c)
    total = PRODUCERS * PER_PRODUCER
    out = np.empty(1024, dtype=S.q.pop(-math.inf).dtype)
    S.go.wait(TIMEOUT)
    while S.popped < total and not S.stop.is_set():
        h = S.horizon()
        if rng.random() < 0.1 and math.isfinite(h):
            h -= 1.0  # an older horizon is always safe
        max_events = int(rng.choice([1, 16, 256, 1024]))
        per_entity = [None, 1, 8][int(rng.integers(3))]
        batch = S.q.pop(h, max_events=max_events, per_entity=per_entity, out=out)
        S.pops += 1
        if len(batch) == 0:
            time.sleep(0.00005)
            continue
        assert len(batch) <= max_events
        ents = batch["entity"]
        starts = np.r_[0, np.flatnonzero(ents[1:] != ents[:-1]) + 1]
        group_ents = ents[starts].tolist()
        assert len(set(group_ents)) == len(group_ents), f"entity in two groups: {ents.tolist()}"
        with S.lock:
            for e in group_ents:
                assert e not in S.holders, f"two holders: entity {e} popped by {c}, held by {S.holders[e]}"
                S.holders[e] = c
        if per_entity:
            assert np.diff(np.r_[starts, len(ents)]).max() <= per_entity
        assert (batch["time"] < h).all(), f"event at or past horizon {h}"
        for e, t, k, pay, src, sq in zip(ents.tolist(), batch["time"].tolist(), batch["kind"].tolist(),
                                         batch["payload"].tolist(), batch["source"].tolist(),
                                         batch["seq"].tolist()):
            assert 0 <= src < PRODUCERS, f"bad source {src}"
            assert pay == canary(src, e, sq, t), f"canary: entity {e} source {src} seq {sq} time {t}"
            assert k == (sq + src) % 8
            want = S.expect[e, src]
            assert sq >= want, f"duplicate: entity {e} source {src} seq {sq} (expected {want})"
            assert sq == want, f"loss: entity {e} source {src} got seq {sq}, seq {want} never popped"
            S.expect[e, src] = want + 1
            key = (t, src, sq)
            prev = S.last.get(e)
            assert prev is None or prev < key, f"order: entity {e} got {key} after {prev}"
            S.last[e] = key
        with S.lock:
            for e in group_ents:
                assert S.holders.pop(e) == c
            S.popped += len(batch)
        # The entity column as is (repeats count once) or one id per group.
        S.q.release(ents if rng.random() < 0.5 else np.array(group_ents, np.int32))


def run_guarded(S, fn, i):
    try:
        fn(S, i)
    except BaseException as exc:  # noqa: BLE001 - reported by the test
        S.errors.append(exc)
        S.stop.set()
        S.go.set()


def test_threads_no_loss_no_duplicate_order_one_holder():
    S = Shared()
    threads = [threading.Thread(target=run_guarded, args=(S, producer, p), daemon=True) for p in range(PRODUCERS)]
    threads += [threading.Thread(target=run_guarded, args=(S, consumer, c), daemon=True) for c in range(CONSUMERS)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(max(0.1, TIMEOUT - (time.monotonic() - t0)))
    stuck = [t.name for t in threads if t.is_alive()]
    S.stop.set()
    if S.errors:
        raise S.errors[0]
    assert not stuck, f"threads still running after {TIMEOUT} s: popped {S.popped}, len {len(S.q)}"
    total = PRODUCERS * PER_PRODUCER
    assert S.popped == total
    assert S.full_retries > 0, "the pool never filled up: QueueFullError was not exercised"
    np.testing.assert_array_equal(S.expect, S.pushed.T)  # every event popped exactly once
    assert len(S.q) == 0
    assert S.q.min_time() == math.inf
    assert not S.holders
    assert not any(S.q.is_claimed(e) for e in range(ENTITIES))
    assert len(S.q.pop(math.inf)) == 0
