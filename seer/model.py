"""How a model describes itself to :class:`seer.Runtime`: :class:`Model` and its :class:`EventKind` list."""

from __future__ import annotations

import dataclasses
import math
import numbers
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from seer.capi import Native
from seer.errors import InvalidArgumentError

#: Most event kinds a model may declare (the C runtime's handler table).
MAX_KINDS = 1024


@dataclasses.dataclass(frozen=True)
class EventKind:
    """One kind of event and the handler that runs it.

    Args:
        name: Shown in traces and errors.
        handler: A :class:`Native` handler, or a Python callable
            ``handler(ctx, events)`` where ``events`` is a structured array
            (fields entity, time, kind, payload, source, seq) holding at most
            one event per entity, all of this kind.  The array is the
            handler's own copy (it may keep it); ``ctx`` is valid only during
            the call, and the handler must not call back into its runtime
            (``step``, ``reset``, ``schedule``, ``close`` raise
            :class:`~seer.errors.MisuseError` there).
        batched: With ``False`` a Python handler is called once per event as
            ``handler(ctx, event)``, which pins errors to one event at the
            price of one Python call each.
    """

    name: str
    handler: Native | Callable[..., Any]
    batched: bool = True

    @property
    def native(self) -> bool:
        return isinstance(self.handler, Native)


class Model:
    """Base class of what :class:`seer.Runtime` runs.

    A model owns ``num_entities`` entities whose state is a struct of arrays
    (``state``: name -> numpy array whose first axis is the entity).  A handler
    writes only its own entity's rows and reads other entities through
    ``ctx.snapshot``, the copy taken at the window's start.  Arrays must be
    C-contiguous with a plain-data dtype (numbers, not objects).  A model
    with Python handlers only may rebind an array between steps (``reset``
    doing ``self.state["x"] = np.zeros(n)``): the next step follows it,
    provided it keeps its shape and dtype.  A native model changes its
    arrays in place, never rebinds them: its C code holds pointers to them.

    Subclasses set ``num_entities``, ``lookahead`` (the smallest delay of any
    event one entity sends another; > 0), ``kinds`` (a sequence of
    :class:`EventKind`, indexed by kind number) and ``state``, and implement
    :meth:`reset`.  Native models also set ``native_model``: a cffi pointer to
    the C struct their handlers receive as ``ctx->model``.
    """

    num_entities: int
    lookahead: float
    kinds: Sequence[EventKind]
    state: Mapping[str, np.ndarray]
    #: State arrays copied into ``ctx.snapshot`` at every window start
    #: (default: all of them).
    shared_state: Sequence[str] | None = None
    native_model: Any = None

    def reset(self, runtime, seed: int) -> None:
        """Restore the initial state and schedule the first events.

        Called by :meth:`seer.Runtime.reset` after the queue was emptied; use
        ``runtime.schedule(...)`` to push events.
        """
        raise NotImplementedError

    def snapshot_targets(self) -> dict[str, np.ndarray]:
        """Arrays the runtime copies the shared state into (created lazily).

        Native models that read snapshots call this to get the buffers to
        point their C struct at before the runtime is built; a
        :mod:`seer.numba` model binds ``snapshot_targets()[name]`` into its
        State under a field of its own and reads other entities' rows
        there (the values at the window's start, identical for every pool
        size).
        """
        snaps = getattr(self, "_seer_snapshots", None)
        if snaps is None:
            names = self.state.keys() if self.shared_state is None else self.shared_state
            snaps = {name: np.zeros_like(self.state[name]) for name in names}
            self._seer_snapshots = snaps
        return snaps


def validate_model(model: Model) -> None:
    """Check what a :class:`seer.Runtime` needs of ``model``; the error names the field and what was expected.

    Raises:
        TypeError: ``model`` is no :class:`Model`, or a kind or handler has the wrong type.
        ValueError: A size, the lookahead, the kinds or a state array is out of range
            (InvalidArgumentError, a ValueError, for the state: an object dtype, a bad shape).
    """
    if not isinstance(model, Model):
        raise TypeError(f"model must be a seer.Model, got {type(model).__name__}")
    n = getattr(model, "num_entities", None)
    if not isinstance(n, numbers.Integral) or n < 1:
        raise ValueError(f"model.num_entities={n!r} is invalid: expected an integer >= 1")
    L = getattr(model, "lookahead", None)
    if not isinstance(L, numbers.Real) or not L > 0 or math.isnan(L):
        raise ValueError(f"model.lookahead={L!r} is invalid: expected a number > 0 (inf allowed)")
    kinds = list(getattr(model, "kinds", []))
    if not 1 <= len(kinds) <= MAX_KINDS:
        raise ValueError(f"model.kinds has {len(kinds)} entries: expected 1 to {MAX_KINDS}")
    for k, spec in enumerate(kinds):
        if not isinstance(spec, EventKind):
            raise TypeError(f"model.kinds[{k}] must be a seer.EventKind, got {spec!r}")
        if spec.native:
            if model.native_model is None:
                raise ValueError(f"model.kinds[{k}] is native but model.native_model is None")
            check = getattr(getattr(spec.handler, "owner", None), "check_native_model", None)
            if check is not None:  # a seer.numba handler: the table must be its State's
                check(model.native_model, f"model.kinds[{k}]")
        elif not callable(spec.handler):
            raise TypeError(f"model.kinds[{k}].handler must be callable or seer.Native, got {spec.handler!r}")
    state = getattr(model, "state", None)
    if not isinstance(state, Mapping):
        raise InvalidArgumentError(f"model.state is {type(state).__name__}: expected a dict of numpy arrays")
    for name, arr in state.items():
        if not isinstance(arr, np.ndarray) or arr.ndim < 1 or arr.shape[0] != n:
            raise InvalidArgumentError(f"model.state[{name!r}] must be an array with first axis num_entities={n}")
        if arr.dtype.hasobject:
            # its snapshot would be a byte copy of object pointers, which nothing keeps alive
            raise InvalidArgumentError(f"model.state[{name!r}] has dtype {arr.dtype}, which holds Python objects: "
                                       f"expected a numeric (or other plain-data) numpy dtype")
        if not arr.flags.c_contiguous:
            raise InvalidArgumentError(f"model.state[{name!r}] is not C-contiguous: the runtime copies each "
                                       f"state array as one block (np.ascontiguousarray)")
