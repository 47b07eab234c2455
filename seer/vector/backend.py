"""The backend contract of seer.vector (`Backend`, a Protocol) and the factory of the local backends (`build_local`).

A :class:`~seer.vector.SeerVectorEnv` owns the Gymnasium side (masks,
autoreset bookkeeping, infos, errors); its backend owns the copies and the
row buffers.  Every backend (``thread``: SEER's runtime; ``process``: worker
processes over shared memory; ``ray``: shards, each a local backend inside a
Ray actor) implements :class:`Backend`, and the vector env and a Ray shard
use a backend through it only.  How an op flows::

    vector env                                   backend
      writes bufs["act"] (step) or                 steps / resets / calls its copies,
      bufs["select"/"seeded"/"seeds"] (reset)  ->  writes their rows into bufs,
      reads the rows and the messages          <-  returns typed messages (seer.vector.messages)

A copy's failure never raises from a backend: it comes back as a
:class:`~seer.vector.messages.CopyFailed` (or, with ``restart``, a
:class:`~seer.vector.messages.CopyRestarted`); a backend raises only for
its own breakdown (:class:`~seer.errors.WorkerError`, then it is closed).
"""

from __future__ import annotations

from typing import Any, Callable, Protocol, Sequence, runtime_checkable

import numpy as np

from seer._host import usable_cores
from seer.vector._layout import CopySpec, Layout
from seer.vector.messages import Message


@runtime_checkable
class Backend(Protocol):
    """What :class:`~seer.vector.SeerVectorEnv` (and a Ray shard) needs of a backend.

    Attributes:
        name: ``"thread"``, ``"process"`` or ``"ray"``.
        layout: The rows (:class:`~seer.vector._layout.Layout`).
        specs: Each copy's agents, spaces and metadata.
        bufs: The row buffers, by :meth:`Layout.fields` name.
        num_workers: Threads, processes, or all shards' workers.
        closed: Whether :meth:`close` ran (or a breakdown closed it).
        restart_failed: Whether failed copies are restarted.
        num_shards: Groups of copies that step together (1 for threads, a
            worker process or a Ray shard each otherwise); ``copy_ranges`` /
            ``row_ranges``: each shard's ``(start, stop)``; ``inflight``:
            the shards with a :meth:`send` not yet received.
    """

    name: str
    layout: Layout
    specs: Sequence[CopySpec]
    bufs: dict[str, np.ndarray]
    num_workers: int
    closed: bool
    restart_failed: bool
    num_shards: int
    copy_ranges: list[tuple[int, int]]
    row_ranges: list[tuple[int, int]]
    inflight: dict

    def reset(self, options: dict | None) -> list[Message]:
        """Reset the copies flagged in ``bufs["select"]`` with ``bufs["seeds"]`` (where ``bufs["seeded"]``)."""

    def step_async(self) -> None:
        """Start a step of every copy with the actions in ``bufs["act"]``."""

    def step_wait(self, timeout: float | None = None) -> list[Message]:
        """Finish :meth:`step_async` (``timeout``: ``multiprocessing.TimeoutError``, the step still pending)."""

    def send(self, shards: Sequence[int]) -> None:
        """Start a step of the copies of ``shards`` (their action rows are in place); returns at once."""

    def recv(self, min_shards: int | None = None, timeout: float | None = None) -> tuple[list[int], list[Message]]:
        """The shards done with their :meth:`send` (all, or at least ``min_shards``) and their messages."""

    def call(self, kind: str, name: str, args: tuple, kwargs: dict, values: list | None = None,
             copies: Sequence[int] | None = None) -> tuple[list[Any], list[Message]]:
        """``kind`` (``"call"``, ``"get_attr"``, ``"set_attr"``, ``"render"``) on the
        copies ``copies`` (sorted; None: all); one result per copy, and the messages."""

    def worker_of(self, copy: int) -> str:
        """Where copy ``copy`` runs, for error messages."""

    def restarts(self) -> list[int]:
        """How often each copy was restarted."""

    def interrupt(self) -> None:
        """End a wait that another thread is in (``close()`` from another thread); safe from any thread."""

    def close(self) -> None:
        """End the copies and workers and free the buffers; idempotent."""


LOCAL_BACKENDS = ("thread", "process")


def build_local(backend: str, env_fn: Callable[[], Any], num_copies: int, workers: int | str, *, pad: bool,
                autoreset, restart: bool, seed_stride: int | None = None, context: str | None = None,
                inline: bool | str = "auto", **options) -> Backend:
    """A thread or process backend over ``num_copies`` copies of ``env_fn()``
    (arguments checked by :func:`seer.vector.make`, whose documentation
    they follow).

    Args:
        backend: ``"thread"`` or ``"process"``.
        seed_stride: How far apart a restarted copy's seeds are (default
            ``num_copies``); a Ray shard passes the whole vector env's copy
            count, so that its restarted copies get the seeds they would
            get in one pool (see :func:`seer.vector._runner.restart_seed`).
        context, inline, **options: The process backend's (see ``make``).
    """
    if backend == "thread":
        extra = sorted(options) + (["context"] if context is not None else []) + \
            (["inline"] if inline not in ("auto", False, None) else [])
        if extra:
            raise TypeError(f"options {extra} are for the process backend only")
        from seer.vector._thread import ThreadBackend

        return ThreadBackend(env_fn, num_copies, workers, pad=pad, autoreset=autoreset, restart=restart,
                             seed_stride=seed_stride)
    if backend == "process":
        from seer.vector.process import ProcessBackend

        if workers == "auto":
            workers = min(usable_cores(), num_copies)
        if inline in ("auto", None):
            inline = 1 < workers and min(workers, num_copies) >= usable_cores()
        elif not isinstance(inline, bool):
            raise ValueError(f'inline={inline!r} is invalid: expected "auto", True or False')
        return ProcessBackend(env_fn, num_copies, workers, pad=pad, autoreset=autoreset, restart=restart,
                              seed_stride=seed_stride, context=context, inline=inline, **options)
    raise ValueError(f"backend={backend!r} is not a local backend: expected one of {list(LOCAL_BACKENDS)}")
