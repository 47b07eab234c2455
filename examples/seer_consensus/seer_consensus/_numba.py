"""consensus_v0's handlers and copy step in Python syntax, compiled by Numba (``engine="numba"``).

The same model as csrc/consensus.c, line for line: the two give
bit-identical results, and SEER runs these exactly where it runs the C
ones (workers with the GIL released, seer.vector's native copy path).
Needs ``pip install 'seer-marl[numba]'``.
"""

from __future__ import annotations


import numpy as np

import seer
import seer.numba as snb
from seer.vector.native import NativeSpec

TICK, HEAR, ACT = 0, 1, 2
COPY_STEP, COPY_AUTORESET = 1, 2  # SEER_COPY_STEP, SEER_COPY_AUTORESET
E_ARG = -10
# P (float64): delay, gain, speed, dt, goal; I (int64): n, steps, max_cycles, seed stream, runtime address
P_DELAY, P_GAIN, P_SPEED, P_DT, P_GOAL = range(5)
I_N, I_STEPS, I_MAX, I_STREAM, I_RT = range(5)

STATE = snb.State(value="f8[:]", heard="f8[:, :]", action="f8[:]", period="f8[:]", P="f8[:]", I="i8[:]")


@STATE.handler
def cons_tick(ctx, ev, s):
    i = ev.entity
    n = s.I[I_N]
    T = s.period[i]
    mean = 0.5 * (s.heard[i, 0] + s.heard[i, 1])
    v = s.value[i] + T * (s.P[P_GAIN] * (mean - s.value[i]) + s.P[P_SPEED] * s.action[i])
    s.value[i] = v
    bits = np.float64(v).view(np.int64)
    rc = snb.emit(ctx, (i + n - 1) % n, ev.time + s.P[P_DELAY], HEAR, bits)
    if rc == 0:
        rc = snb.emit(ctx, (i + 1) % n, ev.time + s.P[P_DELAY], HEAR, bits)
    if rc == 0:
        rc = snb.emit(ctx, i, ev.time + T, TICK, 0)
    return rc


@STATE.handler
def cons_hear(ctx, ev, s):
    i = ev.entity
    n = s.I[I_N]
    side = 0 if ev.source == (i + n - 1) % n else 1
    s.heard[i, side] = np.int64(ev.payload).view(np.float64)
    return 0


@STATE.handler
def cons_act(ctx, ev, s):
    s.action[ev.entity] = np.int64(ev.payload).view(np.float64)
    return 0


@snb.njit
def _splitmix(state):
    state = state + np.uint64(0x9E3779B97F4A7C15)
    z = state
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return state, z ^ (z >> np.uint64(31))


@snb.njit
def next_seed(s):
    state, z = _splitmix(np.uint64(s.I[I_STREAM]))
    s.I[I_STREAM] = np.int64(state)
    return z >> np.uint64(33)


@snb.njit
def reset(api, s, seed):
    n = s.I[I_N]
    rt = s.I[I_RT]
    snb.rt_reset(api, rt, seed)
    st = np.uint64(seed)
    st, z = _splitmix(st)
    s.P[P_GOAL] = 2.0 * (np.float64(z >> np.uint64(11)) * 2.0**-53) - 1.0
    for i in range(n):
        st, z = _splitmix(st)
        s.value[i] = 4.0 * (np.float64(z >> np.uint64(11)) * 2.0**-53) - 2.0
    for i in range(n):
        s.heard[i, 0] = s.value[(i + n - 1) % n]
        s.heard[i, 1] = s.value[(i + 1) % n]
        s.action[i] = 0.0
    s.I[I_STEPS] = 0
    for i in range(n):
        rc = snb.rt_push(api, rt, i, 0.0, TICK, 0)
        if rc != 0:
            return rc
    return 0


@snb.njit
def _clip(x):
    return np.float32(-10.0 if x < -10.0 else 10.0 if x > 10.0 else x)


@snb.njit
def observe(s, obs):
    for i in range(s.I[I_N]):
        obs[i, 0] = _clip(s.value[i])
        obs[i, 1] = _clip(s.heard[i, 0])
        obs[i, 2] = _clip(s.heard[i, 1])
        obs[i, 3] = _clip(s.P[P_GOAL] - s.value[i])


@snb.njit(nogil=True)
def step(rows, op, s):
    """One op on the env's rows: what cons_copy_step in csrc/consensus.c does."""
    n = s.I[I_N]
    if op == COPY_AUTORESET:
        rc = reset(rows.api, s, next_seed(s))
        if rc != 0:
            return rc
        observe(s, rows.obs)
        for i in range(n):
            rows.rew[i] = 0.0
            rows.term[i] = 0
            rows.trunc[i] = 0
            rows.mask[i] = 0
            rows.alive[i] = 1
        rows.ended[0] = 0
        return 0
    if op != COPY_STEP:
        return E_ARG
    if s.I[I_STEPS] >= s.I[I_MAX]:
        for i in range(n):
            for k in range(4):
                rows.obs[i, k] = 0.0
            rows.rew[i] = 0.0
            rows.term[i] = 0
            rows.trunc[i] = 0
            rows.mask[i] = 0
            rows.alive[i] = 0
        rows.ended[0] = 1
        return 0
    rt = s.I[I_RT]
    t0 = np.float64(s.I[I_STEPS]) * s.P[P_DT]
    for i in range(n):
        rc = snb.rt_push(rows.api, rt, i, t0, ACT, np.float64(rows.act[i, 0]).view(np.int64))
        if rc != 0:
            return rc
    rc = snb.rt_step(rows.api, rt, np.float64(s.I[I_STEPS] + 1) * s.P[P_DT])
    if rc != 0:
        return rc
    s.I[I_STEPS] += 1
    over = s.I[I_STEPS] >= s.I[I_MAX]
    observe(s, rows.obs)
    for i in range(n):
        rows.rew[i] = -abs(s.P[P_GOAL] - s.value[i])
        rows.term[i] = 0
        rows.trunc[i] = over
        rows.mask[i] = 1
        rows.alive[i] = not over
    rows.ended[0] = over
    return 0


_COPY_STEPS: dict = {}


def copy_step(spec: NativeSpec):
    """The copy step for rows laid out as ``spec`` (compiled once per agent count)."""
    handler = _COPY_STEPS.get(spec.slots)
    if handler is None:

        @STATE.copy_step(spec)
        def cons_copy_step(rows, op, s):
            return step(rows, op, s)

        handler = _COPY_STEPS[spec.slots] = cons_copy_step
    return handler


class NumbaModel(seer.Model):
    """The SEER model of ``engine="numba"``: the same events, Numba handlers."""

    def __init__(self, arrays: dict):
        n = len(arrays["value"])
        self.num_entities = n
        self.lookahead = float(arrays["P"][P_DELAY]) / 2
        self.kinds = [seer.EventKind("tick", seer.Native(cons_tick)), seer.EventKind("hear", seer.Native(cons_hear)),
                      seer.EventKind("act", seer.Native(cons_act))]
        self.state = {k: arrays[k] for k in ("value", "heard", "action")}
        self.shared_state = ()
        self.native_model = STATE.bind(arrays)

    def reset(self, runtime, seed):
        # An episode starts in the engine's own reset (it also sets the
        # state).  A reset through seer.Runtime -- STPA's probe of
        # workers="auto" runs this model on runtimes of its own -- gets the
        # same first events: every agent's tick at time 0.
        n = self.num_entities
        runtime.schedule(np.arange(n, dtype=np.int32), np.zeros(n), np.zeros(n, np.int32))
