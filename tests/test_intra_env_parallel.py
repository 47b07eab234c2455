"""One env across cores (issue 15): the uav_swarm_v0 step's O(N) phases run
as slices on the runtime's pool (seer_rt_parallel_for), and window
bookkeeping is shared by the workers.  Both must leave every result
bit-identical to one worker and to the numpy reference."""
import dataclasses

import numpy as np
import pytest

import seer
from seer._seer_c import ffi, lib
from seer.envs.uav_swarm import model as M
from seer.envs.uav_swarm.reference import ReferenceSim
from seer.synthetic import PythonSyntheticModel, SyntheticModel

# Above the env's inline threshold (PAR_MIN = 2048 UAVs), so the phases
# really are cut into slices when the pool has more than one worker.
N_PARALLEL = 2304


def crowded_config(n=N_PARALLEL):
    # a tight start lattice: separation penalties and collisions from step 1
    return dataclasses.replace(M.make_config(num_uavs=n), start_spacing=3.2, jitter=1.2)


def drive(sim, cfg, steps, seed):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(steps):
        live = sim.live_agents()
        st = sim.agent_rows()  # SEER's own rows are in space order
        act = np.clip(0.3 * (st["target"][live] - st["pos"][live]) - 0.6 * st["vel"][live]
                      + rng.normal(0, 0.3, (len(live), 3)), -1, 1)
        sim.set_actions(live, act)
        sim.step()
        out.append({name: getattr(sim.out, name).copy() for name in ("obs", "reward", "collided", "oob")})
    rows = sim.agent_rows()
    return out, {k: rows[k] for k in rows}


@pytest.mark.parametrize("workers", [2, 3])
def test_parallel_phases_match_one_worker_and_the_reference_bit_for_bit(workers):
    cfg = crowded_config()
    steps = 4
    runs = []
    for sim in (M.SeerSim(cfg, workers=1), M.SeerSim(cfg, workers=workers), ReferenceSim(cfg)):
        try:
            sim.reset(5)
            runs.append(drive(sim, cfg, steps, seed=1))
        finally:
            getattr(sim, "close", lambda: None)()
    (one, one_state), (many, many_state), (ref, ref_state) = runs
    assert sum(int(r["collided"].sum()) for r in one) > 0  # the losses phase had work
    for k in range(steps):
        for name in one[k]:
            assert one[k][name].tobytes() == many[k][name].tobytes(), (k, name)
            assert one[k][name].tobytes() == ref[k][name].tobytes(), (k, name)
    for name in one_state:
        assert one_state[name].tobytes() == many_state[name].tobytes(), name
        assert one_state[name].tobytes() == ref_state[name].tobytes(), name


def test_separation_on_a_pool_with_more_pairs_than_slots_matches_the_reference():
    """On a pool, each UAV's first pairs are kept in 8 slots and a UAV with
    more is walked again in the pass in pair order; a packed swarm has both."""
    cfg = dataclasses.replace(M.make_config(num_uavs=N_PARALLEL), start_spacing=1.5, jitter=0.3)
    runs = []
    for sim in (M.SeerSim(cfg, workers=2), ReferenceSim(cfg)):
        try:
            sim.reset(5)
            runs.append(drive(sim, cfg, 2, seed=1))
            if isinstance(sim, M.SeerSim):
                pairs = sim.model._scratch["sep_count"][:int(sim.state["alive"].sum())]
                assert (pairs > M.SEP_SLOTS).any() and ((pairs > 0) & (pairs <= M.SEP_SLOTS)).any()
        finally:
            getattr(sim, "close", lambda: None)()
    (pool, pool_state), (ref, ref_state) = runs
    assert sum(int(r["collided"].sum()) for r in pool) > 0
    for k in range(2):
        for name in pool[k]:
            assert pool[k][name].tobytes() == ref[k][name].tobytes(), (k, name)
    for name in pool_state:
        assert pool_state[name].tobytes() == ref_state[name].tobytes(), name


def _rt(runtime):
    return ffi.cast("seer_runtime *", runtime.native_address)


@pytest.mark.parametrize("make", [
    lambda: SyntheticModel(97, fanout=3, work=20, period=0.1, delay=0.05),
    lambda: PythonSyntheticModel(61, fanout=2, work=3, period=0.1, delay=0.05),
], ids=["native", "python"])
def test_pools_of_every_size_give_the_same_windows_and_state(make):
    # Every worker decides the next window from the same reports (barrier jobs) or the same atomic minimum
    # (chunked phases), so the windows, hence the events and the state, are those of one worker.
    results = []
    for workers in (1, 2, 3, 4):
        model = make()
        with seer.Runtime(model, workers=workers, seed=3) as rt:
            events = sum(rt.step((k + 1) * 0.25).events for k in range(12))
            windows = lib.seer_rt_windows_total(_rt(rt))
            results.append((events, windows, {n: a.tobytes() for n, a in model.state.items()}))
    assert results[0][0] > 0 and results[0][1] >= 12
    assert all(r == results[0] for r in results[1:])


def test_stats_account_for_the_bookkeeping_of_every_worker():
    model = SyntheticModel(256, fanout=2, work=10, period=0.05, delay=0.05)
    with seer.Runtime(model, workers=2, seed=1) as rt:
        h = _rt(rt)
        st = ffi.new("seer_rt_stats *")
        lib.seer_rt_set_stats(h, 1)
        try:
            for k in range(5):
                rt.step(float(k + 1))
            lib.seer_rt_take_stats(h, 0, st)
            assert st.steps == 5 and st.windows > 0 and st.step_ns > 0
            assert 0 < st.bookkeeping_ns <= st.step_ns
            assert 0 <= st.barrier_ns <= st.step_ns
            lib.seer_rt_take_stats(h, 1, st)
            assert st.steps <= 5 and 0 <= st.bookkeeping_ns <= st.step_ns
        finally:
            lib.seer_rt_set_stats(h, 0)
    assert not hasattr(lib, "seer_rt_set_bookkeeping")


def test_api_table_appends_parallel_for_and_keeps_the_version():
    api = lib.seer_api_table()
    assert api.version == 1
    assert api.size == ffi.sizeof("seer_api")
    assert api.rt_parallel_for != ffi.NULL and api.rt_num_workers != ffi.NULL
