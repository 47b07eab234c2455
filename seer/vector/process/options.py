"""The process backend's checks before anything starts (its tuning options, a picklable env_fn) and what it says about a worker that died before running SEER's code."""

from __future__ import annotations

import math
import numbers
import sys

from seer.errors import InvalidArgumentError

#: The largest ``cmd_bytes`` / ``msg_bytes``: a shared area is memory of /dev/shm, and a larger payload goes
#: through the pipe anyway.
MAX_AREA_BYTES = 1 << 30
#: The longest ``yield_s``: a waiter spinning longer only burns a core another process could use.
MAX_YIELD_S = 10.0


def check_options(yield_s, cmd_bytes, msg_bytes, startup_timeout) -> tuple[float, int, int, float]:
    """The process backend's tuning options, checked before anything is
    spawned or created (InvalidArgumentError naming the value)."""
    def seconds(name, v, lo_ok, hi):
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v) or \
                v < 0 or (v == 0 and not lo_ok) or v > hi:
            raise InvalidArgumentError(f"{name}={v!r} is invalid: expected a number of seconds in "
                                       f"{'[0' if lo_ok else '(0'}, {hi:g}]")
        return float(v)

    def area(name, v):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or not 0 <= v <= MAX_AREA_BYTES:
            raise InvalidArgumentError(f"{name}={v!r} is invalid: expected an integer number of bytes in [0, "
                                       f"{MAX_AREA_BYTES}] (the shared area; larger payloads go through the pipe)")
        return int(v)

    return (seconds("yield_s", yield_s, True, MAX_YIELD_S), area("cmd_bytes", cmd_bytes),
            area("msg_bytes", msg_bytes), seconds("startup_timeout", startup_timeout, False, math.inf))


def unpicklable(env_fn, exc: BaseException, where: str = "the process backend sends it to each worker process") -> str:
    """Why ``env_fn`` cannot go to worker processes (or ``where`` else), and what to do."""
    return (f"env_fn={env_fn!r} cannot be pickled ({type(exc).__name__}: {exc}), and {where} with "
            f"cloudpickle: an env_fn must be picklable (not a closure over a lock, an open "
            f"file, a socket or a live simulator handle: create those inside env_fn), or use backend=\"thread\"")


def died_starting(context: str) -> str:
    """Why a worker may die before running any SEER code, for its WorkerError."""
    main = getattr(sys.modules.get("__main__"), "__file__", None)
    return (f"; it died before running any SEER code, while multiprocessing ({context}) started it: its error is on "
            f"this process's stderr, not in this message.  The usual cause: the new process imports this program's "
            f"main module{f' ({main})' if main else ''} again, so a script must create vector envs under "
            f"`if __name__ == \"__main__\":`, and a program read from stdin cannot start worker processes; or use "
            f"backend=\"thread\"")
