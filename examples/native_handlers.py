"""A SEER model with native handlers (C, run with the GIL released).

Native handlers live in a module of their own, compiled against SEER's
public C API (``seer.get_include()``), never in SEER's core.  This example
drives the synthetic workload's handlers, which SEER ships as exactly such a
module, ``seer._synth_c`` (csrc/synth/seer_synth.c, built by
seer/_build_synth.py); to write your own:

1. A header with a struct for your model's buffers and the handler
   prototypes, ``int my_on_tick(seer_ctx *ctx, const seer_event *ev);``, and
   ``#include <seer/seer.h>`` (plain C: it doubles as cffi's cdef).
2. The C file.  In a handler, ``ctx->model`` is your struct,
   ``ctx->entity``/``ctx->now`` the event's entity and time; write only that
   entity's rows, read others from the snapshot buffers; send events with
   ``seer_emit(ctx, target, time, kind, payload)`` (another entity: at least
   the lookahead later) and draw random numbers with ``seer_uniform(ctx)``.
   Return 0, or non-zero to fail the step with a HandlerError.
3. A cffi build script: ``cdef(seer.capi.cdef() + <your header>)``,
   ``set_source(..., include_dirs=[seer.get_include()])``; then
   ``plugin = seer.capi.Plugin(your_module)`` (checks the API version it was
   built against), ``plugin.handler("my_on_tick")`` as below, and point the C
   struct (from your module's ``ffi``) at your numpy arrays with
   ``ffi.from_buffer``.  examples/seer_consensus is a complete package.

    pip install seer-marl
    python examples/native_handlers.py
"""

import numpy as np

import seer
import seer._synth_c as synth  # the handlers' own module (a plug-in)
from seer._synth_c import ffi  # its ffi builds the struct its handlers read

PLUGIN = seer.capi.Plugin(synth)


class Ticker(seer.Model):
    def __init__(self, num_entities=4096, work=200):
        self.num_entities = num_entities
        self.lookahead = 0.1
        self.kinds = [seer.EventKind("tick", PLUGIN.handler("seer_synth_tick")),
                      seer.EventKind("msg", PLUGIN.handler("seer_synth_msg"))]
        self.state = {"value": np.zeros(num_entities), "handled": np.zeros(num_entities, np.int64)}
        self.shared_state = ("value",)
        snapshot = self.snapshot_targets()["value"]  # filled by the runtime at each window start
        c = ffi.new("seer_synth *")
        c.value = ffi.cast("double *", ffi.from_buffer(self.state["value"]))
        c.snap = ffi.cast("double *", ffi.from_buffer(snapshot))
        c.handled = ffi.cast("int64_t *", ffi.from_buffer(self.state["handled"]))
        c.num_entities, c.fanout, c.work = num_entities, 2, work
        c.period, c.delay = 0.05, 0.1
        c.fail_entity, c.fail_time = -1, float("inf")
        self.native_model = c  # the runtime hands this pointer to the handlers as ctx->model

    def reset(self, runtime, seed):
        self.state["value"][:] = 1.0
        self.state["handled"][:] = 0
        e = np.arange(self.num_entities)
        runtime.schedule(e, (e % 5) * 0.01, np.zeros(self.num_entities, np.int32))


if __name__ == "__main__":
    import time

    finals = []
    for workers in (1, 2):
        model = Ticker()
        with seer.Runtime(model, workers=workers, seed=1) as rt:
            t0 = time.perf_counter()
            events = sum(rt.step(0.1 * k).events for k in range(1, 21))
            dt = time.perf_counter() - t0
        finals.append(model.state["value"].copy())
        print(f"workers={workers}: {events} events in {dt * 1e3:.1f} ms ({events / dt / 1e6:.2f} M events/s)")
    assert finals[0].tobytes() == finals[1].tobytes()
    print("bit-identical state for 1 and 2 workers")
