"""seer.envs.uav_swarm_v0: the SEER model against its time-stepped numpy
reference, determinism across pool sizes, the PettingZoo APIs, losses,
rendering and argument errors."""

import dataclasses
import warnings

import numpy as np
import pytest

from seer.envs.uav_swarm import model as M
from seer.envs import uav_swarm_v0 as U
from seer.envs.uav_swarm.reference import ReferenceSim, close_pairs
from seer.errors import HandlerError


def controller(env, rng, gain=0.3, noise=0.3):
    """Fly to the target with some noise (seeded): crosses paths, so it
    exercises collisions, separation and full neighbour tables."""
    st = env.state_arrays
    live = np.array([int(a[4:]) for a in env.agents], np.int64)
    act = gain * (st["target"][live] - st["pos"][live]) - 2 * gain * st["vel"][live]
    act = np.clip(act + rng.normal(0.0, noise, act.shape), -1.0, 1.0).astype(np.float32)
    return dict(zip(env.agents, act))


def stacked(d):
    return np.stack(list(d.values())) if d else np.zeros(0)


def assert_same_returns(ra, rb):
    obs_a, rew_a, term_a, trunc_a, info_a = ra
    obs_b, rew_b, term_b, trunc_b, info_b = rb
    assert list(obs_a) == list(obs_b)
    assert stacked(obs_a).tobytes() == stacked(obs_b).tobytes()
    assert list(rew_a.items()) == list(rew_b.items())  # bit-identical floats
    assert term_a == term_b and trunc_a == trunc_b and info_a == info_b


def run_pair(steps, workers, seed, **kwargs):
    """Step the SEER env and the reference with the same actions; compare
    every return, bit for bit, and the whole state at the end."""
    a = U.parallel_env(workers=workers, max_cycles=steps, **kwargs)
    b = U.parallel_env(engine="reference", max_cycles=steps, **kwargs)
    try:
        oa, _ = a.reset(seed=seed)
        ob, _ = b.reset(seed=seed)
        assert stacked(oa).tobytes() == stacked(ob).tobytes()
        rng = np.random.default_rng(seed)
        done = 0
        while a.agents:
            actions = controller(a, rng)
            assert_same_returns(a.step(actions), b.step(actions))
            assert a.agents == b.agents
            done += 1
        assert done == steps
        for name, arr in a.state_arrays.items():
            assert arr.tobytes() == b.state_arrays[name].tobytes(), name
        st = a.state_arrays
        return {
            "lost": int(a.cfg.num_uavs - st["alive"].sum()),
            "received": int(st["received"].sum()),
            "full_tables": int((st["nb_count"] == a.cfg.table_cap).sum()),
        }
    finally:
        a.close()
        b.close()


# ---- SEER == time-stepped reference -------------------------------------------------------------

@pytest.mark.parametrize("kwargs,steps,workers", [
    ({"scenario": "small"}, 500, 1),
    ({"scenario": "default"}, 500, 2),
    ({"num_uavs": 64}, 500, 4),
    ({"scenario": "large"}, 60, 2),
    ({"num_uavs": 40, "dt": 0.2}, 150, 3),
], ids=["small-w1", "default-w2", "64-w4", "large-w2", "40-dt0.2-w3"])
def test_seer_matches_time_stepped_reference_bit_for_bit(kwargs, steps, workers):
    stats = run_pair(steps, workers, seed=11, **kwargs)
    assert stats["received"] > 0
    if steps >= 500 and kwargs.get("scenario") != "small":
        assert stats["lost"] > 0  # collisions happened and were handled the same


def step_both_and_compare(a, b, rng):
    """One step of the SEER engine a and the reference b with the same
    fly-to-target actions; every output and the whole state (by agent id:
    SEER keeps its rows in space order) must be bit-identical."""
    live = a.live_agents()
    assert live.tolist() == b.live_agents().tolist()
    st = a.agent_rows()
    act = np.clip(0.3 * (st["target"][live] - st["pos"][live]) - 0.6 * st["vel"][live]
                  + rng.normal(0, 0.3, (len(live), 3)), -1, 1)
    a.set_actions(live, act)
    b.set_actions(live, act)
    a.step()  # the C step: grid, events, readout, losses
    b.step()  # numpy: time-stepped events, NumpyReadout
    for name in ("obs", "reward", "collided", "oob", "episode"):
        assert getattr(a.out, name).tobytes() == getattr(b.out, name).tobytes(), name
    rows = a.agent_rows()
    for name in a.state:
        assert rows[name].tobytes() == b.state[name].tobytes(), name


def test_reference_matches_with_tight_caps_eviction_and_recipient_limit():
    """Tiny tables and recipient caps: every eviction and every cut of a
    broadcast to its nearest recipients must agree."""
    cfg = dataclasses.replace(M.make_config(num_uavs=64), table_cap=4, max_recipients=3, k_neighbors=3)
    a, b = M.SeerSim(cfg, workers=2), ReferenceSim(cfg)
    try:
        a.reset(3)
        b.reset(3)
        assert a.out.obs.tobytes() == b.out.obs.tobytes()
        rng = np.random.default_rng(0)
        full = 0
        for _ in range(300):
            step_both_and_compare(a, b, rng)
            full = max(full, int((a.state["nb_count"] == 4).sum()))
        assert full > 10  # evictions really happened
        assert b.dropped_by_cap > 100  # broadcasts were cut to their 3 nearest recipients
    finally:
        a.close()


@pytest.mark.parametrize("period", [0, 1], ids=["when-decayed", "every-step"])
def test_slots_follow_the_swarm_and_never_change_a_result(period):
    """The SEER engine keeps its rows and entities in slots ordered in space
    (envs/csrc/uav_swarm.h): set at reset, and again during the episode as
    the swarm flies and the order decays (the runtime renames its entities
    and every row moves), or at every step.  Every output and the whole
    state by agent id stay bit-identical to the reference's, which keeps
    rows by agent id."""
    cfg = M.make_config(num_uavs=300)
    a, b = M.SeerSim(cfg, workers=2), ReferenceSim(cfg)
    try:
        e = a.model.native_env
        e.slot_layout = 1  # in space order (the default from SEER_UAV_SPACE_MIN UAVs on too)
        e.relabel_period = period
        a.reset(5)
        b.reset(5)
        assert sorted(a.model.agent_of.tolist()) == list(range(300))
        assert a.model.agent_of.tolist() != list(range(300))  # in space order, not id order
        assert (a.model.slot_of[a.model.agent_of] == np.arange(300)).all()
        rng = np.random.default_rng(5)
        orders = {tuple(a.model.agent_of.tolist())}
        for _ in range(80):
            step_both_and_compare(a, b, rng)
            orders.add(tuple(a.model.agent_of.tolist()))
        assert e.relabels == 79 if period == 1 else e.relabels >= 1
        assert 2 <= len(orders) <= e.relabels + 1  # the slots really moved
    finally:
        a.close()


def test_slots_are_in_space_order_from_space_min_uavs_on():
    """The smallest swarms keep slot = agent id (one chunk of lanes: no
    worker's share to keep in space); from SEER_UAV_SPACE_MIN UAVs on, a
    reset orders the slots by start cell in strips: strips of
    SEER_UAV_TILE_CELLS cells across y (the grid's second-longest axis; x
    and y are as long), strip after strip, and within a strip by x, then y,
    then z.  One worker steps such a swarm tile by tile only from
    SEER_UAV_TILES_MIN UAVs on (below, window by window is faster)."""
    lib = M.lib
    assert lib.SEER_UAV_SPACE_MIN < lib.SEER_UAV_TILES_MIN
    cases = ((lib.SEER_UAV_SPACE_MIN - 1, False), (lib.SEER_UAV_SPACE_MIN, True), (lib.SEER_UAV_TILES_MIN - 1, True),
             (lib.SEER_UAV_TILES_MIN, True))
    for n, spatial in cases:
        sim = M.SeerSim(M.make_config(num_uavs=n), workers=1)
        try:
            sim.reset(3)
            agent_of = sim.model.agent_of
            assert (agent_of.tolist() != list(range(n))) == spatial, n
            assert (sim.model.slot_of[agent_of] == np.arange(n)).all()
            if spatial:  # (strip, x, y in the strip, z) never decreases along the slots
                c = np.minimum(np.floor(sim.state["pos"] / sim.cfg.cell).astype(np.int64),
                               np.array(sim.cfg.grid_dims) - 1)
                T = lib.SEER_UAV_TILE_CELLS
                key = np.stack([c[:, 1] // T, c[:, 0], c[:, 1] % T, c[:, 2]], axis=1)
                assert all(tuple(key[i]) <= tuple(key[i + 1]) for i in range(n - 1)), n
                if n >= lib.SEER_UAV_TILES_MIN:
                    assert len(set(key[:, 0].tolist())) > 1  # really several strips
            sim.step()
            assert sim.model.native_env.tiled_steps == int(n >= lib.SEER_UAV_TILES_MIN), n
        finally:
            sim.close()


# ---- determinism across pool sizes ------------------------------------------------------------------

@pytest.mark.parametrize("scenario,steps", [("default", 150), ("large", 40)])
def test_same_seed_and_actions_give_identical_results_for_1_to_4_workers(scenario, steps):
    runs = []
    for workers in (1, 2, 3, 4):
        env = U.parallel_env(scenario=scenario, workers=workers, max_cycles=steps)
        assert env.workers == workers
        rng = np.random.default_rng(5)
        obs, _ = env.reset(seed=21)
        trail = [stacked(obs).tobytes()]
        while env.agents:
            o, r, term, trunc, _ = env.step(controller(env, rng))
            trail.append(stacked(o).tobytes())
            trail.append(np.array(list(r.values())).tobytes())
            trail.append(repr((term, trunc)))
        env.close()
        runs.append(trail)
    for other in runs[1:]:
        assert other == runs[0]


def test_reset_with_the_same_seed_replays_and_other_seeds_differ():
    env = U.parallel_env(scenario="small", workers=2)

    def episode(seed):
        obs, _ = env.reset(seed=seed)
        out = [stacked(obs).tobytes()]
        for _ in range(20):
            o, r, *_ = env.step({a: np.full(3, 0.5, np.float32) for a in env.agents})
            out.append(stacked(o).tobytes() + np.array(list(r.values())).tobytes())
        return out

    first = episode(4)
    assert episode(4) == first
    assert episode(5) != first
    env.close()


# ---- event-driven structure --------------------------------------------------------------------------

def test_a_trace_names_agents_while_the_slots_are_renamed():
    """The runtime's entities are slots (envs/csrc/uav_swarm.h), renamed as
    the swarm flies; a trace (seer trace, ``trace=True``) names the agent of
    each event all the same: agent i's clock runs at RATES_HZ[i % 3]."""
    cfg = M.make_config(num_uavs=300)
    sim = M.SeerSim(cfg, workers=2, trace=True)
    try:
        e = sim.model.native_env
        e.slot_layout = 1  # in space order although small, renamed at every step
        e.relabel_period = 1
        sim.reset(3)
        assert sim.model.agent_of.tolist() != list(range(300))
        rng = np.random.default_rng(3)
        orders = set()
        for _ in range(6):
            live = sim.live_agents()
            sim.set_actions(live, rng.uniform(-1, 1, (len(live), 3)))
            sim.step()
            orders.add(tuple(sim.model.agent_of.tolist()))
        assert e.relabels == 5 and len(orders) >= 2  # the slots really moved
        ev = sim.runtime.trace.events
        ticks = ev[ev["kind"] == M.TICK]
        assert sorted(np.unique(ticks["entity"]).tolist()) == list(range(300))
        for i in range(cfg.num_uavs):
            mine = np.sort(ticks["time"][ticks["entity"] == i])
            assert len(mine) == 6 * 10 // M.PERIOD_TICKS[i % 3]  # 10, 20 or 50 Hz over 0.6 s
            assert np.allclose(np.diff(mine), M.PERIOD_TICKS[i % 3] * M.TICK_S)
    finally:
        sim.close()


def test_each_uav_runs_on_its_own_clock_and_messages_respect_the_lookahead():
    cfg = M.make_config(num_uavs=12)
    sim = M.SeerSim(cfg, workers=2, trace=True)
    try:
        sim.reset(1)
        for _ in range(3):
            sim.advance()
        ev = sim.runtime.trace.events
        ticks = ev[ev["kind"] == M.TICK]
        recv = ev[ev["kind"] == M.RECV]
        for i in range(cfg.num_uavs):
            mine = np.sort(ticks["time"][ticks["entity"] == i])
            period = M.PERIOD_TICKS[i % 3] * M.TICK_S
            assert len(mine) == 3 * 10 // M.PERIOD_TICKS[i % 3]  # 10, 20 or 50 Hz over 0.3 s
            assert np.allclose(np.diff(mine), period)
        # RECV events sit one tick after some TICK; the lookahead is below that delay
        tick_times = set(np.round(ticks["time"] / M.TICK_S).astype(int).tolist())
        assert len(recv) > 0
        assert set((np.round(recv["time"] / M.TICK_S).astype(int) - 1).tolist()) <= tick_times
        assert 0 < sim.model.lookahead <= M.BROADCAST_DELAY_TICKS * M.TICK_S
        assert sim.model.lookahead < M.TICK_S  # one tick per window
    finally:
        sim.close()


def test_a_message_whose_broadcast_row_was_rewritten_fails_the_step_loudly():
    """RECVs read the sender's live broadcast row, safe because every period
    is 2 ticks or longer (envs/csrc/uav_swarm.h): the sender rewrites it two
    windows later.  If a sender ticked again in the window that reads its
    message, the step must fail naming the handler, not deliver the newer
    state as the old message."""
    assert min(M.PERIOD_TICKS) >= 2
    sim = M.SeerSim(M.make_config(num_uavs=12), workers=1)
    try:
        sim.model.native_env.slot_layout = 1  # slots in space order: the error must name the agent
        sim.reset(1)
        sim.state["period"][:] = 1  # every UAV ticks at every tick: the rule broken
        with pytest.raises(HandlerError, match="'recv' failed") as info:
            sim.advance()
        agent = info.value.entity
        assert f"is the slot of agent uav_{agent})" in str(info.value)
        slot = int(str(info.value).rsplit("(entity ", 1)[1].split()[0])
        assert sim.model.agent_of[slot] == agent
    finally:
        sim.close()


def test_neighbour_pairs_match_brute_force_and_grid_work_is_linear():
    rng = np.random.default_rng(0)
    dims = np.array([7, 5, 4])
    cells = rng.integers(0, dims, (300, 3))
    brute = {(i, j) for i in range(300) for j in range(300)
             if i != j and np.abs(cells[i] - cells[j]).max() <= 1}
    a, b = M.neighbour_pairs(cells, dims, half=False)
    assert set(zip(a.tolist(), b.tolist())) == brute and len(a) == len(brute)
    a, b = M.neighbour_pairs(cells, dims, half=True)
    assert {(min(x, y), max(x, y)) for x, y in zip(a.tolist(), b.tolist())} == {p for p in brute if p[0] < p[1]}
    # Broadcast-grid candidates per UAV stay flat as the swarm grows (O(N) sensing).
    per_uav = []
    for n in (256, 4096):
        cfg = M.make_config(num_uavs=n)
        model = M.UavModel(cfg)
        model.initial_state(0)
        st = model.state
        grid = M.BroadcastGrid(cfg, st["cell_of"])
        grid.build(st["pos"], st["alive"])
        a, _ = M.neighbour_pairs(st["cell_of"], cfg.grid_dims, half=False)
        per_uav.append(len(a) / n)
    assert per_uav[1] < 1.5 * per_uav[0]


def test_initial_state_is_a_pure_function_of_the_seed_and_a_formation_in_the_world():
    cfg = M.make_config(num_uavs=100)
    a, b = M.UavModel(cfg), M.UavModel(cfg)
    a.initial_state(7)
    b.initial_state(7)
    for name in a.state:
        assert a.state[name].tobytes() == b.state[name].tobytes(), name
    b.initial_state(8)
    assert not np.array_equal(a.state["pos"], b.state["pos"])
    st, hi = a.state, cfg.world_hi
    assert (st["pos"] > 0).all() and (st["pos"] < hi).all() and st["alive"].all()
    # starts: distinct lattice slots (jitter < half the spacing); targets: distinct formation slots
    slot = np.rint((st["pos"] - cfg.pad) / cfg.start_spacing - 0.5)
    assert np.abs((st["pos"] - cfg.pad) / cfg.start_spacing - 0.5 - slot).max() <= cfg.jitter / cfg.start_spacing
    assert len({tuple(r) for r in slot.tolist()}) == 100
    g = (st["target"] - hi / 2) / cfg.formation_spacing
    assert np.allclose(g * 2, np.rint(g * 2)) and len({tuple(r) for r in np.rint(g * 2).tolist()}) == 100
    assert (st["nb_src"] == -1).all() and (st["bcast_tick"] == -1).all() and not st["vel"].any()


def test_close_pairs_match_brute_force():
    rng = np.random.default_rng(1)
    pos = rng.uniform(0, 30, (400, 3))
    idx = np.arange(0, 400, 2)
    a, b, d = close_pairs(pos, idx, 3.0, np.array([30.0, 30.0, 30.0]))
    got = {(min(x, y), max(x, y)) for x, y in zip(a.tolist(), b.tolist())}
    want = {(i, j) for i in idx for j in idx if i < j and np.linalg.norm(pos[i] - pos[j]) < 3.0}
    assert got == want
    assert np.allclose(d, np.linalg.norm(pos[a] - pos[b], axis=1))


# ---- episode mechanics ------------------------------------------------------------------------------

def test_collided_and_out_of_bounds_uavs_are_terminated_and_leave_agents():
    env = U.parallel_env(scenario="small", workers=1)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="read-only"):  # state_arrays are copies by agent id
        env.state_arrays["pos"][1] = 0.0
    # the engine's own rows are slots in space order (envs/csrc/uav_swarm.h)
    live, row = env._sim.state, env._sim.model.slot_of
    live["pos"][row[1]] = live["pos"][row[0]] + np.array([0.3, 0.0, 0.0])   # collision
    live["pos"][row[2]] = np.array([-50.0, 1.0, 1.0])                       # out of bounds
    st = env.state_arrays
    obs, rew, term, trunc, _ = env.step({a: np.zeros(3, np.float32) for a in env.agents})
    assert term["uav_0"] and term["uav_1"] and term["uav_2"]
    assert not any(term[a] for a in env.possible_agents[3:])
    assert rew["uav_0"] <= -10 and rew["uav_2"] <= -10
    assert env.agents == env.possible_agents[3:]
    assert list(st["alive"][:3]) == [0, 0, 0]
    env.step({a: np.zeros(3, np.float32) for a in env.possible_agents})  # the dead ones' actions are ignored
    env.step({a: np.zeros(3, np.float32) for a in env.agents})
    with pytest.raises(ValueError, match="uav_99"):  # but an agent the env never had is an error
        env.step({**{a: np.zeros(3, np.float32) for a in env.agents}, "uav_99": np.zeros(3, np.float32)})
    env.close()


def test_truncation_after_max_cycles_and_observation_layout():
    env = U.parallel_env(scenario="small", max_cycles=3, workers=1)
    obs, infos = env.reset(seed=2)
    space = env.observation_space("uav_0")
    assert space.shape == (9 + 7 * 6,) and space.dtype == np.float32
    assert all(space.contains(o) for o in obs.values())
    assert env.action_space("uav_0").shape == (3,)
    for k in range(3):
        obs, rew, term, trunc, infos = env.step({a: np.zeros(3, np.float32) for a in env.agents})
        assert all(trunc.values()) == (k == 2)
    assert env.agents == []
    o = obs["uav_0"]
    st = env.state_arrays
    assert np.allclose(o[6:9], (st["target"][0] - st["pos"][0]) / M.TARGET_SCALE, atol=1e-6)
    present = o[9:].reshape(6, 7)[:, 6]
    assert set(present.tolist()) <= {0.0, 1.0}
    assert np.all(np.diff(present) <= 0)  # neighbours first, padding after
    env.close()


def test_dynamics_respect_speed_bound_and_progress_reward():
    env = U.parallel_env(num_uavs=3, workers=1)
    env.reset(seed=1)
    st = env.state_arrays
    p0 = st["pos"].copy()
    for _ in range(30):
        if not env.agents:
            break
        env.step({a: np.ones(3, np.float32) for a in env.agents})
    assert np.all(np.linalg.norm(st["vel"], axis=1) <= M.UavConfig.v_max * (1 + 1e-12))
    # one step at constant acceleration from rest: p = p0 + a t^2 / 2 exactly
    env.reset(seed=1)
    env.step({a: np.full(3, 0.5, np.float32) for a in env.agents})
    assert np.allclose(st["pos"], p0 + 0.5 * 2.5 * 0.1 ** 2, rtol=0, atol=1e-12)
    assert np.allclose(st["vel"], 0.25, rtol=0, atol=1e-12)
    assert np.allclose(st["energy"], 3 * 2.5 ** 2 * 0.1)
    env.close()


def test_a_table_slot_is_one_record_and_the_old_names_view_it():
    """The neighbour tables are one array of 32-byte slots (sender, tick, body:
    one cache line for two slots); nb_src, nb_tick and nb_state are views of
    it, so a write through either is seen by the other and by the C step."""
    sim = M.SeerSim(M.make_config(num_uavs=40), workers=1)
    try:
        sim.reset(2)
        st = sim.state
        nb = st["nb"]
        assert nb.dtype.itemsize == 32 and nb.flags.c_contiguous and nb.shape == (40, sim.cfg.table_cap)
        assert list(st) == [k for k in st if st[k].flags.c_contiguous]  # the runtime snapshots blocks
        assert "nb_src" not in list(st)
        for name, dtype, shape in (("nb_src", np.int32, (40, 24)), ("nb_tick", np.int32, (40, 24)),
                                   ("nb_state", np.float32, (40, 24, 6))):
            view = st[name]
            assert view.dtype == dtype and view.shape == shape and np.shares_memory(view, nb)
        assert (st["nb_src"] == -1).all() and (st["nb_tick"] == -1).all()  # empty after a reset
        for _ in range(3):
            sim.step()
        assert (st["nb_count"] > 0).any()
        rows = sim.agent_rows()
        assert rows["nb_tick"].tobytes() == nb["tick"][sim.model.slot_of].tobytes()
        with pytest.raises(KeyError):
            st["nb_nothing"]
    finally:
        sim.close()


def test_episodes_end_by_the_last_tick_an_int32_table_tick_holds():
    cfg = M.make_config(num_uavs=8)
    sim = M.SeerSim(cfg, workers=1)
    try:
        limit = (2**31 - 1) // cfg.ticks_per_step
        assert cfg.max_cycles_limit == limit
        sim.reset(0)  # max_cycles None: as long as the tables allow
        assert sim.out.max_cycles == limit == sim.model.native_env.max_cycles
        sim.reset(0, max_cycles=10**12)
        assert sim.out.max_cycles == limit
        sim.reset(0, max_cycles=7)
        assert sim.out.max_cycles == 7
    finally:
        sim.close()


def test_messages_carry_float32_bodies_that_the_tables_keep_as_sent():
    env = U.parallel_env(scenario="small", workers=1)
    env.reset(seed=3)
    rng = np.random.default_rng(3)
    for _ in range(4):
        env.step(controller(env, rng))
    st = env.state_arrays
    assert st["bcast"].dtype == np.float32 and st["nb_state"].dtype == np.float32
    # every table entry whose tick is its sender's last broadcast is that body, bit for bit
    C = env.cfg.table_cap
    used = np.arange(C) < st["nb_count"][:, None]
    r, s = np.nonzero(used)
    src = st["nb_src"][r, s]
    last = st["nb_tick"][r, s] == st["bcast_tick"][src]
    assert last.sum() > 0
    assert st["nb_state"][r[last], s[last]].tobytes() == st["bcast"][src[last]].tobytes()
    env.close()
    # hovering from rest, a UAV never moves: its body is its position rounded once to float32
    env = U.parallel_env(scenario="small", workers=1)
    env.reset(seed=3)
    env.step({a: np.zeros(3, np.float32) for a in env.agents})
    st = env.state_arrays
    sent = st["bcast_tick"] >= 0
    assert sent.all()
    assert st["bcast"][:, 0:3].tobytes() == st["pos"].astype(np.float32).tobytes()
    assert not st["bcast"][:, 3:6].any()
    assert not np.array_equal(st["bcast"][:, 0:3].astype(np.float64), st["pos"])  # rounded, not the float64 state
    env.close()


# ---- PettingZoo APIs -----------------------------------------------------------------------------

def test_parallel_api_test():
    from pettingzoo.test import parallel_api_test

    env = U.parallel_env(scenario="small")
    parallel_api_test(env, num_cycles=200)
    env.close()


def test_parallel_seed_test():
    from pettingzoo.test import parallel_seed_test

    parallel_seed_test(lambda: U.parallel_env(scenario="small", workers=2))


def test_aec_api_test():
    from pettingzoo.test import api_test

    env = U.env(scenario="small", max_cycles=60)
    api_test(env, num_cycles=60)
    env.close()


def test_aec_seed_test():
    from pettingzoo.test import seed_test

    seed_test(lambda: U.env(scenario="small", max_cycles=30), num_cycles=30)


def test_render_rgb_array_frame():
    env = U.parallel_env(scenario="default", render_mode="rgb_array", workers=1)
    env.reset(seed=0)
    for _ in range(3):
        env.step({a: np.zeros(3, np.float32) for a in env.agents})
    frame = env.render()
    assert frame.ndim == 3 and frame.shape[2] == 3 and frame.dtype == np.uint8
    assert frame.shape[0] > 100 and frame.shape[1] > 100
    colours = {tuple(c) for c in frame.reshape(-1, 3)[::7].tolist()}
    assert (220, 40, 40) in colours or (40, 60, 220) in colours  # UAV dots
    assert (170, 170, 170) in {tuple(c) for c in frame.reshape(-1, 3).tolist()}  # links
    env.close()
    quiet = U.parallel_env(scenario="small", workers=1)
    quiet.reset(seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert quiet.render() is None
    quiet.close()


def test_pettingzoo_render_test_rgb_array_through_aec():
    from pettingzoo.test import render_test

    # render_test first builds a "human" env only to read metadata; this env
    # renders rgb_array only, so that probe gets render_mode=None.
    render_test(lambda render_mode=None: U.env(
        scenario="small", workers=1, render_mode=None if render_mode == "human" else render_mode))


# ---- bad input ------------------------------------------------------------------------------------

@pytest.fixture
def small_env():
    env = U.parallel_env(scenario="small", workers=1)
    env.reset(seed=0)
    yield env
    env.close()


def zero_actions(env):
    return {a: np.zeros(3, np.float32) for a in env.agents}


def test_action_outside_space_names_agent_and_value(small_env):
    act = zero_actions(small_env)
    act["uav_3"] = np.array([0.0, 1.5, 0.0], np.float32)
    with pytest.raises(ValueError, match=r"uav_3.*1\.5"):
        small_env.step(act)


def test_nan_action_is_rejected(small_env):
    act = zero_actions(small_env)
    act["uav_2"] = np.array([0.0, np.nan, 0.0])
    with pytest.raises(ValueError, match=r"uav_2.*nan"):
        small_env.step(act)


def test_wrong_shape_missing_and_unknown_agents(small_env):
    act = zero_actions(small_env)
    act["uav_1"] = np.zeros(2, np.float32)
    with pytest.raises(ValueError, match=r"uav_1.*shape"):
        small_env.step(act)
    act = zero_actions(small_env)
    del act["uav_5"]
    with pytest.raises(ValueError, match="uav_5"):
        small_env.step(act)
    act = zero_actions(small_env)
    act["uav_99"] = np.zeros(3, np.float32)
    with pytest.raises(ValueError, match="uav_99"):
        small_env.step(act)
    act = zero_actions(small_env)
    act["uav_0"] = "left"
    with pytest.raises(ValueError, match="uav_0"):
        small_env.step(act)
    with pytest.raises(TypeError, match="dict"):
        small_env.step([np.zeros(3)] * 8)
    # the env is still usable after rejected actions
    obs, *_ = small_env.step(zero_actions(small_env))
    assert len(obs) == 8


@pytest.mark.parametrize("kwargs,match", [
    ({"scenario": "huge"}, "scenario='huge'"),
    ({"num_uavs": 0}, "num_uavs=0"),
    ({"num_uavs": 2.5}, "num_uavs=2.5"),
    ({"dt": 0.15}, "dt=0.15"),
    ({"dt": -0.1}, "dt=-0.1"),
    ({"max_cycles": 0}, "max_cycles=0"),
    ({"workers": 0}, "workers=0"),
    ({"workers": "many"}, "workers='many'"),
    ({"render_mode": "human"}, "render_mode='human'"),
    ({"k_neighbors": 100}, "k_neighbors=100"),
    ({"engine": "gpu"}, "engine='gpu'"),
])
def test_bad_arguments_name_argument_and_value(kwargs, match):
    with pytest.raises(ValueError, match=match.replace("(", r"\(").replace(".", r"\.")):
        U.parallel_env(**kwargs)
    with pytest.raises(ValueError, match=match.replace("(", r"\(").replace(".", r"\.")):
        U.env(**kwargs)


def test_scenario_sizes_and_num_uavs_override():
    for name, n in U.SCENARIOS.items():
        assert M.make_config(name).num_uavs == n
    env = U.parallel_env(scenario="large", num_uavs=5, workers=1, dt=0.3)
    assert len(env.possible_agents) == 5 and env.cfg.ticks_per_step == 30
    env.close()


def test_close_is_idempotent_and_stepping_a_closed_env_fails():
    env = U.parallel_env(scenario="small", workers=2)
    env.reset(seed=0)
    env.close()
    env.close()
    with pytest.raises(RuntimeError, match="closed"):
        env.reset(seed=0)
