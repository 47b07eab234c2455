"""Every exception SEER raises on purpose, all under :class:`SeerError`, and its warnings, under :class:`SeerWarning`.

Each one also subclasses the builtin (or Gymnasium) error a caller would
already catch, so code written against ``ValueError`` or
``gymnasium.error.ClosedEnvironmentError`` keeps working.  They live in one
module, below every layer, so that the core, STPA and seer.vector raise the
same classes without importing each other.  (Exceptions that never leave
the module raising them, signals inside one backend or cache, stay there.)
"""

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
    """A handler failed; names the entity, kind and time, chains the cause.

    Attributes:
        code: The status a native handler returned (``SEER_E_HANDLER`` = -8
            for one that raised), or None where none is known.
        code_name: ``code``'s ``SEER_E_*`` name, or None for a code of the
            handler's own (such as 42).
    """

    def __init__(self, message, *, entity=None, kind=None, time=None, code=None):
        super().__init__(message)
        self.entity = entity
        self.kind = kind
        self.time = time
        self.code = code

    @property
    def code_name(self):
        from seer._native_errors import code_name

        return code_name(self.code)


class ClosedError(SeerError, RuntimeError, ClosedEnvironmentError):
    """The object was closed, by the user or after an unrecoverable failure."""


class UntrustedPathError(SeerError, PermissionError):
    """A folder SEER would load code or models from that another user could
    have written to: owned by someone else, or writable by group or others."""


class MisuseError(SeerError, RuntimeError):
    """A call the object cannot take now: from a second thread while another
    call is running, or from inside one of its own handlers."""


class EntityWriteError(MisuseError):
    """Debug mode (``seer.Runtime(..., debug=True)`` or ``SEER_DEBUG=1``):
    a handler wrote a row of a per-entity state array that belongs to an
    entity it was not handling."""


class WorkerError(SeerError, RuntimeError):
    """A worker (thread or process) died or stopped answering."""


class UnknownEnvError(SeerError, KeyError, ValueError):
    """An env id that no ``seer.envs`` entry point registers; the message
    lists the registered ones (also in :attr:`available`)."""

    # KeyError's str() is the repr of its argument: keep the message readable.
    __str__ = Exception.__str__

    def __init__(self, message, *, name=None, available=()):
        super().__init__(message)
        self.name = name
        self.available = list(available)


class EnvLoadError(SeerError, ImportError):
    """A registered env module failed to import (the cause is chained) or is
    not an env module; names the entry point and its distribution.  ``env``
    is the env id, ``name`` (as for any ImportError) the module."""

    def __init__(self, message, *, env=None, name=None):
        super().__init__(message, name=name)
        self.env = env


class SpaceMismatchError(SeerError, ValueError):
    """Agents (or copies) have observation or action spaces that cannot share rows."""


class EnvCopyError(HandlerError):
    """An env copy of a vector env raised.

    Attributes:
        copy: Index of the failing copy.
        worker: Where it ran (a worker index, or a shard's description).
        traceback: The worker's traceback text.
        errors: Every failing copy of the operation, as ``(copy, traceback)``.
        entity: Always None: a copy is not an entity of a runtime.
    """

    def __init__(self, message, *, copy, worker, traceback, errors):
        super().__init__(message, entity=None)
        self.copy = copy
        self.worker = worker
        self.traceback = traceback
        self.errors = errors


class EnvCopyAttributeError(EnvCopyError, AttributeError):
    """``get_attr`` (or ``call``) of an attribute that an env copy lacks: an
    :class:`EnvCopyError` that code probing with ``hasattr``-style
    ``except AttributeError`` also catches (SB3's ``VecEnv.has_attr``)."""


class ActorRestartedError(SeerError, RuntimeError):
    """A Ray shard's actor answered from a new incarnation: its process died
    between two calls and Ray restarted it (``max_restarts``)."""


class IncompatibleModelError(SeerError):
    """An STPA model file exists but cannot be used (corrupt, wrong format,
    version or feature schema); the message names the path and says which."""


class PluginVersionError(SeerError, ImportError):
    """A plug-in module was built against another version of SEER's C API
    (raised by :class:`seer.capi.Plugin`)."""


class NumbaCompileError(SeerError, TypeError):
    """Numba could not compile a handler in nopython mode (its message follows)."""


class OutputPathError(SeerError, ValueError):
    """An output path SEER refuses to write: a directory, a symbolic link,
    something that is not a regular file, or a path whose folder is missing."""


class TooLittleDataError(SeerError, ValueError):
    """An STPA dataset has too few usable workloads to train on."""


class SeerWarning(UserWarning):
    """Base of SEER's warnings."""


class StpaFallbackWarning(SeerWarning):
    """STPA's learned selector could not be used; the heuristic decided."""


class SeerNumbaCacheWarning(SeerWarning):
    """seer.numba compiled without its on-disk cache (the reason follows)."""
