"""`seer.EventQueue`: the C dual-layer event queue, seen from Python."""

from __future__ import annotations

import math
import numbers

import numpy as np

from seer._seer_c import ffi, lib
from seer.errors import InvalidArgumentError, InvalidEventError, NotClaimedError, PastEventError, QueueFullError

#: Layout of one popped event; matches ``seer_event`` in csrc/seer_queue.h.
EVENT_DTYPE = np.dtype(
    {
        "names": ["entity", "time", "kind", "payload", "source", "seq"],
        "formats": [np.int32, np.float64, np.int32, np.int64, np.int32, np.uint32],
        "offsets": [16, 0, 20, 8, 24, 28],
        "itemsize": 32,
    }
)
assert ffi.sizeof("seer_event") == EVENT_DTYPE.itemsize

_INT32 = np.iinfo(np.int32)
# numpy's built-in dtypes are singletons: an `is` test is the cheap exact check
# (native byte order only) of the wrappers' fast paths below
_I32, _F64, _I64 = np.dtype(np.int32), np.dtype(np.float64), np.dtype(np.int64)
_ndarray = np.ndarray


def _ptr(ctype: str, array: np.ndarray | None):
    return ffi.NULL if array is None else ffi.from_buffer(ctype, array)


def _as_array(name: str, values, dtype, n: int | None, *, integer: bool) -> np.ndarray:
    try:
        arr = np.asarray(values)
    except OverflowError:  # a Python int beyond 64 bits
        raise InvalidEventError(f"{name} holds a value that does not fit {np.dtype(dtype).name}: {values!r}") from None
    if arr.ndim != 1:
        raise InvalidEventError(f"{name} must be a 1-D array, got shape {arr.shape}")
    if n is not None and arr.shape[0] != n:
        raise InvalidEventError(
            f"{name} has {arr.shape[0]} elements but entities has {n}: all arrays must have the same length"
        )
    if arr.size == 0:  # np.asarray([]) is float64: an empty list is still a valid empty batch
        return np.empty(0, dtype)
    kind = arr.dtype.kind
    if integer:
        if kind not in "iu":
            raise InvalidEventError(f"{name} must hold integers, got dtype {arr.dtype}")
        if not np.can_cast(arr.dtype, dtype, casting="safe"):
            info = np.iinfo(dtype)
            lo, hi = arr.min(), arr.max()
            if lo < info.min or hi > info.max:
                bad = lo if lo < info.min else hi
                raise InvalidEventError(f"{name} value {bad} does not fit {np.dtype(dtype).name}")
    elif kind not in "fiu":
        raise InvalidEventError(f"{name} must hold real numbers, got dtype {arr.dtype}")
    return np.ascontiguousarray(arr, dtype=dtype)


def check_permutation(new_of_old, n: int) -> np.ndarray:
    """``new_of_old`` as a contiguous int32 array if it is a permutation of
    ``range(n)``; else InvalidArgumentError naming the first bad value."""
    try:
        perm = np.asarray(new_of_old)
    except OverflowError:
        perm = np.asarray(new_of_old, dtype=object)
    if perm.shape != (n,) or perm.dtype.kind not in "iu":
        raise InvalidArgumentError(f"new_of_old={new_of_old!r} is invalid: expected {n} integers, a permutation "
                                   f"of 0..{n - 1}")
    seen = np.zeros(n, bool)
    for e, v in enumerate(perm.tolist()):
        if not 0 <= v < n or seen[v]:
            what = "out of range" if not 0 <= v < n else "a repeat"
            raise InvalidArgumentError(f"new_of_old[{e}]={v} is {what}: expected a permutation of 0..{n - 1}")
        seen[v] = True
    return np.ascontiguousarray(perm, np.int32)


class EventQueue:
    """Dual-layer event queue over a preallocated event pool (CAS lanes, rings;
    csrc/README.md gives each part's progress guarantee).

    Layer 1 keeps one lane per entity, ordered by ``(time, source, seq)``;
    layer 2 is the set of entities with work before the horizon.  Popping an
    entity's events claims it: no other pop returns its events until it is
    released.  Every method is safe to call from several threads at once
    (except :meth:`clear`), and bulk calls run in C with the GIL released.
    The queue of a :class:`seer.Runtime` (``runtime.queue``) takes turns with
    the runtime's own calls instead: a push, pop, release or clear from
    another thread while it steps raises :class:`MisuseError`, and one from
    inside its handlers too (they emit with ``ctx.emit``).

    Args:
        num_entities: Entity ids are ``0 .. num_entities - 1``.
        capacity: Events the pool holds; memory is allocated once, up front.
        num_kinds: Event kinds are ``0 .. num_kinds - 1``.

    Example:
        >>> q = EventQueue(num_entities=4, capacity=64)
        >>> q.push(2, 0.5, kind=1, payload=7)
        >>> batch = q.pop(horizon=1.0)
        >>> batch["entity"].tolist(), batch["payload"].tolist()
        ([2], [7])
        >>> q.release(batch["entity"])
    """

    def __init__(self, num_entities: int, capacity: int = 1 << 20, *, num_kinds: int = 1024):
        for name, value, hi in (
            ("num_entities", num_entities, _INT32.max),
            ("capacity", capacity, 1 << 31),
            ("num_kinds", num_kinds, _INT32.max),
        ):
            if not isinstance(value, numbers.Integral) or isinstance(value, bool) or not 1 <= value <= hi:
                raise ValueError(f"{name}={value!r} is invalid: expected an integer in [1, {hi}]")
        handle = lib.seer_queue_new(int(num_entities), int(num_kinds), int(capacity))
        if handle == ffi.NULL:
            raise MemoryError(f"cannot allocate an EventQueue of capacity {capacity} for {num_entities} entities")
        self._q = ffi.gc(handle, lib.seer_queue_free)
        #: the guard of a seer.Runtime that runs on this queue (set by it):
        #: its steps take lanes without the push handshake, so a push, pop,
        #: release or clear from another thread during a step is refused
        self._owner = None
        #: that runtime's clock (an object with .now): pushes before it are refused
        self._clock = None
        self.num_entities = int(num_entities)
        self.num_kinds = int(num_kinds)
        self.capacity = int(capacity)
        #: (out, its C pointer, its length) of the last pop given an out array,
        #: for pop's fast path (it keeps that array alive until another replaces it)
        self._out_cache = None

    def _call(self, what: str, fn, *args):
        """fn(*args), holding the owning runtime (if any) as its own calls do."""
        owner = self._owner
        if owner is None:
            return fn(*args)
        owner.enter(what)
        try:
            return fn(*args)
        finally:
            owner.leave()

    # ---- push -----------------------------------------------------------

    @property
    def native_handle(self):
        """The ``seer_queue *`` (for C code that pushes events itself)."""
        return self._q

    def push(self, entity: int, time: float, kind: int, payload: int = 0) -> None:
        """Push one event.  Raises the same errors as :meth:`push_many`."""
        for name, value in (("entity", entity), ("kind", kind), ("payload", payload)):
            if not isinstance(value, numbers.Integral) or isinstance(value, bool):
                raise InvalidEventError(f"{name}={value!r} is invalid: expected an integer")
        if not isinstance(time, numbers.Real) or isinstance(time, bool):
            raise InvalidEventError(f"time={time!r} is invalid: expected a finite float")
        self._check_scalar_range(int(entity), int(kind))
        if not -(2**63) <= payload < 2**63:
            raise InvalidEventError(f"payload={payload!r} is invalid: expected an int64")
        self.push_many(
            np.array([entity], np.int32),
            np.array([time], np.float64),
            np.array([kind], np.int32),
            np.array([payload], np.int64),
        )

    def _check_scalar_range(self, entity: int, kind: int) -> None:
        if not 0 <= entity < self.num_entities:
            raise InvalidEventError(
                f"entity {entity} is out of range: expected 0 <= entity < {self.num_entities}"
            )
        if not 0 <= kind < self.num_kinds:
            raise InvalidEventError(f"kind {kind} is out of range: expected 0 <= kind < {self.num_kinds}")

    def push_many(self, entities, times, kinds, payloads=None, *, sources=None, seqs=None) -> None:
        """Push a batch of events in one C call (GIL released).

        All-or-nothing: if any event is bad, or the pool lacks room for all of
        them, nothing is pushed and the exception names the first bad value.

        Args:
            entities: Integer array of target entities.
            times: Float array of timestamps (finite, not before what the
                entity was already handed).
            kinds: Integer array of event kinds.
            payloads: Optional int64 array (default zeros).
            sources: Optional emitting entities, for tie-breaking: -1 (from
                outside, the default) or an entity id.
            seqs: Optional per-source sequence numbers (default: one
                queue-wide counter).
        """
        if (sources is None and seqs is None and payloads is not None and type(entities) is _ndarray
                and type(times) is _ndarray and type(kinds) is _ndarray and type(payloads) is _ndarray
                and entities.dtype is _I32 and times.dtype is _F64 and kinds.dtype is _I32 and payloads.dtype is _I64
                and entities.ndim == 1 and entities.shape == times.shape == kinds.shape == payloads.shape
                and entities.flags.c_contiguous and times.flags.c_contiguous and kinds.flags.c_contiguous
                and payloads.flags.c_contiguous and len(entities)):
            # Fast path: four 1-D contiguous arrays of exactly the C types, as
            # a simulator's step hands them over; at a few thousand events a
            # call, the conversions below cost as much as the C push itself.
            # Everything else about them is checked in C.
            if self._clock is not None:
                self._check_clock(times, entities)
            n = len(entities)
            bad = ffi.new("int64_t *")
            rc = self._call("queue.push_many()", lib.seer_queue_push_many, self._q,
                            ffi.from_buffer("int32_t[]", entities), ffi.from_buffer("double[]", times),
                            ffi.from_buffer("int32_t[]", kinds), ffi.from_buffer("int64_t[]", payloads), ffi.NULL,
                            ffi.NULL, n, bad)
            if rc != lib.SEER_OK:
                raise self._push_error(rc, int(bad[0]), entities, times, kinds, n)
            return
        ent = _as_array("entities", entities, np.int32, None, integer=True)
        n = ent.shape[0]
        tim = _as_array("times", times, np.float64, n, integer=False)
        knd = _as_array("kinds", kinds, np.int32, n, integer=True)
        pay = None if payloads is None else _as_array("payloads", payloads, np.int64, n, integer=True)
        src = None if sources is None else _as_array("sources", sources, np.int32, n, integer=True)
        if src is not None and src.size and (src.min() < -1 or src.max() >= self.num_entities):
            i = int(np.flatnonzero((src < -1) | (src >= self.num_entities))[0])
            raise InvalidEventError(
                f"sources value {src[i]} at index {i} is out of range: expected -1 (outside) or "
                f"0 <= source < {self.num_entities}"
            )
        sq = None if seqs is None else _as_array("seqs", seqs, np.uint32, n, integer=True)
        if n == 0:
            return
        self._check_clock(tim, ent)
        bad = ffi.new("int64_t *")
        rc = self._call(
            "queue.push_many()",
            lib.seer_queue_push_many,
            self._q,
            _ptr("int32_t[]", ent),
            _ptr("double[]", tim),
            _ptr("int32_t[]", knd),
            _ptr("int64_t[]", pay),
            _ptr("int32_t[]", src),
            _ptr("uint32_t[]", sq),
            n,
            bad,
        )
        if rc != lib.SEER_OK:
            raise self._push_error(rc, int(bad[0]), ent, tim, knd, n)

    def prepare_push(self, entities, times, kinds, payloads) -> tuple:
        """Bind four caller-owned arrays (int32, float64, int32, int64, equal
        lengths, C-contiguous) for :meth:`push_prepared`, which pushes their
        first ``n`` entries without converting anything: for a caller that
        pushes from the same buffers every step.  Keep the arrays alive and
        write into them in place."""
        want = (("entities", entities, np.int32), ("times", times, np.float64), ("kinds", kinds, np.int32),
                ("payloads", payloads, np.int64))
        for name, arr, dt in want:
            if not isinstance(arr, np.ndarray) or arr.dtype != dt or arr.ndim != 1 or not arr.flags.c_contiguous:
                raise TypeError(f"{name} must be a C-contiguous 1-d {np.dtype(dt).name} numpy array")
            if len(arr) != len(entities):
                raise ValueError(f"{name} has {len(arr)} entries: expected {len(entities)} (as entities)")
        ptrs = tuple(_ptr(ct, a) for ct, a in zip(("int32_t[]", "double[]", "int32_t[]", "int64_t[]"),
                                                  (entities, times, kinds, payloads)))
        return (entities, times, kinds, payloads), ptrs, ffi.new("int64_t *")

    def push_prepared(self, prepared: tuple, n: int) -> None:
        """Push the first ``n`` events of arrays bound by :meth:`prepare_push`
        (same checks and errors as :meth:`push_many`, in C)."""
        arrays, (e, t, k, p), bad = prepared
        if not isinstance(n, numbers.Integral) or isinstance(n, bool):
            raise InvalidArgumentError(f"n={n!r} is invalid: expected an integer count of events")
        n = int(n)
        if not 0 <= n <= len(arrays[0]):
            raise ValueError(f"n={n} is invalid: expected 0 <= n <= {len(arrays[0])}")
        if n == 0:
            return
        self._check_clock(arrays[1][:n], arrays[0])
        rc = self._call("queue.push_prepared()", lib.seer_queue_push_many, self._q, e, t, k, p, ffi.NULL, ffi.NULL,
                        n, bad)
        if rc != lib.SEER_OK:
            raise self._push_error(rc, int(bad[0]), arrays[0], arrays[1], arrays[2], n)

    def _check_clock(self, tim: np.ndarray, ent: np.ndarray) -> None:
        """A runtime's queue takes nothing before the runtime's time: an
        entity that had no event for a while was not handed the time, but
        its clock (and its neighbours') passed it all the same."""
        clock = self._clock
        if clock is None:
            return
        now = clock.now
        if not tim.min() >= now:  # NaN is for the C check to name
            past = np.flatnonzero(tim < now)
            if past.size:
                i = int(past[0])
                raise PastEventError(f"time {tim[i]} at index {i} (entity {ent[i]}) is before the runtime's current "
                                     f"time {now}: expected times >= {now}")

    def _push_error(self, rc, i, ent, tim, knd, n):
        if rc == lib.SEER_E_ENTITY:
            return InvalidEventError(
                f"entity {ent[i]} at index {i} is out of range: expected 0 <= entity < {self.num_entities}"
            )
        if rc == lib.SEER_E_KIND:
            return InvalidEventError(
                f"kind {knd[i]} at index {i} is out of range: expected 0 <= kind < {self.num_kinds}"
            )
        if rc == lib.SEER_E_TIME:
            return InvalidEventError(
                f"time {tim[i]} at index {i} (entity {ent[i]}) is not finite: expected a finite float"
            )
        if rc == lib.SEER_E_PAST:
            floor = lib.seer_queue_floor(self._q, int(ent[i]))
            return PastEventError(
                f"time {tim[i]} at index {i} is in the past for entity {ent[i]}: "
                f"expected time >= {floor}, the latest time already handed to that entity"
            )
        if rc == lib.SEER_E_FULL:
            pending = len(self)
            return QueueFullError(
                f"event pool full: pushing {n} events with {pending} pending in a queue of capacity "
                f"{self.capacity}; create the EventQueue with capacity >= {pending + n} "
                f"(or release and pop events sooner)"
            )
        if rc == lib.SEER_E_NOMEM:
            return MemoryError(f"push_many: no memory for this thread's list of {n} node ids "
                               f"({4 * n} bytes); nothing was pushed")
        return InvalidEventError(f"push_many failed with status {rc}")

    # ---- pop / release ----------------------------------------------------

    def pop(self, horizon: float, max_events: int = 4096, *, per_entity: int | None = None, out=None):
        """Pop ready events with ``time < horizon`` and claim their entities.

        Runs in C with the GIL released.  The result is grouped by entity,
        each entity's events in ``(time, source, seq)`` order.  Entities held
        by another caller are skipped until released.

        Args:
            horizon: Exclusive upper bound on event times (``inf`` allowed).
            max_events: Most events to return.
            per_entity: Most events to take from one entity (default: all).
            out: Optional preallocated array of :data:`EVENT_DTYPE`; the
                result is then a view of its first rows and nothing is
                allocated.

        Returns:
            A structured array with fields entity, time, kind, payload,
            source and seq.
        """
        c = self._out_cache
        if (c is not None and c[0] is out and type(horizon) is float and type(max_events) is int
                and per_entity is None and horizon == horizon and 1 <= max_events < 1 << 63 and out.flags.writeable):
            # Fast path: the same out array as the last pop's (a loop that
            # pops into one buffer), its C pointer kept from then: no checks
            # beyond the ones above, no conversion.  c[2]: how many events
            # that pointer's buffer holds, whatever has become of out's shape.
            cap = max_events if max_events < c[2] else c[2]
            if self._owner is None:
                n = lib.seer_queue_pop(self._q, horizon, c[1], cap, 0)
            else:
                n = self._call("queue.pop()", lib.seer_queue_pop, self._q, horizon, c[1], cap, 0)
            return out[:n]
        if not isinstance(horizon, numbers.Real) or isinstance(horizon, bool) or math.isnan(horizon):
            raise InvalidEventError(f"horizon={horizon!r} is invalid: expected a float that is not NaN")
        if not isinstance(max_events, numbers.Integral) or isinstance(max_events, bool) or not 1 <= max_events < 2**63:
            raise InvalidArgumentError(f"max_events={max_events!r} is invalid: expected an integer in [1, 2**63)")
        if per_entity is not None and (not isinstance(per_entity, numbers.Integral) or isinstance(per_entity, bool)
                                       or not 1 <= per_entity <= _INT32.max):
            raise InvalidArgumentError(f"per_entity={per_entity!r} is invalid: expected None or an integer in [1, {_INT32.max}]")
        keep = out is not None
        if out is None:
            # no pop returns more than the pool holds
            out = np.empty(min(int(max_events), self.capacity), EVENT_DTYPE)
        elif not isinstance(out, np.ndarray):
            raise InvalidArgumentError(f"out must be a numpy array of seer.EVENT_DTYPE, got {type(out).__name__}")
        elif out.dtype != EVENT_DTYPE or out.ndim != 1 or not out.flags.c_contiguous:
            raise InvalidArgumentError(f"out must be a contiguous 1-D array of EVENT_DTYPE, got {out.dtype} {out.shape}")
        elif not out.flags.writeable:
            raise InvalidArgumentError("out is read-only: pop writes the events into it; pass a writeable array")
        cap = min(int(max_events), out.shape[0])
        ptr = ffi.from_buffer("seer_event[]", out, require_writable=True)
        if keep:
            # for the fast path above; one tuple, so a thread never sees one
            # array's pointer next to another array
            self._out_cache = (out, ptr, out.shape[0])
        n = self._call("queue.pop()", lib.seer_queue_pop, self._q, float(horizon), ptr, cap, int(per_entity or 0))
        return out[:n]

    def release(self, entities) -> None:
        """End the claims on ``entities`` (an int or an integer array).

        Releasing an entity nobody holds raises :class:`NotClaimedError`;
        those listed before it are released.
        """
        if type(entities) is _ndarray and entities.dtype is _I32 and entities.ndim == 1:
            # fast path: an int32 array, e.g. a popped batch's entity column
            # (strided: copied, which C could read in place if cffi could
            # point into a strided array)
            ent = entities if entities.flags.c_contiguous else entities.copy()
        else:
            if isinstance(entities, numbers.Integral) and not isinstance(entities, bool):
                entities = [int(entities)]
            ent = _as_array("entities", entities, np.int32, None, integer=True)
        if ent.size == 0:
            return
        bad = ffi.new("int64_t *")
        rc = self._call("queue.release()", lib.seer_queue_release, self._q, ffi.from_buffer("int32_t[]", ent),
                        ent.shape[0], bad)
        if rc == lib.SEER_E_ENTITY:
            i = int(bad[0])
            raise InvalidEventError(
                f"entity {ent[i]} at index {i} is out of range: expected 0 <= entity < {self.num_entities}"
            )
        if rc == lib.SEER_E_NOT_CLAIMED:
            i = int(bad[0])
            raise NotClaimedError(f"entity {ent[i]} at index {i} is not claimed: release only entities a pop returned")

    # ---- queries ------------------------------------------------------------

    def __len__(self) -> int:
        """Events pending (pushed and not yet popped)."""
        return int(lib.seer_queue_len(self._q))

    def min_time(self) -> float:
        """Earliest pending time, ``inf`` when empty (exact when nothing is held)."""
        return float(lib.seer_queue_min_time(self._q))

    def is_claimed(self, entity: int) -> bool:
        """Whether a pop holds ``entity`` (an integer id)."""
        if not isinstance(entity, numbers.Integral) or isinstance(entity, bool):
            raise InvalidArgumentError(f"entity={entity!r} is invalid: expected an integer entity id")
        self._check_scalar_range(int(entity), 0)
        return bool(lib.seer_queue_is_claimed(self._q, int(entity)))

    def relabel(self, new_of_old) -> None:
        """Rename the entities: entity ``e`` becomes ``new_of_old[e]``, as the
        target and as the source of every pending event, and keeps its
        events and its floor (the latest time handed to it).  Simultaneous
        events of one entity then break ties by their new source names.
        Call only while no other thread uses the queue and no entity is held.

        Args:
            new_of_old: a permutation of ``range(num_entities)``.

        Raises:
            InvalidArgumentError: ``new_of_old`` is not such a permutation (the
                message names the first bad value), or an entity is held.

        Example:
            >>> q = EventQueue(num_entities=2, capacity=8)
            >>> q.push(0, 1.0, 0)
            >>> q.relabel([1, 0])
            >>> q.pop(2.0)["entity"].tolist()
            [1]
        """
        perm = check_permutation(new_of_old, self.num_entities)
        held = [e for e in range(self.num_entities) if lib.seer_queue_is_claimed(self._q, e)]
        if held:
            raise InvalidArgumentError(f"relabel() while entity {held[0]} is held: release it first")
        rc = self._call("queue.relabel()", lib.seer_queue_relabel, self._q, ffi.from_buffer("int32_t[]", perm))
        if rc == lib.SEER_E_NOMEM:
            raise MemoryError("queue.relabel(): out of memory (nothing changed)")
        if rc != lib.SEER_OK:
            raise InvalidArgumentError(f"queue.relabel() failed with code {rc}")

    def clear(self) -> None:
        """Drop every event and claim.  Call only while no other thread uses the queue."""
        self._call("queue.clear()", lib.seer_queue_clear, self._q)

    @property
    def nbytes(self) -> int:
        """Bytes the queue allocated at construction (it allocates nothing later)."""
        return int(lib.seer_queue_footprint(self._q))

    def __repr__(self) -> str:
        return (
            f"EventQueue(num_entities={self.num_entities}, capacity={self.capacity}, "
            f"num_kinds={self.num_kinds}, pending={len(self)})"
        )
