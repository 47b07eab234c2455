"""How a model describes itself to :class:`seer.Runtime`."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping, Sequence

import numpy as np


@dataclasses.dataclass(frozen=True)
class Native:
    """A handler compiled into SEER's C extension, run with the GIL released.

    Args:
        symbol: Name of a C function ``int f(seer_ctx *, const seer_event *)``
            declared in a header under ``csrc/`` (so it is in ``seer._seer_c.lib``).
    """

    symbol: str


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
    C-contiguous and changed in place, never rebound: native handlers hold
    pointers to them.

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

        Native models that read snapshots in C call this to get the buffers
        to point their C struct at before the runtime is built.
        """
        snaps = getattr(self, "_seer_snapshots", None)
        if snaps is None:
            names = self.state.keys() if self.shared_state is None else self.shared_state
            snaps = {name: np.zeros_like(self.state[name]) for name in names}
            self._seer_snapshots = snaps
        return snaps
