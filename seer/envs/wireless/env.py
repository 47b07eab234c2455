"""The `WirelessEnv` ParallelEnv and its factories; public as `seer.envs.wireless_v0`, whose docstring describes the env."""

from __future__ import annotations

import functools
from typing import Any

import gymnasium
import numpy as np

from seer._checks import check_seed
from seer.errors import MisuseError
from seer.native_env import NativeEnv
from seer.vector.native import NativeSpec

from seer.envs import _common
from seer.envs.wireless import cellular as wm
from seer.envs.wireless.reference import WirelessReference

__all__ = ["parallel_env", "env", "raw_env", "WirelessEnv", "SCENARIOS", "make_traced"]

SCENARIOS = wm.SCENARIOS
ENGINES = ("seer", "reference")


class WirelessEnv(NativeEnv):
    """PettingZoo ParallelEnv of wireless_v0 (see the module docstring), a :class:`seer.NativeEnv`.

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
        trace: Record the runtime's trace (``seer trace wireless_v0``).
    """

    metadata = {"name": "wireless_v0", "render_modes": ["rgb_array"], "is_parallelizable": True,
                "render_fps": 10}
    entities_arg = "num_ue"
    native_autoreset = False  # the initial state is drawn in numpy: seer.vector resets through reset()
    #: state() is the agents' observations concatenated (lost agents zero): seer.integrations.torchrl
    #: builds it from seer.vector's rows instead of calling state() on every copy
    state_from_observations = True

    def __init__(self, scenario: str = "small", workers: Any = "auto", max_cycles: int = wm.EP_MAX_TIME,
                 render_mode: str | None = None, full_buffer: bool = False, layout: Any = None,
                 engine: str = "seer", num_ue: int | None = None, move_period=(0.5, 2.0),
                 max_pause: float = 10.0, mean_on: float = 10.0, mean_off: float = 10.0,
                 strict_actions: bool = False, black_death: bool = False, debug: bool | None = None,
                 trace: bool = False):
        self._core = None
        self.max_cycles = _common.check_int("max_cycles", max_cycles, 1)
        if engine not in ENGINES:
            raise ValueError(f"engine={engine!r} is unknown: expected one of {list(ENGINES)}")
        self.params = p = wm.make_params(scenario, num_ue=num_ue, full_buffer=full_buffer, move_period=move_period,
                                         max_pause=max_pause, mean_on=mean_on, mean_off=mean_off)
        self.layout = wm.check_layout(layout, p)
        self.scenario, self.engine = p.scenario.name, engine
        self.num_bs, self.num_ue = p.num_bs, p.num_ue
        spec = NativeSpec(agents=[f"ue_{i}" for i in range(p.num_ue)],
                          observation=gymnasium.spaces.Box(-1.0, 1.0, (p.obs_size,), np.float32),
                          action=gymnasium.spaces.Discrete(p.num_bs + 1))
        base = dict(workers=workers, render_mode=render_mode, black_death=black_death,
                    strict_actions=strict_actions, debug=debug, trace=trace)
        if engine == "seer":
            from seer.envs.wireless.model import WirelessModel, WirelessSeer, queue_capacity

            super().__init__(spec, WirelessModel(p), capacity=queue_capacity(p), **base)
            self._core = WirelessSeer(p, runtime=self.runtime, max_cycles=self.max_cycles, obs=self.rows.obs)
        else:
            super().__init__(spec, None, **base)
            self._core = WirelessReference(p)
        self._np_random = None

    @property
    def steps(self) -> int:
        """Steps since the reset (the core counts them: seer.vector's native
        path steps the core without :meth:`step`)."""
        return self._core.steps

    def state(self) -> np.ndarray:
        """The global state (see the module docstring): a new array, from the
        core's rows, which seer.vector's native path writes too."""
        self._check_open()
        return self._core.obs.reshape(-1).copy()

    # ---- what NativeEnv asks of the env ---------------------------------------------------

    def reset(self, seed=None, options=None):
        self._check_open()
        if seed is not None:  # later resets without a seed draw from it, as Gymnasium's np_random
            self._np_random = np.random.default_rng(check_seed(seed))
        return super().reset(seed, options)

    def next_seed(self) -> int:
        if self._np_random is None:
            self._np_random = np.random.default_rng()
        return int(self._np_random.integers(0, 2**31 - 1))

    def reset_rows(self, seed):
        layout = (self.reset_options or {}).get("layout")
        layout = self.layout if layout is None else wm.check_layout(layout, self.params)
        obs = self._core.reset(seed, layout)
        if obs is not self.rows.obs:  # the seer engine observes into the rows themselves
            self.rows.obs[:] = obs

    def copy_step(self):
        """The whole step in C (``seer_wireless_copy_step``, around ``wl_env_step``)."""
        if self.engine == "seer":
            from seer.envs.wireless.model import PLUGIN

            return PLUGIN.function("seer_wireless_copy_step"), self._core.native_env

    def step_rows(self):  # engine="reference"
        r = self.rows
        r.obs[:], r.rew[:] = self._core.step(r.act)
        r.trunc[:] = r.ended[0] = self._core.steps >= self.max_cycles

    def render_frame(self):
        if self._episode is None:
            raise MisuseError("render() needs an episode: call reset() first")
        c = self._core
        return draw_frame(self.params, c.ue_positions, c.connections, getattr(c, "util", np.zeros(self.num_ue)),
                          steps=c.steps, t=c.t)

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


def draw_frame(params: wm.WirelessParams, ue_xy: np.ndarray, conn: np.ndarray, util: np.ndarray,
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


make_traced = WirelessEnv.make_traced  # seer trace wireless_v0
