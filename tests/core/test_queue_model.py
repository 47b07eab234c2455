"""Model-based test of `seer.EventQueue` against a plain-Python reference.

The reference keeps one heap per entity keyed by (time, source, seq), the set
of claimed entities and each entity's floor (the latest time it was handed).
Hypothesis drives random sequences of push_many (valid and invalid), pop,
release and clear, and after every pop compares, entity by entity, what the
queue returned with what the reference says must come next.  Pop order across
entities is not specified, so it is never compared.
"""

from __future__ import annotations

import heapq
import math

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from seer import EventQueue, InvalidEventError, NotClaimedError, PastEventError, QueueFullError

E = 6  # entities
K = 4  # kinds
CAP = 40  # pool capacity: small, so QueueFullError comes up
SOURCES = 3  # explicit sources 0..2; external events have source -1

HORIZONS = [-math.inf, 0.0, 0.5, 1.0, 2.0, 3.5, 5.0, 8.0, 12.0, math.inf]


class QueueModel(RuleBasedStateMachine):
    @initialize()
    def setup(self):
        self.q = EventQueue(num_entities=E, capacity=CAP, num_kinds=K)
        self.reset_model()
        self.payload = 0  # unique per event, so events are matched exactly
        self.ext = 0  # model of the queue-wide counter numbering external events
        self.src_seq = [0] * SOURCES

    def reset_model(self):
        self.heaps = [[] for _ in range(E)]  # (time, source, seq) + (payload, kind)
        self.claimed = set()
        self.floor = [-math.inf] * E

    def pending(self):
        return sum(len(h) for h in self.heaps)

    # ---- push ---------------------------------------------------------------

    def draw_events(self, data, n):
        ents = data.draw(st.lists(st.integers(0, E - 1), min_size=n, max_size=n))
        times = []
        for e in ents:
            base = self.floor[e] if math.isfinite(self.floor[e]) else 0.0
            times.append(base + data.draw(st.sampled_from([0.0, 0.0, 0.5, 1.0, 1.5, 3.0, 6.0])))
        kinds = data.draw(st.lists(st.integers(0, K - 1), min_size=n, max_size=n))
        return np.array(ents, np.int32), np.array(times), np.array(kinds, np.int32)

    @rule(data=st.data(), n=st.integers(1, 8), explicit=st.booleans())
    def push_many(self, data, n, explicit):
        ents, times, kinds = self.draw_events(data, n)
        payloads = np.arange(self.payload, self.payload + n, dtype=np.int64)
        kw = {}
        if explicit:
            # Explicit sources; each source's seqs count up in draw order,
            # but the batch is pushed in a shuffled order.
            srcs = np.array(data.draw(st.lists(st.integers(0, SOURCES - 1), min_size=n, max_size=n)), np.int32)
            seqs = np.zeros(n, np.uint32)
            for i, s in enumerate(srcs):
                seqs[i] = self.src_seq[s] + i  # unique per source, gaps are fine
            perm = np.array(data.draw(st.permutations(range(n))), np.intp)
            ents, times, kinds, payloads, srcs, seqs = (a[perm] for a in (ents, times, kinds, payloads, srcs, seqs))
            kw = dict(sources=srcs, seqs=seqs)
        before = len(self.q)
        if self.pending() + n > CAP:
            try:
                self.q.push_many(ents, times, kinds, payloads, **kw)
            except QueueFullError as exc:
                assert f"pushing {n} events" in str(exc) and f"capacity {CAP}" in str(exc)
            else:
                raise AssertionError(f"push of {n} events with {before} pending did not raise QueueFullError")
            assert len(self.q) == before
            return
        self.q.push_many(ents, times, kinds, payloads, **kw)
        self.payload += n
        if explicit:
            for s in range(SOURCES):
                self.src_seq[s] += n
        for i in range(n):
            if explicit:
                key = (float(times[i]), int(kw["sources"][i]), int(kw["seqs"][i]))
            else:
                key = (float(times[i]), -1, self.ext + i)  # the queue numbers a batch in order
            heapq.heappush(self.heaps[int(ents[i])], (key, int(payloads[i]), int(kinds[i])))
        if not explicit:
            self.ext += n

    @rule(data=st.data(), n=st.integers(1, 6), how=st.sampled_from(
        ["entity_high", "entity_low", "kind_high", "kind_low", "nan", "inf", "-inf", "past", "length", "dtype"]))
    def push_invalid(self, data, n, how):
        ents, times, kinds = self.draw_events(data, n)
        i = data.draw(st.integers(0, n - 1))
        exc, part = InvalidEventError, None
        if how == "entity_high":
            ents[i] = data.draw(st.sampled_from([E, E + 1, 1000]))
            part = f"entity {ents[i]}"
        elif how == "entity_low":
            ents[i] = data.draw(st.sampled_from([-1, -7]))
            part = f"entity {ents[i]}"
        elif how == "kind_high":
            kinds[i] = K
            part = f"kind {K}"
        elif how == "kind_low":
            kinds[i] = -1
            part = "kind -1"
        elif how in ("nan", "inf", "-inf"):
            times[i] = float(how)
            part = f"time {how}"
        elif how == "past":
            held = [e for e in range(E) if math.isfinite(self.floor[e])]
            if not held:
                return
            ents[i] = data.draw(st.sampled_from(held))
            times[i] = self.floor[ents[i]] - data.draw(st.sampled_from([0.5, 1.0, 100.0]))
            exc, part = PastEventError, f"time {times[i]}"
        elif how == "length":
            times = times[:-1] if n > 1 else np.array([1.0, 2.0])
            part = "elements but entities has"
        elif how == "dtype":
            ents = ents.astype(np.float64)
            part = "must hold integers"
        before = len(self.q)
        try:
            self.q.push_many(ents, times, kinds, np.arange(n, dtype=np.int64) + 10**9)
        except exc as err:
            assert part in str(err), (part, str(err))
            if how == "past":
                assert "past" in str(err)
        else:
            raise AssertionError(f"push_many with bad {how} did not raise")
        assert len(self.q) == before

    # ---- pop / release --------------------------------------------------------

    @rule(horizon=st.sampled_from(HORIZONS), max_events=st.integers(1, 12),
          per_entity=st.one_of(st.none(), st.integers(1, 3)))
    def pop(self, horizon, max_events, per_entity):
        batch = self.q.pop(horizon, max_events=max_events, per_entity=per_entity)
        n = len(batch)
        assert n <= max_events
        ents = batch["entity"].tolist()
        groups = []  # (entity, start, stop) in batch order
        for j, e in enumerate(ents):
            if j == 0 or ents[j - 1] != e:
                groups.append([e, j, j + 1])
            else:
                groups[-1][2] = j + 1
        seen = [g[0] for g in groups]
        assert len(seen) == len(set(seen)), f"entity in two groups: {ents}"
        limit = per_entity or math.inf
        for gi, (e, a, b) in enumerate(groups):
            assert e not in self.claimed, f"entity {e} is claimed but pop returned it"
            ready = sum(1 for item in self.heaps[e] if item[0][0] < horizon)
            k = b - a
            assert 1 <= k <= min(limit, ready)
            # Only the last group can be cut short, and only by max_events.
            if gi < len(groups) - 1 or n < max_events:
                assert k == min(limit, ready), f"entity {e}: got {k} of {ready} ready (per_entity={per_entity})"
            for j in range(a, b):
                key, payload, kind = heapq.heappop(self.heaps[e])
                row = batch[j]
                assert float(row["time"]) == key[0] and int(row["source"]) == key[1], (row, key)
                assert int(row["payload"]) == payload and int(row["kind"]) == kind, (row, key, payload)
                if key[1] >= 0:
                    assert int(row["seq"]) == key[2]
                assert key[0] < horizon
            self.claimed.add(e)
            self.floor[e] = max(self.floor[e], float(batch["time"][b - 1]))
        if n < max_events:
            # Completeness: every unclaimed entity's events before the horizon came out.
            for e in range(E):
                if e not in self.claimed and e not in seen:
                    assert not any(item[0][0] < horizon for item in self.heaps[e]), \
                        f"entity {e} has events before {horizon} but the pop skipped it"

    @rule(data=st.data())
    def release_some(self, data):
        if not self.claimed:
            return
        chosen = data.draw(st.lists(st.sampled_from(sorted(self.claimed)), min_size=1, unique=True))
        repeats = data.draw(st.booleans())
        arr = np.repeat(chosen, 2) if repeats else np.array(chosen)  # adjacent repeats count once
        self.q.release(arr.astype(np.int32) if data.draw(st.booleans()) else arr)
        self.claimed -= set(chosen)

    @rule(data=st.data())
    def release_unclaimed(self, data):
        free = [e for e in range(E) if e not in self.claimed]
        if not free:
            return
        bad = data.draw(st.sampled_from(free))
        first = data.draw(st.lists(st.sampled_from(sorted(self.claimed)), unique=True)) if self.claimed else []
        try:
            self.q.release(np.array(first + [bad], np.int64))
        except NotClaimedError as err:
            assert f"entity {bad} at index {len(first)}" in str(err)
        else:
            raise AssertionError(f"release of unclaimed entity {bad} did not raise")
        self.claimed -= set(first)  # the ones before the bad entity are released

    @rule()
    def clear(self):
        self.q.clear()
        self.reset_model()

    # ---- invariants ---------------------------------------------------------------

    @invariant()
    def len_matches(self):
        assert len(self.q) == self.pending()

    @invariant()
    def claims_match(self):
        assert [self.q.is_claimed(e) for e in range(E)] == [e in self.claimed for e in range(E)]

    @invariant()
    def min_time_matches(self):
        true_min = min((h[0][0][0] for h in self.heaps if h), default=math.inf)
        if not self.claimed:
            assert self.q.min_time() == true_min
        else:
            assert self.q.min_time() <= true_min  # a lower bound while entities are held


QueueModel.TestCase.settings = settings(
    max_examples=200, stateful_step_count=40, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
TestQueueModel = QueueModel.TestCase
