"""seer.Runtime.schedule: what it refuses (times before ``rt.now``, a runtime
whose last step failed) and that a refusal pushes nothing."""

import numpy as np
import pytest

import seer

pytestmark = pytest.mark.timeout(60)

PING, TICK = 0, 1


class PingModel(seer.Model):
    """Entity 0 ticks every 0.5 and so its clock moves on; entity 1 is quiet
    until it gets a PING, which it answers by pinging entity 0."""

    lookahead = 0.1

    def __init__(self, fail_at=None):
        self.num_entities = 2
        self.fail_at = fail_at
        self.kinds = [seer.EventKind("ping", self.on_ping, batched=False),
                      seer.EventKind("tick", self.on_tick, batched=False)]
        self.state = {"pings": np.zeros(2, np.int64)}

    def reset(self, runtime, seed):
        self.state["pings"][:] = 0
        runtime.schedule([0], [0.0], [TICK])

    def on_tick(self, ctx, ev):
        if self.fail_at is not None and ev["time"] >= self.fail_at:
            raise RuntimeError("tick failed")
        ctx.emit(0, ev["time"] + 0.5, TICK)

    def on_ping(self, ctx, ev):
        e = int(ev["entity"])
        self.state["pings"][e] += 1
        if e == 1:
            ctx.emit(0, ev["time"] + 0.1, PING)


@pytest.mark.parametrize("workers", [1, 2])
def test_scheduling_before_now_is_refused_and_pushes_nothing(workers):
    # The quiet entity 1 was never handed anything, so the queue alone would
    # take an event at 0.5 for it after a step to 3.0; its answer to entity
    # 0 (clock 2.5) would then be in 0's past and the next step would never end.
    with seer.Runtime(PingModel(), workers=workers) as rt:
        rt.step(3.0)
        pending = len(rt.queue)
        with pytest.raises(seer.PastEventError, match=r"time 0\.5 at index 1 is before the runtime's current "
                                                       r"time 3\.0"):
            rt.schedule([1, 1], [3.5, 0.5], [PING, PING])
        assert len(rt.queue) == pending  # all or nothing
        with pytest.raises(seer.PastEventError):
            rt.schedule(np.array([1]), np.array([-np.inf]), np.array([PING]))
        rt.schedule([1], [3.0], [PING])  # at now: fine, the next step runs it
        rt.step(4.0)
        assert rt.model.state["pings"].tolist() == [1, 1]
        with pytest.raises(seer.InvalidEventError, match="not finite"):
            rt.schedule([1], [np.nan], [PING])


def test_scheduling_after_reset_refuses_negative_times():
    with seer.Runtime(PingModel(), workers=1) as rt:
        rt.step(1.0)
        rt.reset(0)
        assert rt.now == 0.0
        with pytest.raises(seer.PastEventError, match="before the runtime's current time 0.0"):
            rt.schedule([1], [-0.25], [PING])


@pytest.mark.parametrize("workers", [1, 2])
def test_schedule_after_a_failed_step_asks_for_reset_like_step_does(workers):
    with seer.Runtime(PingModel(fail_at=1.0), workers=workers) as rt:
        with pytest.raises(seer.HandlerError, match="tick failed"):
            rt.step(2.0)
        pending = len(rt.queue)
        with pytest.raises(seer.ClosedError, match=r"last step failed .*call reset\(\) before scheduling again"):
            rt.schedule([1], [5.0], [PING])
        assert len(rt.queue) == pending
        with pytest.raises(seer.ClosedError, match=r"call reset\(\) before stepping again"):
            rt.step(3.0)
        rt.model.fail_at = None
        rt.reset(0)  # usable again
        rt.schedule([1], [0.5], [PING])
        rt.step(1.0)
        assert rt.model.state["pings"].tolist() == [1, 1]


def test_pushing_into_the_runtimes_queue_before_now_is_refused_too():
    # rt.queue is reachable: the same hazard as schedule() if it took the past.
    with seer.Runtime(PingModel(), workers=2) as rt:
        rt.step(3.0)
        pending = len(rt.queue)
        with pytest.raises(seer.PastEventError, match=r"time 0\.5 at index 0 \(entity 1\) is before the runtime's "
                                                       r"current time 3\.0"):
            rt.queue.push_many([1], [0.5], [PING])
        with pytest.raises(seer.PastEventError):
            rt.queue.push(1, 2.0, PING)
        arrays = (np.array([1], np.int32), np.array([1.0]), np.array([PING], np.int32), np.zeros(1, np.int64))
        with pytest.raises(seer.PastEventError):
            rt.queue.push_prepared(rt.queue.prepare_push(*arrays), 1)
        assert len(rt.queue) == pending
        rt.queue.push(1, 3.25, PING)
        rt.step(4.0)
        assert rt.model.state["pings"].tolist() == [1, 1]
    rt.queue.push(0, 3.5, PING)  # closed: a plain queue again, with its own per-entity floors only
