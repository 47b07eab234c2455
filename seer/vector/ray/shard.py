"""The Ray backend's shard actor (`_Shard`): some env copies on a local backend inside a Ray actor."""

from __future__ import annotations

import os
import threading
import time
import traceback
import uuid

import numpy as np
from gymnasium import spaces

from seer.vector import shm as shm_blocks
from seer.vector.actions import ActionCheck
from seer.vector.backend import build_local
from seer.vector.messages import CopyFailed, CopyRestarted, FinalObs, RestartFlag, failures, restarts
from seer.vector.ray.batch import _batch_spec, _views, shard_fields
from seer.vector.ray.lane import LaneServer

#: Batch blocks a shard keeps mapped (the driver recycles a few, and names those it frees in the next rollout).
_BATCH_MAPS = 4


class _Shard:
    """One shard: ``count`` env copies on a local backend (thread or process,
    from :func:`seer.vector.backend.build_local`, used through the backend
    contract only), inside a Ray actor.  Failures of single copies come back
    as messages; only a broken local pool (or a bug) raises."""

    def __init__(self, index: int, fn_bytes: bytes, count: int, total_copies: int, kw: dict):
        import cloudpickle

        self.index = index
        self.count = count
        self.token = uuid.uuid4().hex  # this incarnation: Ray may restart the actor between two calls
        self.impl = None
        self.error = None
        self.policy_key = None
        self.policy = None
        self.shms: dict = {}  # role -> the driver's SharedMemory blocks this shard writes (same node only)
        self.rows = None  # views of this shard's rows of the driver's buffers (role "bufs")
        self.batches: dict = {}  # name -> SharedMemory of the driver's rollout batch blocks mapped here
        self.lane = None  # LaneServer: the driver's step / rollout calls through shared memory (same node only)
        self.lock = threading.Lock()  # one call at a time, from Ray's task thread or the lane thread
        self.rollouts, self.rollout_s = 0, 0.0  # rollout calls served, and the seconds spent in them
        try:
            env_fn = cloudpickle.loads(fn_bytes)
            workers = kw["workers"]
            if workers == "auto":  # the CPUs this actor reserved (num_cpus_per_shard); the node's cores if none
                import ray

                cpus = ray.get_runtime_context().get_assigned_resources().get("CPU", 0)
                workers = max(1, int(cpus)) if cpus else "auto"
            if workers != "auto":
                workers = min(int(workers), count)
            extra = {k: kw[k] for k in ("context", "inline") if kw.get(k) is not None}
            if kw["backend"] == "process" and "worker_timeout" in kw:  # None too: wait forever
                extra["worker_timeout"] = kw["worker_timeout"]
            # a restarted copy's seeds step by every copy of the vector env (as in one pool), not the shard's
            self.impl = build_local(kw["backend"], env_fn, count, workers, pad=kw["pad"], autoreset=kw["autoreset"],
                                    restart=kw["restart"], seed_stride=total_copies, **extra)
        except BaseException as exc:  # reported by start(): a constructor that raises would be restarted by Ray
            self.error = exc
            return
        self.actions = ActionCheck(self.impl.layout, self.impl.specs)
        self.b = self.impl.bufs
        self.names = shard_fields(self.impl.layout)
        self.fields = tuple(self.b[n] for n in self.names)

    def start(self) -> dict:
        if self.error is not None:
            raise self.error
        import ray

        return {"specs": self.impl.specs, "pid": os.getpid(), "node": ray.util.get_node_ip_address(),
                "node_id": ray.get_runtime_context().get_node_id(),
                "workers": self.impl.num_workers, "backend": self.impl.name, "token": self.token,
                "native": list(getattr(self.impl, "native_copies", []))}

    def _state(self) -> tuple:
        return self.fields

    def step(self, act):
        if act is None and self.rows is None:
            # Ray restarted this actor since the driver attached it: the actions are in buffers this incarnation
            # never saw.  Its token alone tells the driver, which takes the restart on and discards this step.
            return self.token, None, []
        self.b["act"][...] = self.rows["act"] if act is None else act
        self.impl.step_async()
        msgs = self.impl.step_wait()
        return self.token, self._emit(), msgs

    def reset(self, select, seeded, seeds, options):
        b = self.b
        b["select"][:] = select
        b["seeded"][:] = seeded
        b["seeds"][:] = seeds
        return self.token, self.fields, self.impl.reset(options)

    def call(self, kind, name, args, kwargs, values, copies=None):
        return (self.token, *self.impl.call(kind, name, args, kwargs, values, copies))

    def _load_policy(self, key, payload):
        if payload is not None:
            import cloudpickle
            import ray

            if isinstance(payload, list):  # [ObjectRef]: fetched only when this shard needs it
                payload = ray.get(payload[0])
            self.policy = cloudpickle.loads(payload)
            self.policy_key = key
        elif key != self.policy_key:
            raise RuntimeError(f"shard {self.index} lost its cached policy (key {key!r}): a bug in seer.vector")
        return self.policy

    def _attach(self, role: str, name: str):
        """The buffer of the driver's shared-memory block ``name`` (kept open
        per ``role`` until the driver names another one)."""
        shm = self.shms.get(role)
        if shm is None or shm.name != name:
            if shm is not None:
                shm_blocks.close(shm)
            shm = shm_blocks.attach(name, owned_elsewhere=True)  # the driver unlinks it
            self.shms[role] = shm
        return shm.buf

    def attach(self, name: str, spec, lane=None) -> str:
        """Write this shard's rows straight into the driver's buffers (block
        ``name``; ``spec``: (field, dtype, shape, offset) of its rows), and
        read its actions there, instead of sending arrays through Ray;
        ``lane``: serve the driver's step and rollout calls through shared
        memory too (:mod:`seer.vector.ray.lane`)."""
        buf = self._attach("bufs", name)
        self.rows = {n: np.frombuffer(buf, dt, int(np.prod(sh, dtype=np.int64)), off).reshape(sh)
                     for n, dt, sh, off in spec}
        self.row_pairs = [(self.rows[n], self.b[n]) for n in self.names]
        if lane is not None:
            if self.lane is not None and not self.lane.stop(5.0):
                raise RuntimeError(f"shard {self.index}'s lane thread is still in a call")
            self.lane = LaneServer(self, lane)
        return self.token

    def token_of(self) -> str:
        """This incarnation's token (the driver asks after a lane shard's process ended)."""
        return self.token

    def lane_reply(self, seq: int) -> bytes:
        """The sealed reply to lane call ``seq`` that did not fit in its reply area."""
        return self.lane.take(seq)

    def lane_error(self) -> str:
        """Why the lane thread ended (its traceback), or ""."""
        return (self.lane.error or "") if self.lane is not None else "no lane thread"

    def _batch(self, name: str, forget):
        """The buffer of the driver's rollout batch block ``name``; unmaps the blocks in ``forget`` (freed by
        the driver), and the oldest ones beyond a few."""
        for n in forget or ():
            shm = self.batches.pop(n, None)
            if shm is not None:
                shm_blocks.close(shm)
        shm = self.batches.pop(name, None)
        if shm is None:
            shm = shm_blocks.attach(name, owned_elsewhere=True)  # the driver unlinks it
        self.batches[name] = shm  # most recent last
        while len(self.batches) > _BATCH_MAPS:
            shm_blocks.close(self.batches.pop(next(iter(self.batches))))
        return shm.buf

    def _emit(self):
        """This shard's arrays for the driver: None when written into its
        buffers (attach), else the arrays themselves (Ray sends them)."""
        if self.rows is None:
            return self.fields
        for dst, src in self.row_pairs:
            dst[...] = src
        return None

    def rollout(self, key, payload, num_steps: int, reset_first, want_infos: bool, validate: bool, box=None,
                forget=None):
        """:meth:`_rollout`, its time added to :meth:`rollout_time`."""
        t0 = time.perf_counter()
        try:
            return self._rollout(key, payload, num_steps, reset_first, want_infos, validate, box, forget)
        finally:
            self.rollouts += 1
            self.rollout_s += time.perf_counter() - t0

    def rollout_time(self) -> tuple:
        """(rollout calls served, seconds spent in them): this shard's own
        part of the rollouts (the policy, the steps, the batch's rows), so
        that what a call costs on top of it (Ray or the lane, the driver)
        is the caller's time less this (bench/bench_ray.py measures it so)."""
        return self.rollouts, self.rollout_s

    def _rollout(self, key, payload, num_steps: int, reset_first, want_infos: bool, validate: bool, box=None,
                 forget=None):
        """``num_steps`` steps with ``policy(obs) -> actions`` on this shard's
        rows.  ``reset_first``: (seeded, seeds) of a reset that replaces the
        first step (a restarted shard in NEXT_STEP mode).  ``box``: (name,
        rows, first row) of the driver's batch block (on this node) for the
        whole vector env's ``rows``: this shard writes its rows of the batch
        there instead of returning them.  ``forget``: names of batch blocks
        the driver freed."""
        b, impl = self.b, self.impl
        T = num_steps
        obs, act = b["obs"], b["act"]
        if box:
            name, rows, r0 = box
            spec, _ = _batch_spec(T, rows, obs.shape[1:], obs.dtype, act.shape[1:], act.dtype)
            out = {n: v[:, r0:r0 + len(act)] for n, v in _views(self._batch(name, forget), spec).items()}
        else:
            spec, _ = _batch_spec(T, len(act), obs.shape[1:], obs.dtype, act.shape[1:], act.dtype)
            out = {n: np.empty(sh, dt) for n, sh, dt, _ in spec}
        steps_msgs: list = []
        failure = None
        done = 0
        same_step = impl.layout.same_step
        try:
            policy = self._load_policy(key, payload)
        except Exception:
            self.policy_key = self.policy = None
            return self.token, {}, 0, steps_msgs, ("load", 0, traceback.format_exc()), self._emit()
        space = impl.layout.act_space
        discrete = isinstance(space, (spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary))
        for t in range(T):
            o = out["obs"][t]
            o[...] = obs
            try:
                a = np.asarray(policy(o))
            except Exception:
                failure = ("policy", t, traceback.format_exc())
                break
            if a.shape != act.shape or (discrete and a.dtype.kind not in "iub") or a.dtype.kind not in "biuf":
                failure = ("actions", t, f"the policy returned actions of shape {a.shape} and dtype {a.dtype} for "
                                         f"observations of shape {o.shape}: expected shape {act.shape} and "
                                         f"{'an integer' if discrete else 'a real'} dtype")
                break
            if validate:
                try:
                    self.actions.check(a, b["alive"])
                except ValueError as exc:
                    failure = ("actions", t, str(exc))
                    break
            act[...] = a
            out["actions"][t] = act
            if t == 0 and reset_first is not None:
                b["select"][:] = True
                b["seeded"][:], b["seeds"][:] = reset_first
                msgs = impl.reset(None)
            else:
                impl.step_async()
                msgs = impl.step_wait()
            out["rewards"][t] = b["rew"]
            out["terminations"][t] = b["term"]
            out["truncations"][t] = b["trunc"]
            out["mask"][t] = b["mask"]
            out["alive"][t] = b["alive"]
            done = t + 1
            bad = failures(msgs)
            if want_infos or bad or restarts(msgs):
                keep = msgs if want_infos else [m for m in msgs if isinstance(m, (CopyFailed, CopyRestarted))]
                if want_infos and same_step and b["final_mask"].any():
                    keep = keep + [FinalObs(int(r), b["final_obs"][r].copy()) for r in np.flatnonzero(b["final_mask"])]
                if want_infos and b["restarted"].any():
                    keep = keep + [RestartFlag(int(c)) for c in np.flatnonzero(b["restarted"])]
                steps_msgs.append((t, keep))
            if bad:
                break
        if box:
            out = None  # in the box
        elif done < T:
            out = {k: v[:done] for k, v in out.items()}
        return self.token, out, done, steps_msgs, failure, self._emit()

    def ping(self) -> int:
        return os.getpid()

    def close(self) -> None:
        if self.lane is not None:
            if not self.lane.stop(1.0):  # its thread hangs in a copy's step: the driver kills this actor next
                return
            self.lane = None
        self.rows = self.row_pairs = None
        for shm in list(self.shms.values()) + list(self.batches.values()):
            shm_blocks.close(shm)
        self.shms, self.batches = {}, {}
        if self.impl is not None:
            self.impl.close()
            self.impl = None
