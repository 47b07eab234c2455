"""`RayVectorEnv` (the vector env, with env-pool stepping and rollouts, on the Ray backend) and `make_ray`."""

from __future__ import annotations

import numpy as np
from gymnasium.vector import AutoresetMode

from seer.errors import WorkerError
from seer.vector._env import SeerVectorEnv, warn_restarts
from seer.vector._pool import EnvPool
from seer.vector.messages import FinalObs, RestartFlag, failures
from seer.vector.ray.driver import RayBackend


class RayVectorEnv(EnvPool, SeerVectorEnv):
    """A :class:`SeerVectorEnv` whose copies run in Ray actors ("shards"),
    from ``seer.vector.make(..., backend="ray")``.

    The whole :class:`SeerVectorEnv` contract holds (rows, masks, autoreset
    modes, ``reset_mask``, ``call``/``get_attr``/``set_attr``, seeds
    ``seed + c``, ``step_async``/``step_wait(timeout=)``).  On top of it:

    - **Env-pool stepping** (:class:`~seer.vector._pool.EnvPool`):
      :meth:`send` steps some shards, :meth:`recv` returns the first shards
      to finish, with ``infos["rows"]`` / ``infos["shards"]`` naming them.

    - **Batched rollouts**: :meth:`rollout` runs ``num_steps`` steps inside
      each shard with a picklable policy, one round trip for all of them.

    ``shard_rows[s]`` / ``shard_copies[s]`` are the rows / copies of shard
    ``s``; ``actors`` the Ray actor handles; ``worker_pids()`` their pids.
    """

    # ---- shards ------------------------------------------------------------------------------

    @property
    def actors(self) -> list:
        return list(self._backend.actors)

    # ---- rollouts ------------------------------------------------------------------------------

    def rollout(self, policy, num_steps: int, *, infos: bool = False) -> dict:
        """Run ``num_steps`` steps inside every shard, with ``actions =
        policy(obs)`` computed there, and return the batch: one round trip
        per shard for all the steps (RLlib's env runners sample this way).

        ``policy``: a picklable callable (numpy in, numpy out) taking a
        shard's observations ``(rows of the shard, *obs_shape)`` and returning
        its actions ``(rows of the shard, *act_shape)``.  It is pickled once
        per call (with cloudpickle) and sent to a shard only when it changed
        since the shard last got it; a shard keeps its copy between calls
        (its random state goes on).  A stochastic policy draws from a
        per-shard copy of its generator: results then depend on the shard
        count (seed a generator from the observations, or use ``step``, for
        bit-identical results across backends).

        Returns a dict of arrays shaped ``(num_steps, num_envs, ...)``:
        ``obs`` (what the policy saw), ``actions``, ``rewards``,
        ``terminations``, ``truncations``, ``mask`` and ``alive`` (as
        ``infos["mask"]`` / ``infos["alive"]`` of :meth:`step`); ``last_obs``
        (``(num_envs, ...)``: the observations after the last step, where the
        next ``step``/``rollout`` goes on); with ``infos=True`` also
        ``infos``, one dict per step as :meth:`step` returns them (without
        ``mask``/``alive``).  With shards on this node the batch's arrays are
        views of one shared-memory block that the shards wrote in place (no
        copy): it serves a later rollout once every array of it is gone.  Autoreset works as in :meth:`step`; with
        ``DISABLED`` a copy that ends stays idle (``mask`` False) until the
        rollout ends.  A copy that raises stops its shard's rollout and raises
        :class:`~seer.vector.EnvCopyError` afterwards (the batch is lost);
        with ``restart_failed=True`` restarts show up as in :meth:`step`.
        """
        self._check_steppable("rollout()")
        self._no_pool("rollout()")
        if not isinstance(num_steps, (int, np.integer)) or isinstance(num_steps, bool) or num_steps < 1:
            raise ValueError(f"num_steps={num_steps!r} is invalid: expected an integer >= 1")
        if not callable(policy):
            raise TypeError(f"policy must be callable (obs -> actions), got {policy!r}")
        be = self._backend
        try:
            out, steps, stopped = be.rollout(policy, int(num_steps), infos, self.validate_actions)
        except WorkerError:
            self._after_worker_error()
            raise
        b = self._b
        self._alive = b["alive"].copy()
        self._ended = b["ended"].copy()
        for msgs in steps:
            warn_restarts(msgs, stacklevel=3)
        errors = [m for msgs in steps for m in failures(msgs)]
        if errors:
            for e in errors:
                self._failed[e.copy] = "its step raised (in rollout)"
            raise self._copy_error("step (rollout)", errors)
        for s, (kind, t, text) in stopped:
            r0, r1 = be.row_ranges[s]
            where = f"shard {s} (rows {r0}..{r1 - 1}, its rows numbered from 0)"
            if kind == "actions":
                raise ValueError(f"rollout step {t}: {where}: {text}")
            if kind == "load":
                raise RuntimeError(f"the policy could not be unpickled in {where}:\n{text.rstrip()}")
            raise RuntimeError(f"the policy raised in {where} at rollout step {t}:\n{text.rstrip()}")
        out["last_obs"] = self._out(b["obs"])
        if infos:
            out["infos"] = [self._step_infos(msgs) for msgs in steps]
        return out

    def _step_infos(self, msgs) -> dict:
        infos, finals = self._row_infos(msgs)
        final_obs: dict[int, np.ndarray] = {}
        restarted = []
        for m in msgs:
            if isinstance(m, FinalObs):
                final_obs[m.row] = m.obs
            elif isinstance(m, RestartFlag):
                restarted.append(m.copy)
        for r in sorted(final_obs):
            self._add_info(infos, {"final_obs": final_obs[r], "final_info": finals.get(r, {})}, r)
        if restarted:
            flags = np.zeros(self.num_copies, bool)
            flags[restarted] = True
            infos["restarted"] = np.repeat(flags, self.agents_per_copy)
            infos["_restarted"] = np.ones(self.num_envs, bool)
        return infos

    def __repr__(self) -> str:
        return super().__repr__()[:-1] + f", num_shards={self.num_shards})"


def make_ray(env_fn, num_copies: int, workers, autoreset_mode: AutoresetMode, *, pad: bool, autoreset, restart: bool,
             copy: bool, validate_actions: bool, env_name=None, **options) -> RayVectorEnv:
    """:func:`seer.vector.make`'s ``backend="ray"`` (arguments checked there)."""
    impl = RayBackend(env_fn, num_copies, workers, pad=pad, autoreset=autoreset_mode, restart=restart,
                      validate_actions=validate_actions, **options)
    try:
        return RayVectorEnv(impl, autoreset_mode, copy=copy, validate_actions=validate_actions,
                            env_name=impl.specs[0].metadata.get("name") or env_name)
    except BaseException:
        impl.close()
        raise
