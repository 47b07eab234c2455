"""seer.numba's on-disk cache, as a user meets it across processes: compiled
once per machine (handlers and the helpers they call, written the documented
way), never serving a stale constant, and never loaded from a folder another
user could write to."""

import os
import stat
import subprocess
import sys
import textwrap

import pytest

numba = pytest.importorskip("numba", reason="seer.numba needs the seer-marl[numba] extra")
snb = pytest.importorskip("seer.numba")

SCRIPT = textwrap.dedent("""
    import os, numba, numpy as np, seer, seer.numba as snb

    K = float(os.environ["K"])          # a constant of the model, read once
    WEIGHTS = np.array([K, 2 * K])      # an array derived from it
    S = snb.State(x="f8[:]", y="f8[:]")

    @snb.njit
    def documented_helper(s, i):        # takes the State tuple, the way the docs say (write-your-env.md)
        return s.y[i] + WEIGHTS[1]

    @numba.njit(cache=True)
    def plain_numba_helper(v):
        return v * K

    @S.handler
    def tick(ctx, ev, s):
        i = ev.entity
        s.x[i] = plain_numba_helper(1.0) + documented_helper(s, i) + K
        return 0

    class M(seer.Model):
        num_entities, lookahead, shared_state = 2, 1.0, ()
        def __init__(self):
            self.state = {"x": np.zeros(2), "y": np.zeros(2)}
            self.kinds = [seer.EventKind("tick", seer.Native(tick))]
            self.native_model = S.bind(self.state)
        def reset(self, rt, seed):
            rt.schedule(np.arange(2), np.zeros(2), np.zeros(2, np.int32))

    if __name__ == "__main__":
        m = M()
        with seer.Runtime(m, workers=2) as rt:
            rt.step(1.0)
        direct = documented_helper(S.tuple_type(*m.state.values()), 0)  # the same helper from Python
        hits = tick.compile().cache_hits + sum(documented_helper.stats.cache_hits.values())
        print(m.state["x"][0], direct, "hits", hits)
""")


def run(tmp_path, k, cache="cache", numba_cache="numba"):
    script = tmp_path / "model.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "K": str(k), "SEER_CACHE_DIR": str(tmp_path / cache),
           "NUMBA_CACHE_DIR": str(tmp_path / numba_cache)}
    out = subprocess.run([sys.executable, "-W", "always", str(script)], capture_output=True, text=True, env=env,
                         timeout=240)
    assert out.returncode == 0, out.stderr
    x, direct, _, hits = out.stdout.split()
    return float(x), float(direct), int(hits), out.stderr


def cache_files(tmp_path):
    return {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*") if p.suffix in (".nbi", ".nbc")}


@pytest.mark.timeout(600)
def test_a_changed_constant_recompiles_and_an_unchanged_one_hits_the_cache(tmp_path):
    # x = K (plain helper) + 2K (documented helper) + K (the handler's own global)
    assert run(tmp_path, 1)[:3] == (4.0, 2.0, 0)
    assert run(tmp_path, 5)[:2] == (20.0, 10.0)
    assert run(tmp_path, 7)[:2] == (28.0, 14.0)
    before = cache_files(tmp_path)
    x, direct, hits, _ = run(tmp_path, 5)
    assert (x, direct) == (20.0, 10.0)
    assert hits == 2  # the handler and the helper called from Python both loaded, nothing compiled
    assert cache_files(tmp_path) == before  # nothing written: the cache does not grow per process


@pytest.mark.timeout(600)
def test_a_value_that_cannot_be_keyed_compiles_without_the_disk_cache_and_says_so(tmp_path):
    script = tmp_path / "ct.py"
    script.write_text(textwrap.dedent("""
        import ctypes, ctypes.util, numpy as np, seer.numba as snb
        libm = ctypes.CDLL(ctypes.util.find_library("m"))
        cos = libm.cos                         # an address: differs in every process
        cos.restype, cos.argtypes = ctypes.c_double, (ctypes.c_double,)
        S = snb.State(x="f8[:]")

        @S.handler
        def tick(ctx, ev, s):
            s.x[ev.entity] = cos(0.0)
            return 0

        if __name__ == "__main__":
            tick.address
            snb.State(x="f8[:]").handler(tick.py_func).address  # a second compile: no second warning
    """))
    env = {**os.environ, "SEER_CACHE_DIR": str(tmp_path / "cache"), "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=240)
    assert out.returncode == 0, out.stderr
    assert out.stderr.count("SeerNumbaCacheWarning") == 1, out.stderr
    assert "compiles handler tick without the on-disk cache: its global 'cos' of tick is a ctypes" in out.stderr
    assert not any("seer_numba_" in p.name for p in cache_files(tmp_path))


@pytest.mark.timeout(600)
def test_a_world_writable_cache_folder_is_not_loaded_from(tmp_path):
    folder = tmp_path / "shared" / "numba"
    folder.mkdir(parents=True)
    os.chmod(tmp_path / "shared", 0o700)
    os.chmod(folder, 0o777)
    planted = folder / "planted.txt"
    planted.write_text("another user's file")
    x, direct, hits, err = run(tmp_path, 3, cache="shared")
    assert (x, direct) == (12.0, 6.0)  # still computes, from code compiled in memory
    assert "SeerNumbaCacheWarning" in err and str(folder) in err and "chmod 700" in err
    assert sorted(p.name for p in folder.iterdir()) == ["planted.txt"]  # nothing written or imported there
    assert stat.S_IMODE(folder.stat().st_mode) == 0o777  # and its mode is the owner's business


def test_handlers_made_by_one_factory_keep_their_own_closure_values():
    import numpy as np

    import seer

    state = snb.State(x="f8[:]")

    def make(k):
        @state.handler
        def set_k(ctx, ev, s):
            s.x[ev.entity] = k  # a closure variable: frozen like a global
            return 0
        return set_k

    class M(seer.Model):
        num_entities, lookahead, shared_state = 2, 1.0, ()

        def __init__(self, handler):
            self.state = {"x": np.zeros(2)}
            self.kinds = [seer.EventKind("set", seer.Native(handler))]
            self.native_model = state.bind(self.state)

        def reset(self, rt, seed):
            rt.schedule(np.arange(2), np.zeros(2), np.zeros(2, np.int32))

    got = []
    for k in (1.5, 2.5, 1.5):
        model = M(make(k))
        with seer.Runtime(model, workers=1) as rt:
            rt.step(1.0)
        got.append(model.state["x"].tolist())
    assert got == [[1.5, 1.5], [2.5, 2.5], [1.5, 1.5]]


@pytest.mark.timeout(600)
def test_a_world_writable_numba_cache_dir_is_not_loaded_from(tmp_path):
    folder = tmp_path / "open_numba"
    folder.mkdir()
    os.chmod(folder, 0o777)
    x, direct, hits, err = run(tmp_path, 3, numba_cache="open_numba")
    assert (x, direct, hits) == (12.0, 6.0, 0)
    assert "SeerNumbaCacheWarning" in err and str(folder) in err
    assert not any(folder.rglob("*.nbi"))  # no index written (or read) there
