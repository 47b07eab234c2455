"""uav_swarm_v0 one env across cores: ParallelEnv.step at workers=1 and 2 (best of 3 repeats), with the parallel capacity before and after.

    python bench/bench_uav_intra_env.py
"""
import time, numpy as np
from seer.envs import uav_swarm_v0
from seer.bench.common import parallel_capacity

def rate(scenario, w, steps):
    env = uav_swarm_v0.parallel_env(scenario=scenario, workers=w, max_cycles=100000)
    env.reset(seed=0)
    acts = {a: np.zeros(3, np.float32) for a in env.possible_agents}
    for _ in range(3): env.step({a: acts[a] for a in env.agents})
    best = 1e9
    for r in range(3):
        t = time.perf_counter()
        for _ in range(steps): env.step({a: acts[a] for a in env.agents})
        best = min(best, (time.perf_counter() - t) / steps)
    env.close()
    return best * 1e3

if __name__ == "__main__":
    print("capacity", round(parallel_capacity(), 2))
    for sc, steps in (("default", 300), ("large", 150), ("xlarge", 8)):
        r1, r2 = rate(sc, 1, steps), rate(sc, 2, steps)
        print(sc, f"w1 {r1:.3f} ms  w2 {r2:.3f} ms  w2/w1 speedup {r1/r2:.2f}x")
    print("capacity", round(parallel_capacity(), 2))
