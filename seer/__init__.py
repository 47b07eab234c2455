"""SEER: an event-driven runtime for multi-agent reinforcement-learning environments."""

from seer.errors import (
    CausalityError,
    ClosedError,
    EnvLoadError,
    HandlerError,
    InvalidArgumentError,
    InvalidEventError,
    MisuseError,
    NotClaimedError,
    PastEventError,
    QueueFullError,
    SeerError,
    UnknownEnvError,
    WorkerError,
)
from seer.queue import EVENT_DTYPE, EventQueue
from seer.model import EventKind, Model, Native
from seer.runtime import Runtime, StepStats
from seer.trace import Trace
from seer.wrap import wrap
from seer.capi import get_include

__version__ = "0.1.0"

__all__ = [
    "EVENT_DTYPE",
    "CausalityError",
    "ClosedError",
    "EnvLoadError",
    "EventKind",
    "EventQueue",
    "Model",
    "Native",
    "Runtime",
    "StepStats",
    "Trace",
    "HandlerError",
    "InvalidArgumentError",
    "InvalidEventError",
    "MisuseError",
    "NotClaimedError",
    "PastEventError",
    "QueueFullError",
    "SeerError",
    "UnknownEnvError",
    "WorkerError",
    "get_include",
    "wrap",
]
