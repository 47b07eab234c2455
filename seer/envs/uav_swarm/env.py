"""The `UavSwarmEnv` ParallelEnv and its factories; public as `seer.envs.uav_swarm_v0`, whose docstring describes the env."""

from __future__ import annotations

import copy

import gymnasium
import numpy as np

from seer.errors import ClosedError, MisuseError
from seer.vector.native import NativeCopy, NativeSpec
from seer.envs.uav_swarm import model as M
from seer.envs._common import (
    ClosingParallelEnv,
    check_bool,
    check_int,
    check_render_mode,
    check_workers,
    make_aec,
    make_raw_aec,
    native_error,
    seed_from,
    traced,
    validate_actions,
)

__all__ = ["parallel_env", "env", "raw_env", "UavSwarmEnv", "SCENARIOS", "make_traced"]

SCENARIOS = dict(M.SCENARIOS)
ENGINES = ("seer", "reference")


class UavSwarmEnv(ClosingParallelEnv):
    """The PettingZoo ParallelEnv (see the module docstring)."""

    metadata = {"render_modes": ["rgb_array"], "name": "uav_swarm_v0", "is_parallelizable": True,
                "render_fps": 10}
    #: state() is the agents' observations concatenated (lost agents zero): seer.integrations.torchrl
    #: builds it from seer.vector's rows instead of calling state() on every copy
    state_from_observations = True

    def __init__(self, scenario="default", num_uavs=None, max_cycles=500, render_mode=None, dt=0.1,
                 workers="auto", k_neighbors=6, engine="seer", strict_actions=False, black_death=False, debug=None):
        cfg = M.make_config(scenario, num_uavs, dt, k_neighbors)
        self.strict_actions = bool(strict_actions)
        self.black_death = check_bool("black_death", black_death)
        self.max_cycles = check_int("max_cycles", max_cycles, 1)
        self.render_mode = check_render_mode(render_mode, self.metadata["render_modes"])
        workers = check_workers(workers)
        if engine not in ENGINES:
            raise ValueError(f"engine={engine!r} is unknown: expected one of {list(ENGINES)}")
        self.cfg = cfg
        self.scenario = scenario
        self._closed = False
        n = cfg.num_uavs
        self.possible_agents = [f"uav_{i}" for i in range(n)]
        #: the rows of seer.vector's native path; the spaces derive from it
        self.spec = NativeSpec(agents=self.possible_agents,
                               observation=gymnasium.spaces.Box(-M.OBS_BOUND, M.OBS_BOUND, (cfg.obs_dim,), np.float32),
                               action=gymnasium.spaces.Box(-1.0, 1.0, (3,), np.float32))
        self._index = {a: i for i, a in enumerate(self.possible_agents)}
        #: the global state's space (see "Global state" in the module docstring)
        self.state_space = gymnasium.spaces.Box(-M.OBS_BOUND, M.OBS_BOUND, (n * cfg.obs_dim,), np.float32)
        self._obs_spaces: dict[str, gymnasium.spaces.Box] = {}
        self._act_spaces: dict[str, gymnasium.spaces.Box] = {}
        if engine == "seer":
            self._sim = M.SeerSim(cfg, workers=workers, debug=debug)
            self._runtime = self._sim.runtime
        else:
            from seer.envs.uav_swarm.reference import ReferenceSim

            self._sim = ReferenceSim(cfg)
        self.engine = engine
        self._out = self._sim.out
        self._agents: list[str] = []
        self._agents_version = int(self._out.episode[M.EP_VERSION])
        self._live = np.zeros(0, np.int64)
        self._version0 = self._agents_version  # the counters' version before any reset
        self._all_agents = list(self.possible_agents)

    @property
    def state_arrays(self):
        """The model's state (``pos``, ``vel``, neighbour tables, ...) by
        agent id: row ``i`` of ``state_arrays[name]`` is ``uav_i``'s, in a
        new array each time, so writing to it changes nothing (the engine
        keeps its own rows in space order)."""
        return self._sim.agent_rows()

    @property
    def workers(self) -> int:
        """SEER's pool size now: ``workers="auto"`` may move it between steps
        (STPA's tuner; results do not change).  The reference engine: 1."""
        return self._sim.workers

    # ---- spaces ------------------------------------------------------------------------------

    @property
    def observation_spaces(self) -> dict:
        """Every possible agent's observation space (the objects
        :meth:`observation_space` returns)."""
        return {a: self.observation_space(a) for a in self.possible_agents}

    @property
    def action_spaces(self) -> dict:
        """Every possible agent's action space (the objects :meth:`action_space` returns)."""
        return {a: self.action_space(a) for a in self.possible_agents}

    def state(self) -> np.ndarray:
        """The global state (see "Global state" in the module docstring): a new array."""
        self._check_open()
        obs = self._out.obs.copy()
        lost = np.ones(len(obs), bool)
        lost[self._sim.live_agents()] = False
        obs[lost] = 0.0
        return obs.reshape(-1)

    def observation_space(self, agent):
        space = self._obs_spaces.get(agent)
        if space is None:
            self._check_agent(agent)
            space = copy.deepcopy(self.spec.observation)  # each agent's own (its own sampling RNG)
            self._obs_spaces[agent] = space
        return space

    def action_space(self, agent):
        space = self._act_spaces.get(agent)
        if space is None:
            self._check_agent(agent)
            space = copy.deepcopy(self.spec.action)
            self._act_spaces[agent] = space
        return space

    def _check_agent(self, agent):
        if agent not in self._index:
            raise ValueError(f"agent {agent!r} is unknown: expected one of uav_0 ... uav_{self.cfg.num_uavs - 1}")

    # ---- episode -----------------------------------------------------------------------------

    @property
    def agents(self) -> list[str]:
        """The live agents (with ``black_death=True``: every agent until the
        episode ends).  Derived from the episode counters, which the step
        (or seer.vector's native path, which bypasses :meth:`step`) updates."""
        self._refresh()
        if self.black_death:
            ep = self._out.episode
            return self._all_agents if ep[M.EP_LIVE] > 0 and not ep[M.EP_TRUNCATED] else []
        return self._agents

    def _refresh(self) -> None:
        ep = self._out.episode
        if ep[M.EP_VERSION] != self._agents_version:
            if ep[M.EP_TRUNCATED]:
                self._live = np.zeros(0, np.int64)
            else:
                self._live = self._sim.live_agents()
            names = self.possible_agents
            self._agents = [names[i] for i in self._live.tolist()]
            self._agents_version = int(ep[M.EP_VERSION])

    def reset(self, seed=None, options=None):
        self._check_open()
        # no seed: the next one of the env's stream (which seer.vector's
        # native autoreset draws from too)
        seed = self._sim.next_seed() if seed is None else seed_from(seed, None)
        self._sim.reset(seed, self.max_cycles)
        agents = self.agents
        infos = {a: {"active": True} for a in agents} if self.black_death else {a: {} for a in agents}
        return dict(zip(agents, self._out.obs.copy())), infos

    def step(self, actions):
        self._check_open()
        agents = self.agents
        if not agents:
            if self._out.episode[M.EP_VERSION] == self._version0:
                raise MisuseError("step() called before reset(): call reset() first")
            if self.strict_actions and actions:
                validate_actions(actions, [], self.action_space, possible_agents=self._index, strict=True)
            return {}, {}, {}, {}, {}  # the episode has ended (PettingZoo's envs answer so too)
        live = self._live
        names = self._agents
        act = self._actions_array(actions, names)
        self._sim.set_actions(live, act)
        self._sim.step()
        out = self._out
        if self.black_death:
            return self._black_death_step(live)
        lost = (out.collided[live] | out.oob[live]).astype(bool)
        term = dict(zip(names, lost.tolist()))
        trunc = dict.fromkeys(names, bool(out.episode[M.EP_TRUNCATED]))
        rew = dict(zip(names, out.reward[live].tolist()))
        obs_d = dict(zip(names, out.obs[live]))
        return obs_d, rew, term, trunc, {a: {} for a in names}

    def _black_death_step(self, was_live: np.ndarray):
        """The dicts of every agent after a step of ``was_live`` (the agents live before it)."""
        out, n = self._out, self.cfg.num_uavs
        obs = np.zeros_like(out.obs)
        obs[was_live] = out.obs[was_live]
        rew = np.zeros(n)
        rew[was_live] = out.reward[was_live]
        active = np.zeros(n, bool)
        active[self._sim.live_agents()] = True
        names = self._all_agents
        truncated = bool(out.episode[M.EP_TRUNCATED])
        if truncated or not active.any():
            term, trunc = dict(zip(names, (~active).tolist())), dict(zip(names, (active & truncated).tolist()))
        else:
            term, trunc = dict.fromkeys(names, False), dict.fromkeys(names, False)
        infos = {a: {"active": v} for a, v in zip(names, active.tolist())}
        return dict(zip(names, obs)), dict(zip(names, rew.tolist())), term, trunc, infos

    def seer_native_copy(self) -> NativeCopy | None:
        """seer.vector's native path (:mod:`seer.vector.native`): the whole
        step and autoreset in C, or None (the reference engine, or a traced
        runtime, steps through :meth:`step`)."""
        if self.engine != "seer" or self._sim._trace or self._closed:
            return None
        return NativeCopy(self.spec, step=M.PLUGIN.function("seer_uav_copy_step"),
                          state=self._sim.model.native_env, error=self._native_error, owner=self)

    def _native_error(self, rc: int) -> BaseException:
        return self._sim.name_agent(native_error(self._sim.runtime, rc))

    def _actions_array(self, actions, agents: list[str]) -> np.ndarray:
        """The actions of ``agents`` (the live ones) as an (n, 3) array; any
        problem goes to validate_actions, whose error names the agent and the
        value.  With ``black_death=True`` the dict also names lost agents:
        their actions are ignored."""
        # a dict that also names agents that left (black_death, or a policy run on every possible
        # agent) takes the fast path too: their actions are ignored, as validate_actions would
        lenient = self.black_death or not self.strict_actions
        if type(actions) is dict and (len(actions) == len(agents) or
                                      (lenient and actions.keys() <= self._index.keys())):
            try:
                # no dtype= here: a cast would turn complex actions real silently
                arr = np.array([actions[a] for a in agents])
            except (KeyError, ValueError, TypeError):
                arr = None
            if (arr is not None and arr.dtype.kind in "fiu" and arr.shape == (len(agents), 3) and np.isfinite(arr).all()
                    and arr.min() >= -1.0 and arr.max() <= 1.0):
                return arr.astype(np.float64, copy=False)
        validate_actions(actions, agents, self.action_space, possible_agents=self._index,
                         strict=self.strict_actions and not self.black_death)
        # validate_actions found nothing wrong with the values themselves
        return np.array([np.asarray(actions[a], np.float64) for a in agents])

    # ---- rendering ---------------------------------------------------------------------------

    def render(self):
        self._check_open()
        if self.render_mode is None:
            gymnasium.logger.warn("render() called without render_mode; pass render_mode='rgb_array'")
            return None
        return render_frame(self.cfg, self._sim.agent_rows(), self._sim.J)

    # ---- lifecycle ---------------------------------------------------------------------------

    def _check_open(self):
        if self._closed:
            raise ClosedError("this uav_swarm_v0 env is closed")

    def close(self):
        sim = getattr(self, "_sim", None)
        if sim is not None and not self._closed:
            self._closed = True
            sim.close()

    def __repr__(self):
        return "uav_swarm_v0"


def render_frame(cfg, st, J, size: int = 512) -> np.ndarray:
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


def make_traced(scenario=None, entities=None, workers=2):
    """The swarm's events on a runtime built with ``trace=True``: the
    ``make_traced`` hook (:func:`seer.envs._common.traced`) of
    ``seer trace uav_swarm_v0``.

    Only the events run (no actions, no readout), so the trace shows the
    runtime's work on the model.  ``scenario`` is a key of
    :data:`SCENARIOS` (None: ``"default"``), ``entities`` the number of UAVs
    (None: the scenario's), ``workers`` the pool size.

    Example:
        >>> runtime, step, close = make_traced("small", workers=1)
        >>> events = step(); runtime.trace.summary()["windows"] > 0
        True
        >>> close()
    """
    cfg = M.make_config("default" if scenario is None else scenario, entities)
    sim = M.SeerSim(cfg, workers=workers, trace=True)

    def step() -> int:
        sim.advance()
        return sim.last_events

    return traced(sim, step)
