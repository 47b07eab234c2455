"""Time-stepped reference of the UAV swarm model, in plain numpy.

This is what an existing simulator does: advance a global clock by the
gcd of the UAV periods (one tick, 0.01 s) and at every tick update, in
vectorized numpy, the UAVs whose own clock is due.  It implements the same
model as the event-driven version (seer/envs/uav_swarm/model.py and
seer/envs/uav_swarm/csrc/uav_swarm.c), with the float operations in the same order, so both
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

The broadcast grid is built by the numpy code of seer/envs/uav_swarm/model.py that
the C grid mirrors; the step-end readout (:class:`NumpyReadout`, below) is
the numpy original of the C readout the SEER engine runs.
"""

from __future__ import annotations

import numpy as np

from seer.envs.uav_swarm._uav_swarm_c import lib
from seer.envs.uav_swarm.model import (
    EP_LIVE,
    EP_STEPS,
    EP_TICK,
    EP_TRUNCATED,
    EP_VERSION,
    OBS_BOUND,
    PERIOD_TICKS,
    TARGET_SCALE,
    AgentRows,
    BroadcastGrid,
    UavConfig,
    UavModel,
    neighbour_pairs,
    set_actions,
)


def _group_rank(sorted_keys: np.ndarray) -> np.ndarray:
    """Position of each element within its run of equal keys (keys sorted)."""
    return np.arange(len(sorted_keys)) - np.searchsorted(sorted_keys, sorted_keys, "left")


class ReferenceSim:
    """Same interface as :class:`seer.envs.uav_swarm.model.SeerSim`: ``reset(seed,
    max_cycles)``, write actions into ``state["acc"]``, ``step()`` one env
    step (``advance()`` then the readout and the losses); results in
    :attr:`out`."""

    name = "reference"
    workers = 1

    def __init__(self, cfg: UavConfig, workers=None):
        self.cfg = cfg
        # the same state arrays, initial state and seed stream as the SEER
        # engine; none of its C stepping
        self._model = UavModel(cfg)
        self.state = self._model.state
        self.grid = BroadcastGrid(cfg, self.state["cell_of"])
        self.out = self._model.out
        self.readout = NumpyReadout(cfg)
        self.last_events = 0
        self.dropped_by_cap = 0  # (sender, receiver) pairs in range cut by max_recipients
        self._pending = None

    @property
    def J(self) -> int:
        return self.out.J

    def next_seed(self) -> int:
        return int(lib.seer_uav_next_seed(self._model.native_env))

    # rows are agents here (the initial state is drawn without slots)
    def live_agents(self) -> np.ndarray:
        return np.flatnonzero(self.state["alive"])

    def set_actions(self, agents: np.ndarray, actions: np.ndarray) -> None:
        set_actions(self.cfg, self.state, agents, actions)

    def agent_rows(self) -> AgentRows:
        return AgentRows(self.state, None)

    def reset(self, seed: int, max_cycles: int | None = None) -> None:
        self._model.set_max_cycles(max_cycles)
        self._model.initial_state(seed)
        self.out.start_episode(self.cfg.num_uavs, seed)
        self.out.obs[:] = self.readout.start(self.state)
        self._pending = None

    def close(self) -> None:
        pass

    def step(self) -> None:
        out, st = self.out, self.state
        self.advance()
        obs, reward, collided, oob = self.readout.step(st, self.J)
        out.obs[:], out.reward[:], out.collided[:], out.oob[:] = obs, reward, collided, oob
        ep = out.episode
        ep[EP_STEPS] += 1
        lost = (collided | oob) & st["alive"].astype(bool)
        st["alive"][lost] = 0
        changed = bool(lost.any())
        if ep[EP_STEPS] >= out.max_cycles:
            ep[EP_TRUNCATED] = 1
            changed = True
        ep[EP_LIVE] = int(st["alive"].sum())
        ep[EP_VERSION] += changed

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
        J = self.J
        for j in range(J, J + cfg.ticks_per_step):
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
        self.out.episode[EP_TICK] = J + cfg.ticks_per_step
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
            msg = np.concatenate([pos[s], vel[s]], axis=1).astype(np.float32)
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


def close_pairs(pos: np.ndarray, idx: np.ndarray, radius: float, hi: np.ndarray):
    """Unordered pairs of UAVs ``idx`` closer than ``radius``: (a, b, distance).
    Cells of size ``radius`` over the box [0, hi] (clamped: a clamped cell
    only adds candidates, it never separates two close UAVs)."""
    p = pos[idx]
    dims = np.maximum(np.ceil(hi / radius).astype(np.int64), 1)
    cells = np.clip(np.floor(p / radius).astype(np.int64), 0, dims - 1)
    a, b = neighbour_pairs(cells, dims, half=True)
    d = p[b] - p[a]
    d2 = d[:, 0] * d[:, 0] + d[:, 1] * d[:, 1] + d[:, 2] * d[:, 2]
    keep = d2 < radius * radius
    return idx[a[keep]], idx[b[keep]], np.sqrt(d2[keep])


# ---- the step-end readout -------------------------------------------------------------------

def target_distance(pos: np.ndarray, target: np.ndarray) -> np.ndarray:
    d = target - pos
    return np.sqrt(d[:, 0] * d[:, 0] + d[:, 1] * d[:, 1] + d[:, 2] * d[:, 2])


class NumpyReadout:
    """Observations, rewards and losses at a step end, from the state arrays.

    The SEER engine computes the same in C (``seer_uav_readout`` in
    seer/envs/uav_swarm/csrc/uav_swarm_step.c, float for float: same operations, same
    order), so the two engines' comparison isolates what differs: how the
    state evolves inside a step, and proves the C readout along the way.

    Observation of UAV i (float32, each entry clipped to [-10, 10]):

    - ``(p_i - c) / h`` (c, h: centre and half-size of the world box),
      ``v_i / v_max``, ``(g_i - p_i) / 20 m`` (g_i: its target);
    - for each of its ``k`` nearest table neighbours (by distance from p_i
      to the neighbour's reported position; entries older than 0.1 s are
      ignored; ties go to the lower sender id), ``(p_j - p_i) / radius``,
      ``(v_j - v_i) / (2 v_max)`` and 1; zeros for missing neighbours.

    Reward of UAV i for the step (documented in uav_swarm_v0).
    """

    def __init__(self, cfg: UavConfig):
        self.cfg = cfg
        n = cfg.num_uavs
        self.centre = cfg.world_hi / 2
        self.half = cfg.world_hi / 2
        self.hi = cfg.world_hi
        self.slot = np.arange(cfg.table_cap)
        self.prev_dist = np.zeros(n)

    def start(self, st) -> np.ndarray:
        """Observations after reset; remembers the target distances."""
        self.prev_dist[:] = target_distance(st["pos"], st["target"])
        return self.observe(st, 0)

    def observe(self, st, J: int) -> np.ndarray:
        cfg = self.cfg
        n, k = cfg.num_uavs, cfg.k_neighbors
        pos, vel = st["pos"], st["vel"]
        obs = np.zeros((n, cfg.obs_dim), np.float32)
        obs[:, 0:3] = (pos - self.centre) / self.half
        obs[:, 3:6] = vel / cfg.v_max
        obs[:, 6:9] = (st["target"] - pos) / TARGET_SCALE
        # The fresh table entries, in (row, slot) order, i.e. by sender id.
        valid = (self.slot < st["nb_count"][:, None]) & (st["nb_tick"] >= J - cfg.max_age_ticks)
        row, col = np.nonzero(valid)
        if len(row):
            e = np.take(st["nb_state"].reshape(-1, 6), row * cfg.table_cap + col, axis=0)
            rel = e[:, 0:3] - pos[row]
            d2 = rel[:, 0] * rel[:, 0] + rel[:, 1] * rel[:, 1] + rel[:, 2] * rel[:, 2]
            # Nearest first within each row.  Sorting row * 1024 + min(d2, 1023)
            # keeps the rows apart; a stable sort (timsort, fast here as the
            # rows come sorted) leaves ties, i.e. distances within about
            # 1e-9 m^2 of each other, in sender-id order.
            o = np.argsort(row * 1024.0 + np.minimum(d2, 1023.0), kind="stable")
            row = row[o]
            rank = np.arange(len(row)) - np.searchsorted(row, row, "left")
            keep = rank < k
            o, row, rank = o[keep], row[keep], rank[keep]
            feat = np.empty((len(o), 7))
            feat[:, 0:3] = rel[o] / cfg.radius
            feat[:, 3:6] = (e[o, 3:6] - vel[row]) / (2.0 * cfg.v_max)
            feat[:, 6] = 1.0
            nbr = np.zeros((n, k, 7), np.float32)
            nbr[row, rank] = feat
            obs[:, 9:] = nbr.reshape(n, 7 * k)
        np.clip(obs, -OBS_BOUND, OBS_BOUND, out=obs)
        return obs

    def step(self, st, J: int):
        """(obs, reward, collided, out_of_bounds) after a step; ``st["alive"]``
        still holds the UAVs that were alive during it (the caller retires the
        lost ones)."""
        cfg = self.cfg
        n = cfg.num_uavs
        pos = st["pos"]
        live = st["alive"].astype(bool)
        dist = target_distance(pos, st["target"])
        progress = self.prev_dist - dist
        sep = np.zeros(n)
        collided = np.zeros(n, bool)
        li = np.flatnonzero(live)
        if len(li) > 1:
            a, b, d = close_pairs(pos, li, cfg.d_safe, self.hi)
            pen = (cfg.d_safe - d) / cfg.d_safe
            sep = np.bincount(a, pen, n) + np.bincount(b, pen, n)
            hit = d < cfg.d_col
            collided[a[hit]] = True
            collided[b[hit]] = True
        oob = ((pos < 0.0) | (pos > self.hi)).any(axis=1) & live
        reward = (cfg.w_progress * progress - cfg.w_energy * st["energy"] - cfg.w_separation * sep
                  - cfg.c_collision * collided - cfg.c_out_of_bounds * oob + cfg.r_goal * (dist < cfg.goal_radius))
        self.prev_dist[:] = dist
        return self.observe(st, J), reward, collided, oob
