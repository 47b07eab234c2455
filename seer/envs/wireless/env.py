"""The `WirelessEnv` ParallelEnv and its factories; public as `seer.envs.wireless_v0`, whose docstring describes the env."""

from __future__ import annotations

import functools
from typing import Any

import gymnasium
import numpy as np

from seer.errors import ClosedError, MisuseError
from seer.vector.native import NativeCopy, NativeSpec

from seer.envs import _common
from seer.envs.wireless import cellular as wm
from seer.envs.wireless.reference import WirelessReference

__all__ = ["parallel_env", "env", "raw_env", "WirelessEnv", "SCENARIOS", "make_traced"]

SCENARIOS = wm.SCENARIOS
ENGINES = ("seer", "reference")

_INT_TYPES = frozenset({int, np.int64, np.int32, np.int16, np.int8, np.uint8, np.uint16, np.uint32, np.uint64,
                        np.intc, np.intp, np.longlong})


class WirelessEnv(_common.ClosingParallelEnv):
    """PettingZoo ParallelEnv of wireless_v0 (see the module docstring).

    Args:
        scenario: ``"small"``, ``"medium"``, ``"large"``, ``"xlarge"`` or ``"xxlarge"``.
        workers: SEER worker threads, or ``"auto"`` (STPA's choice).
        max_cycles: Steps per episode (mobile-env's ``EP_MAX_TIME``, 100).
        render_mode: ``None`` or ``"rgb_array"``.
        full_buffer: mobile-env's per-step behaviour (see the module docstring).
        layout: Initial UE positions and waypoints to use at every reset, e.g.
            copied from mobile-env: ``{"ue_positions": (U, 2) array,
            "waypoints": [ (n_u, 2) array per UE ]}``; UEs draw their own
            waypoints once theirs run out.  ``reset(options={"layout": ...})``
            overrides it for one episode.
        engine: ``"seer"`` (event-driven, native handlers) or
            ``"reference"`` (the time-stepped numpy reference of the same
            model, for comparisons).
        num_ue: Number of UEs (default: the scenario's).
        move_period, max_pause, mean_on, mean_off: Event-driven mode's
            mobility and traffic (ignored with ``full_buffer=True``).
        strict_actions: Refuse actions for agents that left the episode
            (default: ignored, as PettingZoo's converters do).
        black_death: Add ``infos[agent]["active"]`` (always True: no UE
            leaves an episode early); see the module docstring.
        debug: The runtime's debug mode (:class:`seer.Runtime`; None: on
            with ``SEER_DEBUG=1``): a handler writing another UE's rows
            fails the step.  The reference engine ignores it.
    """

    metadata = {"name": "wireless_v0", "render_modes": ["rgb_array"], "is_parallelizable": True,
                "render_fps": 10}
    #: state() is the agents' observations concatenated (lost agents zero): seer.integrations.torchrl
    #: builds it from seer.vector's rows instead of calling state() on every copy
    state_from_observations = True

    def __init__(self, scenario: str = "small", workers: Any = "auto", max_cycles: int = wm.EP_MAX_TIME,
                 render_mode: str | None = None, full_buffer: bool = False, layout: Any = None,
                 engine: str = "seer", num_ue: int | None = None, move_period=(0.5, 2.0),
                 max_pause: float = 10.0, mean_on: float = 10.0, mean_off: float = 10.0,
                 strict_actions: bool = False, black_death: bool = False, debug: bool | None = None):
        self._runtime = None
        self.strict_actions = bool(strict_actions)
        self.black_death = _common.check_bool("black_death", black_death)
        self._core = None
        workers = _common.check_workers(workers)
        self.max_cycles = _common.check_int("max_cycles", max_cycles, 1)
        self.render_mode = _common.check_render_mode(render_mode, self.metadata["render_modes"])
        if engine not in ENGINES:
            raise ValueError(f"engine={engine!r} is unknown: expected one of {list(ENGINES)}")
        self.params = wm.make_params(scenario, num_ue=num_ue, full_buffer=full_buffer, move_period=move_period,
                                     max_pause=max_pause, mean_on=mean_on, mean_off=mean_off)
        self.layout = wm.check_layout(layout, self.params)
        self.scenario = self.params.scenario.name
        self.num_bs, self.num_ue = self.params.num_bs, self.params.num_ue
        self.possible_agents = [f"ue_{i}" for i in range(self.num_ue)]
        self._all_agents = list(self.possible_agents)
        self._index = {a: i for i, a in enumerate(self.possible_agents)}
        #: the rows of seer.vector's native path; the spaces derive from it
        self.spec = NativeSpec(agents=self.possible_agents,
                               observation=gymnasium.spaces.Box(-1.0, 1.0, (self.params.obs_size,), np.float32),
                               action=gymnasium.spaces.Discrete(self.num_bs + 1))
        self._obs_space = self.spec.observation
        self._act_space = self.spec.action
        self.observation_spaces = {a: self._obs_space for a in self.possible_agents}
        self.action_spaces = {a: self._act_space for a in self.possible_agents}
        #: the global state's space (see "Global state" in the module docstring)
        self.state_space = gymnasium.spaces.Box(-1.0, 1.0, (self.num_ue * self.params.obs_size,), np.float32)
        if engine == "seer":
            from seer.envs.wireless.model import WirelessSeer

            self._core = WirelessSeer(self.params, workers, max_cycles=self.max_cycles, debug=debug)
            self._runtime = self._core.runtime
        else:
            self._core = WirelessReference(self.params)
        self.engine = engine
        self._np_random = None
        self._was_reset = False
        self._closed = False

    @property
    def workers(self) -> int:
        """SEER's pool size now: ``workers="auto"`` may move it between steps
        (STPA's tuner; results do not change).  The reference engine: 1."""
        return self._core.workers

    # ---- spaces ----------------------------------------------------------------------

    def observation_space(self, agent):
        try:
            return self.observation_spaces[agent]
        except KeyError:
            raise ValueError(f"agent={agent!r} is unknown: expected one of {self.possible_agents[:4]}...") from None

    def action_space(self, agent):
        try:
            return self.action_spaces[agent]
        except KeyError:
            raise ValueError(f"agent={agent!r} is unknown: expected one of {self.possible_agents[:4]}...") from None

    def state(self) -> np.ndarray:
        """The global state (see the module docstring): a new array."""
        self._check_open()
        return self._core.obs.reshape(-1).copy()

    # ---- episode -----------------------------------------------------------------------

    def _infos(self) -> dict:
        return {a: {"active": True} for a in self.agents} if self.black_death else {a: {} for a in self.agents}

    @property
    def steps(self) -> int:
        """Steps since the reset (the core counts them: seer.vector's native
        path steps the core without :meth:`step`)."""
        return self._core.steps

    @property
    def agents(self) -> list[str]:
        """Every UE from the reset until the episode's last step, then none."""
        return self._all_agents if self._was_reset and self._core.steps < self.max_cycles else []

    def reset(self, seed=None, options=None):
        self._check_open()
        if seed is not None:
            seed = _common.seed_from(seed, None)
            self._np_random = np.random.default_rng(seed)
        elif self._np_random is None:
            self._np_random = np.random.default_rng()
        seed = _common.seed_from(seed, self._np_random)
        layout = self.layout
        if options is not None and options.get("layout") is not None:
            layout = wm.check_layout(options["layout"], self.params)
        obs = self._core.reset(seed, layout)
        self._was_reset = True
        return dict(zip(self.agents, obs.copy())), self._infos()

    def step(self, actions):
        self._check_open()
        if not self.agents:
            if not self._was_reset:
                raise MisuseError("step() called before reset(): call reset() first")
            if self.strict_actions and actions:
                _common.validate_actions(actions, [], self.action_space, possible_agents=self._index, strict=True)
            return {}, {}, {}, {}, {}  # the episode has ended (PettingZoo's envs answer so too)
        agents = self.agents
        acts = self._action_array(actions)
        obs, rew = self._core.step(acts)
        done = self._core.steps >= self.max_cycles
        infos = {a: {"active": True} for a in agents} if self.black_death else {a: {} for a in agents}
        return (dict(zip(agents, obs.copy())), dict(zip(agents, rew.tolist())),
                dict.fromkeys(agents, False), dict.fromkeys(agents, done), infos)

    def seer_native_copy(self) -> NativeCopy | None:
        """seer.vector's native path (:mod:`seer.vector.native`): the whole
        step in C (``seer_wireless_copy_step``, which runs the same
        ``wl_env_step`` as :meth:`step`); resets go through :meth:`reset`
        (the initial state is drawn in numpy).  None for the reference
        engine, a traced runtime or a closed env."""
        if self.engine != "seer" or self._core.tracing or self._closed:
            return None
        from seer.envs.wireless.model import PLUGIN

        return NativeCopy(self.spec, step=PLUGIN.function("seer_wireless_copy_step"), state=self._core.native_env,
                          autoreset=False, error=self._native_error, owner=self)

    def _native_error(self, rc: int) -> BaseException:
        return _common.native_error(self._core.runtime, rc)

    def _action_array(self, actions) -> np.ndarray:
        agents = self.agents
        try:
            if len(actions) == len(agents):
                vals = [actions[a] for a in agents]
                if set(map(type, vals)) <= _INT_TYPES:
                    arr = np.array(vals, np.int64)
                    if arr.min() >= 0 and arr.max() <= self.num_bs:
                        return arr
        except (KeyError, TypeError, OverflowError):
            pass
        # The slow path names the offending agent and value.
        _common.validate_actions(actions, agents, self.action_space, possible_agents=self._index,
                                 strict=self.strict_actions)
        return np.array([int(np.asarray(actions[a]).item()) for a in agents], np.int64)

    # ---- rendering ---------------------------------------------------------------------

    def render(self):
        self._check_open()
        if self.render_mode is None:
            gymnasium.logger.warn("render() called without a render_mode; pass render_mode='rgb_array'")
            return None
        if not self._was_reset:
            raise MisuseError("render() needs an episode: call reset() first")
        return render_frame(self.params, self._core.ue_positions, self._core.connections,
                            getattr(self._core, "util", np.zeros(self.num_ue)),
                            steps=getattr(self._core, "steps", None), t=getattr(self._core, "t", None))

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedError("this wireless_v0 env is closed")

    def close(self) -> None:
        if self._core is not None:
            self._closed = True
            self._core.close()

    def __repr__(self) -> str:
        return (f"wireless_v0(scenario={self.scenario!r}, engine={self.engine!r}, workers={self.workers}, "
                f"full_buffer={self.params.full_buffer})")


# ---- numpy drawing -------------------------------------------------------------------------

_FRAME = 400  # pixels along the longer side of the map


@functools.lru_cache(maxsize=4)
def _disk(radius: int) -> tuple[np.ndarray, np.ndarray]:
    dy, dx = np.mgrid[-radius:radius + 1, -radius:radius + 1]
    keep = dx * dx + dy * dy <= radius * radius
    return dy[keep], dx[keep]


def render_frame(params: wm.WirelessParams, ue_xy: np.ndarray, conn: np.ndarray, util: np.ndarray,
                 steps: int | None = None, t: float | None = None) -> np.ndarray:
    """An ``(H, W, 3)`` uint8 picture a person can read, numpy only.

    Header: the step, simulated time, connected UEs and their mean utility.
    Map (with its border): BSs as black squares, numbered when there are at
    most 20; UEs as disks coloured by utility (red -1, yellow 0, green +1);
    their connections as blue lines.  Footer: the utility colour bar and
    the legend.  The frame is ``_FRAME`` pixels along the map's longer side.
    """
    from seer.envs import _render as D

    W, H = params.scenario.width, params.scenario.height
    s0 = _FRAME / max(W, H)
    w, h = int(round(W * s0)), int(round(H * s0))
    header, footer, margin = 24, 38, 8
    s = min((w - 2 * margin - 1) / W, (h - header - footer - 2 * margin - 1) / H)
    mw, mh = int(round(W * s)), int(round(H * s))
    ox = (w - mw) // 2
    oy = header + margin + (h - header - footer - 2 * margin - 1 - mh) // 2
    img = np.full((h, w, 3), 222, np.uint8)
    D.fill_rect(img, oy, ox, oy + mh + 1, ox + mw + 1, (250, 250, 250))
    D.rect(img, oy - 2, ox - 2, oy + mh + 3, ox + mw + 3, (40, 40, 40), width=2)

    def px(xy):
        xy = np.asarray(xy, np.float64).reshape(-1, 2)
        c = np.clip(np.rint(ox + xy[:, 0] * s).astype(np.int64), ox, ox + mw)
        r = np.clip(np.rint(oy + (H - xy[:, 1]) * s).astype(np.int64), oy, oy + mh)
        return r, c

    bs = params.bs_xy.astype(np.float64)
    br, bc = px(bs)
    ur, uc = px(ue_xy)
    conn = np.asarray(conn, bool)
    u, b = np.nonzero(conn)
    D.lines(img, ur[u], uc[u], br[b], bc[b], (40, 110, 220))
    q = 4  # BSs: black 9 x 9 squares
    for r, c in zip(br.tolist(), bc.tolist()):
        D.fill_rect(img, r - q, c - q, r + q + 1, c + q + 1, 0)
    stops = [(215, 40, 40), (235, 200, 40), (40, 170, 60)]
    util = np.asarray(util, np.float64)
    colours = D.ramp((util + 1.0) / 2.0, stops)
    radius = 4 if len(ur) <= 100 else 2  # crowded maps: smaller UEs, so the BSs stay visible
    D.disks(img, ur, uc, radius + 1, (30, 30, 30))
    D.disks(img, ur, uc, radius, colours)
    if len(bs) <= 20:  # BS numbers last, on a white tab, so no UE or link hides them
        for k, (r, c) in enumerate(zip(br.tolist(), bc.tolist())):
            tw = D.text_size(str(k))[1]
            D.fill_rect(img, r - q - 11, c - tw // 2 - 1, r - q - 1, c + tw // 2 + 2, (255, 255, 255))
            D.text(img, r - q - 10, c - tw // 2, str(k), (20, 20, 20))

    connected = conn.any(axis=1)
    D.fill_rect(img, 0, 0, header, w, (36, 40, 48))
    parts = [] if steps is None else [f"STEP {int(steps)}"]
    if t is not None:
        parts.append(f"T {float(t):.1f} S")
    parts.append(f"CONNECTED {int(connected.sum())}/{len(connected)}")
    parts.append(f"MEAN UTILITY {util.mean() if util.size else 0.0:+.2f}")
    title = "  ".join(parts)
    D.text(img, 8, 8, title, (255, 255, 255))
    name_w = D.text_size("WIRELESS_V0")[1]
    if 8 + D.text_size(title)[1] + 16 + name_w <= w:
        D.text(img, 8, w - 8 - name_w, "WIRELESS_V0", (170, 180, 200))
    fy = h - footer + 6
    x = D.text(img, fy, 8, "UTILITY -1", (30, 30, 30)) + 6
    D.colour_bar(img, fy, x, 80, 7, stops)
    x = D.text(img, fy, x + 86, "+1", (30, 30, 30)) + 14
    D.fill_rect(img, fy - 1, x, fy + 8, x + 9, 0)
    D.text(img, fy, x + 14, "BS", (30, 30, 30))
    fy2 = fy + 15
    D.lines(img, [fy2 + 3], [8], [fy2 + 3], [26], (40, 110, 220))
    x = D.text(img, fy2, 32, "CONNECTION", (30, 30, 30)) + 14
    bar = 100.0 * s
    if bar < 20:
        bar, label = 500.0 * s, "500 M"
    else:
        label = "100 M"
    bar = int(round(bar))
    D.fill_rect(img, fy2 + 2, x, fy2 + 5, x + bar, (30, 30, 30))
    D.text(img, fy2, x + bar + 6, label, (30, 30, 30))
    return img


# ---- factories -----------------------------------------------------------------------------


def parallel_env(**kwargs) -> WirelessEnv:
    """The PettingZoo ParallelEnv (see :class:`WirelessEnv` for the arguments)."""
    return WirelessEnv(**kwargs)


def raw_env(**kwargs):
    """The unwrapped AEC env (PettingZoo's conversion of :func:`parallel_env`, no wrapper)."""
    return _common.make_raw_aec(WirelessEnv, **kwargs)


def env(**kwargs):
    """The AEC env: :func:`raw_env` in PettingZoo's order-enforcing wrapper."""
    return _common.make_aec(WirelessEnv, **kwargs)


def make_traced(scenario=None, entities=None, workers=2):
    """The network's events on a runtime built with ``trace=True``: the
    ``make_traced`` hook (:func:`seer.envs._common.traced`) of
    ``seer trace wireless_v0``.

    Every step sends the no-op action of every UE, so the trace shows the
    runtime's work on the model alone.  ``scenario`` is a key of
    :data:`SCENARIOS` (None: ``"large"``), ``entities`` the number of UEs
    (None: the scenario's), ``workers`` the pool size.

    Example:
        >>> runtime, step, close = make_traced("small", workers=1)
        >>> step() > 0
        True
        >>> close()
    """
    from seer.envs.wireless.model import WirelessSeer

    params = wm.make_params("large" if scenario is None else scenario, num_ue=entities)
    core = WirelessSeer(params, workers, trace=True)
    actions = np.zeros(params.num_ue, np.int64)

    def step() -> int:
        e0 = core.events
        core.step(actions)
        return core.events - e0

    return _common.traced(core, step)
