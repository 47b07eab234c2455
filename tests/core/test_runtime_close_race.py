"""close() from another thread racing with whatever the owning thread does
next: step, reset, schedule, events_total, relabel, resize, the end of a
``pool_stats()`` block.  Every call ends in success or ClosedError, never in
freed memory.  Each scenario runs in a child process, so that a segfault
fails the test instead of killing pytest."""

import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.timeout(240)

PRELUDE = textwrap.dedent("""
    import random, sys, threading, time
    import numpy as np
    import seer
    from seer.synthetic import PythonSyntheticModel, SyntheticModel

    MAKE = {
        "native": lambda: SyntheticModel(64, work=200, period=1e-3, delay=1e-3),
        "python": lambda: PythonSyntheticModel(16, work=1, period=1e-3, delay=1e-3),
    }
    """)


def run_child(body: str, timeout: float = 200) -> str:
    proc = subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(body)], capture_output=True, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, f"child exited with {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    return proc.stdout


@pytest.mark.parametrize("kind", ["native", "python"])
def test_a_timer_closing_the_runtime_mid_loop_gives_its_caller_closed_error(kind):
    # The user's loop: step until a watchdog timer closes the runtime.  The
    # loop's next call (whatever it is) must say "closed", and so must every
    # call after it.
    out = run_child(f"""
        ops = ["step", "reset", "schedule", "events_total", "relabel", "resize", "pool_stats"]
        seen = {{}}
        for trial in range(60):
            rt = seer.Runtime(MAKE[{kind!r}](), workers=2)
            n = rt.model.num_entities
            timer = threading.Timer(random.uniform(0, 0.02), rt.close)
            timer.start()
            k = 0
            while True:
                op = ops[k % len(ops)]
                k += 1
                try:
                    if op == "step":
                        rt.step(rt.now + 0.01)
                    elif op == "reset":
                        rt.reset(k)
                    elif op == "schedule":
                        rt.schedule([0], [rt.now + 1.0], [0])
                    elif op == "events_total":
                        rt.events_total()
                    elif op == "relabel":
                        rt.relabel(np.random.permutation(n))
                    elif op == "resize":
                        rt.resize(1 + k % 2)
                    else:
                        with rt.pool_stats():
                            rt.step(rt.now + 0.01)
                except seer.ClosedError:
                    seen[op] = seen.get(op, 0) + 1
                    break
            timer.join()
            for op, call in [("step", lambda: rt.step(rt.now + 1)), ("reset", lambda: rt.reset(0)),
                             ("events_total", rt.events_total), ("relabel", lambda: rt.relabel(np.arange(n))),
                             ("resize", lambda: rt.resize(1)), ("schedule", lambda: rt.schedule([0], [9.0], [0]))]:
                try:
                    call()
                except seer.ClosedError:
                    pass
                else:
                    sys.exit(f"{{op}} after close did not raise ClosedError")
        print("ok", sorted(seen.items()))
        """)
    assert out.startswith("ok")


@pytest.mark.parametrize("kind", ["native", "python"])
def test_stress_closers_racing_a_stepping_resizing_pool_stats_thread(kind):
    # One thread drives the runtime (steps, resizes, opens and ends
    # pool_stats() blocks); two others close it at random moments.  The
    # driver only ever sees success or ClosedError; the closers only ever
    # return (close is idempotent); nothing crashes and no worker is left.
    out = run_child(f"""
        unexpected = []
        for trial in range(40):
            rt = seer.Runtime(MAKE[{kind!r}](), workers=2)

            def drive():
                k = 0
                try:
                    while True:
                        k += 1
                        if k % 3 == 0:
                            rt.resize(1 + k % 3)
                        with rt.pool_stats() as stats:
                            rt.step(rt.now + 0.005)
                            rt.events_total()
                        assert stats.steps >= 1
                except seer.ClosedError:
                    pass
                except BaseException as exc:
                    unexpected.append(repr(exc))

            def close_later():
                time.sleep(random.uniform(0, 0.03))
                try:
                    rt.close()
                except BaseException as exc:
                    unexpected.append(repr(exc))

            threads = [threading.Thread(target=drive)] + [threading.Thread(target=close_later) for _ in range(2)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(30)
            assert not any(t.is_alive() for t in threads), "a thread hung"
            assert rt.closed
        time.sleep(0.1)
        left = [t.name for t in threading.enumerate() if t.name.startswith("seer-worker")]
        print("ok" if not unexpected and not left else f"bad {{unexpected[:3]}} {{left}}")
        """)
    assert out.strip() == "ok", out


@pytest.mark.parametrize("kind", ["native", "python"])
def test_a_pool_stats_block_ends_cleanly_after_another_thread_closed_the_runtime(kind):
    out = run_child(f"""
        for trial in range(20):
            rt = seer.Runtime(MAKE[{kind!r}](), workers=2)
            t = threading.Timer(0.05, rt.close)
            with rt.pool_stats() as stats:
                for k in range(1, 4):
                    rt.step(k * 0.01)
                t.start()
                try:
                    rt.step(1e9)  # hours of events: the close interrupts it
                except seer.ClosedError:
                    pass
            # the block's end neither raised nor read the freed runtime; the
            # steps before the close are all counted
            t.join(20)
            assert rt.closed and stats.steps >= 3 and [w.worker for w in stats.workers] == [0, 1], stats
            try:
                rt.events_total()
            except seer.ClosedError:
                continue
            sys.exit("events_total() after close did not raise ClosedError")
        print("ok")
        """)
    assert out.strip() == "ok"
