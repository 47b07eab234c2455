"""seer.EventQueue: bad arguments to pop and push_many end in SEER errors
that name the value; nothing is written where it must not be."""

import re

import numpy as np
import pytest

import seer


@pytest.fixture
def q():
    q = seer.EventQueue(num_entities=4, capacity=64)
    q.push_many([0, 1, 2], [0.1, 0.2, 0.3], [0, 0, 0])
    return q


def test_pop_refuses_a_read_only_out_buffer(q):
    raw = bytes(seer.EVENT_DTYPE.itemsize * 8)
    out = np.frombuffer(raw, seer.EVENT_DTYPE)
    with pytest.raises(seer.InvalidArgumentError, match="read-only"):
        q.pop(1.0, out=out)
    assert raw == bytes(len(raw))  # the immutable bytes were not touched
    assert len(q) == 3  # and nothing was popped


@pytest.mark.parametrize("out, pattern", [
    ([0] * 8, "numpy array of seer.EVENT_DTYPE, got list"),
    (np.zeros(8, np.float64), "EVENT_DTYPE, got float64"),
    (np.zeros((2, 4), seer.EVENT_DTYPE), "1-D"),
])
def test_pop_refuses_other_out_buffers(q, out, pattern):
    with pytest.raises(seer.InvalidArgumentError, match=pattern):
        q.pop(1.0, out=out)
    assert len(q) == 3


@pytest.mark.parametrize("kwargs, pattern", [
    (dict(per_entity=2**40), "per_entity=1099511627776 is invalid"),
    (dict(per_entity=0), "per_entity=0 is invalid"),
    (dict(per_entity=True), "per_entity=True is invalid"),
    (dict(max_events=2**70), "max_events=.* is invalid"),
    (dict(max_events=0), "max_events=0 is invalid"),
])
def test_pop_names_bad_numbers(q, kwargs, pattern):
    with pytest.raises(seer.InvalidArgumentError, match=pattern):
        q.pop(1.0, **kwargs)


def test_a_large_max_events_does_not_allocate_beyond_the_pool(q):
    batch = q.pop(1.0, max_events=2**40)
    assert batch["entity"].tolist() == [0, 1, 2]
    q.release(batch["entity"])


@pytest.mark.parametrize("sources, bad", [([999], 999), ([-5], -5), ([4], 4), ([-2], -2)])
def test_push_many_refuses_sources_outside_the_entities(q, sources, bad):
    with pytest.raises(seer.InvalidEventError, match=f"sources value {bad} at index 0 is out of range"):
        q.push_many([0], [1.0], [0], sources=sources)
    assert len(q) == 3


def test_push_many_accepts_outside_and_entity_sources(q):
    q.push_many([3, 3], [1.0, 1.0], [0, 0], sources=[-1, 3], seqs=[0, 0])
    assert len(q) == 5


@pytest.mark.parametrize("entity", [1.5, 1.0, True, "1", np.float64(2.0)])
def test_is_claimed_refuses_what_is_not_an_entity_id(q, entity):
    q.pop(1.0, per_entity=1)  # entities 0..2 are held now: a truncating check would say True for 1.5
    with pytest.raises(seer.InvalidArgumentError, match=re.escape(f"entity={entity!r} is invalid: expected an integer")):
        q.is_claimed(entity)
    assert q.is_claimed(np.int32(1)) and q.is_claimed(1) and not q.is_claimed(3)


@pytest.mark.parametrize("n", [True, False, 1.0, "1", None])
def test_push_prepared_refuses_a_count_that_is_not_an_integer(q, n):
    arrays = (np.array([0, 1], np.int32), np.array([0.5, 0.5]), np.zeros(2, np.int32), np.zeros(2, np.int64))
    prepared = q.prepare_push(*arrays)
    with pytest.raises(seer.InvalidArgumentError, match=re.escape(f"n={n!r} is invalid: expected an integer")):
        q.push_prepared(prepared, n)
    assert len(q) == 3  # the fixture's events only
    q.push_prepared(prepared, np.int64(2))
    assert len(q) == 5
