"""The errors of a failed step and of a refused emit, built from the C runtime's error record.

Built only on the error path, from a runtime's core (`seer._runtime_core._Core`):
what a Python handler raised, what a compiled handler returned, or why
``seer_rt_emit_many`` refused an event.
"""

from __future__ import annotations

import traceback

from seer import _native_errors
from seer._seer_c import ffi, lib
from seer.errors import (
    CausalityError,
    EntityWriteError,
    HandlerError,
    InvalidEventError,
    MisuseError,
    PastEventError,
    QueueFullError,
    SeerError,
)

__all__ = ["emit_error", "step_error"]


def emit_error(core, rc: int, source: int, target: int, kind: int, time: float) -> SeerError:
    """The error for status ``rc`` of an emit from ``source`` to ``target`` (kind, time)."""
    L = core.model.lookahead
    n = core.num_entities
    entity = target if not 0 <= target < n else source
    # one (class, message) per status of seer_rt_emit_many
    known = {
        lib.SEER_E_CAUSALITY: (CausalityError, (
            f"causality violation: entity {source} sent kind {kind} to entity {target} for time {time}, "
            f"sooner than the lookahead {L} allows; events to other entities need a delay >= {L}")),
        lib.SEER_E_PAST: (PastEventError,
                          f"entity {source} sent itself kind {kind} for time {time}, which is in its past"),
        lib.SEER_E_ENTITY: (InvalidEventError, f"entity {entity} is out of range: expected 0 <= entity < {n}"),
        lib.SEER_E_KIND: (InvalidEventError, f"kind {kind} is out of range: expected 0 <= kind < {len(core.kinds)}"),
        lib.SEER_E_TIME: (InvalidEventError, f"time {time} for an event to entity {target} is not finite"),
        lib.SEER_E_NOMEM: (SeerError, (
            f"out of memory while entity {source} sent kind {kind} to entity {target} for time {time} "
            f"(a worker's list of events for the next window could not grow)")),
        lib.SEER_E_FULL: (QueueFullError, (
            f"event pool full ({core.queue.capacity} events) while entity {source} sent kind {kind}; "
            f"pass a larger capacity= to the Runtime")),
    }
    if rc == lib.SEER_E_ENTITY and 0 <= source < n and 0 <= target < n:
        # in range, so refused for another reason: a native handler that rewrote ctx->entity
        known[rc] = (MisuseError, (
            f"a native handler emitted or drew a random number as entity {source} (ctx->entity), which its "
            f"worker is not running: a handler acts only as the entity of the event it was handed"))
    cls, message = known.get(rc, (SeerError, f"emit failed with status {rc}"))
    return cls(message)


def step_error(core) -> SeerError:
    """The error of the step that just failed; its cause, if any, is in ``_seer_cause``."""
    info = ffi.new("seer_error_info *")
    lib.seer_rt_last_error(core.rt, info)
    kinds = core.kinds
    kind_name = kinds[info.kind].name if 0 <= info.kind < len(kinds) else "?"
    if core.errors:
        exc = core.errors[min(core.errors)]
        batch, index, batched = exc.__seer_batch__
        del exc.__seer_batch__
        if isinstance(exc, SeerError) and not isinstance(exc, HandlerError):
            err = type(exc)(f"{exc} (in handler {kind_name!r}, worker {info.worker})")
            err._seer_cause = exc
            return err
        row = batch[index]
        where = f"entity {row['entity']}, kind {row['kind']} ({kind_name!r}), time {row['time']}"
        if batched and len(batch) > 1:
            where += f" (first of a batch of {len(batch)} events for entities {batch['entity'][:8].tolist()}...)"
        tb = "".join(traceback.format_exception(exc)).rstrip()
        err = HandlerError(f"handler failed at {where}: {type(exc).__name__}: {exc}\n{tb}",
                           entity=int(row["entity"]), kind=int(row["kind"]), time=float(row["time"]))
        err._seer_cause = exc
        return err
    if info.code == lib.SEER_RT_E_OTHER_ROW:
        names = list(core.debug_rows or {})
        name = names[info.target_kind] if 0 <= info.target_kind < len(names) else "?"
        return EntityWriteError(
            f"native handler {kind_name!r} of entity {info.entity} (kind {info.kind}, time {info.time}, worker "
            f"{info.worker}) wrote model.state[{name!r}][{info.target}] (row of entity {info.target}), but it "
            f"handles entity {info.entity} only: a handler writes its own entity's rows and reads others through "
            f"ctx.snapshot (seer debug mode)")
    # what a compiled handler raised or returned (seer.numba records it)
    said = _native_errors.take(int(ffi.cast("uintptr_t", core.rt)), info.entity, info.kind, info.time)
    if info.code == lib.SEER_E_HANDLER:
        code, cause = said or (info.target or None, None)  # a C handler's code: the core keeps it
        why = (f": {type(cause).__name__}: {cause}" if cause is not None else
               "" if code is None else f": returned {code}" + (
                   f" ({_native_errors.code_name(code)})" if _native_errors.code_name(code) else ""))
        err = HandlerError(
            f"native handler {kind_name!r} failed at entity {info.entity}, kind {info.kind}, time {info.time} "
            f"(worker {info.worker}){why}", entity=info.entity, kind=info.kind, time=info.time, code=code)
        err._seer_cause = cause
        return err
    err = emit_error(core, info.code, info.entity, info.target, info.target_kind, info.target_time)
    return type(err)(f"{err} (while handling entity {info.entity} at time {info.time})")
