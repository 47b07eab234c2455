"""Runtime.pool_stats(): each worker's time in steps, window bookkeeping,
barriers and spinning, over a with-block; across resizes, a close inside
the block, and the envs' native steps."""

import numpy as np
import pytest

import seer
from seer._seer_c import ffi, lib
from seer.synthetic import PythonSyntheticModel, SyntheticModel

pytestmark = pytest.mark.timeout(120)


def many_windows(entities=512, python=False):
    # every entity ticks each 0.01 with a one-message fan-out 0.01 away: 100 short windows per unit of time
    if python:  # the handlers in Python: the GIL-holding dispatch path of the worker loop
        return PythonSyntheticModel(entities // 16, fanout=1, period=0.01, delay=0.01)
    return SyntheticModel(entities, fanout=1, work=20, period=0.01, delay=0.01)


def run(rt, t0, steps):
    windows = 0
    for k in range(steps):
        windows += rt.step(t0 + k + 1.0).windows
    return t0 + steps, windows


@pytest.mark.parametrize("python", [False, True], ids=["native", "python"])
@pytest.mark.parametrize("workers", [1, 2, 3])
def test_counts_cover_exactly_the_steps_inside_the_block(workers, python):
    with seer.Runtime(many_windows(python=python), workers=workers) as rt:
        t, _ = run(rt, 0.0, 2)  # before the block: not counted
        with rt.pool_stats() as stats:
            assert stats.steps == 0 and stats.workers == ()  # filled when the block ends
            t, windows = run(rt, t, 3)
        run(rt, t, 2)  # after it: not counted either
    assert stats.steps == 3 and stats.windows == windows and windows >= 300
    assert [w.worker for w in stats.workers] == list(range(workers))
    assert (stats.workers[0].steps, stats.workers[0].windows) == (3, windows)
    for w in stats.workers:
        if python:  # a barrier job: every worker takes part in every window of every step
            assert (w.steps, w.windows) == (3, windows)
        else:  # no step waits for a pool thread: each counts what it took part in
            assert w.steps <= 3 and w.windows <= windows
        assert 0.0 <= w.step_s and 0.0 <= w.bookkeeping_s <= w.step_s and 0.0 <= w.barrier_s <= w.step_s
        assert w.spin_s >= 0.0 and w.parks >= 0
    assert stats.workers[0].step_s > 0.0
    assert stats.step_s == stats.workers[0].step_s
    for f in (stats.bookkeeping_fraction, stats.barrier_fraction):
        assert 0.0 <= f <= 1.0
    assert "steps=3" in repr(stats)


def test_every_worker_does_a_share_of_the_window_bookkeeping():
    with seer.Runtime(many_windows(4096), workers=2) as rt:
        with rt.pool_stats() as stats:
            run(rt, 0.0, 2)
    assert stats.windows >= 200
    # no worker decides the windows alone while the others wait: each reports, copies and readies its share
    assert all(w.bookkeeping_s > 0.0 for w in stats.workers)
    assert stats.workers[0].bookkeeping_s < stats.workers[0].step_s
    assert not hasattr(stats, "serial_fraction") and not hasattr(stats.workers[0], "serial_s")


def test_a_resize_inside_the_block_keeps_what_the_old_pool_measured():
    with seer.Runtime(many_windows(), workers=3) as rt:
        with rt.pool_stats() as stats:
            t, w3 = run(rt, 0.0, 1)
            rt.resize(1)
            t, w1 = run(rt, t, 2)
            rt.resize(2)
            t, w2 = run(rt, t, 1)
    by = {w.worker: w for w in stats.workers}
    assert sorted(by) == [0, 1, 2]
    assert (by[0].steps, by[0].windows) == (4, w3 + w1 + w2)
    # pool threads count the steps they took part in: at most their pools'
    assert by[1].steps <= 2 and by[1].windows <= w3 + w2
    assert by[2].steps <= 1 and by[2].windows <= w3


def test_closing_inside_the_block_keeps_the_counts_up_to_the_close():
    rt = seer.Runtime(many_windows(), workers=2)
    with rt.pool_stats() as stats:
        _, windows = run(rt, 0.0, 2)
        rt.close()
    assert stats.steps == 2 and stats.windows == windows
    with pytest.raises(seer.ClosedError, match="closed"):
        with rt.pool_stats():
            pass


def test_a_second_block_is_refused_and_the_first_goes_on():
    with seer.Runtime(many_windows(), workers=2) as rt:
        with rt.pool_stats() as outer:
            with pytest.raises(seer.MisuseError, match="already open"):
                with rt.pool_stats():
                    pass
            run(rt, 0.0, 1)
        assert outer.steps == 1
        with rt.pool_stats() as again:  # usable again once the first block ended
            run(rt, 1.0, 1)
        assert again.steps == 1


def test_an_envs_native_steps_count_too():
    from seer.envs import uav_swarm_v0

    env = uav_swarm_v0.parallel_env(scenario="large", workers=2)
    try:
        env.reset(seed=0)
        with env.runtime.pool_stats() as stats:
            for _ in range(3):
                env.step({a: np.zeros(3, np.float32) for a in env.agents})
    finally:
        env.close()
    assert stats.steps == 3 and stats.windows > 0
    assert stats.workers[0].windows == stats.windows and stats.workers[1].windows <= stats.windows
    assert uav_swarm_v0.parallel_env(scenario="small", engine="reference").runtime is None


@pytest.mark.parametrize("python", [False, True], ids=["native", "python"])
def test_each_worker_has_added_its_step_when_the_block_ends(python):
    # A pool thread adds its step's time after the step's end, when the stepping thread may already be back;
    # three workers on fewer cores get preempted there often (before the handshake, 20% of these blocks missed
    # a worker's step).  In a barrier job (Python handlers) every worker takes part in every step; in the
    # chunked phases a pool thread may miss one, but never counts a step twice or in the wrong block.
    with seer.Runtime(many_windows(64, python=python), workers=3) as rt:
        t, wrong = 0.0, []
        for _ in range(200 if python else 500):
            with rt.pool_stats() as stats:
                t += 0.05
                rt.step(t)
            steps = [w.steps for w in stats.workers]
            if steps[0] != 1 or (steps != [1, 1, 1] if python else max(steps) > 1):
                wrong.append(steps)
    assert wrong == []


def test_spinning_and_sleeping_are_counted():
    # Between steps that come 20 ms apart a pool thread stops spinning and sleeps on the futex; the time it
    # spun before is counted, per worker and per step.
    import time

    with seer.Runtime(many_windows(), workers=2) as rt:
        with rt.pool_stats() as stats:
            t = 0.0
            for _ in range(5):
                t, _ = run(rt, t, 1)
                time.sleep(0.02)
    pool = stats.workers[1]
    assert pool.parks >= 4 and pool.spin_s > 0.0
    assert stats.parks >= pool.parks and stats.spin_s >= pool.spin_s
    assert stats.spin_per_step_s == pytest.approx(stats.spin_s / 5)
    assert "spin_per_step_s=" in repr(stats)
