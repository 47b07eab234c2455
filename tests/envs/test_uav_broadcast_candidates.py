"""uav_swarm_v0's per-step broadcast candidate lists (envs/csrc/uav_swarm_step.c,
build_candidates): a TICK scans a short list built once per step instead of
the 27 grid cells around the sender, and must find exactly the recipients
the cell scan finds.  Checked against the numpy reference (which scans the
cells) where the lists are stressed: lists too long or out of room (the
sender then scans its cells), UAVs faster than v_max at the step start (the
lists' radius must grow), and several ticks per step.  Each case runs with
the lists built eight grid entries at a time (AVX2, where the CPU has it)
and one at a time (``cand_simd = -1``)."""

import dataclasses

import numpy as np
import pytest

from seer.envs.uav_swarm import model as M
from seer.envs.uav_swarm.reference import ReferenceSim


def run_against_reference(cfg, steps, workers, seed, boost=None, cand_simd=0):
    """Step SEER and the reference with the same actions; compare every
    output and the whole state (by agent id) after each step.
    boost(step, state, rows) may edit both states before a step, the same
    way: agent i's row is rows[i] (SEER keeps its rows in space order)."""
    a, b = M.SeerSim(cfg, workers=workers), ReferenceSim(cfg)
    a.model.native_env.cand_simd = cand_simd
    try:
        a.reset(seed)
        b.reset(seed)
        rng = np.random.default_rng(seed)
        sent = 0
        for k in range(steps):
            live = a.live_agents()
            assert live.tolist() == b.live_agents().tolist()
            if len(live) == 0:
                break
            st = a.agent_rows()
            act = np.clip(0.3 * (st["target"][live] - st["pos"][live]) - 0.6 * st["vel"][live]
                          + rng.normal(0, 0.3, (len(live), 3)), -1, 1)
            a.set_actions(live, act)
            b.set_actions(live, act)
            if boost is not None:
                boost(k, a.state, a.model.slot_of)
                boost(k, b.state, np.arange(cfg.num_uavs))
            a.step()
            b.step()
            for name in ("obs", "reward", "collided", "oob", "episode"):
                assert getattr(a.out, name).tobytes() == getattr(b.out, name).tobytes(), (k, name)
            rows = a.agent_rows()
            for name in a.state:
                assert rows[name].tobytes() == b.state[name].tobytes(), (k, name)
            sent = int(a.state["sent"].sum())
        return sent
    finally:
        a.close()


SIMD = pytest.mark.parametrize("cand_simd", [0, -1], ids=["rows8", "plain"])


@SIMD
@pytest.mark.parametrize("workers", [1, 2])
def test_long_lists_fall_back_to_the_cell_scan(workers, cand_simd):
    """A radio range of 40 m puts every UAV in every list: lists past 254
    entries and past the scratch room (8 per UAV) give way to the cell scan;
    max_recipients cuts each broadcast to its nearest, as in the reference."""
    cfg = dataclasses.replace(M.make_config(num_uavs=300), radius=40.0, max_recipients=12)
    assert run_against_reference(cfg, 12, workers, seed=4, cand_simd=cand_simd) > 0


@SIMD
@pytest.mark.parametrize("workers", [1, 3])
def test_uavs_faster_than_v_max_at_the_step_start(workers, cand_simd):
    """Velocities written above v_max before a step: the first period starts
    from them, so the lists' radius must cover the longer way."""
    cfg = M.make_config(num_uavs=96)

    def boost(k, st, rows):
        if k % 3 == 1:
            rng = np.random.default_rng(k)
            idx = rng.choice(cfg.num_uavs, 24, replace=False)
            st["vel"][rows[idx]] = rng.normal(0.0, 2.5 * cfg.v_max, (24, 3))

    assert run_against_reference(cfg, 30, workers, seed=8, boost=boost, cand_simd=cand_simd) > 0


@SIMD
def test_several_ticks_per_step_and_periods(cand_simd):
    """dt = 0.3 s: the slowest UAVs integrate three periods in a step."""
    cfg = M.make_config(num_uavs=80, dt=0.3)
    assert run_against_reference(cfg, 40, 2, seed=2, cand_simd=cand_simd) > 0


@SIMD
@pytest.mark.parametrize("radius", [10.0, 16.0])
def test_a_big_swarm_in_space_order(radius, cand_simd):
    """1,500 UAVs in space order: most rows of a UAV's cells hold eight
    entries or fewer (read eight at a time), some more (one at a time), and
    the grid's last rows end fewer than eight entries before the end of its
    arrays; a radius of 16 m (cells four times the volume) fills most rows
    past eight."""
    cfg = dataclasses.replace(M.make_config(num_uavs=1500), radius=radius)
    assert run_against_reference(cfg, 4, 1, seed=11, cand_simd=cand_simd) > 0
