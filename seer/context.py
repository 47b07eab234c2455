"""`HandlerContext`: what a Python handler gets as ``ctx`` (state, snapshot, emit, uniform draws).

One per worker thread of a :class:`seer.Runtime`; valid only while that
worker runs a handler.
"""

from __future__ import annotations

import numpy as np

from seer._seer_c import ffi, lib
from seer._step_errors import emit_error
from seer.errors import InvalidEventError, MisuseError
from seer.queue import _as_array, _ptr

__all__ = ["HandlerContext"]


class HandlerContext:
    """What a Python handler gets as ``ctx``: one per worker thread.

    Attributes:
        state: The model's live state arrays (write only your entities' rows).
        snapshot: Copies of the shared state taken at the window's start.
        worker: Index of the worker running the handler.
        window_end: End (exclusive) of the current window.
    """

    def __init__(self, core, worker: int):
        # core: the runtime's seer._runtime_core._Core (what its workers and the C dispatch reach)
        self._core = core
        self.worker = worker
        self.state = core.model.state
        self.snapshot = core.snapshots
        self.events = None
        self._held_mask: np.ndarray | None = None  # scratch of _check_held, one per worker

    @property
    def window_end(self) -> float:
        self._core.check_handling("ctx.window_end")
        return float(lib.seer_rt_window_end(self._core.rt, self.worker))

    def emit(self, targets, times, kinds, payloads=None, *, sources=None) -> None:
        """Send events: ``targets[i]`` gets kind ``kinds[i]`` at ``times[i]``.

        ``sources`` default to the entities of the batch being handled (then
        the arrays must have its length); given, they must be entities of
        that batch (:class:`~seer.errors.MisuseError` otherwise).  An event to another entity must be
        at least the model's lookahead after its source's current time, an
        event to the source itself not before it.
        """
        self._core.check_handling("ctx.emit()")
        batch = self.events
        tgt = _as_array("targets", np.atleast_1d(targets), np.int32, None, integer=True)
        n = tgt.shape[0]
        if sources is None:
            if batch is None or len(batch) != n:
                raise InvalidEventError(
                    f"emit of {n} events needs sources= (the batch being handled has "
                    f"{0 if batch is None else len(batch)} events)"
                )
            src = np.ascontiguousarray(batch["entity"])
        else:
            src = _as_array("sources", np.broadcast_to(sources, (n,)), np.int32, n, integer=True)
            self._check_held("ctx.emit(sources=...)", src)
        tim = _as_array("times", np.broadcast_to(times, (n,)), np.float64, n, integer=False)
        knd = _as_array("kinds", np.broadcast_to(kinds, (n,)), np.int32, n, integer=True)
        pay = None if payloads is None else _as_array("payloads", np.broadcast_to(payloads, (n,)), np.int64, n, integer=True)
        bad = ffi.new("int64_t *")
        rc = lib.seer_rt_emit_many(
            self._core.rt, self.worker, _ptr("int32_t[]", src), _ptr("int32_t[]", tgt),
            _ptr("double[]", tim), _ptr("int32_t[]", knd), _ptr("int64_t[]", pay), n, bad,
        )
        if rc != lib.SEER_OK:
            i = int(bad[0])
            raise emit_error(self._core, rc, int(src[i]), int(tgt[i]), int(knd[i]), float(tim[i]))

    def uniform(self, entities) -> np.ndarray:
        """Uniform [0, 1) draws from each entity's counter-based stream
        (entities of the batch being handled only: another entity's stream
        advances in whichever worker runs it)."""
        core = self._core
        core.check_handling("ctx.uniform()")
        ent = _as_array("entities", np.atleast_1d(entities), np.int32, None, integer=True)
        if ent.size and (ent.min() < 0 or ent.max() >= core.num_entities):
            raise InvalidEventError(f"entities must be in [0, {core.num_entities}), got {ent.min()}..{ent.max()}")
        self._check_held("ctx.uniform()", ent)
        out = np.empty(ent.shape[0], np.float64)
        lib.seer_rt_uniform_many(core.rt, _ptr("int32_t[]", ent), _ptr("double[]", out), ent.shape[0])
        return out

    def _check_held(self, what: str, entities: np.ndarray) -> None:
        """Refuse entities outside the batch being handled: another
        entity's clock, sequence counter and random stream belong to
        whichever worker runs it (results would depend on the pool size)."""
        batch = self.events
        if batch is None:  # another worker's context, or one kept from an earlier call
            raise MisuseError(f"{what}: this HandlerContext is not handling a batch now; use the ctx your "
                              f"handler was passed")
        n = self._core.num_entities
        if not entities.size or entities.min() < 0 or entities.max() >= n:
            return  # nothing, or out of range: the caller's range check names it
        held = batch["entity"]
        if held.size == 1:
            bad = entities != held[0]
        elif entities.size == held.size and np.array_equal(entities, held):
            return
        else:
            mask = self._held_mask
            if mask is None:
                mask = self._held_mask = np.zeros(n, bool)
            mask[held] = True  # a mask, not np.isin: several times faster on a batch
            try:
                bad = ~mask[entities]
            finally:
                mask[held] = False
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            shown = held[:8].tolist()
            more = "..." if held.size > 8 else ""
            raise MisuseError(
                f"{what}: entity {entities[i]} (at index {i}) is not in the batch being handled (entities "
                f"{shown}{more}): a handler emits and draws only as the entities of the events it was handed")
