"""Batched rollouts on the Ray backend (`ShardRollouts`, a part of `RayBackend`): the policy sent once per shard, each shard's steps in one call, batches through a shared-memory block per shard on the driver's node."""

from __future__ import annotations

import hashlib

import numpy as np

from seer.vector import shm as shm_blocks
from seer.vector.ray.batch import _batch_spec, _views
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
        refs, views = {}, {}
        T, L = num_steps, self.layout
        for s in range(self.num_shards):
            send = None
            if self._policy_keys.get(s) != key:
                if payload is None:
                    payload = [ray.put(data)] if len(data) > _INLINE_BYTES else data
                send = payload
            reset_first = self.pending.get(s)
            box = self._box(s, T)
            if box is not None:
                views[s] = box[1]
            refs[s] = self.actors[s].rollout.remote(key, send, num_steps, reset_first, want_infos, validate,
                                                    box and box[0])
            self._policy_keys[s] = key
        R = L.rows
        out = {n: np.empty((T, *sh[1:]), dt) for n, sh, dt, _ in
               _batch_spec(1, R, b["obs"].shape[1:], b["obs"].dtype, b["act"].shape[1:], b["act"].dtype)[0]}
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
            if batch is None:  # written into this shard's shared-memory block
                batch = views[s]
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

    def _box(self, s: int, T: int):
        """(name, views) of shard ``s``'s shared-memory block for a batch of
        ``T`` steps; None when the shard runs on another node (its batch
        comes back through Ray's object store)."""
        if not self.use_shm or self._node_id is None or self.shard_info[s].get("node_id") != self._node_id:
            return None
        cached = self._box_views.get(s)
        if cached is not None and cached[0] == T:
            return cached[1]
        b = self.bufs
        r0, r1 = self.row_ranges[s]
        spec, size = _batch_spec(T, r1 - r0, b["obs"].shape[1:], b["obs"].dtype, b["act"].shape[1:], b["act"].dtype)
        shm = self._boxes.get(s)
        if shm is None or shm.size < size:
            self._box_views.pop(s, None)
            if shm is not None:  # (a shard still mapping it keeps it until it attaches anew)
                shm_blocks.release(self._boxes.pop(s), unlink=True)
            shm = shm_blocks.create(size)
            self._boxes[s] = shm
        box = (shm.name, _views(shm.buf, spec))
        self._box_views[s] = (T, box)
        return box
