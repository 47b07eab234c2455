"""STPA model files a user did not write: bounded in size, node count and tree
depth, and never read from a folder (or a file) another user could write to."""

import json
import os
import stat
import warnings

import pytest

import seer
from seer import cli
from seer.stpa import estimator as E
from seer.stpa import lookup as LK
from seer.stpa import model as M
from seer.stpa import selector as S


@pytest.fixture
def shipped_doc():
    return json.loads(LK.shipped_model_path().read_text())


def _chain_tree(inner: int) -> dict:
    """A tree ``inner`` levels deep: each inner node has a leaf on the right, the next inner node on the left."""
    n = 2 * inner + 1
    cl = [j + 2 if j % 2 == 0 and j < 2 * inner else -1 for j in range(n)]
    cr = [j + 1 if j % 2 == 0 and j < 2 * inner else -1 for j in range(n)]
    return {"children_left": cl, "children_right": cr, "feature": [0] * n, "threshold": [0.5] * n,
            "value": [0.0] * n}


def _write(path, doc):
    path.write_text(json.dumps(doc))
    return path


@pytest.fixture(autouse=True)
def _fresh(monkeypatch, tmp_path):
    monkeypatch.delenv("SEER_STPA_MODEL", raising=False)
    monkeypatch.setenv("SEER_CACHE_DIR", str(tmp_path / "no-cache"))
    S.clear_cache()
    yield
    S.clear_cache()


def _active():
    S.clear_cache()
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        m, reasons = LK.active_model()
    return m, reasons, [str(w.message) for w in rec if issubclass(w.category, S.StpaFallbackWarning)]


# ---- bounded model files ----------------------------------------------------------------------

@pytest.mark.timeout(120)
def test_a_300000_deep_tree_is_refused_naming_the_depth_and_the_limit(tmp_path, monkeypatch, shipped_doc):
    shipped_doc["estimator"]["steps"][-1]["trees"][0] = _chain_tree(300_000)
    p = _write(tmp_path / "deep.json", shipped_doc)
    with pytest.raises(seer.IncompatibleModelError, match=rf"tree 0: 300000 levels deep, more than a model tree "
                                                         rf"may be \({E.MAX_TREE_DEPTH}\)") as exc:
        M.load_model(p)
    assert str(p) in str(exc.value)
    # workers="auto" skips it with a warning and the shipped model decides.
    monkeypatch.setenv("SEER_STPA_MODEL", str(p))
    m, reasons, warned = _active()
    assert m is not None and m.path == str(LK.shipped_model_path())
    assert any("deep.json" in w and "levels deep" in w for w in warned), warned


def test_trees_as_deep_as_the_limit_load_and_one_level_more_is_refused(tmp_path, shipped_doc):
    shipped_doc["estimator"]["steps"][-1]["trees"][0] = _chain_tree(E.MAX_TREE_DEPTH)
    model = M.load_model(_write(tmp_path / "ok.json", shipped_doc))
    assert model.estimator._steps[-1][1].max_steps == E.MAX_TREE_DEPTH  # the walk stops at the depth
    shipped_doc["estimator"]["steps"][-1]["trees"][0] = _chain_tree(E.MAX_TREE_DEPTH + 1)
    with pytest.raises(seer.IncompatibleModelError, match=f"{E.MAX_TREE_DEPTH + 1} levels deep"):
        M.load_model(_write(tmp_path / "deeper.json", shipped_doc))


def test_a_node_with_two_parents_is_refused(tmp_path, shipped_doc):
    tree = _chain_tree(3)
    tree["children_right"][0] = 3  # node 3 is also node 2's right child: a graph, not a tree
    shipped_doc["estimator"]["steps"][-1]["trees"][0] = tree
    with pytest.raises(seer.IncompatibleModelError, match="two parents"):
        M.load_model(_write(tmp_path / "dag.json", shipped_doc))


@pytest.mark.timeout(120)
def test_more_tree_nodes_than_the_limit_are_refused(tmp_path, shipped_doc):
    per_tree = E.MAX_TREE_NODES // 200 + 1
    n = per_tree
    tree = {"children_left": [1] + [-1] * (n - 1), "children_right": [2] + [-1] * (n - 1), "feature": [0] * n,
            "threshold": [0.5] * n, "value": [0.0] * n}
    shipped_doc["estimator"]["steps"][-1]["trees"] = [tree] * 200
    with pytest.raises(seer.IncompatibleModelError, match=rf"{200 * per_tree} tree nodes, more than a model may "
                                                         rf"hold \({E.MAX_TREE_NODES}\)"):
        M.load_model(_write(tmp_path / "wide.json", shipped_doc))


def test_a_file_larger_than_the_limit_is_refused_before_it_is_read(tmp_path):
    p = tmp_path / "huge.json"
    with open(p, "wb") as f:
        f.truncate(M.MAX_MODEL_BYTES + 1)  # sparse: nothing is written
    with pytest.raises(seer.IncompatibleModelError, match=rf"{M.MAX_MODEL_BYTES + 1} bytes, more than an STPA "
                                                         rf"model can be \({M.MAX_MODEL_BYTES} bytes\)"):
        M.load_model(p)


def test_deeply_nested_metadata_is_refused(tmp_path, shipped_doc):
    nested = []
    for _ in range(500):
        nested = [nested]
    shipped_doc["meta"]["machines"] = nested
    with pytest.raises(seer.IncompatibleModelError, match=rf"'meta' is nested \d+ levels deep, more than a "
                                                         rf"model's metadata may be \({M.MAX_META_DEPTH}\)"):
        M.load_model(_write(tmp_path / "meta.json", shipped_doc))
    p = tmp_path / "meta2.json"
    p.write_text(json.dumps(shipped_doc)[:-1] + ', "x": ' + "[" * 200_000 + "]" * 200_000 + "}")
    with pytest.raises(seer.IncompatibleModelError, match="not JSON"):
        M.load_model(p)


# ---- trusted folders ---------------------------------------------------------------------------

def _plant_tuned(cache, shipped_doc):
    cache.mkdir(exist_ok=True)
    shipped_doc["meta"]["trained"] = "planted"
    return _write(cache / M.MODEL_FILENAME, shipped_doc)


def test_a_group_writable_cache_is_not_read_and_auto_warns_once(tmp_path, monkeypatch, shipped_doc):
    cache = tmp_path / "cache"
    planted = _plant_tuned(cache, shipped_doc)
    os.chmod(cache, 0o775)
    monkeypatch.setenv("SEER_CACHE_DIR", str(cache))
    m, reasons, warned = _active()
    assert m.path == str(LK.shipped_model_path()) and m.meta.get("trained") != "planted"
    assert len(warned) == 1 and str(cache) in warned[0] and "0o775" in warned[0] and "chmod go-w" in warned[0]
    assert any("tuned (cache)" in r and "writable by group or others" in r for r in reasons)
    with warnings.catch_warnings(record=True) as rec:  # the next build in this process: no repeat
        warnings.simplefilter("always")
        m2, _ = LK.active_model()
    assert m2.path == m.path and not [w for w in rec if issubclass(w.category, S.StpaFallbackWarning)]
    # Once the folder is private again, the tuned model is used.
    os.chmod(cache, 0o700)
    m3, _, warned3 = _active()
    assert m3.path == str(planted) and m3.meta["trained"] == "planted" and not warned3


def test_a_cache_owned_by_another_user_is_not_read(tmp_path, monkeypatch, shipped_doc):
    cache = tmp_path / "cache"
    _plant_tuned(cache, shipped_doc)
    try:
        os.chown(cache, 65534, 65534)
    except PermissionError:
        pytest.skip("giving a folder to another user needs root")
    monkeypatch.setenv("SEER_CACHE_DIR", str(cache))
    m, _, warned = _active()
    assert m.path == str(LK.shipped_model_path())
    assert any("owned by uid 65534" in w for w in warned), warned


def test_a_model_file_others_can_write_is_not_read(tmp_path, monkeypatch, shipped_doc):
    p = _write(tmp_path / "mine.json", shipped_doc)
    os.chmod(p, 0o666)
    monkeypatch.setenv("SEER_STPA_MODEL", str(p))
    m, _, warned = _active()
    assert m.path == str(LK.shipped_model_path())
    assert any("mine.json" in w and "0o666" in w for w in warned), warned
    os.chmod(p, 0o644)
    assert _active()[0].path == str(p)


def test_a_model_file_in_a_sticky_shared_folder_loads_but_not_in_an_open_one(tmp_path, monkeypatch, shipped_doc):
    sticky, open_ = tmp_path / "tmp-like", tmp_path / "open"
    for d, mode in ((sticky, 0o1777), (open_, 0o777)):
        d.mkdir()
        os.chmod(d, mode)
    # /tmp-style: others may add files but not replace this one, which only its owner can write.
    monkeypatch.setenv("SEER_STPA_MODEL", str(_write(sticky / "m.json", shipped_doc)))
    m, _, warned = _active()
    assert m.path == str(sticky / "m.json") and not warned
    monkeypatch.setenv("SEER_STPA_MODEL", str(_write(open_ / "m.json", shipped_doc)))
    m, _, warned = _active()
    assert m.path == str(LK.shipped_model_path())
    assert any(str(open_) in w and "0o777" in w for w in warned), warned


def test_seer_tune_refuses_an_untrusted_cache_and_writes_nothing(tmp_path, capsys):
    cache = tmp_path / "shared"
    cache.mkdir()
    os.chmod(cache, 0o777)
    rc = cli.main(["tune", "--quick", "--no-envs", "--no-progress", "--cache-dir", str(cache)])
    err = capsys.readouterr().err
    assert rc == 1 and err.startswith("seer tune: error: ") and str(cache) in err and "0o777" in err
    assert "Traceback" not in err and list(cache.iterdir()) == []
    assert stat.S_IMODE(cache.stat().st_mode) == 0o777  # left as the user set it


@pytest.mark.timeout(300)
def test_the_shipped_refit_is_not_cached_in_an_untrusted_folder(tmp_path, monkeypatch):
    import gzip

    bad = tmp_path / "stpa_model.json"
    bad.write_bytes(b"{damaged")
    ds = tmp_path / "stpa_dataset.jsonl.gz"
    with gzip.open(LK.shipped_dataset_path(), "rt") as src, gzip.open(ds, "wt") as dst:
        for _, line in zip(range(60), src):
            dst.write(line)
    cache = tmp_path / "cache"
    cache.mkdir()
    os.chmod(cache, 0o777)
    monkeypatch.setenv("SEER_CACHE_DIR", str(cache))
    monkeypatch.setattr(LK, "model_search_path", lambda: [("shipped default", bad)])
    monkeypatch.setattr(LK, "shipped_model_path", lambda: bad)
    monkeypatch.setattr(LK, "shipped_dataset_path", lambda: ds)
    m, reasons, _ = _active()
    assert m is not None and "refitted" in reasons[0] and m.path.endswith("(refitted in memory)")
    assert list(cache.iterdir()) == []
    # A refit planted there beforehand is not read either.
    os.chmod(cache, 0o700)
    S.clear_cache()
    m2, _ = LK.active_model()
    [cached] = cache.glob("stpa_default-*.json")
    assert m2.path == str(cached)  # a private cache holds the refit for the next process
    doc = json.loads(cached.read_text())
    doc["meta"]["trained"] = "planted"
    cached.write_text(json.dumps(doc))
    os.chmod(cache, 0o777)
    m3, _, _ = _active()
    assert m3.meta.get("trained") != "planted" and m3.path.endswith("(refitted in memory)")


@pytest.mark.timeout(300)
def test_a_forest_trained_on_more_rows_than_the_node_bound_allows_stays_within_it(monkeypatch):
    from seer.stpa import train as T

    rows = T.load_rows(LK.shipped_dataset_path())[:120]
    monkeypatch.setattr(T, "MAX_TREE_NODES", 3_000)  # a dataset this small stands in for a very large one
    model = T.train(rows, families=("rf",), family="rf")
    trees = model.to_dict()["estimator"]["steps"][-1]["trees"]
    assert sum(len(t["children_left"]) for t in trees) <= 3_000
    assert max(len(t["children_left"]) for t in trees) <= 2 * (3_000 // (2 * len(trees))) - 1
