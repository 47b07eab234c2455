"""`seer bench`'s rows and timing loops: one row per (scenario, system), timed through the dict API."""

from __future__ import annotations

import dataclasses
import time
from typing import Callable

import numpy as np

from seer.bench.common import latency_stats


@dataclasses.dataclass
class Row:
    domain: str          # "uav" or "wireless"
    scenario: str
    entities: int
    system: str
    kind: str            # "seer", "same model", "indicative"
    workers: int | None = None
    mean_ms: float = float("nan")
    p50_ms: float = float("nan")
    p99_ms: float = float("nan")
    steps: int = 0
    note: str = ""
    condition: str = "quiet"  # "quiet", or "loaded": timed beside one busy process (`seer bench`'s own rows)

    @property
    def ok(self) -> bool:
        return self.steps > 0


def time_loop(step: Callable[[int], None], reset: Callable[[int], None], steps: int, budget_s: float,
              warmup: int = 3) -> np.ndarray:
    """Latencies (s) of ``step(i)``; ``reset(episode)`` runs off the clock when
    ``step`` returns True (episode over)."""
    lat = []
    episode = 0
    reset(episode)
    deadline = None
    for i in range(warmup + steps):
        t0 = time.perf_counter()
        done = step(i)
        t1 = time.perf_counter()
        if i >= warmup:
            lat.append(t1 - t0)
            if deadline is None:
                deadline = t1 + budget_s
            elif t1 > deadline:
                break
        if done:
            episode += 1
            reset(episode)
    return np.asarray(lat)


def fill(row: Row, lat: np.ndarray) -> Row:
    """``row`` with the step count and latency statistics (ms) of ``lat`` (seconds)."""
    row.steps = int(lat.size)
    if lat.size:
        stats = latency_stats(lat, "ms")
        row.mean_ms, row.p50_ms, row.p99_ms = stats["mean_ms"], stats["p50_ms"], stats["p99_ms"]
    return row


def time_parallel_env(env, steps: int, budget_s: float, seed: int = 0, min_s: float = 0.0) -> np.ndarray:
    """Latencies (s) of ``env.step`` over ``steps`` steps (after 3 warm-up
    steps) or ``budget_s`` seconds, whichever ends first; with ``min_s``, at
    least that many seconds of steps (still within ``budget_s``): a row of
    microsecond steps needs many of them before one descheduling by a
    foreign process stops deciding its mean."""
    rng = np.random.default_rng(seed)
    spaces = {a: env.action_space(a) for a in env.possible_agents}

    def draw(agents):
        out = {}
        for a in agents:
            sp = spaces[a]
            if hasattr(sp, "n"):
                out[a] = int(rng.integers(sp.n))
            else:
                out[a] = rng.uniform(sp.low, sp.high).astype(sp.dtype)
        return out

    pending = {}

    def reset(episode):
        env.reset(seed=seed + episode)
        pending["a"] = draw(env.agents)

    # Draw the next actions off the clock: time only env.step.
    lat = []
    reset(0)
    episode, deadline = 0, None
    i, started = 0, None
    while True:
        actions = pending["a"]
        t0 = time.perf_counter()
        env.step(actions)
        t1 = time.perf_counter()
        if i >= 3:
            lat.append(t1 - t0)
            started = started or t0
            deadline = deadline or t1 + budget_s
            if t1 > deadline or (len(lat) >= steps and t1 - started >= min_s):
                break
        i += 1
        if not env.agents:
            episode += 1
            reset(episode)
        else:
            pending["a"] = draw(env.agents)
    return np.asarray(lat)
