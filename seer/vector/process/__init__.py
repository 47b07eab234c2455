"""Process backend (package): env copies in worker processes, rows in shared memory.

Files: ``protocol`` (the flag/slot layout of the shared block and the sealed
message codec), ``worker`` (the worker process loop and the one op dispatch
that it and the inline share use), ``parent`` (spawning, start-up, close:
:class:`ProcessBackend`), ``waits`` (publishing ops and waiting for the
workers' answers, env-pool steps, dead or silent workers), ``options``
(its tuning options and a picklable env_fn, checked before anything
starts), ``stderr``
(each worker's stderr, forwarded here; its last lines go into the
:class:`~seer.errors.WorkerError` of a worker that dies),
``env`` (:class:`ProcessVectorEnv`, the env pool on this backend).

Memory.  One ``multiprocessing.shared_memory`` block holds a control area,
a command area (parent -> workers), one message area per worker (workers ->
parent) and every row buffer of :class:`~seer.vector._layout.Layout`.
Workers write their copies' rows in place; nothing per step is pickled
unless an env returns non-empty infos.

Coordination, per op (step, reset, call, close), without pipes::

    parent: write actions / seeds / command           worker w: asleep on BELL[w] (or spinning)
            publish GEN = gen, ring BELL[w]         ->  sees GEN change, reads CMD
                                                        steps its copies, writes rows and MSG[w]
            asleep on PBELL until every DONE[w]    <-  MSGLEN[w] = n; publish DONE[w] = gen, ring PBELL
            == gen; reads rows and MSG[w]

Flags.  Every flag (GEN, DONE[w], REQ[w], REQDONE[w], CLOSING) has one
writer, which publishes with a C11 release store after the payload's plain
stores; readers load it with acquire, so whoever sees a flag's new value
sees the payload written before it, on any architecture (see
``csrc/seer_flags.h``; no reliance on x86 store order).  Waiting spins with
``sched_yield`` for ``yield_s``, then sleeps on a bell: a futex word in the
block (FUTEX_WAIT, shared, not _PRIVATE), rung by the flag's writer, which
makes a system call only when someone sleeps.  A parent that expects a wait
of milliseconds first sleeps on the bell through 60% of the usual wait (a
spinning parent would take turns on the cores with the workers it waits
for), then spins for the end (a futex wake-up costs tens of microseconds on
a busy machine, a spin a few).  Sleeps are slices: the parent's of 50 ms, after
each of which it checks the workers' sentinels (a dead worker is seen
within ~50 ms), its time limits, and whether ``close()`` came from another
thread (which also sets CLOSING and rings, so a waiting step ends at once);
a worker's of 0.2 s, after which it checks that the parent lives.

Time limits.  Every wait of the parent for its workers (``step``,
``reset``, ``call``, ``recv``, a large message on the pipe) gives up after
``worker_timeout`` seconds (default :data:`WORKER_TIMEOUT_S`; None waits
forever) with :class:`~seer.errors.WorkerError`, naming each worker that did
not answer (index, pid, copies, whether it is stopped) and how long it
waited.  The workers are then left as they are (stopped, or stuck in an
env's C code), so that they can be inspected (``py-spy dump --pid``); every
later call raises :class:`~seer.errors.ClosedError` and ``close()`` kills
and reaps them (SIGKILL ends stopped processes too).  With
``restart_failed=True`` a worker that does not answer a step is killed and
restarted like one that died.

Messages.  Payloads that are arbitrary Python objects (infos, tracebacks,
``call`` / ``get_attr`` results, ``reset`` options, ``set_attr`` values)
are pickled, and a pickle can run code when loaded; so each one carries an
HMAC-SHA256 under a random 32-byte key that the parent creates per env and
hands to each worker in its spawn arguments (never through shared memory),
computed over the payload and its place in the protocol (direction,
worker, flag, op number: a stale or misdirected payload fails too).  A
payload whose HMAC does not match is refused before unpickling: by the
parent with :class:`~seer.errors.WorkerError` (and the env is closed), by a
worker by exiting with the reason (the parent reports it).  Another user
cannot write the block anyway (it is created 0600); the HMAC keeps a
process that can (same user, a stale mapping, a bug writing out of bounds)
from getting code run.  Flags carry no objects, only integers, and are
authenticated under the same key: next to each request flag (GEN with CMD
and CMDLEN; a worker's REQ) the parent writes a 128-bit MAC (keyed BLAKE2b,
cheap enough for every step) of its new value, and next to each answer
flag (DONE, REQDONE, with MSGLEN) the worker does;
a worker runs an op only when its number is the next one and its MAC
verifies, and the parent reads a worker's rows only when its answer's MAC
does.  A flag bumped by another process is refused (the worker leaves with
the reason, the parent raises :class:`~seer.errors.WorkerError` naming the
flag, and does not restart the worker), never acted on.  Pipes carry
what is not per step: start-up (spaces, layout), payloads too large for the
shared areas (sealed the same way), and a worker's last words.

With ``inline`` the calling process is worker 0: it publishes the op, steps
its own share in ``step_wait`` and then waits for the others, so ``workers``
processes keep ``workers`` cores busy and nobody waits on a core someone
else needs (bench/results/vector.md times ``inline`` against a caller that
only waits).

Copies live in one worker for their whole life (contiguous chunks of
``num_copies / workers``) because a PettingZoo env's state is a Python
object inside that process: it cannot be stepped anywhere else.  What is
handed out dynamically is the waiting: env-pool stepping (``send`` /
``recv``, :class:`ProcessVectorEnv`) gives each worker its own request flag
(REQ, answered by REQDONE in its line), so the caller takes the rows of
whichever workers finish first and a slow copy stalls only its own worker's
share.  Copies with seer.vector's native path (the built-in envs) run their
whole step and autoreset in C inside the worker.

Threads.  The vector env takes one caller at a time
(:class:`~seer.guard.CallGuard`, in :class:`~seer.vector.SeerVectorEnv`);
this backend refuses a second caller too (a non-blocking lock, for callers
that drive it directly).  ``close()`` from another thread interrupts a
running wait, which raises :class:`~seer.errors.ClosedError`.
"""

from seer.vector.process.protocol import WORKER_TIMEOUT_S
from seer.vector.process.parent import ProcessBackend
from seer.vector.process.env import ProcessVectorEnv

__all__ = ["WORKER_TIMEOUT_S", "ProcessBackend", "ProcessVectorEnv"]
