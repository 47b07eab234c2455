"""Batched rollouts on the Ray backend (`ShardRollouts`, a part of `RayBackend`): the policy sent once per shard, each shard's steps in one call (through the lane on the driver's node), the batch written in place into one shared-memory block that the returned arrays are views of."""

from __future__ import annotations

import hashlib

import numpy as np

from seer.vector.ray.batch import _batch_spec
from seer.vector.ray.cluster import _INLINE_BYTES, _dumps
from seer.vector.ray.restart import ROLLOUT, _ShardDied


class ShardRollouts:
    """:meth:`rollout` of :class:`~seer.vector.ray.driver.RayBackend`."""

    def rollout(self, policy, num_steps: int, want_infos: bool, validate: bool):
        """Run ``num_steps`` steps in every shard; returns (batch dict with
        arrays (T, rows, ...), steps done, per-step messages, failures)."""
        self._check()
        ray = self.ray
        data = _dumps(policy)
        key = hashlib.blake2b(data, digest_size=16).digest()
        payload = None
        b = self.bufs
        self._alive_before = b["alive"].copy() if self.restart_failed else None
        T, R = num_steps, self.layout.rows
        spec, size = _batch_spec(T, R, b["obs"].shape[1:], b["obs"].dtype, b["act"].shape[1:], b["act"].dtype)
        block = self._batches.get(spec, size) if self.direct else None
        if block is not None:
            name, out = block
        else:
            out = {n: np.empty(sh, dt) for n, sh, dt, _ in spec}
        forget = self._batches.take_forget() if self.direct else []
        refs = {}
        for s in range(self.num_shards):
            send = None
            if self._policy_keys.get(s) != key:
                if payload is None:
                    payload = [ray.put(data)] if len(data) > _INLINE_BYTES else data
                send = payload
            reset_first = self.pending.get(s)
            box = (name, R, self.row_ranges[s][0]) if block is not None and s in self.direct else None
            args = (key, send, num_steps, reset_first, want_infos, validate, box, forget if s in self.direct else None)
            call = None
            if s in self.direct and s in self.lane.open and not isinstance(send, list):  # (a list holds an ObjectRef)
                call = self.lane.submit(s, "rollout", args)
            refs[s] = call if call is not None else self.actors[s].rollout.remote(*args)
            self._policy_keys[s] = key
        steps = [[] for _ in range(T)]
        failures = []
        for s, ref in refs.items():
            r0, r1 = self.row_ranges[s]
            try:
                batch, done, smsgs, failure, state = self._get(s, ref)
            except _ShardDied as d:
                self._policy_keys.pop(s, None)
                for v in out.values():
                    v[:, r0:r1] = 0
                out["obs"][0, r0:r1] = b["obs"][r0:r1]  # what the policy saw (its rows are untouched so far)
                msgs = self._died(d, ROLLOUT)
                out["truncations"][0, r0:r1] = self._alive_before[r0:r1]
                steps[0] += msgs
                continue
            if s in self.pending and done > 0:
                self.pending.pop(s)
            if batch is not None:  # (None: written into the batch block in place)
                for k, v in batch.items():
                    out[k][:done, r0:r1] = v[:done]
            if state is not None:
                self._put(s, state)
            for t, m in smsgs:
                m = self._remap(s, m)
                self._count_restarts(m)
                steps[t] += m
            if failure is not None:
                failures.append((s, failure))
                if failure[0] == "load":
                    self._policy_keys.pop(s, None)
        return out, steps, failures
