"""consensus_v0 as a plain Python event loop (a heap): the same model, bit for bit, without SEER.

It is the baseline a user would write first, and the check that the C
handlers on SEER's runtime compute exactly this: every event runs in
``(time, source, seq)`` order per agent, as SEER orders them.
"""

from __future__ import annotations

import heapq

import numpy as np

TICK, HEAR, ACT = 0, 1, 2
_M64 = 2**64 - 1


def _splitmix(state: int) -> tuple[int, int]:
    state = (state + 0x9E3779B97F4A7C15) & _M64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return state, z ^ (z >> 31)


class ReferenceSim:
    """The engine behind ``consensus_v0.parallel_env(engine="python")``."""

    def __init__(self, n: int, max_cycles: int, periods, delay: float, gain: float, speed: float, dt: float):
        self.n, self.max_cycles = n, max_cycles
        self.period = [periods[i % 3] for i in range(n)]
        self.delay, self.gain, self.speed, self.dt = delay, gain, speed, dt
        self.obs = np.zeros((n, 4), np.float32)
        self.rew = np.zeros(n)
        self.flags = {"trunc": np.zeros(n, np.uint8)}
        self._seed_stream = 0
        self.goal = 0.0

    def next_seed(self) -> int:
        self._seed_stream, z = _splitmix(self._seed_stream)
        return z >> 33

    def reset(self, seed: int) -> np.ndarray:
        n = self.n
        s, draws = seed, []
        for _ in range(n + 1):
            s, z = _splitmix(s)
            draws.append((z >> 11) * 2.0**-53)
        self.goal = 2.0 * draws[0] - 1.0
        self.value = [4.0 * u - 2.0 for u in draws[1:]]
        self.heard = [[self.value[(i - 1) % n], self.value[(i + 1) % n]] for i in range(n)]
        self.action = [0.0] * n
        self.emit_seq = [0] * n
        self.ext_seq = 0
        self.heap: list = []
        self.steps = 0
        for i in range(n):
            self._push(i, 0.0, TICK, 0.0, -1)
        self._observe()
        return self.obs.copy()

    def _push(self, target: int, time: float, kind: int, value: float, source: int) -> None:
        if source < 0:
            seq, self.ext_seq = self.ext_seq, self.ext_seq + 1
        else:
            seq = self.emit_seq[source]
            self.emit_seq[source] += 1
        heapq.heappush(self.heap, (time, target, source, seq, kind, value))

    def step(self, actions: np.ndarray) -> None:
        n, t0 = self.n, self.steps * self.dt
        for i in range(n):
            self._push(i, t0, ACT, float(np.float32(actions[i])), -1)
        horizon = (self.steps + 1) * self.dt
        heap, value, heard = self.heap, self.value, self.heard
        while heap and heap[0][0] < horizon:
            time, i, source, _, kind, x = heapq.heappop(heap)
            if kind == TICK:
                T = self.period[i]
                h = heard[i]
                mean = 0.5 * (h[0] + h[1])
                v = value[i] + T * (self.gain * (mean - value[i]) + self.speed * self.action[i])
                value[i] = v
                self._push((i - 1) % n, time + self.delay, HEAR, v, i)
                self._push((i + 1) % n, time + self.delay, HEAR, v, i)
                self._push(i, time + T, TICK, 0.0, i)
            elif kind == HEAR:
                heard[i][0 if source == (i - 1) % n else 1] = x
            else:
                self.action[i] = x
        self.steps += 1
        self._observe()
        self.rew[:] = [-abs(self.goal - v) for v in value]
        self.flags["trunc"][:] = self.steps >= self.max_cycles

    def _observe(self) -> None:
        obs = np.array([[v, h[0], h[1], self.goal - v] for v, h in zip(self.value, self.heard)])
        self.obs[:] = np.clip(obs, -10.0, 10.0).astype(np.float32)
