"""SEER's exceptions.  Each one subclasses the builtin a caller would expect."""

from gymnasium.error import ClosedEnvironmentError


class SeerError(Exception):
    """Base class of every error SEER raises on purpose."""


class InvalidArgumentError(SeerError, ValueError, TypeError):
    """An argument has the wrong type or value (the message names both)."""


class InvalidEventError(SeerError, ValueError):
    """An event names an unknown entity or kind, or a bad timestamp."""


class PastEventError(InvalidEventError):
    """An event is earlier than what its entity has already been handed."""


class QueueFullError(SeerError, OverflowError):
    """The preallocated event pool has no room for a push."""


class NotClaimedError(SeerError, ValueError):
    """A release names an entity that nobody holds."""


class CausalityError(SeerError, ValueError):
    """An event sent to another entity arrives sooner than the lookahead."""


class HandlerError(SeerError, RuntimeError):
    """A handler failed; names the entity, kind and time, chains the cause."""

    def __init__(self, message, *, entity=None, kind=None, time=None):
        super().__init__(message)
        self.entity = entity
        self.kind = kind
        self.time = time


class ClosedError(SeerError, RuntimeError, ClosedEnvironmentError):
    """The object was closed, by the user or after an unrecoverable failure."""


class MisuseError(SeerError, RuntimeError):
    """A call the object cannot take now: from a second thread while another
    call is running, or from inside one of its own handlers."""


class WorkerError(SeerError, RuntimeError):
    """A worker (thread or process) died or stopped answering."""
