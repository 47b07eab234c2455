"""Synthetic workloads: entities that tick at their own period, do a set
amount of work per event and message random other entities.

They are what the runtime's tests check determinism on, what the benchmarks
time, and part of what STPA trains on.  Two flavours with the same shape:
:class:`SyntheticModel` runs native handlers (C, GIL released) and
:class:`PythonSyntheticModel` runs batched Python handlers.  The native
handlers (csrc/synth/) are a plug-in, seer._synth_c, built against the public
C API like any outside module: the core extension holds none of them.
"""

from __future__ import annotations

import numpy as np

from seer import _synth_c
from seer._synth_c import ffi
from seer.capi import Plugin
from seer.model import EventKind, Model

#: the handlers' module, checked against this SEER's C API
PLUGIN = Plugin(_synth_c)

TICK, MSG = 0, 1


def _check(name, value, lo, kind=int):
    if not isinstance(value, (int, float) if kind is float else int) or isinstance(value, bool) or value < lo:
        raise ValueError(f"{name}={value!r} is invalid: expected a {kind.__name__} >= {lo}")


class _SyntheticBase(Model):
    def __init__(self, num_entities: int = 64, *, fanout: int = 1, work: int = 0, period: float = 0.1,
                 delay: float = 0.1, lookahead: float | None = None):
        _check("num_entities", num_entities, 1)
        _check("fanout", fanout, 0)
        _check("work", work, 0)
        _check("period", period, 1e-12, float)
        _check("delay", delay, 0.0, float)
        self.num_entities = num_entities
        self.fanout, self.work, self.period, self.delay = fanout, work, float(period), float(delay)
        self.lookahead = float(delay if lookahead is None else lookahead)
        self.state = {"value": np.zeros(num_entities), "handled": np.zeros(num_entities, np.int64)}
        self.shared_state = ("value",)

    def reset(self, runtime, seed: int) -> None:
        e = np.arange(self.num_entities)
        self.state["value"][:] = (e % 13) * 0.25 + seed % 1000
        self.state["handled"][:] = 0
        # Spread the first ticks over one period so entities run on their own clocks.
        runtime.schedule(e, (e % 7) * (self.period / 7.0), np.full(self.num_entities, TICK))


class SyntheticModel(_SyntheticBase):
    """Native synthetic workload.

    Args:
        num_entities: Entities.
        fanout: Messages each tick sends to random other entities.
        work: Iterations of dependent arithmetic per event (~1 ns each).
        period: Each entity's tick period.
        delay: Message delay (the lookahead unless ``lookahead`` is given;
            a delay under the lookahead makes steps fail with a CausalityError).
        fail_entity: Make this entity's tick handler fail at ``fail_time``.
    """

    def __init__(self, num_entities: int = 64, *, fail_entity: int = -1, fail_time: float = float("inf"), **kw):
        super().__init__(num_entities, **kw)
        self.kinds = [EventKind("tick", PLUGIN.handler("seer_synth_tick")),
                      EventKind("msg", PLUGIN.handler("seer_synth_msg"))]
        snap = self.snapshot_targets()["value"]
        self._c = ffi.new("seer_synth *")
        self._c.value = ffi.cast("double *", ffi.from_buffer(self.state["value"]))
        self._c.snap = ffi.cast("double *", ffi.from_buffer(snap))
        self._c.handled = ffi.cast("int64_t *", ffi.from_buffer(self.state["handled"]))
        self._c.num_entities = num_entities
        self._c.fanout = self.fanout
        self._c.work = self.work
        self._c.period = self.period
        self._c.delay = self.delay
        self._c.fail_entity = fail_entity
        self._c.fail_time = fail_time
        self.native_model = self._c


class PythonSyntheticModel(_SyntheticBase):
    """The same workload with batched Python handlers (numpy over each batch)."""

    def __init__(self, num_entities: int = 64, **kw):
        super().__init__(num_entities, **kw)
        self.kinds = [EventKind("tick", self._tick), EventKind("msg", self._msg)]

    def _burn(self, x: np.ndarray, iters: int) -> np.ndarray:
        for _ in range(iters):
            x = x * 0.999999 + 1e-7
        return x

    def _tick(self, ctx, ev) -> None:
        e, t = ev["entity"], ev["time"]
        n = self.num_entities
        right = (e + 1) % n
        v = self._burn(ctx.state["value"][e] + 0.001 * ctx.snapshot["value"][right], self.work)
        ctx.state["value"][e] = v
        ctx.state["handled"][e] += 1
        if self.fanout and n > 1:
            src = np.repeat(e, self.fanout)
            to = np.minimum((ctx.uniform(src) * n).astype(np.int32), n - 1)
            to = np.where(to == src, (src + 1) % n, to)
            payload = (np.fmod(np.abs(np.repeat(v, self.fanout)), 1e6) * 1000.0).astype(np.int64)
            ctx.emit(to, np.repeat(t, self.fanout) + self.delay, MSG, payload, sources=src)
        ctx.emit(e, t + self.period, TICK)

    def _msg(self, ctx, ev) -> None:
        e = ev["entity"]
        ctx.state["value"][e] = self._burn(ctx.state["value"][e] * 0.5 + ev["payload"] * 1e-6, self.work // 2)
        ctx.state["handled"][e] += 1
