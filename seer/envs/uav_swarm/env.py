"""The `UavSwarmEnv` ParallelEnv and its factories; public as `seer.envs.uav_swarm_v0`, whose docstring describes the env."""

from __future__ import annotations

import gymnasium
import numpy as np

from seer.native_env import NativeEnv
from seer.vector.native import NativeSpec
from seer.envs.uav_swarm import model as M
from seer.envs._common import check_int, make_aec, make_raw_aec

__all__ = ["parallel_env", "env", "raw_env", "UavSwarmEnv", "SCENARIOS", "make_traced"]

SCENARIOS = dict(M.SCENARIOS)
ENGINES = ("seer", "reference")


class UavSwarmEnv(NativeEnv):
    """The PettingZoo ParallelEnv (see the module docstring), a :class:`seer.NativeEnv`."""

    metadata = {"render_modes": ["rgb_array"], "name": "uav_swarm_v0", "is_parallelizable": True,
                "render_fps": 10}
    entities_arg = "num_uavs"
    #: state() is the agents' observations concatenated (lost agents zero): seer.integrations.torchrl
    #: builds it from seer.vector's rows instead of calling state() on every copy
    state_from_observations = True

    def __init__(self, scenario="default", num_uavs=None, max_cycles=500, render_mode=None, dt=0.1,
                 workers="auto", k_neighbors=6, engine="seer", strict_actions=False, black_death=False, debug=None,
                 trace=False):
        self._sim = None
        self.cfg = cfg = M.make_config(scenario, num_uavs, dt, k_neighbors)
        self.max_cycles = check_int("max_cycles", max_cycles, 1)
        if engine not in ENGINES:
            raise ValueError(f"engine={engine!r} is unknown: expected one of {list(ENGINES)}")
        self.scenario, self.engine = scenario, engine
        spec = NativeSpec(agents=[f"uav_{i}" for i in range(cfg.num_uavs)],
                          observation=gymnasium.spaces.Box(-M.OBS_BOUND, M.OBS_BOUND, (cfg.obs_dim,), np.float32),
                          action=gymnasium.spaces.Box(-1.0, 1.0, (3,), np.float32))
        base = dict(workers=workers, render_mode=render_mode, black_death=black_death,
                    strict_actions=strict_actions, debug=debug, trace=trace)
        if engine == "seer":
            model = M.UavModel(cfg)
            # "auto": chosen from whole C steps (auto_workers), then tuned on the real ones
            super().__init__(spec, model, capacity=model.queue_capacity(),
                             choose=lambda: M.auto_workers(cfg, model), **base)
            self._sim = M.SeerSim(cfg, runtime=self.runtime)
        else:
            from seer.envs.uav_swarm.reference import ReferenceSim

            super().__init__(spec, None, **base)
            self._sim = ReferenceSim(cfg)
        self._out = self._sim.out

    @property
    def state_arrays(self):
        """The model's state (``pos``, ``vel``, neighbour tables, ...) by
        agent id: row ``i`` of ``state_arrays[name]`` is ``uav_i``'s, in a
        new array each time, so writing to it changes nothing (the engine
        keeps its own rows in space order)."""
        return self._sim.agent_rows()

    def state(self) -> np.ndarray:
        """The global state (see "Global state" in the module docstring): a
        new array, from the engine's rows, which seer.vector's native path
        writes too."""
        self._check_open()
        obs = self._out.obs.copy()
        lost = np.ones(len(obs), bool)
        lost[self._sim.live_agents()] = False
        obs[lost] = 0.0
        return obs.reshape(-1)

    # ---- what NativeEnv asks of the env ------------------------------------------------------

    def next_seed(self) -> int:
        """The env's seed stream, the one seer.vector's native autoreset draws from too."""
        return self._sim.next_seed()

    def reset_rows(self, seed):
        if self.engine == "seer":  # the whole reset in C, as the copy step's autoreset
            rc = self._sim.reset_native(seed, self.max_cycles)
        else:
            rc = self._sim.reset(seed, self.max_cycles)
        self.rows.obs[:] = self._out.obs
        return rc

    def copy_step(self):
        """The whole step in C (``seer_uav_copy_step``): broadcast grid, events, readout, losses, autoreset."""
        if self.engine == "seer":
            return M.PLUGIN.function("seer_uav_copy_step"), self._sim.model.native_env

    def step_rows(self):  # engine="reference": the rows seer_uav_copy_step writes
        r, out, live = self.rows, self._out, self._live
        self._sim.set_actions(live, r.act[live])
        self._sim.step()
        r.obs[live], r.rew[live] = out.obs[live], out.reward[live]
        r.term[live] = out.collided[live] | out.oob[live]
        r.trunc[live] = out.episode[M.EP_TRUNCATED]
        r.alive[:] = out.episode[M.EP_LIVE] > 0 and not out.episode[M.EP_TRUNCATED]
        r.alive &= self._sim.state["alive"]
        r.ended[0] = not r.alive.any()

    def describe_error(self, err):
        """A handler's error names the agent, not the slot it has in the engine's space order."""
        return self._sim.name_agent(err)

    def render_frame(self):
        return draw_frame(self.cfg, self._sim.agent_rows(), self._sim.J)

    def __repr__(self):
        return "uav_swarm_v0"


def draw_frame(cfg, st, J, size: int = 512) -> np.ndarray:
    """A top-down (x, y) picture a person can read, numpy only.

    Header: the step, simulated time and live UAVs.  Map: the world box
    (leaving it loses a UAV) with a 10 m grid; each UAV a disk coloured by
    its clock (10 Hz red, 20 Hz green, 50 Hz blue) and sized by its height
    (bigger is higher; higher UAVs are drawn on top), its target a "+" in a
    light tint of its colour joined to it by a dashed line (up to 64 UAVs),
    grey links to the neighbours it currently observes, lost UAVs a dark
    "x" where they were lost.  Footer: the legend and a scale bar.
    """
    from seer.envs import _render as D

    hi = np.asarray(cfg.world_hi, np.float64)
    header, footer, margin = 30, 44, 10
    scale = (size - 1 - 2 * margin) / max(hi[0], hi[1])
    mw, mh = int(round(hi[0] * scale)), int(round(hi[1] * scale))
    w = mw + 2 * margin + 1
    h = header + mh + 2 * margin + 1 + footer
    img = np.full((h, w, 3), 222, np.uint8)
    oy, ox = header + margin, margin  # pixel of the world's (x=0, y=hi) corner

    def to_px(p):
        p = np.asarray(p, np.float64)
        x = np.rint(ox + p[..., 0] * scale).astype(np.int64)
        y = np.rint(oy + (hi[1] - p[..., 1]) * scale).astype(np.int64)
        return y, x

    # the world and its border, with a 10 m grid
    D.fill_rect(img, oy, ox, oy + mh + 1, ox + mw + 1, (250, 250, 250))
    for g in np.arange(10.0, hi[0], 10.0):
        D.fill_rect(img, oy, int(round(ox + g * scale)), oy + mh + 1, int(round(ox + g * scale)) + 1, (232, 232, 232))
    for g in np.arange(10.0, hi[1], 10.0):
        y = int(round(oy + (hi[1] - g) * scale))
        D.fill_rect(img, y, ox, y + 1, ox + mw + 1, (232, 232, 232))
    D.rect(img, oy - 2, ox - 2, oy + mh + 3, ox + mw + 3, (40, 40, 40), width=2)

    alive = st["alive"].astype(bool)
    pos = st["pos"]
    n = len(alive)
    clock = np.array([(220, 40, 40), (40, 170, 40), (40, 60, 220)], np.uint8)
    tint = np.array([(240, 160, 160), (150, 210, 150), (160, 170, 240)], np.uint8)
    which = np.arange(n) % 3
    live = np.flatnonzero(alive)

    # links to the observed neighbours (fresh table entries)
    slot = np.arange(cfg.table_cap)
    valid = (slot < st["nb_count"][:, None]) & (st["nb_tick"] >= J - cfg.max_age_ticks) & alive[:, None]
    r, c = np.nonzero(valid)
    if len(r):
        (y0, x0), (y1, x1) = to_px(pos[r]), to_px(st["nb_state"][r, c, 0:3])
        D.lines(img, y0, x0, y1, x1, (170, 170, 170))
    # targets, joined to their UAVs while the picture stays readable
    ty, tx = to_px(st["target"][live])
    uy, ux = to_px(pos[live])
    if len(live) <= 64:
        for k in range(3):
            sel = which[live] == k
            D.lines(img, uy[sel], ux[sel], ty[sel], tx[sel], tint[k], dash=3)
    mark = int(np.clip(round(scale * 0.6), 2, 5))
    for k in range(3):
        sel = which[live] == k
        D.plus_marks(img, ty[sel], tx[sel], mark, tint[k] // 2 + 60)
    # lost UAVs where they were lost
    lost = np.flatnonzero(~alive)
    if len(lost):
        ly, lx = to_px(pos[lost])
        D.crosses(img, ly, lx, mark, (70, 70, 70))
    # UAVs: size by height, lowest first so the higher ones lie on top
    z = np.clip(pos[live, 2] / max(hi[2], 1e-9), 0.0, 1.0)
    r_lo, r_hi = np.clip(scale * 0.35, 2, 4), np.clip(scale * 0.9, 3, 9)
    radius = np.rint(r_lo + (r_hi - r_lo) * z).astype(np.int64)
    order = np.argsort(z, kind="stable")
    uy, ux, radius = uy[order], ux[order], radius[order]
    col = clock[which[live][order]]
    D.disks(img, uy, ux, radius + 1, (30, 30, 30))
    D.disks(img, uy, ux, radius, col)

    # header: where the episode is
    D.fill_rect(img, 0, 0, header, w, (36, 40, 48))
    steps = int(J) // max(1, cfg.ticks_per_step)
    title = f"STEP {steps}  T {int(J) * M.TICK_S:.1f} S  LIVE {len(live)}/{n}"
    big = D.text_size(title, 2)[1] <= w - 100  # leaves room for the env's name
    D.text(img, 7 if big else 11, 8, title, (255, 255, 255), scale=2 if big else 1)
    D.text(img, 11, w - 8 - D.text_size("UAV_SWARM_V0")[1], "UAV_SWARM_V0", (170, 180, 200))
    # footer: the legend and a scale bar
    fy = h - footer + 6
    x = 8
    for k, hz in enumerate(M.RATES_HZ):
        D.disks(img, [fy + 3], [x + 4], 5, (30, 30, 30))
        D.disks(img, [fy + 3], [x + 4], 4, clock[k])
        x = D.text(img, fy, x + 12, f"{hz} HZ", (30, 30, 30)) + 8
    x = D.text(img, fy, x + 4, "HEIGHT", (30, 30, 30)) + 8
    for rad, label in ((int(r_lo), "0"), (int(r_hi), f"{hi[2]:.0f} M")):
        D.disks(img, [fy + 3], [x + rad], rad + 1, (30, 30, 30))
        D.disks(img, [fy + 3], [x + rad], rad, (150, 150, 150))
        x = D.text(img, fy, x + 2 * rad + 4, label, (30, 30, 30)) + 8
    x += 4
    D.plus_marks(img, [fy + 3], [x + 3], 3, (90, 90, 90))
    x = D.text(img, fy, x + 10, "TARGET", (30, 30, 30)) + 12
    D.crosses(img, [fy + 3], [x + 3], 3, (70, 70, 70))
    D.text(img, fy, x + 10, "LOST", (30, 30, 30))
    fy2 = fy + 16
    D.lines(img, [fy2 + 3], [8], [fy2 + 3], [26], (170, 170, 170))
    x = D.text(img, fy2, 32, "SENSED NEIGHBOUR", (30, 30, 30)) + 12
    D.lines(img, [fy2 + 3], [x], [fy2 + 3], [x + 18], (200, 120, 120), dash=3)
    x = D.text(img, fy2, x + 24, "TO TARGET", (30, 30, 30)) + 16
    bar = int(round(10.0 * scale))
    D.fill_rect(img, fy2 + 2, x, fy2 + 5, x + bar, (30, 30, 30))
    D.text(img, fy2, x + bar + 6, "10 M", (30, 30, 30))
    return img


def parallel_env(**kwargs) -> UavSwarmEnv:
    """The PettingZoo ParallelEnv (arguments: see the module docstring)."""
    return UavSwarmEnv(**kwargs)


def raw_env(**kwargs):
    """The unwrapped AEC env (PettingZoo's conversion of :func:`parallel_env`, no wrapper)."""
    return make_raw_aec(UavSwarmEnv, **kwargs)


def env(**kwargs):
    """The AEC env: :func:`raw_env` in PettingZoo's order-enforcing wrapper."""
    return make_aec(UavSwarmEnv, **kwargs)


make_traced = UavSwarmEnv.make_traced  # seer trace uav_swarm_v0
