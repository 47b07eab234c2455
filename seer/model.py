"""How a model describes itself to :class:`seer.Runtime`."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping, Sequence

import numpy as np


class Native:
    """A native handler ``int f(seer_ctx *ctx, const seer_event *ev)``, run by
    the workers with the GIL released.

    Args:
        fn: The C function: a cffi function pointer from any module
            (``ffi.addressof(lib, "on_tick")``), an integer address, a ctypes
            function, a Numba ``cfunc`` (see :mod:`seer.numba`), or the name
            of a function compiled into SEER's core.  Prefer
            :meth:`seer.capi.Plugin.handler`, which also checks the module's
            API version.
        name: Shown in errors and traces (default: derived from ``fn``).
        owner: Kept alive as long as the handler (the module or object that
            owns the code).

    Raises:
        seer.InvalidArgumentError: ``fn`` is NULL or not a C function.
    """

    __slots__ = ("address", "name", "owner")

    def __init__(self, fn: Any, *, name: str | None = None, owner: Any = None):
        from seer import capi

        if isinstance(fn, str):
            from seer._seer_c import ffi, lib

            try:
                ptr = ffi.addressof(lib, fn)
            except AttributeError:
                raise capi.InvalidArgumentError(
                    f"Native({fn!r}) names a function that is not compiled into seer._seer_c: pass the function "
                    f"itself (a cffi pointer, an address, a ctypes function or a Numba cfunc) for a plug-in's handler"
                ) from None
            name, owner, fn = name or fn, owner or lib, ptr
        self.address = capi.address_of(fn, "Native(fn)")
        self.name = name or getattr(fn, "__name__", None) or f"native@{self.address:#x}"
        self.owner = owner if owner is not None else fn

    @property
    def symbol(self) -> str:
        return self.name

    def __eq__(self, other) -> bool:
        return isinstance(other, Native) and other.address == self.address

    def __hash__(self) -> int:
        return hash(self.address)

    def __repr__(self) -> str:
        return f"Native({self.name!r}, address={self.address:#x})"


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
