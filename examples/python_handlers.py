"""A SEER model with Python handlers: gossip on a ring.

Each node ticks at its own rate and tells a random node its current rumour
count; a node that hears a rumour counts it.  Handlers get a batch of events
of one kind (numpy arrays, at most one event per node), so one Python call
covers many events.

    pip install seer-marl
    python examples/python_handlers.py
"""

import numpy as np

import seer

TICK, HEAR = 0, 1


class Gossip(seer.Model):
    def __init__(self, num_nodes=1000, delay=0.05):
        self.num_entities = num_nodes
        self.lookahead = delay  # the smallest delay between two nodes
        self.delay = delay
        self.kinds = [seer.EventKind("tick", self.on_tick), seer.EventKind("hear", self.on_hear)]
        self.state = {"heard": np.zeros(num_nodes, np.int64), "rate": np.zeros(num_nodes)}

    def reset(self, runtime, seed):
        rng = np.random.default_rng(seed)
        self.state["heard"][:] = 0
        self.state["rate"][:] = rng.choice([10.0, 20.0, 50.0], self.num_entities)  # per-node clocks (Hz)
        nodes = np.arange(self.num_entities)
        runtime.schedule(nodes, 1.0 / self.state["rate"], np.full(self.num_entities, TICK))

    def on_tick(self, ctx, events):
        me, now = events["entity"], events["time"]
        # Counter-based randomness: the same draws whatever the worker count.
        to = (ctx.uniform(me) * self.num_entities).astype(np.int32)
        to = np.where(to == me, (me + 1) % self.num_entities, to)
        ctx.emit(to, now + self.delay, HEAR, payloads=ctx.state["heard"][me])
        ctx.emit(me, now + 1.0 / ctx.state["rate"][me], TICK)

    def on_hear(self, ctx, events):
        ctx.state["heard"][events["entity"]] += 1


if __name__ == "__main__":
    results = []
    for workers in (1, 2):
        model = Gossip()
        with seer.Runtime(model, workers=workers, seed=7) as rt:
            for step in range(1, 11):
                stats = rt.step(step * 0.1)
        results.append(model.state["heard"].copy())
        print(f"workers={workers}: {int(model.state['heard'].sum())} rumours heard, last step {stats}")
    assert np.array_equal(*results), "results must not depend on the worker count"
    print("identical results for 1 and 2 workers")
