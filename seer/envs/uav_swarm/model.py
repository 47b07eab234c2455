"""The UAV swarm model (``seer.envs.uav_swarm_v0``) as a SEER model with
native handlers, plus the parts both implementations share: configuration,
state arrays, the initial state (drawn in C), the broadcast grid's layout and
the step's outputs (:class:`StepBuffers`).  The step-end readout runs in C for
the SEER engine; its numpy original is the reference's ``NumpyReadout``.

Time.  One *tick* is 0.01 s, the gcd of the UAV periods.  An event at tick
``j`` has time ``j * 0.01`` (computed from the integer, in C and in Python
alike, so equal ticks give equal floats and ``j < J`` iff
``j * 0.01 < J * 0.01``).  Env step ``k`` covers ticks
``[k m, (k + 1) m)`` with ``m = dt / 0.01``; its horizon is ``(k + 1) m * 0.01``.

Event kinds (one entity per UAV; handlers in seer/envs/uav_swarm/csrc/uav_swarm.c, the plug-in
module seer.envs.uav_swarm._uav_swarm_c):

``TICK`` (kind 0)
    UAV ``i``'s own clock, every ``period[i]`` ticks (10, 5 or 2 ticks, i.e.
    10, 20 or 50 Hz, by ``i % 3``), all starting at tick 0.  It (1)
    broadcasts its state ``(p, v)`` at that time, rounded to float32 (the
    message body, ``bcast``; the neighbour tables hold such bodies, in
    32-byte slots of sender, tick and body (``nb``, viewed as ``nb_src``,
    ``nb_tick`` and ``nb_state``), so that a RECV reads one cache line for a
    slot and big swarms' tables stay in cache longer), to the at most
    ``max_recipients`` nearest live UAVs within ``radius`` (candidates from
    the broadcast grid; distances from the window's snapshot positions), as
    RECV events one tick (0.01 s) later; (2) integrates its dynamics over
    one period; (3) schedules its next TICK.
``RECV`` (kind 1)
    A broadcast arrives: the receiver stores it in its neighbour table (the
    latest message of each sender; at most ``table_cap`` senders, newer
    messages first).  The message body is read from the sender's broadcast
    row, which the sender rewrites at its next TICK, two ticks later at the
    earliest (all periods are 2 ticks or longer, and a window holds one
    tick); the payload carries its tick as a check.
Actions.  The action event of a step is the write of the commanded
    accelerations into ``acc`` before ``runtime.step``: it happens at the
    step's start time, before any of the step's events, which is exactly
    where an external action event at that time would be ordered.

Lookahead.  0.005 s, half the 0.01 s broadcast delay, so that the rounding
of tick times (``(j + 1) * 0.01`` may be one ulp under ``j * 0.01 + 0.01``)
can never make a one-tick delay look shorter than the lookahead.  Every
window ``[T, T + 0.005)`` holds exactly the events of one tick.

Slots.  The state's rows and the runtime's entities are slots, not agent
ids: from 128 UAVs on (``SEER_UAV_SPACE_MIN``), the SEER engine orders them in space at reset and
again when the order has decayed (seer/envs/uav_swarm/csrc/uav_swarm.h and uav_swarm_step.c say how and
why); ``UavModel.agent_of`` / ``slot_of`` map between the two, and
``agent_rows()`` reads the state by agent id, and a trace (``seer trace``,
``trace=True``) names each event's agent (``Runtime.trace_entity_ids``).
The reference keeps row = id.

Tiled steps.  On a runtime of one worker, a swarm in space order of 4,096
UAVs or more (``SEER_UAV_TILES_MIN``; smaller ones are faster window by
window) steps tile by tile: tiles of the broadcast grid run through all of the step's ticks
one after the other, so that their rows stay in cache (``step_tiled`` in
uav_swarm_step.c, over the runtime's ``seer_rt_tiled_begin``).  On a pool,
from ``SEER_UAV_POOL_TILES_MIN`` (32,768) UAVs on, the pool's threads run
bands of tiles side by side, each band two rows of tiles behind the one to
its left, so that no two threads ever touch the same UAV
(``seer_rt_tiled_begin_pool``; smaller swarms keep their rows in cache and
step window by window).  The results are those of the window-by-window
step, bit for bit; ``native_env.tiling`` (0 by default, 1 always, -1
never), ``tile_cells`` (the tiles' side; a pool needs 3 or more) and
``tile_band`` (how many tiles along x run row by row before the next band)
choose.

The broadcast grid (cell size ``radius + 2 v_max dt``) is rebuilt once per
env step (in C, ``seer_uav_prepare_step``; the reference builds the same in
numpy with :class:`BroadcastGrid`) from the step-start positions.  A UAV moves at most
``v_max dt`` in a step, so every pair within ``radius`` at any time of the
step lies in neighbouring cells of that grid.  The reference does the same.
From that grid the C step keeps, per UAV, the UAVs of its 27 cells that can
come within range during the step (its ticks scan those lists, not the
cells); where the CPU has AVX2 it compares a row of cells eight entries at a
time (``native_env.cand_simd``: 0 by default, -1 one at a time; both give
the same lists).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping

import numpy as np

from seer.capi import Plugin
from seer.errors import HandlerError
from seer.model import EventKind, Model

from seer.envs.uav_swarm import _uav_swarm_c
from seer.envs.uav_swarm._uav_swarm_c import ffi, lib

#: the env's C code, checked against this SEER's C API
PLUGIN = Plugin(_uav_swarm_c)

TICK_S = 0.01                 # seconds per tick
SEP_SLOTS = lib.SEER_UAV_SEP_SLOTS  # separation pairs kept per UAV on a pool (uav_swarm_step.c)
RATES_HZ = (10, 20, 50)       # UAV i runs at RATES_HZ[i % 3]
PERIOD_TICKS = (10, 5, 2)     # the same, in ticks
LOOKAHEAD_S = 0.5 * TICK_S    # see the module docstring
BROADCAST_DELAY_TICKS = 1     # 0.01 s
STEP_QUANTUM_TICKS = 10       # dt must be a multiple of 0.1 s (lcm of the periods)
OBS_BOUND = 10.0              # observations are clipped to [-OBS_BOUND, OBS_BOUND]
TARGET_SCALE = 20.0           # metres per unit of the target-relative observation

TICK, RECV = lib.SEER_UAV_TICK, lib.SEER_UAV_RECV

#: One slot of a neighbour table (``seer_uav_nb`` in uav_swarm.h): sender,
#: tick and message body together, so that a RECV or an observation reads one
#: cache line for a slot; the state's ``nb_src``, ``nb_tick`` and ``nb_state``
#: are views of an array of these (``nb``).
NB_DTYPE = np.dtype([("src", np.int32), ("tick", np.int32), ("state", np.float32, (6,))])
#: The tables keep ticks as int32: an episode is truncated by this tick at the latest.
MAX_EPISODE_TICKS = 2**31 - 1

SCENARIOS = {"small": 8, "default": 32, "large": 256, "xlarge": 4096, "xxlarge": 65536}


@dataclasses.dataclass(frozen=True)
class UavConfig:
    """Every constant of the model.  Distances in m, times in s."""

    num_uavs: int
    dt: float = 0.1
    k_neighbors: int = 6         # neighbours in the observation
    table_cap: int = 24          # neighbour-table slots
    max_recipients: int = 32     # a broadcast reaches at most this many UAVs
    radius: float = 8.0          # radio / sensing range
    v_max: float = 10.0
    a_max: float = 5.0           # per axis: action in [-1, 1]^3 times a_max
    d_col: float = 1.0           # closer than this: both UAVs are lost
    d_safe: float = 3.0          # separation penalty inside this distance
    goal_radius: float = 1.0
    start_spacing: float = 8.0   # start lattice (jittered)
    formation_spacing: float = 5.0
    layers: int = 4              # lattice layers in z
    pad: float = 16.0            # world margin around the start lattice
    jitter: float = 1.5          # uniform start jitter per axis
    # reward weights
    w_progress: float = 1.0
    w_energy: float = 0.01
    w_separation: float = 1.0
    c_collision: float = 10.0
    c_out_of_bounds: float = 10.0
    r_goal: float = 0.1

    @property
    def ticks_per_step(self) -> int:
        return int(round(self.dt / TICK_S))

    @property
    def lattice_side(self) -> int:
        return max(1, math.ceil(math.sqrt(math.ceil(self.num_uavs / self.layers))))

    @property
    def world_hi(self) -> np.ndarray:
        """The world is the box [0, world_hi]; leaving it loses the UAV."""
        n = self.lattice_side
        return np.array([2 * self.pad + n * self.start_spacing] * 2
                        + [2 * self.pad + self.layers * self.start_spacing])

    @property
    def cell(self) -> float:
        return self.radius + 2.0 * self.v_max * self.dt

    @property
    def grid_dims(self) -> tuple[int, int, int]:
        return tuple(max(1, math.ceil(float(h) / self.cell)) for h in self.world_hi)

    @property
    def max_age_ticks(self) -> int:
        """Table entries older than this (the slowest period) are not observed."""
        return max(PERIOD_TICKS)

    @property
    def obs_dim(self) -> int:
        return 9 + 7 * self.k_neighbors

    @property
    def max_cycles_limit(self) -> int:
        """The longest episode in steps: the neighbour tables keep ticks as int32."""
        return MAX_EPISODE_TICKS // self.ticks_per_step



def check_dt(dt) -> float:
    """``dt`` must be a positive multiple of 0.1 s, so that every UAV's
    control boundaries meet at each step end (observations then show every
    UAV at the same time)."""
    import numbers

    q = STEP_QUANTUM_TICKS * TICK_S
    ok = isinstance(dt, numbers.Real) and not isinstance(dt, bool) and math.isfinite(dt) and dt > 0
    if ok:
        m = round(dt / q)
        ok = m >= 1 and abs(m * q - dt) <= 1e-9 * max(1.0, dt)
    if not ok:
        raise ValueError(f"dt={dt!r} is invalid: expected a positive multiple of {q} s (the least common "
                         f"multiple of the UAV control periods 0.1, 0.05 and 0.02 s)")
    return round(dt / q) * STEP_QUANTUM_TICKS * TICK_S


def make_config(scenario="default", num_uavs=None, dt=0.1, k_neighbors=6) -> UavConfig:
    """Validate the public arguments (errors name the argument and the value)."""
    from seer.envs._common import check_int, check_scenario

    n = check_scenario(scenario, SCENARIOS)
    if num_uavs is not None:
        n = check_int("num_uavs", num_uavs, 1, 1 << 20)
    k = check_int("k_neighbors", k_neighbors, 1, UavConfig.table_cap)
    return UavConfig(num_uavs=n, dt=check_dt(dt), k_neighbors=k)


# ---- state --------------------------------------------------------------------------------

class UavState(dict):
    """The state's arrays by name, each one block (as a runtime snapshots
    them).  ``nb_src``, ``nb_tick`` and ``nb_state`` are views of the
    neighbour tables ``nb`` (its fields ``src``, ``tick`` and ``state``), made
    when asked for, not keys of their own."""

    TABLE_VIEWS = {"nb_src": "src", "nb_tick": "tick", "nb_state": "state"}

    def __missing__(self, name: str) -> np.ndarray:
        field = self.TABLE_VIEWS.get(name)
        if field is None:
            raise KeyError(name)
        return self["nb"][field]


def alloc_state(cfg: UavConfig) -> UavState:
    """The struct-of-arrays state (first axis: UAV), shared by both implementations."""
    n, c = cfg.num_uavs, cfg.table_cap
    st = UavState({
        "pos": np.zeros((n, 3)), "vel": np.zeros((n, 3)), "acc": np.zeros((n, 3)),
        "target": np.zeros((n, 3)), "energy": np.zeros(n),
        "alive": np.zeros(n, np.uint8),
        "period": np.array([PERIOD_TICKS[i % 3] for i in range(n)], np.int32),
        "bcast": np.zeros((n, 6), np.float32), "bcast_tick": np.zeros(n, np.int64),
        "nb": np.zeros((n, c), NB_DTYPE), "nb_count": np.zeros(n, np.int32),
        "sent": np.zeros(n, np.int64), "received": np.zeros(n, np.int64),
        "cell_of": np.zeros((n, 3), np.int32),
    })
    st["ctrl_dt"] = st["period"].astype(np.float64) * TICK_S
    return st


def set_actions(cfg: UavConfig, st, live_idx: np.ndarray, actions: np.ndarray) -> None:
    """Commanded acceleration of the live UAVs: action in [-1, 1]^3 times a_max."""
    st["acc"][live_idx] = np.asarray(actions, np.float64) * cfg.a_max


# ---- grids -------------------------------------------------------------------------------

def _offsets(half: bool) -> np.ndarray:
    offs = [(dz, dy, dx) for dz in (-1, 0, 1) for dy in (-1, 0, 1) for dx in (-1, 0, 1)]
    if half:  # (0, 0, 0) first, then the 13 lexicographically greater offsets
        offs = [o for o in offs if o >= (0, 0, 0)]
    return np.array(offs, np.int64)


_HALF, _FULL = _offsets(True), _offsets(False)


def neighbour_pairs(cells: np.ndarray, dims, *, half: bool) -> tuple[np.ndarray, np.ndarray]:
    """Pairs ``(a, b)`` of rows of ``cells`` (n x 3 integer cell coordinates
    x y z, each in ``[0, dims)``) whose cells differ by at most one along
    every axis, through a dense cell table: O(n + cells).

    ``half``: each unordered pair once.  Otherwise every ordered pair with
    a != b.  The order of the pairs is a pure function of ``cells``.
    """
    n = len(cells)
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    pd = np.asarray(dims, np.int64) + 2  # an empty cell on each side: offsets never wrap
    key = ((cells[:, 2].astype(np.int64) + 1) * pd[1] + (cells[:, 1] + 1)) * pd[0] + (cells[:, 0] + 1)
    order = np.argsort(key, kind="stable")
    ks = key[order]
    start = np.zeros(int(pd.prod()) + 1, np.int64)
    np.cumsum(np.bincount(key, minlength=len(start) - 1), out=start[1:])
    offs = _HALF if half else _FULL
    lin = (offs[:, 0] * pd[1] + offs[:, 1]) * pd[0] + offs[:, 2]
    nk = ks[:, None] + lin[None, :]
    lo = start[nk]
    hi = start[nk + 1]
    if half:  # same cell: only the entries after this one
        lo[:, 0] = np.arange(1, n + 1)
    cnt = np.maximum(hi - lo, 0).ravel()
    total = int(cnt.sum())
    rows = np.repeat(np.arange(n * len(offs)) // len(offs), cnt)
    first = np.repeat(lo.ravel() - (np.cumsum(cnt) - cnt), cnt)
    a, b = order[rows], order[first + np.arange(total)]
    if not half:
        keep = a != b
        a, b = a[keep], b[keep]
    return a, b


class BroadcastGrid:
    """The per-step broadcast grid: cell size ``radius + 2 v_max dt`` over the
    world box, a CSR list of the live UAVs of each cell (dense cell index
    ``(z * ny + y) * nx + x``).  Arrays keep their addresses (C holds them)."""

    def __init__(self, cfg: UavConfig, cell_of: np.ndarray):
        self.cfg = cfg
        self.dims = np.array(cfg.grid_dims, np.int64)
        self.cell_of = cell_of
        self.cell_start = np.zeros(int(np.prod(self.dims)) + 1, np.int32)
        self.cell_items = np.zeros(cfg.num_uavs, np.int32)
        self.num_live = 0

    def build(self, pos: np.ndarray, alive: np.ndarray) -> None:
        nx, ny, nz = self.dims
        c = np.floor(pos / self.cfg.cell).astype(np.int64)
        np.clip(c, 0, self.dims - 1, out=c)
        self.cell_of[:] = c
        live = np.flatnonzero(alive)
        cl = c[live]
        key = (cl[:, 2] * ny + cl[:, 1]) * nx + cl[:, 0]
        order = np.argsort(key, kind="stable")
        self.cell_items[: len(live)] = live[order]
        self.cell_items[len(live):] = -1
        self.cell_start[0] = 0
        np.cumsum(np.bincount(key, minlength=len(self.cell_start) - 1), out=self.cell_start[1:])
        self.num_live = len(live)


# ---- the SEER model -------------------------------------------------------------------------

class AgentRows(Mapping):
    """A model's state arrays with their rows in agent-id order: ``rows[name]``
    is read when asked for, as a new read-only array whose row ``i`` is
    agent ``i``'s (writing to it raises instead of changing nothing).  The
    SEER engine keeps its rows in slots ordered in space
    (seer/envs/uav_swarm/csrc/uav_swarm.h); this is the view a caller indexing by agent id
    wants.  Neighbour-table sender ids (``nb_src``) are agent ids already."""

    def __init__(self, state: dict[str, np.ndarray], slot_of: np.ndarray | None):
        self._state = state
        self._slot_of = slot_of

    def __getitem__(self, name: str) -> np.ndarray:
        arr = self._state[name]
        rows = arr.copy() if self._slot_of is None else arr[self._slot_of]
        rows.flags.writeable = False
        return rows

    def __iter__(self):
        return iter(self._state)

    def __len__(self) -> int:
        return len(self._state)


EP_TICK, EP_STEPS, EP_LIVE, EP_VERSION, EP_TRUNCATED, EP_SEED = (
    lib.SEER_UAV_EP_TICK, lib.SEER_UAV_EP_STEPS, lib.SEER_UAV_EP_LIVE, lib.SEER_UAV_EP_VERSION,
    lib.SEER_UAV_EP_TRUNCATED, lib.SEER_UAV_EP_SEED)


class StepBuffers:
    """What one env step produces and the episode counters, as numpy arrays
    shared by both engines (the SEER engine's C step writes them in place).

    ``episode``: ``[tick J, steps, live UAVs, version, truncated, seed
    stream]``; the version changes whenever the agent list does (losses,
    truncation, reset); a reset without a seed takes the stream's next one.
    """

    def __init__(self, cfg: UavConfig):
        n = cfg.num_uavs
        self.obs = np.zeros((n, cfg.obs_dim), np.float32)
        self.reward = np.zeros(n)
        self.collided = np.zeros(n, np.uint8)
        self.oob = np.zeros(n, np.uint8)
        self.episode = np.zeros(lib.SEER_UAV_EP_LEN, np.int64)
        self.episode[EP_SEED] = np.random.SeedSequence().entropy & (2**63 - 1)
        self.max_cycles = cfg.max_cycles_limit

    def start_episode(self, num_uavs: int, seed: int) -> None:
        ep = self.episode
        ep[EP_TICK] = ep[EP_STEPS] = ep[EP_TRUNCATED] = 0
        ep[EP_LIVE] = num_uavs
        ep[EP_VERSION] += 1
        ep[EP_SEED] = seed

    @property
    def J(self) -> int:
        return int(self.episode[EP_TICK])


class UavModel(Model):
    """The swarm as a SEER model: one entity per UAV, native TICK and RECV handlers.

    ``native_env`` (a ``seer_uav_env``) adds what a whole step in C needs
    (see seer/envs/uav_swarm/csrc/uav_swarm.h); its runtime is set by :class:`SeerSim`.
    """

    def __init__(self, cfg: UavConfig):
        self.cfg = cfg
        n = cfg.num_uavs
        if cfg.max_recipients > lib.SEER_UAV_MAX_RECIPIENTS or cfg.table_cap > lib.SEER_UAV_MAX_TABLE:
            raise ValueError("max_recipients / table_cap exceed the C buffers")
        self.num_entities = n
        self.lookahead = LOOKAHEAD_S
        self.step_length = cfg.dt  # simulated time of one env step (for STPA's probe)
        self.kinds = [EventKind("tick", PLUGIN.handler("seer_uav_tick")),
                      EventKind("recv", PLUGIN.handler("seer_uav_recv"))]
        self.state = alloc_state(cfg)
        # Read across UAVs: positions (radio range), from the window-start
        # snapshot, and broadcasts (messages), from their live rows: the
        # sender rewrites a row two ticks later at the earliest, so no window
        # reads a row that it writes (seer/envs/uav_swarm/csrc/uav_swarm.h).  Snapshotting
        # them too would copy every broadcast row at every window for no
        # reader that needs it.
        self.shared_state = ("pos",)
        snap = self.snapshot_targets()
        self.grid = BroadcastGrid(cfg, self.state["cell_of"])
        self.out = StepBuffers(cfg)
        st = self.state
        keep = []  # the cdata that keep the buffers referenced

        def ptr(ctype, arr):
            assert arr.flags.c_contiguous
            p = ffi.cast(ctype, ffi.from_buffer(arr))
            keep.append(p)
            return p

        c = ffi.new("seer_uav *")
        c.num_uavs = n
        c.table_cap = cfg.table_cap
        c.max_recipients = cfg.max_recipients
        c.grid_nx, c.grid_ny, c.grid_nz = (int(d) for d in cfg.grid_dims)
        c.tick = TICK_S
        c.radius2 = cfg.radius * cfg.radius
        c.v_max = cfg.v_max
        c.v_max2 = cfg.v_max * cfg.v_max
        c.pos = ptr("double *", st["pos"])
        c.vel = ptr("double *", st["vel"])
        c.acc = ptr("double *", st["acc"])
        c.ctrl_dt = ptr("double *", st["ctrl_dt"])
        c.period = ptr("int32_t *", st["period"])
        c.alive = ptr("uint8_t *", st["alive"])
        c.energy = ptr("double *", st["energy"])
        c.bcast = ptr("float *", st["bcast"])
        c.bcast_tick = ptr("int64_t *", st["bcast_tick"])
        c.nb = ptr("seer_uav_nb *", st["nb"])
        c.nb_count = ptr("int32_t *", st["nb_count"])
        c.sent = ptr("int64_t *", st["sent"])
        c.received = ptr("int64_t *", st["received"])
        # Slots (seer/envs/uav_swarm/csrc/uav_swarm.h): the state's rows are slots; a spatial
        # reset orders them by start cell.  Identity until then.
        self.agent_of = np.arange(n, dtype=np.int32)
        self.slot_of = np.arange(n, dtype=np.int32)
        c.agent_of = ptr("int32_t *", self.agent_of)
        c.snap_pos = ptr("double *", snap["pos"])
        # a tiled step's positions at tick starts (uav_swarm_step.c), instead of snapshots
        self._tile_rows = {"snap_even": np.zeros((n, 3)), "snap_odd": np.zeros((n, 3)),
                           "tile_list": np.zeros(n, np.int32),
                           "tile_col_start": np.zeros(int(np.prod(cfg.grid_dims)) + 1, np.int32)}
        c.tiled = 0
        c.tile_snap[0] = ptr("double *", self._tile_rows["snap_even"])
        c.tile_snap[1] = ptr("double *", self._tile_rows["snap_odd"])
        c.cell_of = ptr("int32_t *", self.grid.cell_of)
        c.cell_start = ptr("int32_t *", self.grid.cell_start)
        c.cell_items = ptr("int32_t *", self.grid.cell_items)
        self.native_model = c

        e = ffi.new("seer_uav_env *")
        sep_dims = np.maximum(np.ceil(cfg.world_hi / cfg.d_safe).astype(np.int64), 1)
        self._scratch = {
            "prev_dist": np.zeros(n), "sep_sorted": np.zeros(n, np.uint64), "sep_key": np.zeros(n, np.int32),
            "sep_a": np.zeros(n), "sep_b": np.zeros(n), "dist": np.zeros(n),
            "perm": np.zeros(cfg.lattice_side ** 2 * cfg.layers, np.int32),
            "sep_slot_b": np.zeros(n * SEP_SLOTS, np.uint32), "sep_slot_pen": np.zeros(n * SEP_SLOTS),
            "sep_count": np.zeros(n, np.int32), "grid_pos": np.zeros(3 * n),
        }
        e.m = c
        e.rt = ffi.NULL
        e.ticks_per_step = cfg.ticks_per_step
        e.k_neighbors = cfg.k_neighbors
        e.obs_dim = cfg.obs_dim
        e.max_age_ticks = cfg.max_age_ticks
        e.max_cycles = self.out.max_cycles
        e.sep_nx, e.sep_ny, e.sep_nz = (int(d) for d in sep_dims)
        e.cell = cfg.cell
        e.a_max = cfg.a_max
        e.radius = cfg.radius
        e.d_safe, e.d_col, e.goal_radius = cfg.d_safe, cfg.d_col, cfg.goal_radius
        e.w_progress, e.w_energy, e.w_separation = cfg.w_progress, cfg.w_energy, cfg.w_separation
        e.c_collision, e.c_out_of_bounds, e.r_goal = cfg.c_collision, cfg.c_out_of_bounds, cfg.r_goal
        e.target_scale = TARGET_SCALE
        e.obs_bound = OBS_BOUND
        e.lattice_side, e.layers = cfg.lattice_side, cfg.layers
        e.start_spacing, e.formation_spacing = cfg.start_spacing, cfg.formation_spacing
        e.pad, e.jitter = cfg.pad, cfg.jitter
        hi = cfg.world_hi
        for k in range(3):
            e.centre[k] = hi[k] / 2
            e.half[k] = hi[k] / 2
            e.hi[k] = hi[k]
        e.tiling = 0
        e.cand_simd = 0
        e.tile_cells = 0
        e.tile_band = 0
        e.tile_list = ptr("int32_t *", self._tile_rows["tile_list"])
        e.tile_col_start = ptr("int32_t *", self._tile_rows["tile_col_start"])
        e.agent_of = ffi.cast("int32_t *", c.agent_of)
        e.slot_of = ptr("int32_t *", self.slot_of)
        e.acc = c.acc
        e.alive = c.alive
        e.target = ptr("double *", st["target"])
        e.cell_start, e.cell_items, e.cell_of = c.cell_start, c.cell_items, c.cell_of
        e.episode = ptr("int64_t *", self.out.episode)
        e.obs = ptr("float *", self.out.obs)
        e.reward = ptr("double *", self.out.reward)
        e.collided = ptr("uint8_t *", self.out.collided)
        e.oob = ptr("uint8_t *", self.out.oob)
        ctypes = {np.dtype(np.int32): "int32_t *", np.dtype(np.uint32): "uint32_t *", np.dtype(np.uint64): "uint64_t *",
                  np.dtype(np.float64): "double *"}
        for name, arr in self._scratch.items():
            setattr(e, name, ptr(ctypes[arr.dtype], arr))
        self._keep = keep
        self.native_env = e

    def queue_capacity(self) -> int:
        """Events that can be pending at once: a TICK per UAV plus the
        messages of two consecutive ticks (at most max_recipients per sender
        each), plus slack for the workers' node caches."""
        n = self.cfg.num_uavs
        return n * (2 * self.cfg.max_recipients + 2) + 8192

    def set_max_cycles(self, max_cycles: int | None) -> None:
        """Episodes are truncated after ``max_cycles`` steps, and after
        ``UavConfig.max_cycles_limit`` (2**31 - 1 ticks) whatever it says,
        None included: the neighbour tables keep ticks as int32."""
        limit = self.cfg.max_cycles_limit
        self.out.max_cycles = limit if max_cycles is None else min(int(max_cycles), limit)
        self.native_env.max_cycles = self.out.max_cycles

    def initial_state(self, seed: int, *, spatial: bool | None = False) -> None:
        """The initial state for ``seed`` (in place), drawn in C
        (``seer_uav_initial_state``): starts on a random subset of a
        ``side x side x layers`` lattice of spacing ``start_spacing`` with
        uniform jitter; targets on a random subset of the same lattice shape
        with spacing ``formation_spacing``, centred in the world (a
        formation the swarm has to fly into, crossing paths).

        ``spatial``: True, the state's rows (slots) ordered by start cell
        (:attr:`agent_of` says whose row is where); False, row ``i`` is
        agent ``i``'s; None, as the SEER engine does (in space order from
        ``SEER_UAV_SPACE_MIN`` UAVs on).  The agents' states are the same
        either way."""
        flag = -1 if spatial is None else int(bool(spatial))
        lib.seer_uav_initial_state(self.native_env, int(seed) & (2**64 - 1), flag)

    def agent_rows(self) -> AgentRows:
        """The state by agent id (see :class:`AgentRows`)."""
        return AgentRows(self.state, self.slot_of)

    def reset(self, runtime, seed: int) -> None:
        self.initial_state(seed, spatial=None)
        n = self.cfg.num_uavs
        runtime.schedule(np.arange(n, dtype=np.int32), np.zeros(n), np.full(n, TICK, np.int32),
                         np.zeros(n, np.int64))

    def prepare_step(self) -> None:
        """Before each env step: rebuild the broadcast grid, zero the energy."""
        lib.seer_uav_prepare_step(self.native_env)


def auto_workers(cfg: UavConfig, model) -> int:
    """``workers="auto"``: STPA decides from whole C steps of throwaway
    instances (:func:`seer.stpa.select_for_stepper`), not from a probe of
    the model's events alone.  A step also builds the sensing grid and the
    broadcast candidate lists and reads the results out, and its ticks scan
    those lists: a runtime probe of the events without them overrates a
    larger pool on ``large``, where those O(N) phases are a large share of
    the step.  Kept per config for the process, as the model probe's
    choices were."""
    from seer.stpa import select_for_stepper

    def make(workers):
        sim = SeerSim(cfg, workers=workers)
        sim.reset(0)
        return sim.step, sim.runtime.close

    static = {"entities": float(cfg.num_uavs), "kinds": float(len(model.kinds)), "native_kind_share": 1.0,
              "lookahead": float(model.lookahead)}
    return select_for_stepper(make, static, key=("uav_swarm_v0", cfg)).workers


class SeerSim:
    """The swarm run by SEER: ``reset(seed, max_cycles)``, then per step
    write the live agents' actions (:meth:`set_actions`) and call
    :meth:`step`, which runs the whole step in C (one call, the GIL
    released): broadcast grid, the step's events, readout, losses.  Results
    land in :attr:`out` (a :class:`StepBuffers`, rows by agent id).
    ``advance()`` runs only the events (tests and ``seer trace``).

    :attr:`state` holds the rows in slots ordered in space (see
    seer/envs/uav_swarm/csrc/uav_swarm.h): :meth:`agent_rows` reads them by agent id."""

    name = "seer"

    def __init__(self, cfg: UavConfig, workers="auto", *, trace: bool = False, debug: bool | None = None,
                 runtime=None):
        from seer.stpa import make_runtime

        self.cfg = cfg
        if runtime is None:
            model = UavModel(cfg)
            # "auto": chosen from whole C steps (auto_workers), then tuned on the real ones
            runtime = make_runtime(model, workers, capacity=model.queue_capacity(), trace=trace,
                                   choose=lambda: auto_workers(cfg, model), debug=debug)
        self.runtime = runtime  # the env passes the one its base class built (of a UavModel)
        self.model = runtime.model
        self.state = self.model.state
        self.out = self.model.out
        # the plug-in's own ffi: the runtime is an opaque seer_runtime * to it
        self.model.native_env.rt = ffi.cast("seer_runtime *", self.runtime.native_address)
        # a trace names agents, not slots: agent_of is renamed in place, only between steps
        self.runtime.trace_entity_ids = self.model.agent_of
        self._trace = runtime.tracing
        self.last_events = 0

    @property
    def workers(self) -> int:
        """The runtime's pool size now (``workers="auto"`` tunes it between steps)."""
        return self.runtime.workers

    @property
    def J(self) -> int:
        return self.out.J

    def next_seed(self) -> int:
        return int(lib.seer_uav_next_seed(self.model.native_env))

    def live_agents(self) -> np.ndarray:
        """The live agents' ids, ascending."""
        return np.flatnonzero(self.state["alive"][self.model.slot_of])

    def set_actions(self, agents: np.ndarray, actions: np.ndarray) -> None:
        """The commanded accelerations of ``agents`` (ids): action in [-1, 1]^3 times a_max."""
        set_actions(self.cfg, self.state, self.model.slot_of[agents], actions)

    def agent_rows(self) -> AgentRows:
        return self.model.agent_rows()

    def name_agent(self, err: BaseException) -> BaseException:
        """A handler error of the runtime names an entity, i.e. a slot: the
        same error naming the agent (``entity`` becomes the agent id)."""
        slot = getattr(err, "entity", None)
        if not isinstance(err, HandlerError) or slot is None or not 0 <= slot < self.cfg.num_uavs:
            return err
        agent = int(self.model.agent_of[slot])
        named = type(err)(f"{err} (entity {slot} is the slot of agent uav_{agent})", entity=agent, kind=err.kind,
                          time=err.time)
        named.__cause__ = err.__cause__
        return named

    def _fail(self, rc: int) -> None:
        try:
            self.runtime.fail(rc)
        except HandlerError as err:
            raise self.name_agent(err) from err.__cause__

    def reset(self, seed: int, max_cycles: int | None = None) -> None:
        """The whole reset in C (``seer_uav_env_reset``, which seer.vector's
        native autoreset runs too)."""
        rt = self.runtime
        seed = int(seed) & (2**64 - 1)
        with rt.exclusive("reset()"):
            rc = self.reset_native(seed, max_cycles)
            rt.mark_reset(seed)
            if rc != lib.SEER_OK:
                self._fail(rc)

    def reset_native(self, seed: int, max_cycles: int | None = None) -> int:
        """The reset's C call (its status); the caller holds the runtime and records the reset."""
        self.model.set_max_cycles(max_cycles)
        return lib.seer_uav_env_reset(self.model.native_env, int(seed) & (2**64 - 1))

    def step(self) -> None:
        rt = self.runtime
        with rt.native_step():
            events0 = rt.events_total()
            rc = lib.seer_uav_env_step(self.model.native_env)
            self.last_events = rt.events_total() - events0
            if self._trace:
                rt.collect_trace()
            if rc != lib.SEER_OK:
                self._fail(rc)
            rt.now = self.J * TICK_S

    def advance(self) -> None:
        self.model.prepare_step()
        j1 = self.J + self.cfg.ticks_per_step
        try:
            self.last_events = self.runtime.step(j1 * TICK_S).events
        except HandlerError as err:
            raise self.name_agent(err) from err.__cause__
        self.out.episode[EP_TICK] = j1

    def close(self) -> None:
        self.runtime.close()
