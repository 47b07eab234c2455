"""SEER: an event-driven runtime for multi-agent reinforcement-learning environments.

This package façade re-exports the public names of every layer (see
ARCHITECTURE.md); modules inside ``seer`` never import it, only each other.
"""

from seer.errors import (
    ActorRestartedError,
    CausalityError,
    ClosedError,
    EnvCopyError,
    EnvLoadError,
    HandlerError,
    IncompatibleModelError,
    InvalidArgumentError,
    InvalidEventError,
    EntityWriteError,
    MisuseError,
    UntrustedPathError,
    NotClaimedError,
    PastEventError,
    QueueFullError,
    SeerError,
    SpaceMismatchError,
    UnknownEnvError,
    WorkerError,
)
from seer.queue import EVENT_DTYPE, EventQueue
from seer.model import EventKind, Model, Native
from seer.runtime import Runtime, StepStats
from seer.pool_stats import PoolStats, WorkerTimes
from seer.trace import Trace
from seer.wrap import wrap
from seer.native_env import NativeEnv
from seer.capi import get_include
from seer._version import __version__

__all__ = [
    "EVENT_DTYPE",
    "ActorRestartedError",
    "CausalityError",
    "ClosedError",
    "EnvCopyError",
    "EnvLoadError",
    "EventKind",
    "EventQueue",
    "Model",
    "Native",
    "NativeEnv",
    "Runtime",
    "StepStats",
    "PoolStats",
    "WorkerTimes",
    "Trace",
    "HandlerError",
    "IncompatibleModelError",
    "InvalidArgumentError",
    "InvalidEventError",
    "EntityWriteError",
    "MisuseError",
    "UntrustedPathError",
    "NotClaimedError",
    "PastEventError",
    "QueueFullError",
    "SeerError",
    "SpaceMismatchError",
    "UnknownEnvError",
    "WorkerError",
    "get_include",
    "wrap",
]
