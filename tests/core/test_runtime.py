"""seer.Runtime: determinism across pool sizes, per-entity order, snapshots,
errors, thread hygiene and tracing."""

import json
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import seer
from seer.synthetic import MSG, TICK, PythonSyntheticModel, SyntheticModel

WORKER_COUNTS = [1, 2, 3, 4, 8]


def run_model(model, workers, steps=20, dt=0.25, seed=3):
    with seer.Runtime(model, workers=workers, seed=seed) as rt:
        events = sum(rt.step((k + 1) * dt).events for k in range(steps))
        return {name: arr.copy() for name, arr in model.state.items()}, events, len(rt.queue)


@pytest.mark.parametrize("make", [
    lambda: SyntheticModel(97, fanout=3, work=50, period=0.1, delay=0.05),
    lambda: PythonSyntheticModel(61, fanout=2, work=3, period=0.1, delay=0.05),
], ids=["native", "python"])
def test_same_seed_gives_identical_results_for_every_pool_size(make):
    reference = run_model(make(), 1)
    assert reference[1] > 1000  # the workload really ran
    for workers in WORKER_COUNTS:
        for _ in range(2):  # and across repeated runs
            state, events, pending = run_model(make(), workers)
            assert events == reference[1] and pending == reference[2]
            for name, arr in reference[0].items():
                assert arr.tobytes() == state[name].tobytes(), (workers, name)


def test_different_seeds_differ():
    a = run_model(SyntheticModel(32, fanout=2), 2, seed=1)[0]["value"]
    b = run_model(SyntheticModel(32, fanout=2), 2, seed=2)[0]["value"]
    assert a.tobytes() != b.tobytes()


def test_step_processes_exactly_the_events_before_the_horizon():
    model = SyntheticModel(4, fanout=0, period=1.0, delay=1.0)
    with seer.Runtime(model, workers=2) as rt:
        # First ticks at (e % 7) / 7 for e = 0..3; then one tick per entity per unit of time.
        assert rt.step(0.2).events == 2      # ticks at 0 and 1/7
        assert rt.step(1.0).events == 2      # ticks at 2/7 and 3/7
        assert rt.step(1.0).events == 0      # empty step: horizon unchanged
        assert rt.step(2.0).events == 4      # one more tick each
        assert model.state["handled"].tolist() == [2, 2, 2, 2]
        assert rt.queue.min_time() == pytest.approx(2.0)


class RecordingModel(seer.Model):
    """Python model that records the order each entity sees its events and
    what it reads of its neighbour through the snapshot."""

    def __init__(self, n=24, lookahead=0.1):
        self.num_entities = n
        self.lookahead = lookahead
        self.kinds = [seer.EventKind("ping", self._ping), seer.EventKind("echo", self._echo)]
        self.state = {"count": np.zeros(n, np.int64)}
        self.log = []

    def reset(self, runtime, seed):
        self.state["count"][:] = 0
        self.log.clear()
        e = np.arange(self.num_entities)
        runtime.schedule(e, np.zeros(self.num_entities), np.zeros(self.num_entities, np.int32))

    def _ping(self, ctx, ev):
        e, t = ev["entity"], ev["time"]
        right = (e + 1) % self.num_entities
        for i in range(len(ev)):
            self.log.append((int(e[i]), float(t[i]), int(ev["seq"][i]), int(ctx.snapshot["count"][right[i]])))
        ctx.state["count"][e] += 1
        # Two events to itself inside the window (same time and later), one to a neighbour.
        ctx.emit(e, t + 0.03, 1, sources=e)
        ctx.emit(e, t, 1, sources=e)
        ctx.emit(right, t + self.lookahead, 1, sources=e)
        ctx.emit(e, t + 0.25, 0, sources=e)

    def _echo(self, ctx, ev):
        for i in range(len(ev)):
            self.log.append((int(ev["entity"][i]), float(ev["time"][i]), int(ev["seq"][i]), -1))
        ctx.state["count"][ev["entity"]] += 1


@pytest.mark.parametrize("workers", [1, 2, 4])
def test_each_entity_sees_its_events_in_time_order_and_reads_the_window_snapshot(workers):
    model = RecordingModel()
    with seer.Runtime(model, workers=workers) as rt:
        for k in range(8):
            rt.step(0.5 * (k + 1))
    per_entity = {}
    for entity, time, seq, seen in model.log:
        per_entity.setdefault(entity, []).append(time)
    for entity, times in per_entity.items():
        assert times == sorted(times), entity
    # Snapshot reads are a pure function of the model: the same for every pool size.
    baseline = RecordingModel()
    with seer.Runtime(baseline, workers=1) as rt:
        for k in range(8):
            rt.step(0.5 * (k + 1))
    assert sorted(model.log) == sorted(baseline.log)
    assert model.state["count"].tolist() == baseline.state["count"].tolist()


def test_snapshot_hides_writes_made_in_the_same_window():
    model = RecordingModel(n=2)
    with seer.Runtime(model, workers=1) as rt:
        rt.step(0.01)
    # Both pings at t=0 are in the first window; each sees its neighbour's count
    # as it was at the window start (0), whichever ran first.
    pings = [row for row in model.log if row[3] >= 0]
    assert [row[3] for row in pings] == [0, 0]


class PartnerModel(seer.Model):
    """Entities on their own clocks (``period``), each drawing from its
    random stream and messaging its ``partner``: everything an entity is
    lives in rows the caller can rename (see :meth:`rename`)."""

    lookahead = 0.05

    def __init__(self, n=40):
        self.num_entities = n
        self.kinds = [seer.EventKind("tick", self._tick), seer.EventKind("msg", self._msg)]
        e = np.arange(n)
        self.state = {"period": 0.1 + 0.05 * (e % 4), "partner": (7 * e + 3) % n, "drawn": np.zeros(n),
                      "ticks": np.zeros(n, np.int64), "heard": np.zeros(n, np.int64)}

    def reset(self, runtime, seed):
        for name in ("drawn", "ticks", "heard"):
            self.state[name][:] = 0
        e = np.arange(self.num_entities)
        runtime.schedule(e, 0.01 * (e % 5), np.zeros(self.num_entities, np.int32))

    def _tick(self, ctx, ev):
        e, t, st = ev["entity"], ev["time"], ctx.state
        st["drawn"][e] = st["drawn"][e] * 0.5 + ctx.uniform(e)  # order-sensitive: each draw counts
        st["ticks"][e] += 1
        ctx.emit(e, t + st["period"][e], 0, sources=e)
        ctx.emit(st["partner"][e], t + self.lookahead, 1, sources=e)

    def _msg(self, ctx, ev):
        ctx.state["heard"][ev["entity"]] += 1

    def rename(self, new_of_old):
        """The model's half of Runtime.relabel: rows move, partner ids are renamed."""
        for arr in self.state.values():
            arr[new_of_old] = arr.copy()
        self.state["partner"][:] = new_of_old[self.state["partner"]]


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_relabel_between_steps_renames_entities_with_their_events_and_random_streams(workers):
    """Renamed halfway (the model renaming its rows the same way), a run ends
    exactly where the run without renaming ends, read under the new names:
    pending events, random streams and clocks all moved with their entity."""
    plain, renamed = PartnerModel(), PartnerModel()
    perm = np.random.default_rng(0).permutation(plain.num_entities)
    with seer.Runtime(plain, workers=workers, seed=4) as a, seer.Runtime(renamed, workers=workers, seed=4) as b:
        for k in range(4):
            a.step(0.25 * (k + 1))
            b.step(0.25 * (k + 1))
        b.relabel(perm)
        renamed.rename(perm)
        for k in range(4, 10):
            a.step(0.25 * (k + 1))
            b.step(0.25 * (k + 1))
        assert plain.state["ticks"].sum() > 200 and (plain.state["heard"] > 0).all()  # it really ran
        for name, arr in plain.state.items():
            want = perm[arr] if name == "partner" else arr  # partner holds ids: renamed too
            assert renamed.state[name][perm].tobytes() == want.tobytes(), name
        assert len(a.queue) == len(b.queue)
        # the next events too: entity e's earliest pending time is now entity perm[e]'s
        left_a, left_b = a.queue.pop(np.inf, max_events=10**6), b.queue.pop(np.inf, max_events=10**6)
        order = np.lexsort((left_a["time"], left_a["entity"]))
        renamed_back = np.argsort(perm)[left_b["entity"]]
        order_b = np.lexsort((left_b["time"], renamed_back))
        assert renamed_back[order_b].tolist() == left_a["entity"][order].tolist()
        assert left_b["time"][order_b].tolist() == left_a["time"][order].tolist()


def test_relabel_refuses_what_is_not_a_permutation_and_changes_nothing():
    model = PartnerModel(n=4)
    with seer.Runtime(model, workers=2) as rt:
        rt.step(0.3)
        before = len(rt.queue)
        with pytest.raises(seer.InvalidArgumentError, match=r"new_of_old\[2\]=0 is a repeat"):
            rt.relabel([1, 0, 0, 3])
        with pytest.raises(seer.InvalidArgumentError, match=r"new_of_old\[3\]=4 is out of range"):
            rt.relabel([1, 0, 2, 4])
        with pytest.raises(seer.InvalidArgumentError, match="expected 4 integers"):
            rt.relabel([0, 1])
        assert len(rt.queue) == before
        rt.step(0.6)  # still runs
    with pytest.raises(seer.ClosedError, match="relabel"):
        rt.relabel([0, 1, 2, 3])


# ---- errors ------------------------------------------------------------------------------


class Boom(Exception):
    pass


def failing_model(at_entity=5, at_time=0.45):
    model = PythonSyntheticModel(16, fanout=1, period=0.1, delay=0.1)
    tick = model._tick

    def exploding(ctx, ev):
        if np.any((ev["entity"] == at_entity) & (ev["time"] >= at_time)):
            raise Boom("kaboom")
        tick(ctx, ev)

    model.kinds = [seer.EventKind("tick", exploding, batched=False), model.kinds[1]]
    return model


@pytest.mark.parametrize("workers", [1, 3])
def test_python_handler_failure_names_entity_kind_time_and_chains_the_cause(workers):
    with seer.Runtime(failing_model(), workers=workers) as rt:
        with pytest.raises(seer.HandlerError) as info:
            rt.step(5.0)
        err = info.value
        assert isinstance(err.__cause__, Boom)
        assert err.entity == 5 and err.kind == TICK and err.time >= 0.45
        assert "entity 5" in str(err) and "'tick'" in str(err) and "kaboom" in str(err)
        with pytest.raises(seer.ClosedError, match="reset"):
            rt.step(6.0)
        rt.reset(0)  # usable again
        model = rt.model
        model.kinds[0] = seer.EventKind("tick", model._tick)
        rt2_events = rt.step(0.3).events
        assert rt2_events > 0


@pytest.mark.parametrize("workers", [1, 2])
def test_native_handler_failure_is_reported_and_recoverable(workers):
    model = SyntheticModel(16, fanout=1, fail_entity=7, fail_time=0.3)
    with seer.Runtime(model, workers=workers) as rt:
        with pytest.raises(seer.HandlerError, match=r"entity 7, kind 0") as info:
            rt.step(2.0)
        assert info.value.entity == 7 and info.value.time >= 0.3
        assert info.value.code == 1 and str(info.value).endswith("returned 1")  # the C handler's own code
        model._c.fail_entity = -1
        rt.reset(1)
        assert rt.step(2.0).events > 0


@pytest.mark.parametrize("make", [
    lambda: SyntheticModel(8, fanout=1, delay=0.05, lookahead=0.1),
    lambda: PythonSyntheticModel(8, fanout=1, delay=0.05, lookahead=0.1),
], ids=["native", "python"])
def test_sending_another_entity_an_event_under_the_lookahead_is_a_causality_error(make):
    with seer.Runtime(make(), workers=2) as rt:
        with pytest.raises(seer.CausalityError, match=r"lookahead 0\.1"):
            rt.step(1.0)


def test_bad_arguments_are_rejected_with_the_value_named():
    model = SyntheticModel(4)
    for bad in (0, -1, "many", 2.5, True):
        with pytest.raises(ValueError, match=repr(bad)):
            seer.Runtime(model, workers=bad)
    with seer.Runtime(model, workers=1) as rt:
        for bad in (float("nan"), float("inf"), "1.0"):
            with pytest.raises(ValueError, match="horizon"):
                rt.step(bad)
        rt.step(1.0)
        with pytest.raises(ValueError, match="before the runtime's current time"):
            rt.step(0.5)
    with pytest.raises(TypeError, match="seer.Model"):
        seer.Runtime(object())
    model.lookahead = 0.0
    with pytest.raises(ValueError, match="lookahead=0.0"):
        seer.Runtime(model)


def test_queue_too_small_for_the_stream_raises_queue_full():
    model = SyntheticModel(64, fanout=8, period=0.01, delay=0.5)
    with seer.Runtime(model, workers=2, capacity=256) as rt:
        with pytest.raises(seer.QueueFullError, match="capacity"):
            rt.step(5.0)


@pytest.mark.parametrize("workers", [1, 2])
def test_pushes_between_steps_can_fill_the_whole_capacity(workers):
    # Native steps leave free nodes in the workers' caches for the next
    # step; a push from outside must still get every free node of the pool.
    cap = 16384
    model = SyntheticModel(256, fanout=3, period=0.01, delay=0.05)
    with seer.Runtime(model, workers=workers, capacity=cap) as rt:
        rt.reset(seed=1)
        for k in range(1, 6):
            rt.step(0.1 * k)
        free = cap - len(rt.queue)
        assert 0 < free < cap
        n = np.arange(free)
        rt.schedule(n % 256, 1.0 + n * 1e-6, np.full(free, TICK))
        assert len(rt.queue) == cap
        with pytest.raises(seer.QueueFullError):
            rt.schedule([0], [2.0], [TICK])


# ---- threads and lifecycle ----------------------------------------------------------------


def test_close_joins_the_pool_and_closed_runtime_refuses_work():
    before = threading.active_count()
    rt = seer.Runtime(SyntheticModel(32), workers=4)
    assert threading.active_count() == before + 3
    rt.step(1.0)
    rt.close()
    rt.close()  # idempotent
    assert threading.active_count() == before
    with pytest.raises(seer.ClosedError):
        rt.step(2.0)


def test_context_manager_and_garbage_collection_stop_the_pool():
    before = threading.active_count()
    with seer.Runtime(SyntheticModel(8), workers=3):
        assert threading.active_count() == before + 2
    assert threading.active_count() == before
    rt = seer.Runtime(SyntheticModel(8), workers=3)
    del rt
    import gc

    gc.collect()
    assert threading.active_count() == before


def test_an_unclosed_runtime_does_not_block_interpreter_exit():
    code = textwrap.dedent("""
        import seer
        from seer.synthetic import SyntheticModel, PythonSyntheticModel
        a = seer.Runtime(SyntheticModel(64, fanout=2), workers=4)
        a.step(1.0)
        b = seer.Runtime(PythonSyntheticModel(16), workers=3)
        b.step(1.0)
        print("stepped")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "stepped" in out.stdout


# ---- tracing ---------------------------------------------------------------------------------


@pytest.mark.parametrize("model_cls", [SyntheticModel, PythonSyntheticModel])
def test_trace_records_every_event_and_window_and_exports_chrome_json(tmp_path, model_cls):
    model = model_cls(12, fanout=1, work=10)
    with seer.Runtime(model, workers=2, trace=True) as rt:
        total = sum(rt.step(0.5 * (k + 1)).events for k in range(4))
        trace = rt.trace
    ev = trace.events
    assert len(ev) == total and trace.dropped == 0
    assert set(np.unique(ev["kind"])) <= {TICK, MSG}
    assert np.all(ev["end_ns"] >= ev["start_ns"])
    assert set(np.unique(ev["worker"])) <= {0, 1}
    # Per window, each worker that ran some of its events has one row (every worker, with Python handlers:
    # a barrier job); their event counts add up.
    win = trace.windows
    assert int(win["events"].sum()) == total
    pairs = {(int(w), int(k)) for w, k in zip(win["window"], win["worker"])}
    assert len(pairs) == len(win)
    rows = 2 if model_cls is PythonSyntheticModel else (1, 2)
    assert all(np.count_nonzero(win["window"] == w) in np.atleast_1d(rows) for w in np.unique(win["window"]))
    assert np.all(win["t1"] > win["t0"]) and np.all(trace.idle_ns() >= 0)
    path = tmp_path / "trace.json"
    trace.to_chrome(path)
    doc = json.loads(path.read_text())
    spans = [e for e in doc["traceEvents"] if e["ph"] == "X" and e["cat"] == "event"]
    assert len(spans) == total
    assert {e["name"] for e in spans} <= {"tick", "msg"}
    assert all(e["dur"] > 0 and "entity" in e["args"] for e in spans)
    assert any(e["ph"] == "M" and e["args"]["name"] == "worker 1" for e in doc["traceEvents"])
    if model_cls is PythonSyntheticModel:
        assert trace.summary()["python_ns"] > 0


def test_tracing_off_records_nothing():
    with seer.Runtime(SyntheticModel(8), workers=2) as rt:
        rt.step(1.0)
        assert len(rt.trace.events) == 0 and len(rt.trace.windows) == 0


def test_a_string_pool_size_is_refused_and_points_at_stpa():
    # The runtime takes integers (it sits below STPA); choosing the size is STPA's job.
    for bad in ("auto", "2"):
        with pytest.raises(seer.InvalidArgumentError, match=f"workers={bad!r} is invalid.*seer.stpa.resolve_workers"
                                                            f".*seer.stpa.make_runtime"):
            seer.Runtime(SyntheticModel(8), workers=bad)
    with seer.stpa.make_runtime(SyntheticModel(8), "auto") as rt:
        assert rt.workers >= 1 and rt.tuner is not None
        assert rt.step(1.0).events > 0


@pytest.mark.parametrize("python_batch", [1, 3])
def test_python_batch_bounds_the_events_per_handler_call(python_batch):
    sizes = []
    model = PythonSyntheticModel(16, fanout=1)
    tick = model._tick
    model.kinds[0] = seer.EventKind("tick", lambda ctx, ev: (sizes.append(len(ev)), tick(ctx, ev)))
    with seer.Runtime(model, workers=2, python_batch=python_batch) as rt:
        assert rt.step(1.0).events > 0
    assert sizes and max(sizes) <= python_batch
    with pytest.raises(ValueError, match="python_batch=0"):
        seer.Runtime(model, python_batch=0)
