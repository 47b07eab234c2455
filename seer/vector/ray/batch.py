"""The Ray backend's buffer layouts: the fields a shard sends back after each op, and a rollout batch's one-buffer layout."""

from __future__ import annotations

import numpy as np


#: Per-row and per-copy buffers a shard sends back after each op, in this order.
ROW_FIELDS = ("obs", "rew", "term", "trunc", "mask", "alive")
COPY_FIELDS = ("ended", "restarted")
SAME_STEP_FIELDS = ("final_obs", "final_mask")
MASK_FIELDS = ("action_mask",)


def shard_fields(layout) -> tuple[str, ...]:
    """The buffers a shard writes for ``layout``: rows, copies, and the optional ones."""
    return (ROW_FIELDS + COPY_FIELDS + (SAME_STEP_FIELDS if layout.same_step else ())
            + (MASK_FIELDS if layout.mask_n else ()))


BATCH_KEYS = ("obs", "actions", "rewards", "terminations", "truncations", "mask", "alive")


def _batch_spec(T: int, rows: int, obs_shape, obs_dtype, act_shape, act_dtype):
    """(name, shape, dtype, byte offset) of a rollout batch of ``T`` steps of
    ``rows`` rows in one buffer, and its size."""
    dts = [obs_dtype, act_dtype, np.float64, np.bool_, np.bool_, np.bool_, np.bool_]
    shapes = [(T, rows, *obs_shape), (T, rows, *act_shape)] + [(T, rows)] * 5
    spec, at = [], 0
    for name, shape, dt in zip(BATCH_KEYS, shapes, dts):
        dt = np.dtype(dt)
        spec.append((name, shape, dt, at))
        at += int(np.prod(shape, dtype=np.int64)) * dt.itemsize
        at = (at + 63) // 64 * 64
    return spec, max(at, 64)


def _views(buf, spec) -> dict:
    return {n: np.frombuffer(buf, dt, int(np.prod(sh, dtype=np.int64)), off).reshape(sh) for n, sh, dt, off in spec}
