"""consensus_v0, the example plug-in env: PettingZoo's own checks, the C
handlers against the plain Python engine, determinism over worker counts
and over seer.vector's backends."""

import numpy as np
import pytest
from pettingzoo.test import parallel_api_test, seed_test

import seer
import seer.registry
import seer.vector
from seer_consensus import consensus_v0


def _actions(rng, agents):
    return {a: rng.uniform(-1, 1, 1).astype(np.float32) for a in agents}


def _run(steps=40, seed=5, **kwargs):
    env = consensus_v0.parallel_env(**kwargs)
    rng = np.random.default_rng(0)
    out = [env.reset(seed=seed)[0]]
    for _ in range(steps):
        if not env.agents:
            out.append(env.reset()[0])
            continue
        obs, rew, term, trunc, _ = env.step(_actions(rng, env.agents))
        out.append((obs, rew, trunc))
    env.close()
    return out


def test_pettingzoo_api_and_seed_tests():
    parallel_api_test(consensus_v0.parallel_env(scenario="small"), num_cycles=200)
    seed_test(lambda: consensus_v0.env(scenario="small"), num_cycles=20)


def _same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert repr(x) == repr(y)


def _needs(engine):
    if engine == "numba":
        pytest.importorskip("numba", reason="engine='numba' needs the seer-marl[numba] extra")


@pytest.mark.parametrize("engine", ["numba", "python"])
@pytest.mark.parametrize("scenario", ["small", "default"])
def test_every_engine_equals_the_c_handlers_bit_for_bit(scenario, engine):
    _needs(engine)
    _same(_run(scenario=scenario, max_cycles=15), _run(scenario=scenario, max_cycles=15, engine=engine))


@pytest.mark.parametrize("engine", ["seer", "numba"])
@pytest.mark.parametrize("workers", [2, 4])
def test_identical_for_every_worker_count(workers, engine):
    _needs(engine)
    _same(_run(scenario="default", workers=1, engine=engine), _run(scenario="default", workers=workers, engine=engine))


@pytest.mark.parametrize("engine", ["seer", "numba"])
def test_auto_workers_probe_the_model_and_change_nothing(engine):
    # The model schedules its first ticks in Model.reset too, so STPA's probe
    # of workers="auto" sees events instead of falling back with a warning;
    # the probe runs on runtimes of its own and leaves the env's episode alone.
    import warnings

    import seer.stpa

    _needs(engine)
    with warnings.catch_warnings():
        warnings.simplefilter("error", seer.stpa.StpaFallbackWarning)
        with seer.stpa.capture() as rec:
            env = consensus_v0.parallel_env(scenario="default", workers="auto", engine=engine)
    env.close()
    # The model decided from a traced probe (its reason may say that the probe's
    # timings overruled its prediction: that depends on the machine's load).
    assert [r.source for r in rec] == ["model"] and rec[0].features["probe_traced"] == 1.0
    assert "probe failed" not in rec[0].reason
    assert rec[0].features["events_per_step"] > 0
    _same(_run(scenario="default", workers=1, engine=engine), _run(scenario="default", workers="auto", engine=engine))


def test_registered_as_a_seer_env():
    assert seer.registry.load("consensus_v0") is consensus_v0


@pytest.mark.parametrize("engine", ["seer", "numba"])
def test_seer_trace_records_the_native_steps(engine):
    # `seer trace consensus_v0` builds the env through make_traced: its C (or
    # Numba) step runs the runtime itself, and the trace still holds its windows.
    _needs(engine)
    runtime, step, close = consensus_v0.make_traced("small", workers=2) if engine == "seer" else _traced_numba()
    try:
        events = sum(step() for _ in range(5))
        summary = runtime.trace.summary()
        assert events > 0 and summary["events"] == events and summary["windows"] > 0
    finally:
        close()


def _traced_numba():
    env = consensus_v0.parallel_env(scenario="small", workers=2, engine="numba", trace=True)
    env.reset(seed=0)
    assert env.seer_native_copy() is None  # traced: seer.vector steps it through Python

    def step():
        before = env.runtime.events_total()
        env.step({a: np.zeros(1, np.float32) for a in env.agents})
        return env.runtime.events_total() - before

    return env.runtime, step, env.close


def _vector_rollout(backend, steps=30, copies=4, engine="seer"):
    envs = seer.vector.make(lambda: consensus_v0.parallel_env(scenario="small", max_cycles=7, engine=engine), copies,
                            backend=backend, workers=2)
    rng = np.random.default_rng(1)
    out = [envs.reset(seed=11)[0]]
    for _ in range(steps):
        obs, rew, term, trunc, infos = envs.step(rng.uniform(-1, 1, envs.action_space.shape).astype(np.float32))
        out.append((obs, rew, trunc, infos["mask"]))
    envs.close()
    return out


@pytest.mark.parametrize("engine", ["seer", "numba"])
def test_vector_backends_and_the_plain_loop_agree_bit_for_bit(engine):
    _needs(engine)
    thread = _vector_rollout("thread", engine=engine)
    _same(thread, _vector_rollout("process", engine=engine))
    if engine == "numba":
        _same(thread, _vector_rollout("thread"))  # and equal the C copies
    # a plain loop over the same copies: seed + i, NEXT_STEP autoreset from the copy's own seed stream
    rng = np.random.default_rng(1)
    copies = [consensus_v0.parallel_env(scenario="small", max_cycles=7) for _ in range(4)]
    obs0 = [env.reset(seed=11 + i)[0] for i, env in enumerate(copies)]
    assert np.array_equal(np.concatenate([np.stack(list(o.values())) for o in obs0]), thread[0])
    ended = [False] * 4
    for k in range(30):
        acts = rng.uniform(-1, 1, (32, 1)).astype(np.float32)
        rows = []
        for i, env in enumerate(copies):
            if ended[i]:
                o, _ = env.reset()
                rows.append(np.stack(list(o.values())))
                ended[i] = False
                continue
            a = {agent: acts[8 * i + j] for j, agent in enumerate(env.agents)}
            o, r, t, tr, _ = env.step(a)
            rows.append(np.stack(list(o.values())))
            ended[i] = not env.agents
        assert np.array_equal(np.concatenate(rows), thread[k + 1][0]), k


@pytest.mark.parametrize("engine", ["seer", "numba"])
def test_thread_backend_takes_the_native_path(engine):
    _needs(engine)
    envs = seer.vector.make(lambda: consensus_v0.parallel_env(scenario="small", engine=engine), 3, backend="thread",
                            workers=2)
    try:
        assert envs._backend.runner.vec.native.all()
    finally:
        envs.close()


def test_bad_arguments_name_the_value():
    with pytest.raises(ValueError, match="scenario='huge' is unknown"):
        consensus_v0.parallel_env(scenario="huge")
    with pytest.raises(ValueError, match="num_agents=2 is invalid"):
        consensus_v0.parallel_env(num_agents=2)
    env = consensus_v0.parallel_env()
    env.reset(seed=0)
    with pytest.raises(ValueError, match="agent_0"):
        env.step({a: np.array([2.0], np.float32) for a in env.agents})
    env.close()
    with pytest.raises(seer.ClosedError):
        env.reset(seed=0)


_WARM_SCRIPT = """
import functools, numpy as np, seer.vector
from seer_consensus import consensus_v0

if __name__ == "__main__":
    envs = seer.vector.make(functools.partial(consensus_v0.parallel_env, scenario="small", engine="numba"), 2,
                            backend="process", workers=1)
    envs.reset(seed=3)
    obs = envs.step(np.zeros(envs.action_space.shape, np.float32))[0]
    envs.close()
    print(float(obs.sum()))
"""


@pytest.mark.timeout(600)
def test_numba_engine_compiles_once_per_machine_process_workers_included(tmp_path):
    """A second run, its process-backend workers too, loads every compiled
    handler and helper from the disk cache: nothing is compiled or written."""
    pytest.importorskip("numba", reason="engine='numba' needs the seer-marl[numba] extra")
    import os
    import subprocess
    import sys

    script = tmp_path / "warm.py"
    script.write_text(_WARM_SCRIPT)
    env = {**os.environ, "SEER_CACHE_DIR": str(tmp_path / "seer_cache"),
           "NUMBA_CACHE_DIR": str(tmp_path / "numba_cache")}

    def run():
        out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=280)
        assert out.returncode == 0, out.stderr
        return out.stdout.strip()

    def files():
        return {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*") if p.suffix in (".nbi", ".nbc")}

    first = run()
    cached = files()
    assert any("seer_numba_" in p.name for p in cached) and any("_numba" in p.name for p in cached)
    assert run() == first
    assert files() == cached
