"""mobile-env's cellular model as plain vectorised numpy functions.

Every function here takes numpy arrays (any broadcastable shapes) and
reproduces one piece of mobile-env 2.1.0 (``mobile_env.core``) with its
default parameters:

============================  ==================================================
:func:`okumura_hata`          ``channels.OkumuraHata.power_loss`` (path loss, dB)
:func:`snr`                   ``channels.Channel.snr`` (linear SNR)
:func:`data_rate`             ``channels.Channel.datarate`` (Shannon, SNR threshold)
:func:`truncated_distance`    ``entities.*.point`` distances (shapely points at
                              integer-truncated coordinates)
:func:`resource_fair`         ``schedules.ResourceFair.share``
:func:`utility`               ``utilities.BoundedLogUtility.utility``
:func:`scale_utility`         ``utilities.BoundedLogUtility.scale``
:func:`station_utilities`     ``base.MComCore.station_utilities``
:func:`reward`                ``handlers.multi_agent.MComMAHandler.reward``
:func:`observation`           ``handlers.multi_agent.MComMAHandler.observation``
============================  ==================================================

The module also holds what SEER's ``wireless_v0`` and its numpy reference
share: the scenarios (:data:`SCENARIOS`), the parameters
(:class:`WirelessParams`), the per-distance lookup tables
(:func:`channel_tables`); the counter-based random streams are SEER's own
(:func:`seer.rng.counter_uniform`).

Units follow mobile-env: distances in map units (metres), frequency in MHz,
heights in metres, transmit power in dBm, noise in the same linear unit as
``10 ** (dBm / 10)``, bandwidth in Hz, rates in bit/s.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any, Mapping, Sequence

import numpy as np

from seer.rng import counter_uniform  # noqa: F401  (wm.counter_uniform: the reference draws through it)

#: mobile-env's guard against log10(0) in the path loss.
EPSILON = 1e-16

# ---- mobile-env defaults (MComCore.default_config) ---------------------------------

#: Base station: bandwidth (Hz), carrier frequency (MHz), transmit power (dBm), height (m).
BS_DEFAULTS = {"bw": 9e6, "freq": 2500.0, "tx": 30.0, "height": 50.0}
#: User equipment: speed (units per step), SNR threshold, noise, antenna height (m).
UE_DEFAULTS = {"velocity": 1.5, "snr_tr": 2e-8, "noise": 1e-9, "height": 1.5}
#: BoundedLogUtility(lower, upper, coeffs).
UTILITY_DEFAULTS = {"lower": -20.0, "upper": 20.0, "coeffs": (10.0, 0.0, 10.0)}
#: Episode length (steps).
EP_MAX_TIME = 100


# ---- channel ----------------------------------------------------------------------


def okumura_hata(distance, frequency=BS_DEFAULTS["freq"], bs_height=BS_DEFAULTS["height"],
                 ue_height=UE_DEFAULTS["height"]):
    """Okumura-Hata path loss in dB for BS-UE ``distance`` (mobile-env's formula,
    including its ``EPSILON`` added to the distance)."""
    distance = np.asarray(distance, dtype=np.float64)
    ch = 0.8 + (1.1 * np.log10(frequency) - 0.7) * ue_height - 1.56 * np.log10(frequency)
    tmp_1 = 69.55 - ch + 26.16 * np.log10(frequency) - 13.82 * np.log10(bs_height)
    tmp_2 = 44.9 - 6.55 * np.log10(bs_height)
    return tmp_1 + tmp_2 * np.log10(distance + EPSILON)


def snr(loss, tx_power=BS_DEFAULTS["tx"], noise=UE_DEFAULTS["noise"]):
    """Linear SNR of a link with path ``loss`` (dB): ``10**((tx - loss)/10) / noise``."""
    loss = np.asarray(loss, dtype=np.float64)
    return 10 ** ((tx_power - loss) / 10) / noise


def data_rate(snr_value, bandwidth=BS_DEFAULTS["bw"], snr_threshold=UE_DEFAULTS["snr_tr"]):
    """Maximum data rate: ``bw * log2(1 + snr)`` where ``snr > snr_threshold``, else 0."""
    s = np.asarray(snr_value, dtype=np.float64)
    ok = s > snr_threshold
    return np.where(ok, bandwidth * np.log2(1 + np.where(ok, s, 0.0)), 0.0)


def connectable(snr_value, snr_threshold=UE_DEFAULTS["snr_tr"]):
    """mobile-env's ``check_connectivity``: a link exists where ``snr > threshold``."""
    return np.asarray(snr_value) > snr_threshold


def truncated_distance(ue_xy, bs_xy):
    """Distances between UEs and BSs as mobile-env measures them: shapely points
    at ``int()``-truncated coordinates.

    Args:
        ue_xy: ``(U, 2)`` UE positions.
        bs_xy: ``(B, 2)`` BS positions.

    Returns:
        ``(U, B)`` float64 distances.
    """
    return np.sqrt(truncated_d2(ue_xy, bs_xy).astype(np.float64))


def truncated_d2(ue_xy, bs_xy):
    """Squared distances (exact integers, ``(U, B)`` int64) between truncated positions."""
    ui = np.trunc(np.asarray(ue_xy, dtype=np.float64)).astype(np.int64)
    bi = np.trunc(np.asarray(bs_xy, dtype=np.float64)).astype(np.int64)
    d = ui[:, None, :] - bi[None, :, :]
    return d[..., 0] * d[..., 0] + d[..., 1] * d[..., 1]


# ---- scheduling, utility, reward ------------------------------------------------------


def resource_fair(max_rates, connected):
    """ResourceFair: each BS splits its capacity equally among its connected UEs.

    Args:
        max_rates: ``(B, U)`` rate each UE would get with the whole BS.
        connected: ``(B, U)`` bool connection matrix.

    Returns:
        ``(B, U)`` allocated rates (0 where not connected).
    """
    connected = np.asarray(connected, dtype=bool)
    n = connected.sum(axis=-1, keepdims=True)
    return np.where(connected, np.asarray(max_rates, np.float64) / np.maximum(n, 1), 0.0)


def libm_log(x) -> np.ndarray:
    """Natural log of each element through the C library's ``log`` (``math.log``).

    The SEER engine's C kernel (``wl_utilities``) calls that same ``log``;
    ``np.log`` may use a SIMD implementation (CPU-dependent) that is one ulp
    off glibc's on about 1 input in 4000, which would break the bit-identity
    of the two engines' rewards."""
    x = np.asarray(x, dtype=np.float64)
    return np.fromiter(map(math.log, x.ravel().tolist()), np.float64, x.size).reshape(x.shape)


def utility(rate, lower=UTILITY_DEFAULTS["lower"], upper=UTILITY_DEFAULTS["upper"],
            coeffs=UTILITY_DEFAULTS["coeffs"]):
    """BoundedLogUtility: ``clip(w1 * log(w2 + rate) / log(w3), lower, upper)``, and
    ``lower`` where ``rate <= 0`` (the log: :func:`libm_log`)."""
    w1, w2, w3 = coeffs
    r = np.asarray(rate, dtype=np.float64)
    pos = r > 0.0
    u = w1 * libm_log(np.where(pos, w2 + r, 1.0)) / math.log(w3)
    return np.where(pos, np.clip(u, lower, upper), float(lower))


def scale_utility(u, lower=UTILITY_DEFAULTS["lower"], upper=UTILITY_DEFAULTS["upper"]):
    """Map a utility from ``[lower, upper]`` to ``[-1, 1]`` (mobile-env's ``scale``)."""
    return 2 * (np.asarray(u, dtype=np.float64) - lower) / (upper - lower) - 1


def scaled_utility(rate, lower=UTILITY_DEFAULTS["lower"], upper=UTILITY_DEFAULTS["upper"],
                   coeffs=UTILITY_DEFAULTS["coeffs"]):
    """``scale_utility(utility(rate))``: what mobile-env stores in ``env.utilities``."""
    return scale_utility(utility(rate, lower, upper, coeffs), lower, upper)


def station_utilities(util, connected, idle=-1.0):
    """Mean (scaled) utility of each BS's connected UEs; ``idle`` for a BS without any.

    Args:
        util: ``(U,)`` scaled UE utilities.
        connected: ``(B, U)`` bool connection matrix.
        idle: Value of an idle BS (mobile-env: ``scale(lower)`` = -1).
    """
    connected = np.asarray(connected, dtype=bool)
    n = connected.sum(axis=1)
    # Sum in UE order (cumsum is sequential), as SEER's kernel does.
    s = np.cumsum(np.where(connected, np.asarray(util, np.float64)[None, :], 0.0), axis=1)[:, -1]
    return np.where(n > 0, s / np.maximum(n, 1), idle)


def reward(util, bs_util, n_connected, in_range):
    """mobile-env's multi-agent reward of each UE:
    ``(sum of bs_util over BSs in range + own util) / (connections of those BSs + 1)``.

    Args:
        util: ``(U,)`` scaled utilities.
        bs_util: ``(B,)`` station utilities.
        n_connected: ``(B,)`` number of UEs connected to each BS.
        in_range: ``(B, U)`` bool, BS reachable by UE (SNR above threshold).
    """
    in_range = np.asarray(in_range, dtype=bool)
    s = np.cumsum(np.where(in_range, np.asarray(bs_util, np.float64)[:, None], 0.0), axis=0)[-1]
    cnt = np.where(in_range, np.asarray(n_connected)[:, None], 0).sum(axis=0)
    return (s + util) / (cnt + 1)


def observation(connected_ue, snr_ue, util, bs_util, n_connected, idle=-1.0, out=None):
    """mobile-env's multi-agent observation, one float32 row per UE:
    ``[connections (B), snr / max snr (B), utility (1), broadcast BS utilities (B),
    connected-UE counts of BSs in range, normalised (B)]``.

    Args:
        connected_ue: ``(U, B)`` the UEs' connections.
        snr_ue: ``(U, B)`` linear SNRs.
        util: ``(U,)`` scaled utilities.
        bs_util: ``(B,)`` station utilities.
        n_connected: ``(B,)`` number of UEs connected to each BS.
        idle: Broadcast value of an unreachable BS.
        out: Optional ``(U, 4B+1)`` float32 array to write into.
    """
    snr_ue = np.asarray(snr_ue, np.float64)
    U, B = snr_ue.shape
    if out is None:
        out = np.empty((U, 4 * B + 1), np.float32)
    ok = snr_ue > UE_DEFAULTS["snr_tr"]
    out[:, :B] = connected_ue
    out[:, B:2 * B] = snr_ue / snr_ue.max(axis=1, keepdims=True)
    out[:, 2 * B] = util
    out[:, 2 * B + 1:3 * B + 1] = np.where(ok, np.asarray(bs_util, np.float64)[None, :], idle)
    c = np.where(ok, np.asarray(n_connected)[None, :], 0)
    out[:, 3 * B + 1:] = c / np.maximum(c.sum(axis=1), 1)[:, None]
    return out


# ---- scenarios ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Scenario:
    """A map: its size, BS positions and number of UEs."""

    name: str
    width: int
    height: int
    bs_positions: tuple
    num_ue: int

    @property
    def num_bs(self) -> int:
        return len(self.bs_positions)


def _xlarge_stations(nx: int = 10, ny: int = 5) -> tuple:
    # 50 BSs on a jittered 10 x 5 grid over 600 x 600: the density of `large`
    # (13 BSs on 300 x 300 is one per ~6900 m^2; this is one per 7200 m^2).
    # Fixed integers, computed once from a hash-free formula.  xxlarge: the
    # same pattern over a 20 x 10 grid (1200 x 1200, 200 BSs).
    pos = []
    for k in range(nx * ny):
        i, j = k % nx, k // nx
        jx = (k * 37) % 23 - 11
        jy = (k * 53) % 29 - 14
        pos.append((30 + 60 * i + jx, 60 + 120 * j + jy))
    return tuple(pos)


SCENARIOS: dict[str, Scenario] = {
    # mobile_env/scenarios/small.py, medium.py, large.py
    "small": Scenario("small", 200, 200, ((110, 130), (65, 80), (120, 30)), 5),
    "medium": Scenario("medium", 200, 300,
                       ((95, 240), (100, 140), (105, 60), (35, 200), (40, 95), (165, 220), (160, 110)), 15),
    "large": Scenario("large", 300, 300,
                      ((50, 100), (60, 210), (90, 60), (120, 130), (130, 215), (140, 190), (160, 70),
                       (200, 250), (210, 135), (230, 70), (250, 240), (255, 170), (265, 50)), 30),
    "xlarge": Scenario("xlarge", 600, 600, _xlarge_stations(), 500),
    # issue 15: one env of 10,000 UEs (4x xlarge's area and BSs, 5x its UE density)
    "xxlarge": Scenario("xxlarge", 1200, 1200, _xlarge_stations(20, 10), 10_000),
}


# ---- parameters and shared tables ------------------------------------------------------

#: Event timestamps live on a 1/256 s lattice; kinds use disjoint residues so
#: that one UE never has two of its own events at the same instant.
TICK = 1.0 / 256.0
#: Step length (mobile-env: one time unit per step).
DT = 1.0
#: UE -> BS signalling delay (connection changes, measurement reports,
#: demand updates); the model's lookahead.
DELAY = 0.25
#: Full-buffer mode: UEs move (and measure) at this offset within each step.
FULL_BUFFER_MOVE_PHASE = 0.75


@dataclasses.dataclass(frozen=True)
class WirelessParams:
    """Everything that defines one wireless_v0 model instance.

    Attributes:
        scenario: The map.
        num_ue: Number of UEs (defaults to the scenario's).
        full_buffer: mobile-env mode: every UE always has data and moves and
            measures once per step.  Otherwise (event-driven mode) UEs move
            at their own periods (``move_period`` range, quantised to 1/64 s),
            pause up to ``max_pause`` at each waypoint, and switch their
            traffic on and off after uniform times with means ``mean_on`` /
            ``mean_off``; a BS shares its capacity among connected UEs that
            currently have data.
    """

    scenario: Scenario
    num_ue: int
    full_buffer: bool = False
    move_period: tuple = (0.5, 2.0)
    max_pause: float = 10.0
    mean_on: float = 10.0
    mean_off: float = 10.0

    @property
    def num_bs(self) -> int:
        return self.scenario.num_bs

    @property
    def obs_size(self) -> int:
        return 4 * self.num_bs + 1

    @property
    def bs_xy(self) -> np.ndarray:
        return np.trunc(np.asarray(self.scenario.bs_positions, np.float64)).astype(np.int32)


@functools.lru_cache(maxsize=8)
def channel_tables(max_d2: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """SNR, maximum data rate and connectivity for every integer squared
    distance ``0 .. max_d2`` (with mobile-env's default BS/UE parameters).

    Positions are truncated to integers before distances are taken (as
    mobile-env's shapely points do), so these three tables hold every value
    the channel can produce; SEER's C kernels and the numpy reference both
    read them, which keeps their results bit-identical.
    """
    d2 = np.arange(max_d2 + 1, dtype=np.float64)
    s = snr(okumura_hata(np.sqrt(d2)))
    rate = data_rate(s)
    ok = connectable(s).astype(np.uint8)
    for a in (s, rate, ok):
        a.setflags(write=False)
    return s, rate, ok


def max_d2(params: WirelessParams) -> int:
    """Largest squared distance between a UE (inside the map) and any BS."""
    bs = params.bs_xy.astype(np.int64)
    w, h = params.scenario.width, params.scenario.height
    dx = np.maximum(np.abs(bs[:, 0]), np.abs(w - bs[:, 0]))
    dy = np.maximum(np.abs(bs[:, 1]), np.abs(h - bs[:, 1]))
    return int((dx * dx + dy * dy).max())


# ---- counter-based random streams -----------------------------------------------------

#: Salt of the streams that draw initial states at reset (kept apart from the
#: streams handlers draw from, which start at counter 0 for every seed).
RESET_SALT = 0x5EEDC0DE5EEDC0DE


# ---- initial state (shared by SEER and the reference) ------------------------------------


@dataclasses.dataclass
class InitialState:
    """Per-UE initial values drawn at reset (arrays of length U)."""

    pos: np.ndarray        # (U, 2) float64
    period: np.ndarray     # (U,) move period
    next_move: np.ndarray  # (U,) time of the first move
    on: np.ndarray         # (U,) uint8 traffic on
    next_traffic: np.ndarray  # (U,) time of the first traffic switch (inf: never)
    waypoints: list        # per UE: (n, 2) float64 waypoints to use first (layout)


def check_layout(layout: Any, params: WirelessParams) -> dict | None:
    """Validate a ``layout`` option; returns ``{"ue_positions", "waypoints"}``."""
    if layout is None:
        return None
    if not isinstance(layout, Mapping):
        raise ValueError(f"layout={type(layout).__name__} is invalid: expected a dict with keys "
                         f"'ue_positions' and optionally 'waypoints'")
    unknown = set(layout) - {"ue_positions", "waypoints"}
    if unknown:
        raise ValueError(f"layout has unknown keys {sorted(unknown)}: expected 'ue_positions', 'waypoints'")
    U, W, H = params.num_ue, params.scenario.width, params.scenario.height
    out = {"ue_positions": None, "waypoints": [np.zeros((0, 2))] * U}
    if layout.get("ue_positions") is not None:
        pos = np.asarray(layout["ue_positions"], dtype=np.float64)
        if pos.shape != (U, 2):
            raise ValueError(f"layout['ue_positions'] has shape {pos.shape}: expected ({U}, 2)")
        _check_inside("layout['ue_positions']", pos, W, H)
        out["ue_positions"] = pos.copy()
    wps = layout.get("waypoints")
    if wps is not None:
        if len(wps) != U:
            raise ValueError(f"layout['waypoints'] has {len(wps)} entries: expected one per UE ({U})")
        lst = []
        for u, w in enumerate(wps):
            w = np.asarray(w, dtype=np.float64).reshape(-1, 2) if len(w) else np.zeros((0, 2))
            _check_inside(f"layout['waypoints'][{u}]", w, W, H)
            lst.append(w.copy())
        out["waypoints"] = lst
    return out


def _check_inside(name: str, xy: np.ndarray, w: float, h: float) -> None:
    if xy.size and (not np.all(np.isfinite(xy)) or xy[:, 0].min() < 0 or xy[:, 1].min() < 0
                    or xy[:, 0].max() >= w or xy[:, 1].max() >= h):
        raise ValueError(f"{name} must be finite and inside the map [0, {w}) x [0, {h}]")


def initial_state(params: WirelessParams, seed: int, layout: dict | None) -> InitialState:
    """Initial UE positions, periods, traffic and first event times for ``seed``.

    Draws come from counter streams keyed by ``(seed ^ RESET_SALT, entity)``:
    counter 0, 1 the position, 2 the move period, 3 the first move's phase,
    4 the traffic state, 5 the first traffic switch.
    """
    U, B = params.num_ue, params.num_bs
    W, H = float(params.scenario.width), float(params.scenario.height)
    ent = np.arange(B, B + U)
    r = [counter_uniform(int(seed) ^ RESET_SALT, ent, np.full(U, c)) for c in range(6)]
    pos = np.stack([W * r[0], H * r[1]], axis=1)
    if layout is not None and layout["ue_positions"] is not None:
        pos = layout["ue_positions"].copy()
    waypoints = layout["waypoints"] if layout is not None else [np.zeros((0, 2))] * U
    if params.full_buffer:
        period = np.ones(U)
        next_move = np.full(U, FULL_BUFFER_MOVE_PHASE)
        on = np.ones(U, np.uint8)
        next_traffic = np.full(U, np.inf)
    else:
        lo, hi = params.move_period
        period = lo + np.floor(r[2] * ((hi - lo) * 64.0 + 1.0)) / 64.0
        next_move = np.floor(r[3] * period * 64.0) / 64.0 + TICK
        p_on = params.mean_on / (params.mean_on + params.mean_off)
        on = (r[4] < p_on).astype(np.uint8)
        mean = np.where(on == 1, params.mean_on, params.mean_off)
        next_traffic = np.floor(r[5] * 2.0 * mean * 64.0) / 64.0 + 3.0 * TICK
    return InitialState(pos, period, next_move, on, next_traffic, waypoints)


def traffic_duration(u: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """Length of a traffic on/off period from a uniform draw ``u``: uniform on
    ``(0, 2*mean]`` rounded up to 1/64 s (at least 1/64 s)."""
    return np.maximum(np.ceil(u * 2.0 * mean * 64.0), 1.0) / 64.0


def pause_duration(u: np.ndarray, max_pause: float) -> np.ndarray:
    """Pause at a waypoint: uniform on ``[0, max_pause]`` rounded up to 1/64 s."""
    return np.ceil(u * max_pause * 64.0) / 64.0


def make_params(scenario: Any = "small", *, num_ue: Any = None, full_buffer: Any = False,
                move_period: Any = (0.5, 2.0), max_pause: Any = 10.0, mean_on: Any = 10.0,
                mean_off: Any = 10.0) -> WirelessParams:
    """Validated :class:`WirelessParams` (errors name the argument and the value)."""
    import numbers

    if not isinstance(scenario, str) or scenario not in SCENARIOS:
        raise ValueError(f"scenario={scenario!r} is unknown: expected one of {sorted(SCENARIOS)}")
    sc = SCENARIOS[scenario]
    if num_ue is None:
        num_ue = sc.num_ue
    if not isinstance(num_ue, numbers.Integral) or isinstance(num_ue, bool) or not 1 <= num_ue <= 100_000:
        raise ValueError(f"num_ue={num_ue!r} is invalid: expected an integer in [1, 100000]")
    if not isinstance(full_buffer, (bool, np.bool_)):
        raise ValueError(f"full_buffer={full_buffer!r} is invalid: expected True or False")

    def real(name, v, lo, open_lo=False):
        if not isinstance(v, numbers.Real) or isinstance(v, bool) or not np.isfinite(v) or v < lo or (open_lo and v == lo):
            raise ValueError(f"{name}={v!r} is invalid: expected a finite number {'>' if open_lo else '>='} {lo}")
        return float(v)

    if not isinstance(move_period, Sequence) or len(move_period) != 2:
        raise ValueError(f"move_period={move_period!r} is invalid: expected a pair (low, high)")
    lo = real("move_period[0]", move_period[0], 1.0 / 64.0)
    hi = real("move_period[1]", move_period[1], lo)
    for name, v in (("move_period[0]", lo), ("move_period[1]", hi)):
        if v * 64.0 != np.floor(v * 64.0) or v > 1e4:
            raise ValueError(f"{name}={v!r} is invalid: expected a multiple of 1/64 s up to 1e4")
    return WirelessParams(
        scenario=sc, num_ue=int(num_ue), full_buffer=bool(full_buffer), move_period=(lo, hi),
        max_pause=real("max_pause", max_pause, 0.0), mean_on=real("mean_on", mean_on, 0.0, True),
        mean_off=real("mean_off", mean_off, 0.0, True),
    )
