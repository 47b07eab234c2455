"""wireless_v0 as a SEER model: native handlers (seer/envs/wireless/csrc/wireless.c, the
plug-in module seer.envs.wireless._wireless_c) run the events; the same module's
step-end kernels turn the drained state into observations and rewards, and
its ``wl_env_step`` runs a whole env step for the single env and for
seer.vector's native copy alike.

Entities ``0..B-1`` are base stations, ``B..B+U-1`` UEs.  Event kinds:

=========  ======  ==========================================================
kind       runs    what it does
=========  ======  ==========================================================
action     UE      the agent's action at the step start: release links below
                   the SNR threshold, then toggle the link to BS ``k``
                   (payload ``k + 1``; no-ops are not sent)
release    UE      release links whose SNR fell below the threshold (at the
                   step boundary after the measurement that saw it)
move       UE      one random-waypoint move (step ``velocity * period``),
                   measurement where the truncated position changed,
                   measurement reports to BSs whose value changed
traffic    UE      the UE's data switches on/off (event-driven mode only);
                   tells its BSs
attach     BS      a UE connected (payload: it has data)
detach     BS      a UE disconnected
report     BS      a UE's measurement (squared distance, -1: out of range)
demand     BS      a connected UE's data switched on/off
=========  ======  ==========================================================

UE -> BS messages take ``DELAY`` (the lookahead).  BSs only receive, so no
handler reads another entity's state: the model needs no snapshots.
"""

from __future__ import annotations

import math

import numpy as np

from seer.capi import Plugin
from seer.model import EventKind, Model
from seer.stpa import make_runtime

from seer.envs.wireless import _wireless_c
from seer.envs.wireless import cellular as wm
from seer.envs.wireless._wireless_c import ffi, lib

#: the env's C code, checked against this SEER's C API
PLUGIN = Plugin(_wireless_c)

KIND_NAMES = ("action", "release", "move", "traffic", "attach", "detach", "report", "demand")
ACTION, RELEASE, MOVE, TRAFFIC = 0, 1, 2, 3


def _ptr(ctype: str, arr: np.ndarray):
    assert arr.flags.c_contiguous
    return ffi.cast(ctype, ffi.from_buffer(arr))


class WirelessModel(Model):
    """The SEER model of :class:`seer.envs.wireless.cellular.WirelessParams`."""

    def __init__(self, params: wm.WirelessParams):
        B, U = params.num_bs, params.num_ue
        E = B + U
        self.params = params
        self.num_entities = E
        self.lookahead = wm.DELAY
        self.step_length = wm.DT  # simulated time of one env step (for STPA's probe)
        self.kinds = [EventKind(name, PLUGIN.handler(f"wl_{name}")) for name in KIND_NAMES]
        self.shared_state = ()  # every cross-entity read goes through messages
        self.layout: dict | None = None
        self.state = {
            "pos": np.zeros((E, 2)),
            "wp": np.zeros((E, 2)),
            "has_wp": np.zeros(E, np.uint8),
            "wp_next": np.zeros(E, np.int32),
            "ipos": np.zeros((E, 2), np.int32),
            "d2": np.zeros((E, B), np.int32),
            "snr": np.zeros((E, B)),
            "ok": np.zeros((E, B), np.uint8),
            "d2_sent": np.zeros((E, B), np.int32),
            "conn": np.zeros((E, B), np.uint8),
            "on": np.zeros(E, np.uint8),
            "period": np.ones(E),
            "release_at": np.full(E, -1.0),
            "member": np.zeros((E, U), np.uint8),
            "on_rep": np.zeros((E, U), np.uint8),
            "d2_rep": np.full((E, U), -1, np.int32),
            "n_conn": np.zeros(E, np.int32),
            "n_on": np.zeros(E, np.int32),
        }
        self.bs_xy = np.ascontiguousarray(params.bs_xy)
        self.snr_table, self.rate_table, self.ok_table = wm.channel_tables(wm.max_d2(params))
        c = ffi.new("wl_model *")
        c.num_bs, c.num_ue, c.full_buffer = B, U, int(params.full_buffer)
        c.width, c.height = float(params.scenario.width), float(params.scenario.height)
        c.velocity = wm.UE_DEFAULTS["velocity"]
        c.delay = wm.DELAY
        c.max_pause, c.mean_on, c.mean_off = params.max_pause, params.mean_on, params.mean_off
        c.idle = float(wm.scale_utility(wm.UTILITY_DEFAULTS["lower"]))
        c.util_w1, c.util_w2, c.util_w3 = wm.UTILITY_DEFAULTS["coeffs"]
        c.util_lower, c.util_upper = wm.UTILITY_DEFAULTS["lower"], wm.UTILITY_DEFAULTS["upper"]
        c.table_len = len(self.snr_table)
        c.snr_table = _ptr("double *", self.snr_table)
        c.rate_table = _ptr("double *", self.rate_table)
        c.ok_table = _ptr("uint8_t *", self.ok_table)
        c.bs_xy = _ptr("int32_t *", self.bs_xy)
        for name in self.state:
            ctype = {np.float64: "double *", np.uint8: "uint8_t *", np.int32: "int32_t *"}[self.state[name].dtype.type]
            setattr(c, name, _ptr(ctype, self.state[name]))
        self._c = c
        self.native_model = c
        self._set_layout_waypoints([np.zeros((0, 2))] * U)

    def _set_layout_waypoints(self, waypoints: list) -> None:
        U = self.params.num_ue
        lens = np.array([len(w) for w in waypoints], np.int32)
        off = np.zeros(U, np.int32)
        off[1:] = np.cumsum(lens)[:-1]
        # one spare row so that the pointer is valid even without waypoints
        flat = np.ascontiguousarray(np.concatenate([np.asarray(w, np.float64).reshape(-1, 2) for w in waypoints]
                                                   + [np.zeros((1, 2))]))
        self._layout_arrays = (flat, off, lens)  # keep alive: C holds pointers
        self._c.layout_wp = _ptr("double *", flat)
        self._c.layout_off = _ptr("int32_t *", off)
        self._c.layout_len = _ptr("int32_t *", lens)

    def reset(self, runtime, seed: int) -> None:
        p = self.params
        B, U = p.num_bs, p.num_ue
        init = wm.initial_state(p, seed, self.layout)
        self._set_layout_waypoints(init.waypoints)
        s = self.state
        for name, arr in s.items():
            arr[...] = 0
        s["release_at"][:] = -1.0
        s["d2_rep"][:] = -1
        s["pos"][B:] = init.pos
        s["ipos"][B:] = np.trunc(init.pos).astype(np.int32)
        d2 = wm.truncated_d2(init.pos, self.bs_xy).astype(np.int32)
        s["d2"][B:] = d2
        s["snr"][B:] = self.snr_table[d2]
        s["ok"][B:] = self.ok_table[d2]
        sent = np.where(self.ok_table[d2] == 1, d2, -1).astype(np.int32)
        s["d2_sent"][B:] = sent
        s["d2_rep"][:B] = sent.T  # the BSs start out knowing the initial measurement
        s["on"][B:] = init.on
        s["period"][B:] = init.period
        ent = np.arange(B, B + U, dtype=np.int32)
        if p.full_buffer:
            runtime.schedule(ent, init.next_move, np.full(U, MOVE, np.int32))
        else:
            runtime.schedule(np.concatenate([ent, ent]), np.concatenate([init.next_move, init.next_traffic]),
                             np.concatenate([np.full(U, MOVE, np.int32), np.full(U, TRAFFIC, np.int32)]))


def queue_capacity(params: wm.WirelessParams) -> int:
    """Events that can be pending at once: every entity's own plus the UEs' reports in flight."""
    B, U = params.num_bs, params.num_ue
    lo = params.move_period[0] if not params.full_buffer else 1.0
    in_flight = U * (B + 4) * (math.ceil(wm.DELAY / lo) + 2)
    return max(4096, 8 * (B + U) + in_flight)


class WirelessSeer:
    """Array-level wireless_v0 on a SEER runtime of :class:`WirelessModel`
    (``runtime``, or one built from ``workers``, ``trace`` and ``debug``),
    observing into ``obs`` (a C-contiguous float32 ``(U, 4B+1)`` array) if given:
    ``reset(seed) -> obs``, ``step(actions) -> (obs, rewards)``.

    ``actions`` is an int array of length U (0: no-op, k: toggle BS k-1).
    Observations are a ``(U, 4B+1)`` float32 array, rewards ``(U,)`` float64;
    both buffers are reused by the next call (copy to keep them).  A step is
    one C call (``wl_env_step``), the one the env's copy step
    (``seer_wireless_copy_step``) makes too; the step count, time and event
    count live in its ``wl_env`` (:attr:`native_env`), so they follow native
    steps as well.
    """

    engine = "seer"

    def __init__(self, params: wm.WirelessParams, workers: int | str = 1, *, trace: bool = False,
                 max_cycles: int | None = None, debug: bool | None = None, runtime=None,
                 obs: np.ndarray | None = None):
        if runtime is None:  # array-level use; the env passes the runtime its base class built
            runtime = make_runtime(WirelessModel(params), workers, capacity=queue_capacity(params), trace=trace,
                                   debug=debug)
        self.params = params
        B, U = params.num_bs, params.num_ue
        self.model = runtime.model
        self.runtime = runtime
        self.macro = np.zeros(U)
        self.bs_util = np.zeros(B)
        self.reward = np.zeros(U)
        # the env passes its rows' buffer: its copy step then has no observations to copy
        self.obs = np.zeros((U, params.obs_size), np.float32) if obs is None else obs
        self.util = np.zeros(U)
        self._scratch = np.zeros(U)
        e = ffi.new("wl_env *")
        e.m = self.model.native_model
        # the plug-in's own ffi: to it the runtime is an opaque seer_runtime *
        e.rt = ffi.cast("seer_runtime *", self.runtime.native_address)
        e.dt = wm.DT
        e.max_cycles = (1 << 62) if max_cycles is None else int(max_cycles)
        e.macro = _ptr("double *", self.macro)
        e.util = _ptr("double *", self.util)
        e.bs_util = _ptr("double *", self.bs_util)
        e.reward = _ptr("double *", self.reward)
        e.scratch = _ptr("double *", self._scratch)
        e.obs = _ptr("float *", self.obs)
        self.native_env = e
        self._actions = np.zeros(U, np.int64)
        self._p_actions = _ptr("int64_t *", self._actions)

    @property
    def workers(self) -> int:
        """The runtime's pool size now (``workers="auto"`` tunes it between steps)."""
        return self.runtime.workers

    @property
    def t(self) -> float:
        """Start time of the next step."""
        return float(self.native_env.t)

    @property
    def steps(self) -> int:
        """Env steps since the reset."""
        return int(self.native_env.steps)

    @property
    def events(self) -> int:
        """Events run since the reset."""
        return int(self.native_env.events)

    def reset(self, seed: int, layout: dict | None = None):
        e = self.native_env
        with self.runtime.exclusive("reset()"):
            self.model.layout = layout
            self.runtime.reset(seed)
            e.t, e.steps, e.events = 0.0, 0, 0
            lib.wl_finalize(e)
        return self.obs

    def step(self, actions: np.ndarray):
        rt = self.runtime
        self._actions[:] = actions
        with rt.native_step():
            rc = lib.wl_env_step(self.native_env, self._p_actions)
            if rt.tracing:
                rt.collect_trace()
            if rc != lib.SEER_OK:
                rt.fail(rc)
            rt.now = self.t
        return self.obs, self.reward

    # ---- views for rendering and tests -----------------------------------------
    @property
    def ue_positions(self) -> np.ndarray:
        return self.model.state["pos"][self.params.num_bs:]

    @property
    def connections(self) -> np.ndarray:
        """``(U, B)`` the UEs' connections."""
        return self.model.state["conn"][self.params.num_bs:]

    def close(self) -> None:
        self.runtime.close()
