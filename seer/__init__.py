"""SEER: an event-driven runtime for multi-agent reinforcement-learning environments."""

from seer.errors import (
    CausalityError,
    ClosedError,
    HandlerError,
    InvalidEventError,
    NotClaimedError,
    PastEventError,
    QueueFullError,
    SeerError,
    WorkerError,
)
from seer.queue import EVENT_DTYPE, EventQueue

__version__ = "0.1.0"

__all__ = [
    "EVENT_DTYPE",
    "CausalityError",
    "ClosedError",
    "EventQueue",
    "HandlerError",
    "InvalidEventError",
    "NotClaimedError",
    "PastEventError",
    "QueueFullError",
    "SeerError",
    "WorkerError",
]
