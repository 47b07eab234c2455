"""STPA: features (from a fake /sys tree and real traces), the JSON model
file (round trip, equality with scikit-learn, refusal of pickles and of
malformed files), the fallbacks, private cache directories, determinism of
the choice, the probe's invisibility to results, online refinement and a
tiny tune sweep."""

import json
import math
import os
import pathlib
import pickle
import stat
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import seer
from seer import stpa
from seer.stpa import estimator as E
from seer.stpa import features as F
from seer.stpa import hardware as HW
from seer.stpa import lookup as LK
from seer.stpa import model as M
from seer.stpa import selector as S
from seer.stpa import train as T
from seer.stpa import tune as TU
from seer.synthetic import PythonSyntheticModel, SyntheticModel


# ---- a fake /sys and /proc ---------------------------------------------------------------------

def make_fake_sys(root, cpus=4, smt=2, l1="48K", l2="2048K", l3="32M", online="0-3"):
    cpu_dir = root / "sys" / "devices" / "system" / "cpu"
    cpu_dir.mkdir(parents=True)
    (cpu_dir / "online").write_text(online + "\n")
    for c in range(cpus):
        topo = cpu_dir / f"cpu{c}" / "topology"
        topo.mkdir(parents=True)
        (topo / "core_id").write_text(f"{c // smt}\n")
        (topo / "physical_package_id").write_text("0\n")
        for i, (level, kind, size, shared) in enumerate([
            ("1", "Data", l1, f"{c}"), ("1", "Instruction", "32K", f"{c}"),
            ("2", "Unified", l2, f"{c - c % smt}-{c - c % smt + smt - 1}"), ("3", "Unified", l3, f"0-{cpus - 1}"),
        ]):
            idx = cpu_dir / f"cpu{c}" / "cache" / f"index{i}"
            idx.mkdir(parents=True)
            (idx / "level").write_text(level + "\n")
            (idx / "type").write_text(kind + "\n")
            (idx / "size").write_text(size + "\n")
            (idx / "shared_cpu_list").write_text(shared + "\n")
    proc = root / "proc"
    proc.mkdir()
    (proc / "cpuinfo").write_text("processor\t: 0\nvendor_id\t: Fake\nmodel name\t: Fake CPU 9000 @ 3.00GHz\n")
    (proc / "meminfo").write_text("MemTotal:       16777216 kB\nMemFree:        1000 kB\n")
    return root / "sys", proc


def test_hardware_features_from_a_fake_sys_tree(tmp_path):
    sys_root, proc_root = make_fake_sys(tmp_path)
    hw = HW.hardware_features(sys_root, proc_root, affinity={0, 1, 2, 3})
    assert hw["usable_cores"] == 4
    assert hw["logical_cores"] == 4
    assert hw["physical_cores"] == 2
    assert hw["smt"] == 2.0
    assert hw["packages"] == 1
    assert hw["l1d_kb"] == 48.0 and hw["l2_kb"] == 2048.0 and hw["l3_kb"] == 32768.0
    assert hw["l3_total_kb"] == 32768.0  # one shared L3
    assert hw["mem_gb"] == pytest.approx(16.0)
    assert hw["cpu_model"] == "Fake CPU 9000 @ 3.00GHz"
    # Affinity narrows what is usable: two SMT siblings are one physical core.
    hw2 = HW.hardware_features(sys_root, proc_root, affinity={0, 1})
    assert hw2["usable_cores"] == 2 and hw2["physical_cores"] == 1 and hw2["smt"] == 2.0
    assert hw2["logical_cores"] == 4


def test_hardware_features_without_sys_fall_back(tmp_path):
    hw = HW.hardware_features(tmp_path / "nosys", tmp_path / "noproc", affinity={0, 1, 2})
    assert hw["usable_cores"] == 3 and hw["physical_cores"] == 3
    assert hw["l2_kb"] == 0.0 and hw["mem_gb"] == 0.0 and hw["cpu_model"] == "unknown"
    assert hw["logical_cores"] >= 1


@pytest.mark.parametrize("text, kb", [("32K", 32.0), ("1024K", 1024.0), ("32M", 32768.0), ("2048", 2.0),
                                      ("1G", 1048576.0), ("", 0.0), ("junk", 0.0)])
def test_cache_size_parsing(text, kb):
    assert HW._parse_size_kb(text) == kb


def test_cpu_list_parsing():
    assert HW._parse_cpu_list("0-3,8,10-11") == [0, 1, 2, 3, 8, 10, 11]
    assert HW._parse_cpu_list("") == []


# ---- trace and probe features ----------------------------------------------------------------

def test_trace_features_of_native_and_python_workloads():
    for model, native in ((SyntheticModel(64, fanout=2, work=200, period=0.1, delay=0.1), True),
                          (PythonSyntheticModel(64, fanout=2, work=1, period=0.1, delay=0.1), False)):
        with seer.Runtime(model, workers=1, trace=True) as rt:
            for k in range(5):
                rt.step(0.5 * (k + 1))
            f = F.trace_features(rt.trace, [k.native for k in model.kinds])
        assert f["events_per_window"] > 0 and f["busy_us_per_window"] > 0 and f["cost_us"] > 0
        assert f["active_entities"] <= 64 and f["parallelism"] >= 1
        if native:
            assert f["python_share"] == 0 and f["gil_share"] == 0 and f["native_event_share"] == 1
        else:
            assert f["python_share"] == pytest.approx(1.0) and f["gil_share"] > 0.3 and f["native_event_share"] == 0


def test_probe_features():
    model = SyntheticModel(128, fanout=2, work=100, period=0.1, delay=0.1)
    f = F.probe(model, budget_s=0.02)
    assert f.ok, f.error
    for key in ("entities", "kinds", "native_kind_share", "events_per_window", "busy_us_per_window",
                "idle_us_per_window", "cost_us", "cost_cv", "fanout", "windows_per_step", "events_per_step",
                "probe2_speedup", "empty_polls_per_window", "gil_share"):
        assert key in f and math.isfinite(f[key]), key
    assert f["entities"] == 128 and f["native_kind_share"] == 1.0
    assert f["fanout"] == pytest.approx(2.0, rel=0.3)  # two messages per own tick
    # All model inputs are defined.
    X = M.feature_matrix({**S.machine_features(), **f}, [1, 2, 3])
    assert X.shape == (3, len(M.FEATURE_SCHEMA)) and np.isfinite(X).all()


def test_probe_of_a_failing_model_reports_not_ok():
    model = SyntheticModel(16, fail_entity=3, fail_time=0.0)
    f = F.probe(model, budget_s=0.01)
    assert not f.ok and "HandlerError" in f.error


# ---- datasets and models ------------------------------------------------------------------------

def fake_rows(n_workloads=12, seed=0):
    """Rows whose speedup follows a known rule: native workloads with heavy
    windows scale to the core count, Python ones get slower with more workers."""
    rng = np.random.default_rng(seed)
    hw = {"usable_cores": 2, "physical_cores": 2, "smt": 1.0, "l2_kb": 1024.0, "l3_kb": 32768.0, "mem_gb": 16.0,
          "cpu_model": "Fake"}
    rows = []
    for i in range(n_workloads):
        native = i % 2 == 0
        busy = float(rng.uniform(5, 5000))
        feats = dict(hw, entities=float(rng.integers(8, 2000)), kinds=2.0, native_kind_share=1.0 if native else 0.0,
                     native_event_share=1.0 if native else 0.0, python_share=0.0 if native else 1.0,
                     gil_share=0.0 if native else 0.9, busy_us_per_window=busy, events_per_window=busy,
                     parallelism=50.0, active_entities=100.0, step_ms=busy / 100, windows_per_step=10.0,
                     probe2_speedup=1.8 if native and busy > 200 else 0.6)
        base = 100.0
        for w in (1, 2, 3, 4):
            if native and busy > 200:
                sps = base * min(w, 2) * (0.95 if w > 2 else 1.0)
            else:
                sps = base / (1 + 0.4 * (w - 1))
            rows.append(T.make_row("s1", f"wl{i}", "fake-native" if native else "fake-python", {}, w, sps, feats))
    return rows


@pytest.fixture(scope="module")
def fake_model():
    return T.train(fake_rows(), families=("gbr", "ridge"), n_splits=3)


def test_build_table_targets():
    tab = T.build_table(fake_rows(4))
    assert len(tab.keys) == 4 and tab.X.shape == (16, len(M.FEATURE_SCHEMA))
    # y = log(speedup / min(w, cores)): 0 for one worker; ~0 for a perfect two-worker speedup.
    assert np.allclose(tab.y[tab.workers == 1], 0.0)
    g0 = tab.groups == 0  # wl0 is native; heavy or not, y follows its rule
    assert np.isfinite(tab.y[g0]).all()


def test_training_compares_families_and_learns_the_rule(fake_model):
    comp = fake_model.meta["comparison"]
    assert set(comp) == {"gbr", "ridge"}
    assert fake_model.family in comp
    for r in comp.values():
        assert {"rmse", "r2", "mean_frac", "min_frac", "rule_1_mean", "rule_cpu_mean"} <= set(r)
    heavy = fake_rows(2)[0]["features"] | {"busy_us_per_window": 3000.0, "probe2_speedup": 1.8}
    python = fake_rows(2)[4]["features"]
    assert fake_model.choose(heavy) == 2
    assert fake_model.choose(python) == 1


def test_model_save_load_round_trip(tmp_path, fake_model):
    path = M.save_model(fake_model, tmp_path / "m.json")
    doc = json.loads(path.read_text())  # plain, strict JSON
    assert doc["format"] == M.MODEL_FORMAT and doc["version"] == M.MODEL_VERSION == 2
    assert doc["estimator"]["steps"][-1]["type"] in ("trees", "linear")
    loaded = M.load_model(path)
    assert isinstance(loaded.estimator, E.PortableEstimator)
    assert loaded.family == fake_model.family and loaded.schema == M.FEATURE_SCHEMA
    assert loaded.meta["rows"] == fake_model.meta["rows"]
    feats = fake_rows(1)[0]["features"]
    assert loaded.scores(feats) == fake_model.scores(feats)
    X = T.build_table(fake_rows()).X
    assert np.array_equal(loaded.estimator.predict(X), fake_model.estimator.predict(X))
    assert loaded.to_dict() == fake_model.to_dict()  # nothing lost or altered on the way
    assert loaded.path == str(path)
    # Saved again over itself: replaced atomically, no temporary file left behind.
    M.save_model(loaded, path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.json"]


def test_same_features_same_choice(tmp_path, fake_model):
    feats = fake_rows(3)[8]["features"]
    first = fake_model.choose(feats)
    assert all(fake_model.choose(dict(feats)) == first for _ in range(20))
    path = M.save_model(fake_model, tmp_path / "m.json")
    S.clear_cache()
    assert S.select_workers(feats, model=path) == first
    # Retraining on the same rows gives the same model (fixed seeds).
    again = T.train(fake_rows(), families=("gbr", "ridge"), n_splits=3)
    assert again.scores(feats) == fake_model.scores(feats)


def test_choose_from_scores_ties_go_to_fewer_workers():
    assert S.choose_from_scores({1: 0.0, 2: 0.5, 3: 0.5, 4: 0.2}) == 2
    assert S.choose_from_scores({1: 0.0, 2: 0.005}) == 1  # within the tolerance
    assert S.choose_from_scores({1: 0.0, 2: float("nan")}) == 1
    assert S.choose_from_scores({}) == 1


# ---- fallbacks --------------------------------------------------------------------------------------

FEATS = {"usable_cores": 4, "entities": 1024, "native_kind_share": 1.0}


def _expect_fallback(path, match):
    S.clear_cache()
    with pytest.warns(S.StpaFallbackWarning, match=match):
        w = S.select_workers(FEATS, model=path)
    assert w == S.heuristic_workers(1024, 1.0, 4) == 4


def test_fallback_on_a_missing_model(tmp_path):
    _expect_fallback(tmp_path / "nope.json", "missing")


def test_fallback_on_a_corrupt_model(tmp_path):
    p = tmp_path / "corrupt.json"
    p.write_bytes(b"{\"format\": \"seer-stpa-model\", truncated" * 10)
    _expect_fallback(p, "not a readable model file")


def _doc(fake_model, **changes):
    doc = fake_model.to_dict()
    doc.update(changes)
    return doc


def test_fallback_on_an_incompatible_schema(tmp_path, fake_model):
    doc = fake_model.to_dict()
    p = tmp_path / "old_schema.json"
    p.write_text(json.dumps(_doc(fake_model, schema=doc["schema"][:-1], schema_version=0)))
    _expect_fallback(p, "schema")


def test_fallback_on_another_model_version(tmp_path, fake_model):
    p = tmp_path / "future.json"
    p.write_text(json.dumps(_doc(fake_model, version=M.MODEL_VERSION + 1)))
    _expect_fallback(p, "model version")


def test_fallback_on_a_foreign_json(tmp_path):
    p = tmp_path / "foreign.json"
    p.write_text(json.dumps({"hello": "world"}))
    _expect_fallback(p, "not an STPA model")


def test_another_model_version_is_refused_with_advice(tmp_path, fake_model):
    p = tmp_path / "stpa_model.json"
    p.write_text(json.dumps(_doc(fake_model, version=M.MODEL_VERSION + 1)))
    with pytest.raises(S.IncompatibleModelError, match=rf"version {M.MODEL_VERSION + 1}; this SEER reads version "
                                                       rf"{M.MODEL_VERSION} .*seer tune"):
        M.load_model(p)


@pytest.fixture(scope="module")
def gbr_doc():
    return T.train(fake_rows(), families=("gbr",), family="gbr").to_dict()


@pytest.mark.parametrize("what, mutate, match", [
    ("a cycle", lambda t: t["children_left"].__setitem__(0, 0), "do not form a tree"),
    ("a feature out of range", lambda t: t["feature"].__setitem__(0, 10_000), "split feature"),
    ("arrays of different lengths", lambda t: t["value"].pop(), "different lengths"),
    ("a non-number", lambda t: t["threshold"].__setitem__(0, "x"), "threshold"),
    ("code instead of numbers", lambda t: t.__setitem__("value", "__import__('os').system('true')"), "value"),
])
def test_a_malformed_estimator_is_refused(tmp_path, gbr_doc, what, mutate, match):
    doc = json.loads(json.dumps(gbr_doc))
    mutate(doc["estimator"]["steps"][-1]["trees"][0])
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(S.IncompatibleModelError, match=match) as exc:
        M.load_model(p)
    assert str(p) in str(exc.value), what
    _expect_fallback(p, "no usable estimator")


def test_an_unknown_estimator_step_is_refused(tmp_path, fake_model):
    doc = fake_model.to_dict()
    doc["estimator"]["steps"] = [{"type": "pickle", "data": "gASV"}]
    p = tmp_path / "step.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(S.IncompatibleModelError, match=r"type='pickle', expected one of"):
        M.load_model(p)


# ---- pickles are never unpickled ------------------------------------------------------------------

class _Payload:
    """Unpickling this creates ``marker``: proof that a loader ran code from the file."""

    def __init__(self, marker):
        self.marker = pathlib.Path(marker)

    def __reduce__(self):
        return pathlib.Path.touch, (self.marker,)


def _plant(path, marker, how="pickle"):
    """Write a live payload at ``path`` (and prove it is live)."""
    payload = {"format": M.MODEL_FORMAT, "version": 1, "estimator": _Payload(marker)}
    if how == "joblib":
        import joblib

        joblib.dump(payload, path, compress=3)
        joblib.load(path)
    else:
        path.write_bytes(pickle.dumps(payload))
        pickle.loads(path.read_bytes())
    assert marker.exists()  # the payload works when unpickled
    marker.unlink()
    return path


@pytest.mark.parametrize("how", ["pickle", "joblib"])
@pytest.mark.parametrize("name", ["evil.joblib", "evil.pkl", "stpa_model.json"])
def test_a_pickle_is_refused_with_a_clear_error(tmp_path, name, how):
    marker = tmp_path / "pwned"
    p = _plant(tmp_path / name, marker, how)
    S.clear_cache()
    with pytest.raises(S.IncompatibleModelError) as exc:
        M.load_model(p)
    msg = str(exc.value)
    assert str(p) in msg and "never unpickles" in msg and "expected a JSON STPA model" in msg
    assert not marker.exists()


def _auto_workers_with_warnings():
    S.clear_cache()
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        m, reasons = LK.active_model()
    return m, reasons, [str(w.message) for w in rec if issubclass(w.category, S.StpaFallbackWarning)]


@pytest.mark.parametrize("where", ["SEER_STPA_MODEL", "SEER_CACHE_DIR", "XDG_CACHE_HOME"])
def test_a_planted_pickle_is_never_executed(tmp_path, monkeypatch, where):
    name = M.MODEL_FILENAME
    marker = tmp_path / "pwned"
    monkeypatch.delenv("SEER_STPA_MODEL", raising=False)
    monkeypatch.delenv("SEER_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    if where == "SEER_STPA_MODEL":
        planted = _plant(tmp_path / name, marker)
        monkeypatch.setenv("SEER_STPA_MODEL", str(planted))
    elif where == "SEER_CACHE_DIR":
        (tmp_path / "cache").mkdir()
        planted = _plant(tmp_path / "cache" / name, marker)
        monkeypatch.setenv("SEER_CACHE_DIR", str(tmp_path / "cache"))
    else:
        (tmp_path / "xdg" / "seer").mkdir(parents=True)
        planted = _plant(tmp_path / "xdg" / "seer" / name, marker)
    assert LK.cache_dir() == (tmp_path / "cache" if where == "SEER_CACHE_DIR" else tmp_path / "xdg" / "seer")
    m, reasons, warned = _auto_workers_with_warnings()
    assert not marker.exists()
    # Skipped with a warning naming the file; the shipped JSON model decides.
    assert any(str(planted) in w and "never unpickles" in w for w in warned), warned
    assert m is not None and m.path == str(LK.shipped_model_path())
    # Building an env with workers="auto" does not run it either.
    S.clear_cache()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = SyntheticModel(64, fanout=1)
        with seer.Runtime(model, workers=stpa.select_workers_for_model(model)) as rt:
            rt.step(0.5)
    assert not marker.exists()
    S.clear_cache()


def test_seer_info_never_runs_a_planted_pickle(tmp_path):
    marker = tmp_path / "pwned"
    (tmp_path / "cache").mkdir()
    _plant(tmp_path / "cache" / M.MODEL_FILENAME, marker, "joblib")
    evil = _plant(tmp_path / "evil.pkl", marker)
    env = dict(os.environ, SEER_CACHE_DIR=str(tmp_path / "cache"), SEER_STPA_MODEL=str(evil))
    out = subprocess.run([sys.executable, "-m", "seer.cli", "info", "--no-workloads"], capture_output=True,
                         text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    assert not marker.exists()
    text = " ".join(out.stdout.split())  # rich wraps long lines
    assert "never unpickles" in text and "evil.pkl" in text and "Traceback" not in out.stdout + out.stderr


def test_runtime_auto_warns_and_uses_the_heuristic_without_a_model(tmp_path, monkeypatch):
    bad = tmp_path / "bad.json"
    bad.write_text("garbage")
    monkeypatch.setattr(LK, "model_search_path", lambda: [("$SEER_STPA_MODEL", bad),
                                                          ("shipped default", tmp_path / "missing.json")])
    S.clear_cache()
    model = SyntheticModel(256, fanout=1)
    with pytest.warns(S.StpaFallbackWarning) as rec:
        workers = stpa.resolve_workers("auto", model)
    msgs = " | ".join(str(r.message) for r in rec)
    assert "bad.json" in msgs and "heuristic" in msgs
    assert workers == S.heuristic_workers(256, 1.0, S.machine_features()["usable_cores"])
    S.clear_cache()


def test_a_bad_tuned_model_falls_through_to_the_next(tmp_path, monkeypatch, fake_model):
    bad = tmp_path / "bad.json"
    bad.write_text("garbage")
    good = M.save_model(fake_model, tmp_path / "good.json")
    monkeypatch.setattr(LK, "model_search_path", lambda: [("tuned (cache)", bad), ("shipped default", good)])
    S.clear_cache()
    with pytest.warns(S.StpaFallbackWarning, match="skipping the tuned"):
        m, reasons = LK.active_model()
    assert m is not None and m.path == str(good) and reasons
    S.clear_cache()


def test_cache_dir_honours_env(tmp_path, monkeypatch):
    monkeypatch.delenv("SEER_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert LK.cache_dir() == tmp_path / "xdg" / "seer"
    monkeypatch.setenv("SEER_CACHE_DIR", str(tmp_path / "explicit"))
    assert LK.cache_dir() == tmp_path / "explicit"
    monkeypatch.setenv("SEER_STPA_MODEL", str(tmp_path / "m.json"))
    labels = [label for label, _ in LK.model_search_path()]
    assert labels == ["$SEER_STPA_MODEL", "tuned (cache)", "shipped default"]


def test_shipped_model_loads():
    path = LK.shipped_model_path()
    if not path.is_file():
        pytest.skip("no shipped model in this checkout")
    m = M.load_model(path)
    assert m.schema == M.FEATURE_SCHEMA and m.meta.get("comparison")
    assert LK.shipped_dataset_path().is_file()
    assert not [p.name for p in path.parent.iterdir() if p.suffix in (".joblib", ".pkl", ".pickle")]  # no pickle ships


def test_the_shipped_model_predicts_without_scikit_learn():
    code = textwrap.dedent("""
        import sys, warnings
        from seer.stpa import lookup as LK
        from seer.stpa import selector as S
        warnings.simplefilter("error", S.StpaFallbackWarning)
        m, _ = LK.active_model()
        assert m.path == str(LK.shipped_model_path()), m.path
        sc = m.scores(S.machine_features() | {"entities": 1024.0, "busy_us_per_window": 2000.0}, [1, 2, 3], 2)
        assert len(sc) == 3
        assert "sklearn" not in sys.modules and "joblib" not in sys.modules
        print("ok")
    """)
    env = {k: v for k, v in os.environ.items() if k not in ("SEER_STPA_MODEL", "SEER_CACHE_DIR")}
    env["XDG_CACHE_HOME"] = "/nonexistent-seer-test"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr


# ---- the JSON predictor equals scikit-learn ------------------------------------------------------

@pytest.fixture(scope="module")
def shipped_table():
    return T.build_table(T.load_rows(LK.shipped_dataset_path()))


@pytest.mark.parametrize("family", ["gbr", "rf", "ridge", "knn"])
def test_the_portable_predictor_equals_scikit_learn(shipped_table, family):
    X, y = shipped_table.X, shipped_table.y
    rng = np.random.default_rng(0)
    perm = rng.permutation(len(y))
    train_rows, held_out = perm[: len(y) * 3 // 4], perm[len(y) * 3 // 4:]
    est = T._fit(family, X[train_rows], y[train_rows])
    # Through the file format: to_dict -> JSON text -> from_dict.
    port = E.PortableEstimator.from_dict(json.loads(json.dumps(T.export_estimator(est).to_dict())))
    # kNN on its own training points: scikit-learn expands |x - y|^2 and gets
    # ~1e-8 instead of 0 for the point itself, so compare unseen rows there.
    rows = held_out if family == "knn" else np.arange(len(y))
    np.testing.assert_allclose(port.predict(X[rows]), est.predict(X[rows]), rtol=0, atol=1e-12)


def test_export_refuses_what_the_format_cannot_describe():
    from sklearn.ensemble import GradientBoostingRegressor
    from sklearn.svm import SVR

    X = np.random.default_rng(0).normal(size=(40, 3))
    with pytest.raises(ValueError, match="SVR cannot be exported"):
        T.export_estimator(SVR().fit(X, X[:, 0]))
    with pytest.raises(ValueError, match="loss='absolute_error'"):
        T.export_estimator(GradientBoostingRegressor(loss="absolute_error", n_estimators=3).fit(X, X[:, 0]))


# ---- private cache directories -----------------------------------------------------------------

@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def _mode(p):
    return stat.S_IMODE(os.stat(p).st_mode)


def test_save_model_creates_its_folders_with_mode_0700(tmp_path, fake_model, umask_022):
    path = M.save_model(fake_model, tmp_path / "a" / "b" / "stpa_model.json")
    assert _mode(tmp_path / "a") == 0o700 and _mode(tmp_path / "a" / "b") == 0o700
    assert M.load_model(path).family == fake_model.family
    # A folder that exists keeps the mode its owner gave it.
    (tmp_path / "open").mkdir(mode=0o755)
    M.save_model(fake_model, tmp_path / "open" / "m.json")
    assert _mode(tmp_path / "open") == 0o755


def test_append_rows_creates_the_cache_dir_with_mode_0700(tmp_path, umask_022):
    T.append_rows(tmp_path / "cache" / M.DATASET_FILENAME, fake_rows(1))
    assert _mode(tmp_path / "cache") == 0o700


def test_save_model_refuses_a_symlink(tmp_path, fake_model):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    link = tmp_path / "stpa_model.json"
    link.symlink_to(victim)
    with pytest.raises(ValueError, match="symbolic link"):
        M.save_model(fake_model, link)
    assert victim.read_text() == "keep me" and link.is_symlink()


# ---- "auto" through the runtime -----------------------------------------------------------------

def run_states(model, workers, steps=8, seed=5):
    workers = stpa.resolve_workers(workers, model)
    with seer.Runtime(model, workers=workers, seed=seed) as rt:
        events = sum(rt.step(0.25 * (k + 1)).events for k in range(steps))
        return rt.workers, events, {k: v.copy() for k, v in model.state.items()}


def test_auto_probe_does_not_change_results(tmp_path, monkeypatch, fake_model):
    path = M.save_model(fake_model, tmp_path / "m.json")
    monkeypatch.setattr(LK, "model_search_path", lambda: [("tuned (cache)", path)])
    S.clear_cache()
    for make in (lambda: SyntheticModel(97, fanout=3, work=50, period=0.1, delay=0.05),
                 lambda: PythonSyntheticModel(61, fanout=2, work=1, period=0.1, delay=0.05)):
        ref = run_states(make(), 1)
        with warnings.catch_warnings():
            warnings.simplefilter("error", S.StpaFallbackWarning)  # the model is used, no fallback
            with stpa.capture() as rec:
                auto = run_states(make(), "auto")
        assert rec and rec[0].source == "model" and rec[0].features["entities"] in (97, 61)
        assert auto[1] == ref[1]
        for name in ref[2]:
            assert ref[2][name].tobytes() == auto[2][name].tobytes(), name
    S.clear_cache()


def test_auto_choices_are_memoized_per_model_signature(tmp_path, monkeypatch, fake_model):
    path = M.save_model(fake_model, tmp_path / "m.json")
    monkeypatch.setattr(LK, "model_search_path", lambda: [("tuned (cache)", path)])
    S.clear_cache()
    with stpa.capture() as rec:
        a = S.select_for_model(SyntheticModel(64, work=10))
        b = S.select_for_model(SyntheticModel(64, work=10))
        c = S.select_for_model(SyntheticModel(64, work=20))
    assert a is b and c is not a and len(rec) == 3
    S.clear_cache()


# ---- the pool limit and resolve_workers -------------------------------------------------------------

def test_default_pool_limit_caps_auto_in_this_thread_only():
    import threading

    model = SyntheticModel(512, fanout=1)
    with stpa.capture() as rec, stpa.default_pool_limit(1):
        assert stpa.current_pool_limit() == 1
        assert stpa.resolve_workers("auto", model) == 1
        assert stpa.resolve_workers(3, model) == 3  # an explicit size is never changed
        seen = []
        t = threading.Thread(target=lambda: seen.append(stpa.current_pool_limit()))
        t.start()
        t.join()
        assert seen == [None]  # another thread has no limit
        with stpa.default_pool_limit(None):
            assert stpa.current_pool_limit() is None
    assert stpa.current_pool_limit() is None
    assert rec[0].source == "limited" and "default_pool_limit" in rec[0].reason
    with pytest.raises(ValueError, match="workers=0"):
        with stpa.default_pool_limit(0):
            pass


def test_max_workers_caps_the_choice_and_is_part_of_the_memo(tmp_path, monkeypatch):
    monkeypatch.setattr(LK, "model_search_path", lambda: [("tuned (cache)", tmp_path / "missing.json")])
    S.clear_cache()
    model = SyntheticModel(4096, fanout=1)  # the heuristic wants one worker per core
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", S.StpaFallbackWarning)
        free = stpa.select_for_model(model)
        capped = stpa.select_for_model(model, max_workers=1)
    assert capped.workers == 1 and free is not capped
    S.clear_cache()


def test_resolve_workers_checks_the_argument():
    model = SyntheticModel(4)
    for bad in (0, 1025, "many", 2.5, True, None):
        with pytest.raises(ValueError, match=f"workers={bad!r} is invalid"):
            stpa.resolve_workers(bad, model)


# ---- online refinement -----------------------------------------------------------------------------

def test_online_refine_with_a_timer():
    cost = {1: 1.0, 2: 0.6, 3: 0.5, 4: 0.55, 5: 0.9, 6: 1.0}
    calls = []

    def seconds_per_step(w):
        calls.append(w)
        return cost[w]

    best, seen = stpa.online_refine(seconds_per_step, workers=2, max_workers=6, details=True)
    assert best == 3 and seen[3] == 0.5
    assert set(calls) <= {1, 2, 3, 4}  # climbs, never sweeps everything
    assert stpa.online_refine(seconds_per_step, workers=1, max_workers=6) == 3
    # A zero budget measures the start only.
    assert stpa.online_refine(seconds_per_step, workers=1, max_workers=6, budget_s=0.0) == 1


def test_online_refine_with_a_model_keeps_results():
    model = SyntheticModel(64, fanout=1, work=100, period=0.1, delay=0.1)
    w = stpa.online_refine(model, workers=1, max_workers=3, steps=2, step_length=0.5, budget_s=2.0)
    assert 1 <= w <= 3
    assert run_states(model, w)[2]["value"].tobytes() == run_states(SyntheticModel(64, fanout=1, work=100), 1)[2][
        "value"].tobytes()
    with pytest.raises(ValueError, match="auto"):
        stpa.online_refine(lambda w: 1.0)
    with pytest.raises(TypeError):
        stpa.online_refine(42)


# ---- tune -----------------------------------------------------------------------------------------

def test_tiny_tune_sweep_trains_saves_and_evaluates(tmp_path, monkeypatch):
    monkeypatch.setenv("SEER_CACHE_DIR", str(tmp_path / "cache"))
    result = TU.run_tune(quick=True, n_train=3, n_eval=2, reps=1, target_s=0.005, sizes=[1, 2], envs=False,
                         include_shipped=False, progress=False, do_evaluate=True, families=("gbr", "knn"),
                         loaded_share=0.5, log=lambda *a: None)
    ds = tmp_path / "cache" / "stpa_dataset.jsonl"
    rows = [json.loads(line) for line in ds.read_text().splitlines()]
    # 3 workloads quiet, every other one again beside the busy process: 5 x 2 sizes
    assert len(rows) == 10 and {r["workers"] for r in rows} == {1, 2}
    assert sorted(r["condition"] for r in rows).count("loaded") == 4
    assert all(r["schema_version"] == M.SCHEMA_VERSION and "busy_us_per_window" in r["features"] for r in rows)
    assert all(0 <= r["features"]["free_cores"] <= r["features"]["usable_cores"] for r in rows)
    m = M.load_model(tmp_path / "cache" / "stpa_model.json")
    assert m.family in ("gbr", "knn") and set(m.meta["comparison"]) == {"gbr", "knn"}
    assert m.meta["workloads"] == 5  # quiet and loaded measurements are separate groups
    assert _mode(tmp_path / "cache") == 0o700
    assert set(result["evaluations"]) == {"quiet", "loaded", "1core"}
    assert result["evaluations"]["1core"]["last"]["usable_cores"] == 1
    for cond, rec in result["evaluations"].items():
        ev = rec["last"]
        assert len(ev["workloads"]) == 2 and ev["condition"] == cond
        for p in ev["workloads"]:
            assert 0 < p["frac_chosen"] <= 1 and p["chosen"] in (1, 2)
            # workers="auto" = the choice, then the tuner on the workload's steps
            assert p["tuned"] in p["tuner_tried"] and p["chosen"] in p["tuner_tried"]
            assert p["frac_tuned"] == p["steps_per_s"][str(p["tuned"])] / max(p["steps_per_s"].values())
            if cond == "1core":  # the hard rule: nothing was measured faster beyond the one usable core
                assert p["chosen"] == 1 and set(p["tuner_tried"]) <= {1, 2}
    assert result["evaluation"] is result["evaluations"]["quiet"]["last"]
    md = TU.render_markdown(result, "seer tune (test)")
    assert "Held-out evaluation per machine state" in md and "fixed rule" in md
    assert "| quiet |" in md and "| loaded |" in md and "| 1core |" in md
    assert 'workers="auto" (the choice + PoolTuner)' in md
    # A second sweep appends.
    TU.run_tune(quick=True, n_train=2, reps=1, target_s=0.005, sizes=[1, 2], envs=False, include_shipped=False,
                progress=False, do_train=False, loaded_share=0.0, log=lambda *a: None)
    assert len(ds.read_text().splitlines()) == 14
    S.clear_cache()


def test_the_model_loads_lazily():
    code = textwrap.dedent("""
        import sys, seer
        from seer.synthetic import SyntheticModel
        with seer.Runtime(SyntheticModel(8), workers=2) as rt:
            rt.step(1.0)
        import seer.stpa
        assert "sklearn" not in sys.modules and "joblib" not in sys.modules, "loaded eagerly"
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr


def test_an_unreadable_shipped_model_is_refitted_from_the_shipped_dataset(tmp_path, monkeypatch):
    bad = tmp_path / "stpa_model.json"
    bad.write_bytes(b"{damaged")
    ds = tmp_path / "stpa_dataset.jsonl.gz"
    import gzip

    with gzip.open(ds, "wt") as f:
        for row in fake_rows(8):
            f.write(json.dumps(row) + "\n")
    monkeypatch.setenv("SEER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(LK, "model_search_path", lambda: [("shipped default", bad)])
    monkeypatch.setattr(LK, "shipped_model_path", lambda: bad)
    monkeypatch.setattr(LK, "shipped_dataset_path", lambda: ds)
    S.clear_cache()
    with warnings.catch_warnings():
        warnings.simplefilter("error", S.StpaFallbackWarning)
        m, reasons = LK.active_model()
    assert m is not None and "refitted" in reasons[0]
    assert list((tmp_path / "cache").glob("stpa_default-*.json"))  # cached for the next process
    S.clear_cache()
    m2, _ = LK.active_model()
    assert m2.scores(fake_rows(1)[0]["features"]) == m.scores(fake_rows(1)[0]["features"])
    S.clear_cache()


def test_a_model_can_opt_out_of_the_probe(tmp_path, monkeypatch, fake_model):
    path = M.save_model(fake_model, tmp_path / "m.json")
    monkeypatch.setattr(LK, "model_search_path", lambda: [("tuned (cache)", path)])
    S.clear_cache()
    model = SyntheticModel(256)
    model.stpa_probe = False
    sel = S.select_for_model(model)
    assert sel.source == "heuristic" and "stpa_probe" in sel.reason and sel.probe_s == 0
    assert sel.workers == S.heuristic_workers(256, 1.0, S.machine_features()["usable_cores"])
    S.clear_cache()


def test_env_workloads_come_from_the_env_registry(monkeypatch):
    from seer import registry
    from seer.stpa import workloads as W

    asked = []
    real_load = registry.load

    def load(name):
        asked.append(name)
        return real_load(name)

    monkeypatch.setattr(registry, "load", load)
    wls = W._env_workloads([("uav_swarm_v0", {"num_uavs": 8}), ("not_registered_v0", {}),
                            ("wireless_v0", {"scenario": "small"})])
    assert asked == ["uav_swarm_v0", "not_registered_v0", "wireless_v0"]
    # An env that is not registered is left out, not an error: the envs are optional to `seer tune`.
    assert [(w.name, w.family, w.kind) for w in wls] == [("uav_swarm_v0-num_uavs8", "env-uav_swarm_v0", "env"),
                                                         ("wireless_v0-scenariosmall", "env-wireless_v0", "env")]
    env = wls[0].factory(1)
    try:
        assert env.workers == 1 and len(env.possible_agents) == 8
    finally:
        env.close()
