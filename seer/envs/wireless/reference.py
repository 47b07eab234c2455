"""Time-stepped numpy reference of wireless_v0: the same model as the SEER
version (seer/envs/wireless/model.py + seer/envs/wireless/csrc/wireless.c), simulated the way an
existing simulator does it, one step at a time over arrays of all UEs.

Within a step ``[t, t + 1)`` it applies the actions (time ``t``), then the
releases due at ``t``, then the UEs' own events (moves, traffic switches) in
rounds: each round every UE with an event left before ``t + 1`` runs its
earliest one (UEs do not interact, so a round is one vectorised update).
UE -> BS messages are collected with their arrival time and applied at the
end of the step if they arrived before ``t + 1`` (later ones wait): per BS
and UE only the latest one of each sort counts.  Observations and rewards
come from the same formulas as the C kernels, evaluated in the same order
(sequential sums via ``cumsum``), so results are bit-identical to SEER's.
"""

from __future__ import annotations

import numpy as np

from seer.envs.wireless import cellular as wm

_REPORT, _ATTACH, _DETACH, _DEMAND = 0, 1, 2, 3


class WirelessReference:
    """Array-level API identical to :class:`seer.envs.wireless.model.WirelessSeer`."""

    engine = "reference"
    workers = 1

    def __init__(self, params: wm.WirelessParams):
        self.params = params
        self.B, self.U = params.num_bs, params.num_ue
        self.bs_xy = params.bs_xy.astype(np.int64)
        self.snr_table, self.rate_table, self.ok_table = wm.channel_tables(wm.max_d2(params))
        self.ok_bool = self.ok_table.astype(bool)
        self.idle = float(wm.scale_utility(wm.UTILITY_DEFAULTS["lower"]))
        self.velocity = wm.UE_DEFAULTS["velocity"]
        self.W, self.H = float(params.scenario.width), float(params.scenario.height)
        self.obs = np.zeros((self.U, params.obs_size), np.float32)
        self.t = 0.0
        self.steps = 0
        self.events = 0

    # ---- lifecycle -------------------------------------------------------------

    def reset(self, seed: int, layout: dict | None = None):
        p, B, U = self.params, self.B, self.U
        init = wm.initial_state(p, seed, layout)
        self.seed = int(seed)
        self.pos = init.pos.copy()
        self.wp = np.zeros((U, 2))
        self.has_wp = np.zeros(U, bool)
        self.layout_wp = init.waypoints
        self.layout_len = np.array([len(w) for w in init.waypoints], np.int64)
        self.wp_next = np.zeros(U, np.int64)
        self.ipos = np.trunc(self.pos).astype(np.int64)
        self.d2 = wm.truncated_d2(self.pos, self.bs_xy)
        self.sent = np.where(self.ok_bool[self.d2], self.d2, -1)
        self.conn = np.zeros((U, B), bool)
        self.on = init.on.astype(bool)
        self.period = init.period.copy()
        self.next_move = init.next_move.copy()
        self.next_traffic = init.next_traffic.copy()
        self.release = np.zeros(U, bool)
        self.ctr = np.zeros(U, np.int64)  # handler draws, like SEER's per-entity counters
        self.member = np.zeros((B, U), bool)
        self.on_rep = np.zeros((B, U), bool)
        self.d2_rep = self.sent.T.copy()
        self._pending = _Messages.empty()
        self.t = 0.0
        self.steps = 0
        self.events = 0
        self._finalize()
        return self.obs

    def close(self) -> None:
        pass

    # ---- one step ---------------------------------------------------------------

    def step(self, actions: np.ndarray):
        t0 = self.t
        t1 = t0 + wm.DT
        out = _Messages()
        acting = np.flatnonzero(actions)
        if acting.size:  # actions come first at t0 (external events)
            self.events += acting.size
            self._prune(acting, np.full(acting.size, t0), out)
            b = np.asarray(actions)[acting].astype(np.int64) - 1
            cur = self.conn[acting, b]
            det = acting[cur]
            if det.size:
                self.conn[det, b[cur]] = False
                out.add(t0 + wm.DELAY, b[cur], det, _DETACH, 0)
            can = ~cur & self.ok_bool[self.d2[acting, b]]
            att = acting[can]
            if att.size:
                self.conn[att, b[can]] = True
                out.add(t0 + wm.DELAY, b[can], att, _ATTACH, self.on[att])
        rel = np.flatnonzero(self.release)
        if rel.size:
            self.events += rel.size
            self.release[rel] = False
            self._prune(rel, np.full(rel.size, t0), out)
        while True:  # rounds of each UE's earliest own event before t1
            nm, nt = self.next_move, self.next_traffic
            mv = np.flatnonzero((nm < t1) & (nm < nt))
            tr = np.flatnonzero((nt < t1) & (nt < nm))
            if mv.size == 0 and tr.size == 0:
                break
            if mv.size:
                self._move(mv, out)
            if tr.size:
                self._traffic(tr, out)
        self._deliver(out, t1)
        self.t = t1
        self.steps += 1
        return self._finalize()

    def _draw(self, idx: np.ndarray) -> np.ndarray:
        u = wm.counter_uniform(self.seed, self.B + idx, self.ctr[idx])
        self.ctr[idx] += 1
        return u

    def _prune(self, idx: np.ndarray, times: np.ndarray, out: "_Messages") -> None:
        bad = self.conn[idx] & ~self.ok_bool[self.d2[idx]]
        i, b = np.nonzero(bad)
        if i.size:
            self.conn[idx[i], b] = False
            out.add(times[i] + wm.DELAY, b, idx[i], _DETACH, 0)

    def _move(self, idx: np.ndarray, out: "_Messages") -> None:
        self.events += idx.size
        t = self.next_move[idx]
        need = idx[~self.has_wp[idx]]
        if need.size:
            from_layout = self.wp_next[need] < self.layout_len[need]
            drw = need[~from_layout]
            for u in need[from_layout]:  # waypoints copied from a layout (tests, comparisons)
                self.wp[u] = self.layout_wp[u][self.wp_next[u]]
                self.wp_next[u] += 1
            if drw.size:
                ux = self._draw(drw)
                uy = self._draw(drw)
                self.wp[drw, 0] = self.W * ux
                self.wp[drw, 1] = self.H * uy
            self.has_wp[need] = True
        step = self.velocity * self.period[idx]
        px, py = self.pos[idx, 0], self.pos[idx, 1]
        wx, wy = self.wp[idx, 0], self.wp[idx, 1]
        vx = wx - px
        vy = wy - py
        n = np.sqrt(vx * vx + vy * vy)
        arrived = n <= step
        go = ~arrived
        nx, ny = wx.copy(), wy.copy()
        nx[go] = px[go] + step[go] * vx[go] / n[go]
        ny[go] = py[go] + step[go] * vy[go] / n[go]
        self.pos[idx, 0] = nx
        self.pos[idx, 1] = ny
        self.has_wp[idx[arrived]] = False
        ip = np.stack([nx.astype(np.int64), ny.astype(np.int64)], axis=1)
        changed = np.any(ip != self.ipos[idx], axis=1)
        m = idx[changed]
        if m.size:
            ipm = ip[changed]
            self.ipos[m] = ipm
            d = ipm[:, None, :] - self.bs_xy[None, :, :]
            d2 = d[..., 0] * d[..., 0] + d[..., 1] * d[..., 1]
            self.d2[m] = d2
            ok = self.ok_bool[d2]
            v = np.where(ok, d2, -1)
            i, b = np.nonzero(v != self.sent[m])
            if i.size:
                self.sent[m[i], b] = v[i, b]
                out.add(t[changed][i] + wm.DELAY, b, m[i], _REPORT, v[i, b])
            self.release[m[np.any(self.conn[m] & ~ok, axis=1)]] = True
        nxt = t + self.period[idx]
        if not self.params.full_buffer and self.params.max_pause > 0.0:
            a = idx[arrived]
            if a.size:
                nxt[arrived] = nxt[arrived] + wm.pause_duration(self._draw(a), self.params.max_pause)
        self.next_move[idx] = nxt

    def _traffic(self, idx: np.ndarray, out: "_Messages") -> None:
        self.events += idx.size
        t = self.next_traffic[idx]
        self.on[idx] = ~self.on[idx]
        on = self.on[idx]
        i, b = np.nonzero(self.conn[idx])
        if i.size:
            out.add(t[i] + wm.DELAY, b, idx[i], _DEMAND, on[i])
        mean = np.where(on, self.params.mean_on, self.params.mean_off)
        self.next_traffic[idx] = t + wm.traffic_duration(self._draw(idx), mean)

    def _deliver(self, out: "_Messages", t1: float) -> None:
        msgs = _Messages.concat(self._pending, out)
        due = msgs.t < t1
        self._pending = msgs.select(~due)
        now = msgs.select(due)
        if now.t.size == 0:
            return
        self.events += now.t.size
        U = self.U
        for group in ((_REPORT,), (_ATTACH, _DETACH, _DEMAND)):
            sel = np.isin(now.kind, group)
            if not sel.any():
                continue
            key = now.b[sel] * U + now.u[sel]
            order = np.lexsort((now.t[sel], key))  # by key, then time
            ks = key[order]
            last = order[np.r_[ks[1:] != ks[:-1], True]]
            k, kind, val = key[last], now.kind[sel][last], now.val[sel][last]
            if group[0] == _REPORT:
                self.d2_rep.flat[k] = val
            else:
                self.member.flat[k] = kind != _DETACH
                self.on_rep.flat[k] = (kind != _DETACH) & (val != 0)

    # ---- observations and rewards -------------------------------------------------

    def _finalize(self):
        member, on_rep, d2_rep = self.member, self.on_rep, self.d2_rep
        n_conn = member.sum(axis=1)
        n_on = (member & on_rep).sum(axis=1)
        # wl_rates: sum over BSs, in BS order, of each BS's resource-fair share
        denom = np.maximum(np.where(on_rep, n_on[:, None], n_on[:, None] + 1), 1)
        use = member & (d2_rep >= 0)
        share = np.where(use, self.rate_table[np.maximum(d2_rep, 0)] / denom, 0.0)
        macro = np.cumsum(share, axis=0)[-1]
        util = wm.scaled_utility(macro)
        # wl_observe
        bs_util = wm.station_utilities(util, member, self.idle)
        self.reward = wm.reward(util, bs_util, n_conn, d2_rep >= 0)
        wm.observation(self.conn, self.snr_table[self.d2], util, bs_util, n_conn, self.idle, out=self.obs)
        self.macro, self.util, self.bs_util = macro, util, bs_util
        return self.obs, self.reward

    # ---- views ------------------------------------------------------------------------
    @property
    def ue_positions(self) -> np.ndarray:
        return self.pos

    @property
    def connections(self) -> np.ndarray:
        return self.conn


class _Messages:
    """UE -> BS messages in flight: arrival time, BS, UE, sort, value."""

    __slots__ = ("parts", "t", "b", "u", "kind", "val")

    def __init__(self):
        self.parts = []

    def add(self, t, b, u, kind, val) -> None:
        n = len(b)
        self.parts.append((np.broadcast_to(np.asarray(t, np.float64), (n,)), np.asarray(b, np.int64),
                           np.asarray(u, np.int64), np.full(n, kind, np.int64),
                           np.broadcast_to(np.asarray(val, np.int64), (n,))))

    @classmethod
    def empty(cls) -> "_Messages":
        m = cls()
        m.t = np.zeros(0)
        m.b = m.u = m.kind = m.val = np.zeros(0, np.int64)
        return m

    @classmethod
    def concat(cls, pending: "_Messages", out: "_Messages") -> "_Messages":
        m = cls()
        cols = list(zip(*out.parts)) if out.parts else [[] for _ in range(5)]
        base = (pending.t, pending.b, pending.u, pending.kind, pending.val)
        m.t, m.b, m.u, m.kind, m.val = (np.concatenate([p, *c]) for p, c in zip(base, cols))
        return m

    def select(self, mask: np.ndarray) -> "_Messages":
        m = _Messages()
        m.t, m.b, m.u, m.kind, m.val = self.t[mask], self.b[mask], self.u[mask], self.kind[mask], self.val[mask]
        return m
