"""uav_swarm_v0's tiled steps (seer/envs/uav_swarm/csrc/uav_swarm_step.c,
step_tiled; the runtime's seer_rt_tiled_begin/run/end): a step runs tiles
of the broadcast grid through all of its ticks, one tile after the other
on a runtime of one worker, in bands side by side on a pool
(seer_rt_tiled_begin_pool, seer_rt_tiled_run_on), instead of one window
per tick over every UAV.  The results must be the untiled step's and the
reference's, bit for bit, whatever the tiles' size, the bands, the pool's
size, the slots' order and the losses; and the runtime must refuse a plan
that lets an entity run ahead of a sender."""

import dataclasses
import threading
import time

import numpy as np
import pytest

from seer._seer_c import ffi as core_ffi
from seer._seer_c import lib as core
from seer.envs.uav_swarm import model as M
from seer.envs.uav_swarm.reference import ReferenceSim


def fly(sim, rng):
    """Fly to the targets with noise: crossing paths, losses, full tables."""
    live = sim.live_agents()
    st = sim.agent_rows()
    act = np.clip(0.3 * (st["target"][live] - st["pos"][live]) - 0.6 * st["vel"][live]
                  + rng.normal(0, 0.3, (len(live), 3)), -1, 1)
    sim.set_actions(live, act)
    return live, act


def assert_same_rows(a, b, k, outs=("obs", "reward", "collided", "oob", "episode")):
    """After step k: the engine ``a`` has ``b``'s outputs and state, bit for bit (``a``'s state by agent id)."""
    for name in outs:
        assert getattr(a.out, name).tobytes() == getattr(b.out, name).tobytes(), (k, name)
    rows = a.agent_rows()
    for name in a.state:
        assert rows[name].tobytes() == b.state[name].tobytes(), (k, name)


def tiled_sim(cfg, workers=1, tiling=1, tile_cells=0, relabel_period=0, slot_layout=1, tile_band=0, **kw):
    sim = M.SeerSim(cfg, workers=workers, **kw)
    e = sim.model.native_env
    e.tiling = tiling
    e.tile_cells = tile_cells
    e.tile_band = tile_band
    e.relabel_period = relabel_period
    e.slot_layout = slot_layout
    return sim


@pytest.mark.parametrize("tile_cells,relabel_period,dt,tile_band", [
    (2, 0, 0.1, 0),  # tiles of 2 x 2 columns: most UAVs sit on a tile's border
    (3, 1, 0.1, 0),  # the slots re-ordered at every step
    (0, 0, 0.2, 0),  # the default tiles; 20 ticks (windows) a step
    (2, 0, 0.1, 1),  # bands of one tile: column after column of tiles
    (3, 0, 0.2, 2),  # bands of two: a band edge every other tile
    (2, 0, 0.1, 1000),  # one band: row after row of the whole grid
])
def test_tiled_steps_match_the_reference_bit_for_bit(tile_cells, relabel_period, dt, tile_band):
    cfg = M.make_config(num_uavs=300, dt=dt)
    a = tiled_sim(cfg, tile_cells=tile_cells, relabel_period=relabel_period, tile_band=tile_band)
    b = ReferenceSim(cfg)
    c = tiled_sim(cfg, tiling=-1, relabel_period=relabel_period)  # untiled: the same events
    try:
        a.reset(5)
        b.reset(5)
        c.reset(5)
        assert a.out.obs.tobytes() == b.out.obs.tobytes()
        rng = np.random.default_rng(5)
        steps = 60
        for k in range(steps):
            live, act = fly(a, rng)
            assert live.tolist() == b.live_agents().tolist()
            b.set_actions(live, act)
            c.set_actions(live, act)
            a.step()
            b.step()
            c.step()
            assert_same_rows(a, b, k)
            # (the reference does not count a lost UAV's last TICK, which does nothing)
            assert a.last_events == c.last_events
        assert a.model.native_env.tiled_steps == steps and c.model.native_env.tiled_steps == 0
        assert cfg.num_uavs - len(a.live_agents()) > 0  # lost UAVs: their last TICK runs after the tiles
    finally:
        a.close()
        c.close()


def test_tiled_steps_with_tight_caps_match_the_reference():
    """Tables of 4 and broadcasts cut to the 3 nearest: every eviction and
    every cut as in the reference, tiled."""
    cfg = dataclasses.replace(M.make_config(num_uavs=200), table_cap=4, max_recipients=3, k_neighbors=3)
    a, b = tiled_sim(cfg, tile_cells=2), ReferenceSim(cfg)
    try:
        a.reset(3)
        b.reset(3)
        rng = np.random.default_rng(0)
        for k in range(40):
            live, act = fly(a, rng)
            b.set_actions(live, act)
            a.step()
            b.step()
            assert_same_rows(a, b, k, outs=("obs",))
        assert a.model.native_env.tiled_steps == 40
    finally:
        a.close()


@pytest.mark.parametrize("workers,tile_cells,tile_band,relabel_period", [
    (2, 3, 0, 0),  # the smallest tiles a pool takes, bands of one tile
    (2, 4, 2, 1),  # bands of two, the slots re-ordered at every step
    (3, 3, 1, 0),  # three threads: bands three rows apart
    (2, 0, 1000, 0),  # one band: the pool's other thread finds nothing to do
])
def test_tiled_steps_on_a_pool_match_the_reference_bit_for_bit(workers, tile_cells, tile_band, relabel_period):
    """A pool's threads run bands of tiles side by side, each band two rows
    of tiles behind the one to its left: the same results as the reference,
    tiled or not, with losses and full tables."""
    cfg = dataclasses.replace(M.make_config(num_uavs=900, dt=0.1), table_cap=6, max_recipients=4)
    a = tiled_sim(cfg, workers=workers, tile_cells=tile_cells, tile_band=tile_band, relabel_period=relabel_period)
    b = ReferenceSim(cfg)
    try:
        a.reset(11)
        b.reset(11)
        rng = np.random.default_rng(11)
        steps = 25
        for k in range(steps):
            live, act = fly(a, rng)
            assert live.tolist() == b.live_agents().tolist()
            b.set_actions(live, act)
            a.step()
            b.step()
            assert_same_rows(a, b, k)
        assert a.model.native_env.tiled_steps == steps
        assert cfg.num_uavs - len(a.live_agents()) > 0
    finally:
        a.close()


def test_a_pool_steps_tiled_by_default_only_for_the_biggest_swarms():
    """On a pool, a swarm below SEER_UAV_POOL_TILES_MIN UAVs steps window by
    window by default (its rows stay in cache: the tiles' pipeline would
    cost more than it saves); from it on, tiled on the pool; both as one
    worker does."""
    small = M.make_config(num_uavs=M.lib.SEER_UAV_TILES_MIN)
    big = M.make_config(num_uavs=M.lib.SEER_UAV_POOL_TILES_MIN)
    for cfg, steps, pool_tiled in ((small, 3, 0), (big, 2, 2)):
        sims = [tiled_sim(cfg, tiling=0, slot_layout=0), tiled_sim(cfg, workers=2, tiling=0, slot_layout=0)]
        try:
            for s in sims:
                s.reset(4)
            for k in range(steps):
                for s in sims:
                    fly(s, np.random.default_rng(k))
                    s.step()
                for name in ("obs", "reward", "collided", "oob"):
                    assert getattr(sims[1].out, name).tobytes() == getattr(sims[0].out, name).tobytes(), (k, name)
            assert [s.model.native_env.tiled_steps for s in sims] == [steps, pool_tiled]
        finally:
            for s in sims:
                s.close()


def test_a_failed_tiled_step_on_a_pool_fails_cleanly():
    """A queue too small for the step's messages fails a pool's tiled step
    in one of its bands: the step raises (SEER_E_FULL), the other thread's
    band does not wait for it forever, and a reset starts a new episode."""
    from seer.errors import SeerError
    from seer.stpa import make_runtime

    cfg = M.make_config(num_uavs=1500)
    model = M.UavModel(cfg)
    rt = make_runtime(model, 2, capacity=cfg.num_uavs + 800)  # a reset's TICKs, not a step's messages
    sim = M.SeerSim(cfg, runtime=rt)
    e = sim.model.native_env
    e.tiling, e.tile_cells = 1, 3
    try:
        sim.reset(1)
        result = {}

        def step():
            try:
                for _ in range(5):
                    sim.step()
            except SeerError as err:
                result["err"] = err

        t = threading.Thread(target=step)
        t.start()
        t.join(60)
        assert not t.is_alive(), "a tiled step on a pool hung after a failure"
        assert "err" in result and "full" in str(result["err"]).lower(), result
        assert e.tiled_steps == 1
        sim.reset(2)
        assert len(sim.live_agents()) == cfg.num_uavs
    finally:
        sim.close()


def test_close_from_another_thread_ends_tiled_steps_on_a_pool():
    """env.close() from another thread while the pool runs tiled steps: the
    stepping thread gets ClosedError, nothing hangs."""
    import seer
    from seer.envs import uav_swarm_v0

    env = uav_swarm_v0.parallel_env(num_uavs=1500, workers=2, max_cycles=10_000)
    e = env.unwrapped._sim.model.native_env
    e.tiling, e.tile_cells = 1, 3
    env.reset(seed=0)
    zero = np.zeros(3, np.float32)
    outcome = {}

    def stepper():
        try:
            while True:
                if not env.agents:
                    env.reset(seed=1)
                env.step({a: zero for a in env.agents})
        except BaseException as exc:
            outcome["exc"] = exc

    t = threading.Thread(target=stepper)
    t.start()
    deadline = time.monotonic() + 30
    while e.tiled_steps < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert e.tiled_steps >= 3 and t.is_alive(), outcome
    env.close()
    t.join(30)
    assert not t.is_alive(), "the stepper hung after close()"
    assert isinstance(outcome["exc"], seer.ClosedError), repr(outcome.get("exc"))


def test_a_big_swarm_steps_tiled_by_default_on_one_worker_and_alike_on_any():
    """From SEER_UAV_TILES_MIN UAVs on (slots in space order), one worker
    steps tiled by default; untiled, and a pool of two (untiled below
    SEER_UAV_POOL_TILES_MIN UAVs), give the same results."""
    cfg = M.make_config(num_uavs=M.lib.SEER_UAV_TILES_MIN)
    sims = [tiled_sim(cfg, tiling=0, slot_layout=0), tiled_sim(cfg, tiling=-1, slot_layout=0),
            tiled_sim(cfg, workers=2, tiling=0, slot_layout=0)]
    try:
        rngs = [np.random.default_rng(9) for _ in sims]
        for s in sims:
            s.reset(9)
        for k in range(6):
            for s, rng in zip(sims, rngs):
                fly(s, rng)
                s.step()
            first = sims[0]
            for s in sims[1:]:
                for name in ("obs", "reward", "collided", "oob"):
                    assert getattr(s.out, name).tobytes() == getattr(first.out, name).tobytes(), (k, name)
                ra, rb = first.agent_rows(), s.agent_rows()
                for name in first.state:
                    assert ra[name].tobytes() == rb[name].tobytes(), (k, name)
        assert [s.model.native_env.tiled_steps for s in sims] == [6, 0, 0]
    finally:
        for s in sims:
            s.close()


@pytest.mark.parametrize("workers,tile_cells", [(1, 2), (2, 3)])
def test_tiled_steps_pass_the_debug_mode_row_checks(workers, tile_cells):
    """Debug mode checks that a native handler writes only its own rows:
    a tiled step's handlers do, on one thread or a pool's, and it steps as a normal run."""
    cfg = M.make_config(num_uavs=150 if workers == 1 else 600)
    runs = []
    for debug in (True, False):
        sim = tiled_sim(cfg, workers=workers, tile_cells=tile_cells, debug=debug)
        try:
            assert sim.runtime.debug is debug
            sim.reset(2)
            rng = np.random.default_rng(2)
            trail = []
            for _ in range(15):
                fly(sim, rng)
                sim.step()
                trail.append(sim.out.obs.tobytes() + sim.out.reward.tobytes())
            assert sim.model.native_env.tiled_steps == 15
            runs.append(trail)
        finally:
            sim.close()
    assert runs[0] == runs[1]


def step_plan(sim):
    """A tiled step's windows for the sim's next step (one per tick, ending
    half a tick after it; the last at the step's horizon), its runtime, and
    the UAVs in slot order; prepares the step (grid, candidates)."""
    M.lib.seer_uav_prepare_step(sim.model.native_env)
    J, K, tick = sim.J, sim.cfg.ticks_per_step, M.TICK_S
    ends = core_ffi.new("double[]", [(J + k + 0.5) * tick for k in range(K - 1)] + [(J + K) * tick])
    rt = core_ffi.cast("seer_runtime *", sim.runtime.native_address)
    return rt, ends, K


def test_the_runtime_refuses_a_plan_that_runs_an_entity_ahead_of_its_senders():
    """Running one UAV through every window before the others lets it run
    ticks without its neighbours' messages: the first message that then
    arrives for a window it has run fails the step (SEER_E_CAUSALITY), and
    a run of an entity that skips a window is refused (SEER_E_ARG)."""
    cfg = M.make_config(num_uavs=64)
    sim = tiled_sim(cfg, tiling=-1)  # the model's own steps stay untiled: we run the runtime by hand
    try:
        sim.reset(1)
        sim.step()
        rt, ends, K = step_plan(sim)
        assert core.seer_rt_tiled_begin(rt, K, ends) == core.SEER_OK
        n = cfg.num_uavs
        ids = core_ffi.new("int32_t[]", list(range(n)))
        # slot 0 through every window alone (it hears its neighbours' later ticks too late)
        for k in range(K):
            assert core.seer_rt_tiled_run(rt, k, ids, 1) == core.SEER_OK
        rc = core.SEER_OK
        for k in range(K):
            rc = core.seer_rt_tiled_run(rt, k, ids + 1, n - 1)
            if rc != core.SEER_OK:
                break
        assert rc == core.SEER_E_CAUSALITY
        assert core.seer_rt_tiled_end(rt) == core.SEER_E_CAUSALITY
    finally:
        sim.close()

    sim = tiled_sim(cfg, tiling=-1)
    try:
        sim.reset(1)
        rt, ends, K = step_plan(sim)
        assert core.seer_rt_tiled_begin(rt, K, ends) == core.SEER_OK
        ids = core_ffi.new("int32_t[]", [3])
        assert core.seer_rt_tiled_run(rt, 1, ids, 1) == core.SEER_E_ARG  # window 0 first
        assert core.seer_rt_tiled_end(rt) == core.SEER_E_ARG
    finally:
        sim.close()


def test_a_pool_needs_the_pool_form_and_a_trace_refuses_a_tiled_step():
    """seer_rt_tiled_begin is for one thread: a pool of two answers
    SEER_E_UNSUPPORTED there and opens with seer_rt_tiled_begin_pool; a
    traced runtime refuses both (and the env steps the usual way)."""
    cfg = M.make_config(num_uavs=64)
    sim = tiled_sim(cfg, workers=2)
    try:
        sim.reset(0)
        rt, ends, K = step_plan(sim)
        assert core.seer_rt_tiled_begin(rt, K, ends) == core.SEER_E_UNSUPPORTED
        assert core.seer_rt_tiled_begin_pool(rt, K, ends) == core.SEER_OK
        ids = core_ffi.new("int32_t[]", list(range(cfg.num_uavs)))
        assert core.seer_rt_tiled_run_on(rt, 2, 0, ids, 1) == core.SEER_E_ARG  # no worker 2
        assert core.seer_rt_tiled_run_on(rt, -1, 0, ids, 1) == core.SEER_E_ARG
        for k in range(K):  # one thread may run the whole step as worker 1
            assert core.seer_rt_tiled_run_on(rt, 1, k, ids, cfg.num_uavs) == core.SEER_OK
        assert core.seer_rt_tiled_end(rt) == core.SEER_OK
        sim.step()
        assert sim.model.native_env.tiled_steps == 1  # tiling=1 forces it on a pool too
    finally:
        sim.close()
    sim = tiled_sim(cfg)
    try:
        sim.reset(0)
        rt, ends, K = step_plan(sim)
        assert core.seer_rt_tiled_begin(rt, K, ends) == core.SEER_OK
        ids = core_ffi.new("int32_t[]", [0])
        assert core.seer_rt_tiled_run_on(rt, 1, 0, ids, 1) == core.SEER_E_ARG  # one thread's step: worker 0 only
        assert core.seer_rt_tiled_end(rt) == core.SEER_OK
    finally:
        sim.close()
    sim = tiled_sim(cfg, workers=1, trace=True)
    try:
        sim.reset(0)
        rt, ends, K = step_plan(sim)
        assert core.seer_rt_tiled_begin(rt, K, ends) == core.SEER_E_UNSUPPORTED
        assert core.seer_rt_tiled_begin_pool(rt, K, ends) == core.SEER_E_UNSUPPORTED
        sim.step()
        assert sim.model.native_env.tiled_steps == 0
    finally:
        sim.close()
