"""The typed messages a vector backend reports besides its rows: copy failures, restarts, per-row infos.

A backend's ops (reset, step, call) write rows into the shared buffers and
return a list of these; :class:`~seer.vector.SeerVectorEnv` turns them into
errors, warnings and ``infos``.  They are plain frozen dataclasses, so they
pickle unchanged across worker processes and Ray actors.  Indices are global
(rows and copies of the whole vector env) once they reach the vector env; a
backend that runs a slice of the copies (a Ray shard) numbers them from 0
and its driver moves them with :meth:`shifted`.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Union

import numpy as np


@dataclasses.dataclass(frozen=True)
class CopyFailed:
    """Env copy ``copy`` raised (its rows are stale until it is reset).

    Attributes:
        copy: The copy's index.
        traceback: The formatted traceback, from wherever the copy ran.
        attribute_error: The exception was an ``AttributeError`` (a
            ``get_attr`` of a missing attribute then raises one too).
    """

    copy: int
    traceback: str
    attribute_error: bool = False

    def shifted(self, row0: int, copy0: int) -> "CopyFailed":
        return dataclasses.replace(self, copy=self.copy + copy0)


@dataclasses.dataclass(frozen=True)
class CopyRestarted:
    """Env copy ``copy`` failed and was recreated (``restart_failed=True``); ``traceback`` says why."""

    copy: int
    traceback: str

    def shifted(self, row0: int, copy0: int) -> "CopyRestarted":
        return dataclasses.replace(self, copy=self.copy + copy0)


@dataclasses.dataclass(frozen=True)
class RowInfo:
    """A non-empty info dict of the agent in row ``row``; ``final``: of the
    step that ended its episode, reported under ``final_info`` (SAME_STEP)."""

    row: int
    info: dict
    final: bool = False

    def shifted(self, row0: int, copy0: int) -> "RowInfo":
        return dataclasses.replace(self, row=self.row + row0)


@dataclasses.dataclass(frozen=True)
class FinalObs:
    """The last observation of row ``row``'s episode (SAME_STEP), for
    batched rollouts whose buffers are overwritten step after step."""

    row: int
    obs: np.ndarray

    def shifted(self, row0: int, copy0: int) -> "FinalObs":
        return dataclasses.replace(self, row=self.row + row0)


@dataclasses.dataclass(frozen=True)
class RestartFlag:
    """Copy ``copy``'s rows start over after a restart (a rollout step's ``infos["restarted"]``)."""

    copy: int

    def shifted(self, row0: int, copy0: int) -> "RestartFlag":
        return dataclasses.replace(self, copy=self.copy + copy0)


Message = Union[CopyFailed, CopyRestarted, RowInfo, FinalObs, RestartFlag]


def failures(msgs) -> list[CopyFailed]:
    """The :class:`CopyFailed` messages of ``msgs``."""
    return [m for m in msgs if isinstance(m, CopyFailed)]


def restarts(msgs) -> list[CopyRestarted]:
    """The :class:`CopyRestarted` messages of ``msgs``."""
    return [m for m in msgs if isinstance(m, CopyRestarted)]


def shifted(msgs, row0: int, copy0: int) -> list[Any]:
    """``msgs`` of a backend over copies ``copy0..`` (rows ``row0..``) in the whole vector env's numbering."""
    if not msgs or (row0 == 0 and copy0 == 0):
        return list(msgs or ())
    return [m.shifted(row0, copy0) for m in msgs]
