"""uav_swarm_v0 builds the next step's broadcast grid at the end of a
PettingZoo step and leaves its candidate lists to the pool while Python
builds the dicts (uav_swarm_step.c, "ahead"; seer_rt_parallel_for_begin).
Which thread builds them, and when, must change nothing a user can see:
returns, state and determinism across pool sizes; and a reset, a close or
a garbage collection right after a step must wait for the open loop."""

import gc
import threading

import numpy as np
import pytest

from seer.envs import uav_swarm_v0 as U

pytestmark = pytest.mark.timeout(300)


def stacked(d):
    return np.stack([d[a] for a in sorted(d, key=lambda a: int(a.split("_")[1]))]) if d else np.zeros(0)


def steer(env, rng):
    """Actions towards each agent's target, with noise (the swarm moves, so grids and slots change)."""
    st = env.state_arrays
    out = {}
    for a in env.agents:
        i = int(a.split("_")[1])
        out[a] = np.clip(0.3 * (st["target"][i] - st["pos"][i]) - 0.6 * st["vel"][i] + rng.normal(0, 0.5, 3),
                         -1, 1).astype(np.float32)
    return out


def test_state_and_returns_after_every_step_match_a_single_worker():
    envs = {w: U.parallel_env(scenario="large", workers=w, max_cycles=40) for w in (1, 2, 3)}
    try:
        rng = np.random.default_rng(3)
        first = {w: env.reset(seed=11)[0] for w, env in envs.items()}
        assert stacked(first[2]).tobytes() == stacked(first[1]).tobytes()
        steps = 0
        while envs[1].agents:
            actions = steer(envs[1], rng)
            out = {w: env.step(actions) for w, env in envs.items()}
            steps += 1
            for w in (2, 3):
                o, r, term, trunc, info = out[w]
                assert stacked(o).tobytes() == stacked(out[1][0]).tobytes(), (w, steps)
                assert list(r.items()) == list(out[1][1].items()), (w, steps)
                assert (term, trunc, info) == out[1][2:], (w, steps)
                assert envs[w].agents == envs[1].agents
                # the state between steps, the broadcast grid's cells included, is the step's own
                for name, arr in envs[1].state_arrays.items():
                    assert envs[w].state_arrays[name].tobytes() == arr.tobytes(), (w, steps, name)
        assert steps == 40
    finally:
        for env in envs.values():
            env.close()


def test_reset_right_after_a_step_replays_the_episode():
    env = U.parallel_env(scenario="large", workers=2)
    try:
        def episode():
            obs, _ = env.reset(seed=5)
            trail = [stacked(obs).tobytes()]
            for _ in range(6):
                o, r, *_ = env.step({a: np.full(3, 0.4, np.float32) for a in env.agents})
                trail.append(stacked(o).tobytes() + np.array(list(r.values())).tobytes())
            return trail

        first = episode()
        assert episode() == first  # each reset came right after a step that built the next grid
    finally:
        env.close()


@pytest.mark.parametrize("how", ["close", "collect"])
def test_close_or_collection_right_after_a_step_joins_the_pool(how):
    before = threading.active_count()
    for _ in range(5):
        env = U.parallel_env(scenario="large", workers=2)
        env.reset(seed=1)
        env.step({a: np.zeros(3, np.float32) for a in env.agents})
        if how == "close":
            env.close()
            with pytest.raises(Exception, match="closed"):
                env.step({a: np.zeros(3, np.float32) for a in env.possible_agents})
        del env
        gc.collect()
    assert threading.active_count() == before
