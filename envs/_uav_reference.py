"""Time-stepped reference of the UAV swarm model, in plain numpy.

This is what an existing simulator does: advance a global clock by the
gcd of the UAV periods (one tick, 0.01 s) and at every tick update, in
vectorized numpy, the UAVs whose own clock is due.  It implements the same
model as the event-driven version (envs/_uav_model.py and
csrc/env_uav_swarm.c), with the float operations in the same order, so both
give bit-identical states, observations and rewards.

Tick ``j`` of a step, in the order that matches the event-driven version
(the three parts touch disjoint state, so their order within a tick does not
change the result, exactly as the per-UAV event order does not):

1. deliver the messages broadcast at tick ``j - 1`` (RECV): merge them into
   the receivers' neighbour tables;
2. every due UAV broadcasts its state (TICK, part 1): recipients are the
   live UAVs in neighbouring cells of the step's broadcast grid within
   ``radius`` (positions at the start of the tick), at most
   ``max_recipients`` nearest by (distance, id);
3. every due UAV integrates its dynamics over its period (TICK, part 2).

The broadcast grid and the step-end readout are the shared numpy code of
envs/_uav_model.py.
"""

from __future__ import annotations

import numpy as np

from seer.envs._uav_model import (
    PERIOD_TICKS,
    BroadcastGrid,
    UavConfig,
    alloc_state,
    initial_state,
    neighbour_pairs,
)


def _group_rank(sorted_keys: np.ndarray) -> np.ndarray:
    """Position of each element within its run of equal keys (keys sorted)."""
    return np.arange(len(sorted_keys)) - np.searchsorted(sorted_keys, sorted_keys, "left")


class ReferenceSim:
    """Same interface as :class:`envs._uav_model.SeerSim`: ``reset(seed)``,
    write actions into ``state["acc"]``, ``advance()`` one env step."""

    name = "reference"
    workers = 1

    def __init__(self, cfg: UavConfig, workers=None):
        self.cfg = cfg
        self.state = alloc_state(cfg)
        self.grid = BroadcastGrid(cfg, self.state["cell_of"])
        self.J = 0
        self.last_events = 0
        self.dropped_by_cap = 0  # (sender, receiver) pairs in range cut by max_recipients
        self._pending = None

    def reset(self, seed: int) -> None:
        initial_state(self.cfg, seed, self.state)
        self.J = 0
        self._pending = None

    def close(self) -> None:
        pass

    # ---- one env step ------------------------------------------------------------------------

    def advance(self) -> None:
        cfg, st = self.cfg, self.state
        pos, alive, period = st["pos"], st["alive"], st["period"]
        self.grid.build(pos, alive)
        st["energy"][:] = 0.0
        live = np.flatnonzero(alive)
        # Candidate (sender, receiver) pairs of the step, by the sender's period.
        a, b = neighbour_pairs(st["cell_of"][live], cfg.grid_dims, half=False)
        snd, rcv = live[a], live[b]
        per_snd = period[snd]
        per_live = period[live]
        cand = {p: (snd[per_snd == p], rcv[per_snd == p]) for p in PERIOD_TICKS}
        due_of = {p: live[per_live == p] for p in PERIOD_TICKS}
        events = 0
        for j in range(self.J, self.J + cfg.ticks_per_step):
            if self._pending is not None:
                events += len(self._pending[0])
                self._deliver(*self._pending)
                self._pending = None
            due_p = [p for p in PERIOD_TICKS if j % p == 0]
            if not due_p:
                continue
            due = np.concatenate([due_of[p] for p in due_p])
            if len(due) == 0:
                continue
            events += len(due)
            s = np.concatenate([cand[p][0] for p in due_p])
            r = np.concatenate([cand[p][1] for p in due_p])
            self._broadcast(j, due, s, r)
            self._integrate(due)
        self.J += cfg.ticks_per_step
        self.last_events = events

    def _broadcast(self, j: int, due: np.ndarray, s: np.ndarray, r: np.ndarray) -> None:
        cfg, st = self.cfg, self.state
        pos, vel = st["pos"], st["vel"]
        st["bcast"][due, 0:3] = pos[due]
        st["bcast"][due, 3:6] = vel[due]
        st["bcast_tick"][due] = j
        d = pos[r] - pos[s]
        d2 = d[:, 0] * d[:, 0] + d[:, 1] * d[:, 1] + d[:, 2] * d[:, 2]
        keep = d2 <= cfg.radius * cfg.radius
        s, r, d2 = s[keep], r[keep], d2[keep]
        # The max_recipients nearest of each sender, by (d2, receiver id).
        o = np.lexsort((r, d2, s))
        s, r = s[o], r[o]
        keep = _group_rank(s) < cfg.max_recipients
        self.dropped_by_cap += len(keep) - int(keep.sum())
        s, r = s[keep], r[keep]
        st["sent"] += np.bincount(s, minlength=cfg.num_uavs)
        if len(s):
            msg = np.concatenate([pos[s], vel[s]], axis=1)
            self._pending = (r, s, j, msg)

    def _integrate(self, due: np.ndarray) -> None:
        cfg, st = self.cfg, self.state
        a = st["acc"][due]
        T = st["ctrl_dt"][due]
        v = st["vel"][due]
        w = v + a * T[:, None]
        s2 = w[:, 0] * w[:, 0] + w[:, 1] * w[:, 1] + w[:, 2] * w[:, 2]
        over = s2 > cfg.v_max * cfg.v_max
        if over.any():
            f = cfg.v_max / np.sqrt(s2[over])
            w[over] = w[over] * f[:, None]
        st["pos"][due] = st["pos"][due] + (v + w) * (0.5 * T)[:, None]
        st["vel"][due] = w
        st["energy"][due] = st["energy"][due] + (a[:, 0] * a[:, 0] + a[:, 1] * a[:, 1] + a[:, 2] * a[:, 2]) * T

    def _deliver(self, rcv: np.ndarray, snd: np.ndarray, tick: int, msg: np.ndarray) -> None:
        """Merge messages (all sent at ``tick``) into the receivers' tables:
        per receiver, the latest message of each sender, at most table_cap
        senders, newest first then lowest id; slots sorted by sender id."""
        cfg, st = self.cfg, self.state
        n, C = cfg.num_uavs, cfg.table_cap
        nb_src, nb_tick, nb_state, nb_count = st["nb_src"], st["nb_tick"], st["nb_state"], st["nb_count"]
        st["received"] += np.bincount(rcv, minlength=n)
        aff = np.unique(rcv)
        cnt = nb_count[aff].astype(np.int64)
        rows = np.repeat(aff, cnt)
        cols = np.arange(int(cnt.sum())) - np.repeat(np.cumsum(cnt) - cnt, cnt)
        r_all = np.concatenate([rows, rcv])
        s_all = np.concatenate([nb_src[rows, cols], snd])
        t_all = np.concatenate([nb_tick[rows, cols], np.full(len(rcv), tick, np.int64)])
        x_all = np.concatenate([nb_state[rows, cols], msg])
        # the latest message per (receiver, sender)
        o = np.lexsort((-t_all, s_all, r_all))
        ro, so = r_all[o], s_all[o]
        first = np.ones(len(o), bool)
        first[1:] = (ro[1:] != ro[:-1]) | (so[1:] != so[:-1])
        o = o[first]
        # at most C senders per receiver, newest first, then lowest id
        o = o[np.lexsort((s_all[o], -t_all[o], r_all[o]))]
        o = o[_group_rank(r_all[o]) < C]
        # back into slots, in sender order
        o = o[np.lexsort((s_all[o], r_all[o]))]
        ro = r_all[o]
        col = _group_rank(ro)
        nb_src[ro, col] = s_all[o]
        nb_tick[ro, col] = t_all[o]
        nb_state[ro, col] = x_all[o]
        nb_count[aff] = np.bincount(ro, minlength=n)[aff]
