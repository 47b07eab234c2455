"""`seer.vector`: a Gymnasium VectorEnv over copies of a PettingZoo env.

>>> import seer.vector
>>> from mpe2 import simple_spread_v3
>>> envs = seer.vector.make(lambda: simple_spread_v3.parallel_env(N=3), 8, backend="process", workers=2)
>>> obs, infos = envs.reset(seed=0)          # obs: (24, 18), one row per agent slot
>>> obs, rew, term, trunc, infos = envs.step(envs.action_space.sample())
>>> envs.close()

**Rows.**  As in SuperSuit's and PufferLib's multi-agent vectorization, the
vector env's ``num_envs`` counts *rows*, one per agent slot:
``num_envs = num_copies * agents_per_copy`` where ``num_copies`` is the
``num_copies`` argument of :func:`make` (how many env copies run) and
``agents_per_copy`` the largest ``len(possible_agents)`` of a copy.  Row
``c * agents_per_copy + j`` is agent ``possible_agents[j]`` of copy ``c``
(``row_agents`` / ``row_copy`` map rows back).  ``infos["mask"]`` says which
rows carry a live agent's data (see :class:`SeerVectorEnv`).

**Backends.**  ``"thread"``: the copies are the entities of a SEER model run
by :class:`seer.Runtime`'s worker pool (for envs that release the GIL, such
as SEER's own, whose whole step and autoreset run in C on this path: see
``csrc/seer_vector.h``).  ``"process"``: the copies live in worker processes;
rows live in shared memory and each step is coordinated through flags in it
(no pipes; see ``seer/vector/process/protocol.py``); :class:`ProcessVectorEnv` adds
env-pool stepping (``send``/``recv``: the rows of whichever workers finish
first).  Copy ``c`` is reset with seed
``seed + c`` for any worker count, so results are identical across worker
counts and backends.  ``"ray"``: the copies are split into shards, each a
Ray actor running its copies on its own local thread or process pool, on
any node of a Ray cluster (see :class:`RayVectorEnv`: also env-pool
stepping with ``send``/``recv`` and batched ``rollout``).  Ray is an
optional extra: ``pip install "seer-marl[ray]"``.
"""

from __future__ import annotations

import numbers
import types
import warnings
from typing import Any, Callable

import numpy as np
from gymnasium.vector import AutoresetMode

from seer._checks import check_workers
from seer._host import usable_cores
from seer.errors import ActorRestartedError, EnvCopyError, InvalidArgumentError, SpaceMismatchError
from seer.vector._env import SeerVectorEnv
from seer.vector.backend import LOCAL_BACKENDS, build_local

__all__ = ["make", "SeerVectorEnv", "EnvCopyError", "SpaceMismatchError", "AutoresetMode", "BACKENDS",
           "ProcessVectorEnv", "RayVectorEnv", "ActorRestartedError"]

BACKENDS = ("thread", "process", "ray")


def __getattr__(name):  # RayVectorEnv without importing Ray until it is used
    if name == "RayVectorEnv":
        from seer.vector.ray import RayVectorEnv

        return RayVectorEnv
    if name == "ProcessVectorEnv":
        from seer.vector.process import ProcessVectorEnv

        return ProcessVectorEnv
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def native_path_available(env_fn: Callable[[], Any]) -> bool:
    """Whether copies of ``env_fn()`` take seer.vector's native path (their
    class defines ``seer_native_copy()`` and it returns a NativeCopy): one
    probe copy is built and closed."""
    from seer.vector._runner import make_parallel

    probe = make_parallel(env_fn)
    try:
        method = getattr(type(probe), "seer_native_copy", None)
        return method is not None and method(probe) is not None
    finally:
        try:
            probe.close()
        except Exception:
            pass


def _picklable_or_thread(env_fn) -> str:
    """``"process"`` when ``env_fn`` can go to worker processes, else
    ``"thread"`` with a warning saying why (``backend="auto"`` only: an
    explicit ``"process"`` raises instead)."""
    from seer.vector.process.parent import _dumps

    try:
        _dumps(env_fn)
    except Exception as exc:
        warnings.warn(f"seer.vector.make: backend=\"auto\" takes the thread backend, not the process backend, because "
                      f"env_fn={env_fn!r} cannot be pickled for worker processes ({type(exc).__name__}: {exc}); "
                      f"its copies step one at a time under the GIL.  Make env_fn picklable (create locks, files and "
                      f"handles inside it) for the process backend, or pass backend=\"thread\" to silence this",
                      RuntimeWarning, stacklevel=3)
        return "thread"
    return "process"


def make(env_fn: Callable[[], Any], num_copies: int, backend: str = "auto",
         workers: int | str = "auto",
         autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP, *, pad: bool = False,
         restart_failed: bool = False, copy: bool = True, validate_actions: bool = True,
         check_action_masks: bool = True, context: str | None = None, inline: bool | str = "auto",
         num_shards: int | None = None,
         ray_address: str | None = None, shard_backend: str = "thread",
         **options) -> SeerVectorEnv:
    """A :class:`SeerVectorEnv` over ``num_copies`` copies of ``env_fn()``.

    Args:
        env_fn: Makes one copy: a PettingZoo ParallelEnv, or an AECEnv
            (converted with ``aec_to_parallel`` when it is parallelizable,
            else run one turn per step: see :mod:`seer.vector.turns`).  A module with a
            ``parallel_env`` factory (e.g. ``seer.envs.uav_swarm_v0``) also
            works.  The process backend pickles it with cloudpickle.
        num_copies: Number of env copies.  The result's ``num_envs`` counts
            rows (copies x agent slots, as Gymnasium's vector API counts
            envs); its ``num_copies`` keeps this count.
        backend: ``"auto"`` (default), ``"thread"``, ``"process"`` or
            ``"ray"``.  ``"auto"`` builds one probe copy and takes the thread
            backend when copies have seer.vector's native path (their step
            runs in C without the GIL: SEER's envs and plug-ins), or when
            there is one copy or one usable core; the process backend
            otherwise (a Python env holds the GIL in its step, so threads
            would take turns).  ``repr(envs)`` says which was taken, and
            whether the copies step on the native path
            (``envs.copy_path``).
        workers: An integer: threads of the runtime's pool, or processes
            stepping copies (with ``inline`` the calling process counts as
            one).  ``"auto"``: process backend, the usable cores (at most
            ``num_copies``); thread backend, ``seer.stpa``'s choice, which
            without a probe is 1 for Python handlers (they serialize on the
            GIL: threads pay off only for envs that release it for most of a
            step).  Ray backend: per shard; ``"auto"`` is the CPUs the
            shard's actor reserved (``num_cpus_per_shard``), at most its
            copies.
        autoreset_mode: ``NEXT_STEP`` (default), ``SAME_STEP`` (the final
            observation and info go to ``infos["final_obs"]`` /
            ``infos["final_info"]``) or ``DISABLED``.  A copy autoresets when
            all its agents are gone.
        pad: Let agents with different spaces share rows: Box spaces are
            padded with zeros to the largest shape (flattened first if their
            ranks differ), Discrete spaces to the largest ``n`` (an action
            beyond an agent's own ``n`` means action 0, as in SuperSuit).
            Without it, different spaces raise :class:`SpaceMismatchError`.
        restart_failed: A copy whose ``step`` raises (or whose worker process
            dies) is recreated with ``env_fn`` and its episode cut
            (``truncated`` for its live agents, ``infos["restarted"]``), with
            a warning, instead of raising (RLlib's
            ``restart_failed_sub_environments``).
        copy: Return copies of the observation buffer (False: the live
            buffer, overwritten by the next step).
        validate_actions: Check the live rows' actions against their spaces
            (an error names the row, copy, agent and value).
        check_action_masks: With ``validate_actions``, also refuse a live
            row's action that its ``infos["action_mask"]`` rules out (envs
            whose observations carry an action mask, e.g. board games);
            False hands such moves to the env.
        context: Process backend: ``"forkserver"`` (default where available)
            or ``"spawn"``; never ``fork`` (unsafe next to threads).
        inline: Process backend: the calling process steps a share of the
            copies too (like worker 0 of SEER's thread pool), so ``workers``
            processes use ``workers`` cores; without it ``workers`` child
            processes do all the stepping while the caller waits (spinning
            with ``sched_yield``: on a machine with no spare core it takes
            turns with the workers).  ``"auto"`` (default): inline when
            ``workers`` is at least the number of usable cores and above 1.
            Inline copies share the caller's fate (a copy that crashes the
            interpreter takes the caller along); ``inline=False`` isolates
            every copy.
        num_shards: Ray backend: how many shard actors split the copies
            (contiguous chunks; at most ``num_copies``).  Default: the
            cluster's CPUs over ``num_cpus_per_shard``.
        ray_address: Ray backend: the cluster to join (``"auto"``: the one
            this node belongs to, as after ``ray start``); None starts a
            local one unless Ray is already initialized.  ``close()`` shuts
            Ray down only if ``make`` started it.
        shard_backend: Ray backend: each shard's local pool, ``"thread"``
            or ``"process"`` (``context`` / ``inline`` apply to it).
        **options: Process backend tuning: ``yield_s`` (seconds in [0, 10]:
            how long a waiter spins with sched_yield before sleeping),
            ``cmd_bytes`` / ``msg_bytes`` (bytes in [0, 2**30]: shared areas
            for payloads and infos; larger ones go through the pipes),
            ``startup_timeout``, ``worker_timeout`` (seconds, default 120;
            None waits forever: how long ``step``, ``reset``, ``call`` and
            ``recv`` wait for a worker before raising
            :class:`seer.WorkerError` naming it; see
            ``seer.vector.process.WORKER_TIMEOUT_S``).  Ray backend:
            ``num_cpus_per_shard`` (Ray
            CPUs each shard actor reserves, default 1; fractions and 0 are
            allowed), ``shard_options`` (more ``actor.options()``, e.g.
            ``{"scheduling_strategy": "SPREAD"}``), ``ray_init`` (keyword
            arguments of ``ray.init`` when ``make`` starts Ray),
            ``startup_timeout``, ``worker_timeout`` (as for the process
            backend, per shard actor: a shard that does not answer a step,
            reset or call in time is named in a :class:`seer.WorkerError`, or
            killed and restarted in a step with ``restart_failed``; process
            shards bound their own workers by it too), ``shared_memory`` (default True: shards
            on the driver's node read actions and write rows and rollout
            batches in shared memory, not through Ray's object store).
    """
    if isinstance(env_fn, types.ModuleType):
        if not hasattr(env_fn, "parallel_env"):
            raise TypeError(f"module {env_fn.__name__} has no parallel_env factory")
        env_fn = env_fn.parallel_env
    if not callable(env_fn):
        raise TypeError(f"env_fn must be callable (returning a PettingZoo env), got {env_fn!r}")
    if not isinstance(num_copies, numbers.Integral) or isinstance(num_copies, bool) or num_copies < 1:
        raise ValueError(f"num_copies={num_copies!r} is invalid: expected an integer >= 1 (the number of env copies)")
    num_envs = int(num_copies)
    if not isinstance(check_action_masks, (bool, np.bool_)):
        raise InvalidArgumentError(f"check_action_masks={check_action_masks!r} is invalid: expected True or False")
    if backend not in ("auto", *BACKENDS):
        raise ValueError(f"backend={backend!r} is unknown: expected \"auto\" or one of {list(BACKENDS)}")
    workers = check_workers(workers)
    if backend == "auto":
        if num_shards is not None or ray_address is not None:
            backend = "ray"
        elif options or context is not None or inline not in ("auto", False):
            backend = "process"  # only the process backend takes these
        else:
            backend = "thread" if num_envs == 1 or usable_cores() == 1 or native_path_available(env_fn) else "process"
            if backend == "process":
                backend = _picklable_or_thread(env_fn)
    if backend != "ray" and (num_shards is not None or ray_address is not None or shard_backend != "thread"):
        raise TypeError("num_shards, ray_address and shard_backend are for the ray backend only")
    if isinstance(autoreset_mode, str):
        try:
            autoreset_mode = AutoresetMode(autoreset_mode)
        except ValueError:
            try:
                autoreset_mode = AutoresetMode[autoreset_mode.upper()]
            except KeyError:
                raise ValueError(f"autoreset_mode={autoreset_mode!r} is invalid: expected one of "
                                 f"{[m.name for m in AutoresetMode]}") from None
    if not isinstance(autoreset_mode, AutoresetMode):
        raise ValueError(f"autoreset_mode={autoreset_mode!r} is invalid: expected a gymnasium AutoresetMode")
    common = dict(pad=bool(pad), autoreset=autoreset_mode, restart=bool(restart_failed))
    if backend in LOCAL_BACKENDS:
        impl = build_local(backend, env_fn, num_envs, workers, context=context, inline=inline, **common, **options)
    elif backend == "ray":
        from seer.vector.ray import import_ray

        import_ray()  # without Ray: an ImportError that names the extra to install
        from seer.vector.ray import make_ray

        envs = make_ray(env_fn, num_envs, workers, autoreset_mode, **common, copy=copy,
                        validate_actions=validate_actions, env_name=getattr(env_fn, "__module__", None),
                        num_shards=num_shards, ray_address=ray_address, shard_backend=shard_backend,
                        context=context, inline=inline, **options)
        envs.check_action_masks = bool(check_action_masks)
        return envs
    else:
        raise ValueError(f"backend={backend!r} is unknown: expected \"auto\" or one of {list(BACKENDS)}")
    if backend == "process":
        from seer.vector.process import ProcessVectorEnv as cls
    else:
        from seer.vector._thread import ThreadVectorEnv as cls
    try:
        envs = cls(impl, autoreset_mode, copy=copy, validate_actions=validate_actions,
                   env_name=impl.specs[0].metadata.get("name") or getattr(env_fn, "__module__", None))
        envs.check_action_masks = bool(check_action_masks)
        return envs
    except BaseException:
        impl.close()
        raise
