"""Env-pool stepping (EnvPool's and PufferLib's asynchronous mode) for the
vector envs whose copies run in groups ("shards"): Ray actors
(:class:`~seer.vector.ray.RayVectorEnv`) and worker processes
(:class:`~seer.vector.process.ProcessVectorEnv`).

:meth:`EnvPool.send` steps some shards and returns at once; :meth:`EnvPool.recv`
returns the rows of the first shards to finish, so a slow copy holds up its
own shard only, never the others::

    obs, infos = envs.reset(seed=0)
    envs.send(policy(obs))                        # every shard
    for _ in range(n):
        obs, rew, term, trunc, infos = envs.recv()  # >= 1 shard's rows
        envs.send(policy(obs), shards=infos["shards"])

A backend provides (:class:`seer.vector.backend.Backend`) ``copy_ranges`` /
``row_ranges`` (per shard, ``(start, stop)``), ``inflight`` (shards with a
step out), ``send(shards)``, ``recv(min_shards, timeout) -> (shards,
messages)`` and ``restart_failed``.
"""

from __future__ import annotations

import numpy as np
from gymnasium.error import AlreadyPendingCallError, NoAsyncCallError
from gymnasium.vector import AutoresetMode

from seer.errors import WorkerError
from seer.vector._env import one_caller, warn_restarts
from seer.vector.messages import failures


class EnvPool:
    """Mixin over :class:`~seer.vector.SeerVectorEnv`: shards, :meth:`send`,
    :meth:`recv`; while steps are out, every other op is refused."""

    # ---- shards ------------------------------------------------------------------------------

    @property
    def num_shards(self) -> int:
        return self._backend.num_shards

    @property
    def shard_rows(self) -> list[slice]:
        return [slice(r0, r1) for r0, r1 in self._backend.row_ranges]

    @property
    def shard_copies(self) -> list[range]:
        return [range(c0, c1) for c0, c1 in self._backend.copy_ranges]

    def shard_of(self, row: int) -> int:
        """The shard that runs ``row``."""
        for s, (r0, r1) in enumerate(self._backend.row_ranges):
            if r0 <= row < r1:
                return s
        raise IndexError(f"row {row} is out of range: the vector env has {self.num_envs} rows")

    # ---- the contract, refusing while env-pool steps are out ----------------------------------

    def _no_pool(self, what: str) -> None:
        if self._backend.inflight and not self._waiting:
            raise AlreadyPendingCallError(
                f"{what} while shards {sorted(self._backend.inflight)} have steps out (send()): recv() them first",
                "step")

    @one_caller("reset()")
    def reset(self, *, seed=None, options=None):
        self._check_open()
        self._no_pool("reset()")
        return super().reset(seed=seed, options=options)

    @one_caller("step_async()")
    def step_async(self, actions) -> None:
        self._check_open()
        self._no_pool("step_async()")
        super().step_async(actions)

    @one_caller("call()")
    def _call(self, kind, name, args=(), kwargs=None, values=None, copies=None) -> tuple:
        self._check_open()
        self._no_pool(f"{kind}()")
        return super()._call(kind, name, args, kwargs, values, copies)

    def _check_steppable(self, what: str, copies=None) -> None:
        self._check_open()
        if self._waiting:
            raise AlreadyPendingCallError(f"{what} while a step is pending: call step_wait() first", "step")
        if not self._reset_done:
            raise RuntimeError(f"{what} before reset(): call reset() first")
        failed = sorted(c for c in self._failed if copies is None or c in copies)
        if failed:
            raise RuntimeError(
                f"env copies {failed} failed ({self._failed[failed[0]]}); call reset() (or reset them with "
                f"options={{'reset_mask': mask}}) before stepping again")
        ended = self._ended if copies is None else self._ended[list(copies)]
        if self.autoreset_mode == AutoresetMode.DISABLED and ended.any():
            idx = np.flatnonzero(self._ended) if copies is None else [c for c in copies if self._ended[c]]
            raise RuntimeError(
                f"env copies {list(map(int, idx))} ended and autoreset_mode is DISABLED: reset them with "
                f"options={{'reset_mask': mask}} before stepping")

    # ---- env-pool stepping ---------------------------------------------------------------------

    def _shard_list(self, shards) -> list[int]:
        S = self.num_shards
        if shards is None:
            return list(range(S))
        if isinstance(shards, (int, np.integer)):
            shards = [shards]
        out = sorted({int(s) for s in np.asarray(shards).reshape(-1).tolist()})
        if len(out) != len(np.asarray(shards).reshape(-1)) or any(not 0 <= s < S for s in out):
            raise ValueError(f"shards={shards!r} is invalid: expected distinct shard indices in [0, {S})")
        return out

    @one_caller("send()")
    def send(self, actions, shards=None) -> None:
        """Step ``shards`` (default: all) without waiting.  ``actions`` holds
        the rows of those shards in shard order (the rows :meth:`recv`
        returned for them), or every row of the vector env (only those
        shards' rows are used)."""
        shards = self._shard_list(shards)
        be = self._backend
        busy = [s for s in shards if s in be.inflight]
        if busy:
            raise AlreadyPendingCallError(f"shards {busy} already have a step out: recv() it first", "step")
        copies = [c for s in shards for c in range(*be.copy_ranges[s])]
        self._check_steppable("send()", copies)
        rows = np.concatenate([np.arange(*be.row_ranges[s]) for s in shards])
        a = np.asarray(actions)
        if a.shape == self.action_space.shape and len(rows) != self.num_envs:
            a = a[rows]
        want = (len(rows), *self.action_space.shape[1:])
        if a.shape != want:
            raise ValueError(f"actions has shape {a.shape}: expected {want} (the rows of shards {shards}) or "
                             f"{self.action_space.shape} (every row)")
        self._actions.check_dtype(a)
        if self.validate_actions:  # only these shards' live rows
            full = self._b["act"].copy()
            full[rows] = a
            only = np.zeros_like(self._alive)
            only[rows] = self._alive[rows]
            self._check_actions(full, alive=only)
        self._b["act"][rows] = a
        be.send(shards)

    @one_caller("recv()")
    def recv(self, min_shards: int = 1, timeout: float | None = None):
        """The rows of the first shards to finish their :meth:`send` (at
        least ``min_shards``, plus any others already done, in shard order):
        ``(obs, rew, term, trunc, infos)`` over those rows, with
        ``infos["rows"]`` (row indices into the vector env), ``infos["shards"]``
        and the usual ``mask`` / ``alive`` / per-row infos.  ``timeout``
        raises ``multiprocessing.TimeoutError`` (nothing is lost); the
        process backend's ``worker_timeout`` raises
        :class:`~seer.errors.WorkerError` naming the workers that did not
        answer."""
        self._check_open()
        be = self._backend
        if self._waiting:
            raise AlreadyPendingCallError("recv() while step_async() is pending: call step_wait() first", "step")
        if not be.inflight:
            raise NoAsyncCallError("recv() without send()", "step")
        try:
            shards, msgs = be.recv(min_shards, timeout)
        except WorkerError:
            self._after_worker_error()
            raise
        b, A = self._b, self.agents_per_copy
        rows = np.concatenate([np.arange(*be.row_ranges[s]) for s in shards])
        copies = np.concatenate([np.arange(*be.copy_ranges[s]) for s in shards])
        warn_restarts(msgs, stacklevel=3)
        self._alive[rows] = b["alive"][rows]
        self._ended[copies] = b["ended"][copies]
        errors = failures(msgs)
        if errors:
            for e in errors:
                self._failed[e.copy] = "its step raised"
            raise self._copy_error("step", errors)
        if self._layout.same_step:  # final_obs of rows gathered earlier were reported then
            keep = np.zeros(self.num_envs, bool)
            keep[rows] = True
            b["final_mask"][~keep] = False
        infos = _subset(self._infos(msgs), rows, self.num_envs)
        infos["mask"] = b["mask"][rows]
        infos["alive"] = b["alive"][rows]
        n = len(rows)
        infos["_mask"] = np.ones(n, bool)
        infos["_alive"] = np.ones(n, bool)
        self._add_action_masks(infos, infos["alive"], rows)
        restarted = b["restarted"][copies]
        if restarted.any():
            infos["restarted"] = np.repeat(restarted, A)
            infos["_restarted"] = np.ones(n, bool)
        infos["rows"] = rows
        infos["shards"] = np.asarray(shards)
        return b["obs"][rows], b["rew"][rows], b["term"][rows], b["trunc"][rows], infos

    @property
    def pending_shards(self) -> list[int]:
        """Shards with a :meth:`send` not yet returned by :meth:`recv`."""
        return sorted(self._backend.inflight) if not self._waiting else []

    # ---- rollouts ------------------------------------------------------------------------------


def _subset(infos: dict, rows: np.ndarray, n: int) -> dict:
    """``infos`` (arrays over all ``n`` rows, nested dicts) restricted to ``rows``."""
    out = {}
    for k, v in infos.items():
        if isinstance(v, dict):
            out[k] = _subset(v, rows, n)
        elif isinstance(v, np.ndarray) and v.shape[:1] == (n,):
            out[k] = v[rows]
        else:
            out[k] = v
    return out
