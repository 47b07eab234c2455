"""The STPA selector: a learned model of throughput per pool size, its file
format, where it is looked up, the fallback heuristic, and the choice.

Model file (JSON, never a pickle): an object with ``format``
(``"seer-stpa-model"``), ``version`` (:data:`MODEL_VERSION`), ``schema``
(the feature names, in order, :data:`FEATURE_SCHEMA`), ``schema_version``
(:data:`SCHEMA_VERSION`), ``family`` (which estimator), ``target``, ``meta``
(what it was trained on, held-out scores) and ``estimator``: the fitted
parameters as plain arrays (tree nodes, coefficients, neighbour points; see
:class:`PortableEstimator`), predicted with numpy alone.  Loading a model
therefore runs no code from the file and needs no scikit-learn.  A file
whose format, version or schema differs from this code's is *incompatible*:
it is not used.  Pickled (joblib) models of older SEER versions are refused,
never unpickled: unpickling a planted file would run arbitrary code.

The estimator predicts, for a workload's features and a candidate pool size
``w``, the log parallel efficiency ``log(speedup(w) / min(w, cores))`` where
``speedup(w)`` is steps/s at ``w`` over steps/s at one worker.  The score of
``w`` is then ``prediction + log(min(w, cores))``, the predicted log speedup
(0 for one worker, the reference, which the estimator is not asked about),
and the choice is the smallest ``w`` whose score is within ``tolerance`` of
the best (ties go to fewer threads).

Lookup order of the model ``workers="auto"`` uses: the path in
``$SEER_STPA_MODEL``; the model ``seer tune`` wrote in the cache directory
(``$SEER_CACHE_DIR``, else ``platformdirs.user_cache_dir("seer")``, which
honours ``$XDG_CACHE_HOME``); the default model shipped in ``seer/data/``.
A file that exists but cannot be used is skipped with a warning
(:class:`StpaFallbackWarning`) naming why, except the shipped model, which
is refitted from the shipped dataset when it cannot be used (this needs
scikit-learn) and cached in the cache directory; when none can be used the
documented :func:`heuristic_workers` decides, with a warning.  Models load
lazily, only when ``"auto"`` is used.  Cache directories SEER creates have
mode 0700; model files are written atomically.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import json
import math
import os
import threading
import warnings
from pathlib import Path
from typing import Any, Iterator, Mapping

import numpy as np

from seer.stpa.features import candidate_features, hardware_features, static_workload_features

MODEL_FORMAT = "seer-stpa-model"
#: Version of the model file layout and of the target's meaning (1: the
#: joblib pickle of earlier SEER builds, no longer read; 2: JSON of the fitted parameters).
MODEL_VERSION = 2
#: Version of the feature definitions (bump when a feature's meaning changes).
SCHEMA_VERSION = 1

MODEL_FILENAME = "stpa_model.json"
#: The pickled model earlier SEER builds saved; found in a cache directory, it is reported and never loaded.
LEGACY_MODEL_FILENAME = "stpa_model.joblib"
DATASET_FILENAME = "stpa_dataset.jsonl"
SHIPPED_DATASET_FILENAME = "stpa_dataset.jsonl.gz"

HARDWARE_SCHEMA = ["usable_cores", "physical_cores", "smt", "log_l2_kb", "log_l3_kb", "log_mem_gb"]
WORKLOAD_SCHEMA = [
    "log_entities", "kinds", "native_kind_share", "native_event_share", "gil_share", "python_share",
    "log_events_per_window", "log_busy_us_per_window", "busy_cv", "log_idle_us_per_window", "overhead_share",
    "log_cost_us", "cost_cv", "log_active_entities", "log_parallelism", "log_events_per_entity_window",
    "fanout", "cross_share", "empty_polls_per_window", "log_step_us", "log_windows_per_step",
    "log_probe2_speedup", "probe2_idle_share", "probe2_empty_polls", "probe2_imbalance",
]
CANDIDATE_SCHEMA = ["workers", "workers_per_core", "oversubscription", "log_work_per_worker",
                    "log_parallelism_per_worker", "log_entities_per_worker"]
#: The model's inputs, in order.
FEATURE_SCHEMA = HARDWARE_SCHEMA + WORKLOAD_SCHEMA + CANDIDATE_SCHEMA


class StpaFallbackWarning(UserWarning):
    """The learned selector could not be used; the heuristic decided."""


class IncompatibleModelError(Exception):
    """A model file exists but cannot be used (corrupt, wrong format, version or schema)."""


# ---- features -> model inputs ---------------------------------------------------------------

def _log1p(x) -> float:
    return math.log1p(max(float(x), 0.0))


def derived_features(raw: Mapping[str, Any]) -> dict[str, float]:
    """Hardware + workload inputs of the model from raw features (those of
    :func:`hardware_features` and :func:`~seer.stpa.features.probe`)."""
    g = lambda k, d=0.0: float(raw.get(k, d))  # noqa: E731
    return {
        "usable_cores": g("usable_cores", 1.0),
        "physical_cores": g("physical_cores", 1.0),
        "smt": g("smt", 1.0),
        "log_l2_kb": _log1p(g("l2_kb")),
        "log_l3_kb": _log1p(g("l3_kb")),
        "log_mem_gb": _log1p(g("mem_gb")),
        "log_entities": _log1p(g("entities", 1.0)),
        "kinds": g("kinds", 1.0),
        "native_kind_share": g("native_kind_share", 1.0),
        "native_event_share": g("native_event_share", 1.0),
        "gil_share": g("gil_share"),
        "python_share": g("python_share"),
        "log_events_per_window": _log1p(g("events_per_window")),
        "log_busy_us_per_window": _log1p(g("busy_us_per_window")),
        "busy_cv": g("busy_cv"),
        "log_idle_us_per_window": _log1p(g("idle_us_per_window")),
        "overhead_share": g("overhead_share"),
        "log_cost_us": _log1p(g("cost_us")),
        "cost_cv": g("cost_cv"),
        "log_active_entities": _log1p(g("active_entities", 1.0)),
        "log_parallelism": math.log(max(g("parallelism", 1.0), 1.0)),
        "log_events_per_entity_window": _log1p(g("events_per_entity_window", 1.0)),
        "fanout": g("fanout"),
        "cross_share": g("cross_share"),
        "empty_polls_per_window": _log1p(g("empty_polls_per_window")),
        "log_step_us": _log1p(g("step_ms") * 1e3),
        "log_windows_per_step": _log1p(g("windows_per_step", 1.0)),
        "log_probe2_speedup": math.log(min(max(g("probe2_speedup", 1.0), 1e-3), 1e3)),
        "probe2_idle_share": g("probe2_idle_share"),
        "probe2_empty_polls": _log1p(g("probe2_empty_polls_per_window")),
        "probe2_imbalance": g("probe2_imbalance", 1.0),
    }


def candidate_sizes(cores: int) -> list[int]:
    """Pool sizes ``seer tune`` sweeps and the selector chooses from: 1 up to max(2 x cores, 4)."""
    return list(range(1, max(2 * int(cores), 4) + 1))


def feature_matrix(raw: Mapping[str, Any], candidates, cores: int | None = None) -> np.ndarray:
    """One row of :data:`FEATURE_SCHEMA` per candidate pool size."""
    cores = int(cores if cores is not None else raw.get("usable_cores", 1))
    base = derived_features(raw)
    rows = []
    for w in candidates:
        f = dict(base)
        f.update(candidate_features(int(w), cores, raw))
        rows.append([f[name] for name in FEATURE_SCHEMA])
    return np.asarray(rows, np.float64)


# ---- the portable estimator -------------------------------------------------------------------
#
# A model file holds the fitted parameters as plain JSON arrays; these numpy
# predictors reproduce scikit-learn's predict() for the families training
# uses, so loading a model never unpickles (which can run code) and never
# needs scikit-learn.

_TRANSFORMS = ("standard_scaler", "polynomial")
_PREDICTORS = ("linear", "knn", "trees")
#: Largest model file load_model reads (a random forest of deep trees is a few MB).
MAX_MODEL_BYTES = 256 << 20


def _array(step: Mapping, key: str, dtype, ndim: int, where: str) -> np.ndarray:
    if key not in step:
        raise ValueError(f"{where}: missing {key!r}")
    try:
        a = np.asarray(step[key], dtype=dtype)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ValueError(f"{where}: {key!r} is not an array of {np.dtype(dtype).name} ({exc})") from None
    if a.ndim != ndim:
        raise ValueError(f"{where}: {key!r} has {a.ndim} dimensions, expected {ndim}")
    if a.dtype.kind == "f" and not np.isfinite(a).all():
        raise ValueError(f"{where}: {key!r} holds non-finite numbers")
    return a


def _number(step: Mapping, key: str, where: str) -> float:
    v = step.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ValueError(f"{where}: {key!r} = {v!r}, expected a finite number")
    return float(v)


class _Trees:
    """Regression trees packed into flat arrays (all trees walked at once)."""

    def __init__(self, step: Mapping, n_in: int, where: str):
        kind = step.get("kind")
        if kind not in ("boosting", "forest"):
            raise ValueError(f"{where}: kind={kind!r}, expected 'boosting' or 'forest'")
        self.kind = kind
        self.init = _number(step, "init", where) if kind == "boosting" else 0.0
        self.learning_rate = _number(step, "learning_rate", where) if kind == "boosting" else 1.0
        trees = step.get("trees")
        if not isinstance(trees, list) or not trees:
            raise ValueError(f"{where}: 'trees' must be a non-empty list")
        self.trees = []
        left, right, feat, thr, val, mgl, roots = [], [], [], [], [], [], []
        offset = 0
        for t, tree in enumerate(trees):
            w = f"{where} tree {t}"
            if not isinstance(tree, Mapping):
                raise ValueError(f"{w}: expected an object")
            cl = _array(tree, "children_left", np.int64, 1, w)
            cr = _array(tree, "children_right", np.int64, 1, w)
            f = _array(tree, "feature", np.int64, 1, w)
            th = _array(tree, "threshold", np.float64, 1, w)
            v = _array(tree, "value", np.float64, 1, w)
            m = _array(tree, "missing_go_to_left", np.int64, 1, w) if "missing_go_to_left" in tree \
                else np.zeros(len(cl), np.int64)
            n = len(cl)
            if n == 0 or any(len(a) != n for a in (cr, f, th, v, m)):
                raise ValueError(f"{w}: node arrays are empty or of different lengths")
            idx = np.arange(n)
            leaf = cl == -1
            # Children after their parent (as scikit-learn builds trees) makes
            # every walk end: no cycles, at most n steps.
            if not ((leaf == (cr == -1)).all() and (cl[~leaf] > idx[~leaf]).all() and (cl[~leaf] < n).all()
                    and (cr[~leaf] > idx[~leaf]).all() and (cr[~leaf] < n).all()):
                raise ValueError(f"{w}: children_left/right do not form a tree")
            if not ((f[~leaf] >= 0) & (f[~leaf] < n_in)).all():
                raise ValueError(f"{w}: a split feature is outside 0..{n_in - 1}")
            self.trees.append({"children_left": cl, "children_right": cr, "feature": f, "threshold": th,
                               "value": v, "missing_go_to_left": m})
            left.append(np.where(leaf, -1, cl + offset))
            right.append(np.where(leaf, -1, cr + offset))
            feat.append(np.where(leaf, 0, f))
            thr.append(th)
            val.append(v)
            mgl.append(m != 0)
            roots.append(offset)
            offset += n
        self.left, self.right = np.concatenate(left), np.concatenate(right)
        self.feature, self.threshold = np.concatenate(feat), np.concatenate(thr)
        self.value, self.missing_left = np.concatenate(val), np.concatenate(mgl)
        self.roots = np.asarray(roots, np.int64)
        self.max_steps = max(len(t["children_left"]) for t in self.trees)

    def leaves(self, X: np.ndarray) -> np.ndarray:
        # scikit-learn's trees compare float32 inputs with float64 thresholds.
        X32 = np.asarray(X, np.float32)
        rows = np.arange(X32.shape[0])[:, None]
        node = np.broadcast_to(self.roots, (X32.shape[0], len(self.roots))).copy()
        for _ in range(self.max_steps):
            inner = self.left[node] != -1
            if not inner.any():
                break
            x = X32[rows, self.feature[node]]
            go_left = np.where(np.isnan(x), self.missing_left[node], x <= self.threshold[node])
            node = np.where(inner, np.where(go_left, self.left[node], self.right[node]), node)
        return node

    def predict(self, X: np.ndarray) -> np.ndarray:
        v = self.value[self.leaves(X)]
        # Sum the trees one after another, in order, as scikit-learn does
        # (add.accumulate is sequential; a plain sum may pair terms differently).
        if self.kind == "boosting":
            terms = np.concatenate([np.full((v.shape[0], 1), self.init), self.learning_rate * v], axis=1)
            return np.add.accumulate(terms, axis=1)[:, -1]
        return np.add.accumulate(v, axis=1)[:, -1] / v.shape[1]

    def to_dict(self) -> dict:
        out = {"type": "trees", "kind": self.kind}
        if self.kind == "boosting":
            out.update(init=self.init, learning_rate=self.learning_rate)
        out["trees"] = [{k: a.tolist() for k, a in t.items()} for t in self.trees]
        return out


class PortableEstimator:
    """A fitted regressor as plain arrays; ``predict`` uses numpy only.

    ``steps`` is a pipeline: transforms (``standard_scaler``, ``polynomial``)
    then one predictor (``linear``, ``knn`` or ``trees``), each a dict of
    JSON-able parameters.  :func:`seer.stpa.train.export_estimator` makes one
    from a fitted scikit-learn estimator; its predictions equal
    scikit-learn's (to rounding: kNN distances are computed exactly, where
    scikit-learn expands ``|x - y|^2``).

    Raises:
        ValueError: A step is unknown or its parameters are malformed or
            inconsistent (the message names the step and the field).
    """

    def __init__(self, steps: list, n_features_in: int):
        if isinstance(n_features_in, bool) or not isinstance(n_features_in, int) or n_features_in < 1:
            raise ValueError(f"n_features_in={n_features_in!r}: expected a positive integer")
        if not isinstance(steps, list) or not steps:
            raise ValueError("'steps' must be a non-empty list")
        self.n_features_in = n_features_in
        self._steps: list[tuple[str, Any]] = []
        width = n_features_in
        for i, step in enumerate(steps):
            kind = step.get("type") if isinstance(step, Mapping) else None
            where = f"step {i} ({kind})"
            last = i == len(steps) - 1
            if kind not in _TRANSFORMS + _PREDICTORS:
                raise ValueError(f"step {i}: type={kind!r}, expected one of {list(_TRANSFORMS + _PREDICTORS)}")
            if (kind in _PREDICTORS) != last:
                raise ValueError(f"{where}: expected transforms first and exactly one predictor last")
            if kind == "standard_scaler":
                mean = _array(step, "mean", np.float64, 1, where) if step.get("mean") is not None else None
                scale = _array(step, "scale", np.float64, 1, where) if step.get("scale") is not None else None
                if any(a is not None and len(a) != width for a in (mean, scale)):
                    raise ValueError(f"{where}: mean/scale length differs from the {width} inputs")
                if scale is not None and (scale == 0).any():
                    raise ValueError(f"{where}: a scale is 0")
                self._steps.append((kind, (mean, scale)))
            elif kind == "polynomial":
                powers = _array(step, "powers", np.int64, 2, where)
                if powers.shape[1] != width or (powers < 0).any() or (powers.sum(axis=1) > 2).any():
                    raise ValueError(f"{where}: powers must be {width} non-negative exponents per output "
                                     f"of total degree <= 2")
                factors = [np.repeat(np.arange(width), row).tolist() + [width, width] for row in powers]
                self._steps.append((kind, (np.array([f[0] for f in factors], np.int64),
                                           np.array([f[1] for f in factors], np.int64), powers)))
                width = len(powers)
            elif kind == "linear":
                coef = _array(step, "coef", np.float64, 1, where)
                if len(coef) != width:
                    raise ValueError(f"{where}: {len(coef)} coefficients for {width} inputs")
                self._steps.append((kind, (coef, _number(step, "intercept", where))))
            elif kind == "knn":
                Xf = _array(step, "X", np.float64, 2, where)
                y = _array(step, "y", np.float64, 1, where)
                k = step.get("k")
                weights = step.get("weights")
                if Xf.shape[1] != width or len(y) != len(Xf) or not len(y):
                    raise ValueError(f"{where}: X must be (points, {width}) and y one value per point")
                if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= len(y):
                    raise ValueError(f"{where}: k={k!r}, expected an integer in [1, {len(y)}]")
                if weights not in ("uniform", "distance"):
                    raise ValueError(f"{where}: weights={weights!r}, expected 'uniform' or 'distance'")
                self._steps.append((kind, (Xf, y, k, weights)))
            else:
                self._steps.append((kind, _Trees(step, width, where)))

    @classmethod
    def from_dict(cls, doc: Any) -> "PortableEstimator":
        """The estimator of a model file's ``estimator`` field (see :meth:`to_dict`)."""
        if not isinstance(doc, Mapping):
            raise ValueError(f"'estimator' is {type(doc).__name__}, expected an object")
        return cls(doc.get("steps"), doc.get("n_features_in"))

    def to_dict(self) -> dict:
        """The JSON-able form a model file holds (:meth:`from_dict` reads it back)."""
        steps = []
        for kind, p in self._steps:
            if kind == "standard_scaler":
                steps.append({"type": kind, "mean": None if p[0] is None else p[0].tolist(),
                              "scale": None if p[1] is None else p[1].tolist()})
            elif kind == "polynomial":
                steps.append({"type": kind, "powers": p[2].tolist()})
            elif kind == "linear":
                steps.append({"type": kind, "coef": p[0].tolist(), "intercept": p[1]})
            elif kind == "knn":
                steps.append({"type": kind, "k": p[2], "weights": p[3], "X": p[0].tolist(), "y": p[1].tolist()})
            else:
                steps.append(p.to_dict())
        return {"n_features_in": self.n_features_in, "steps": steps}

    def predict(self, X) -> np.ndarray:
        """One prediction per row of ``X`` (``n_features_in`` columns)."""
        X = np.asarray(X, np.float64)
        if X.ndim != 2 or X.shape[1] != self.n_features_in:
            raise ValueError(f"X has shape {X.shape}, expected (rows, {self.n_features_in})")
        for kind, p in self._steps:
            if kind == "standard_scaler":
                X = X.copy()
                if p[0] is not None:
                    X -= p[0]
                if p[1] is not None:
                    X /= p[1]
            elif kind == "polynomial":
                # Degree <= 2: each output is x_a * x_b, with a spare column of ones
                # standing in for a missing factor (x * 1.0 == x exactly).
                Xe = np.concatenate([X, np.ones((X.shape[0], 1))], axis=1)
                X = Xe[:, p[0]] * Xe[:, p[1]]
            elif kind == "linear":
                return X @ p[0] + p[1]
            elif kind == "knn":
                return _knn_predict(X, *p)
            else:
                return p.predict(X)
        raise AssertionError("unreachable: the last step is a predictor")


def _knn_predict(Q: np.ndarray, Xf: np.ndarray, y: np.ndarray, k: int, weights: str) -> np.ndarray:
    out = np.empty(len(Q))
    chunk = max(1, (1 << 21) // max(Xf.size, 1))  # bound the (queries, points, features) temporary
    for s in range(0, len(Q), chunk):
        q = Q[s:s + chunk]
        dist = np.sqrt(((q[:, None, :] - Xf[None, :, :]) ** 2).sum(axis=2))
        ind = np.argsort(dist, axis=1, kind="stable")[:, :k]
        d = np.take_along_axis(dist, ind, axis=1)
        if weights == "uniform":
            out[s:s + chunk] = np.mean(y[ind], axis=1)
            continue
        # scikit-learn's rule: points at distance 0 get weight 1, all others 0.
        with np.errstate(divide="ignore"):
            w = 1.0 / d
        inf = np.isinf(w)
        rows = inf.any(axis=1)
        w[rows] = inf[rows]
        out[s:s + chunk] = np.sum(y[ind] * w, axis=1) / np.sum(w, axis=1)
    return out


# ---- the model ----------------------------------------------------------------------------

@dataclasses.dataclass
class StpaModel:
    """A fitted selector: ``estimator`` maps :data:`FEATURE_SCHEMA` rows to log parallel efficiency.

    ``estimator`` is a :class:`PortableEstimator` (what :func:`load_model`
    and :func:`seer.stpa.train.train` return) or any object with
    ``predict``; :func:`save_model` converts a scikit-learn one.
    """

    estimator: Any
    family: str
    schema: list = dataclasses.field(default_factory=lambda: list(FEATURE_SCHEMA))
    meta: dict = dataclasses.field(default_factory=dict)
    path: str | None = None

    def scores(self, raw: Mapping[str, Any], candidates=None, cores: int | None = None) -> dict[int, float]:
        """Predicted log speedup over one worker, per candidate pool size."""
        cores = int(cores if cores is not None else raw.get("usable_cores", 1))
        cands = list(candidates) if candidates is not None else candidate_sizes(cores)
        out = {int(w): 0.0 for w in cands if int(w) == 1}  # the reference: log speedup 0 by definition
        rest = [int(w) for w in cands if int(w) != 1]
        if rest:
            pred = np.asarray(self.estimator.predict(feature_matrix(raw, rest, cores)), np.float64).reshape(-1)
            out.update({w: float(p + math.log(min(w, cores))) for w, p in zip(rest, pred)})
        return dict(sorted(out.items()))

    def choose(self, raw: Mapping[str, Any], candidates=None, cores: int | None = None,
               tolerance: float = 0.01) -> int:
        """The pool size with the best predicted throughput (the smallest
        within ``tolerance``, in log units, of the best)."""
        return choose_from_scores(self.scores(raw, candidates, cores), tolerance)

    def to_dict(self) -> dict:
        """The model file's content (JSON-able; a scikit-learn estimator is exported)."""
        est = self.estimator
        if not isinstance(est, PortableEstimator):
            from seer.stpa.train import export_estimator

            est = export_estimator(est)
        return {
            "format": MODEL_FORMAT, "version": MODEL_VERSION, "schema_version": SCHEMA_VERSION,
            "schema": list(self.schema), "family": self.family, "target": "log_parallel_efficiency",
            "meta": _json_safe(dict(self.meta)), "estimator": est.to_dict(),
        }


def choose_from_scores(scores: Mapping[int, float], tolerance: float = 0.01) -> int:
    finite = {w: s for w, s in scores.items() if math.isfinite(s)}
    if not finite:
        return 1
    best = max(finite.values())
    return min(w for w, s in finite.items() if s >= best - tolerance)


def _json_safe(x):
    # Strict JSON has no NaN/inf (a metric over an empty fold is NaN).
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, Mapping):
        return {str(k): _json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_json_safe(v) for v in x]
    if isinstance(x, np.generic):
        return _json_safe(x.item())
    return x


def dumps_model(doc: Mapping) -> str:
    """Model file text: metadata indented for people, the estimator's arrays compact, last."""
    lines = []
    for k, v in doc.items():
        if k == "estimator":
            continue
        lines.append(f"  {json.dumps(k)}: " + json.dumps(v, indent=2, allow_nan=False).replace("\n", "\n  "))
    if "estimator" in doc:
        lines.append('  "estimator": ' + json.dumps(doc["estimator"], allow_nan=False, separators=(",", ":")))
    return "{\n" + ",\n".join(lines) + "\n}\n"


def save_model(model: StpaModel, path: str | os.PathLike) -> Path:
    """Write ``model`` as a JSON model file, atomically; return the path.

    Missing folders are created with mode 0700 (the model's folder is where
    ``workers="auto"`` looks for it).  An existing symbolic link at ``path``
    is refused rather than written through.

    Raises:
        seer._io.OutputPathError: ``path`` is a symbolic link or a directory.
    """
    from seer._io import atomic_write_text, ensure_private_dir

    path = Path(path)
    text = dumps_model(model.to_dict())
    ensure_private_dir(path.parent, what="STPA model directory")
    atomic_write_text(path, text, what="STPA model file")
    return path


_PICKLE_SUFFIXES = (".joblib", ".pkl", ".pickle")


def _looks_pickled(path: Path, head: bytes) -> bool:
    if path.suffix.lower() in _PICKLE_SUFFIXES:
        return True
    # pickle protocol >= 2; joblib's zlib, gzip, xz and bz2 wrappers
    return (head[:1] == b"\x80" or head[:2] in (b"x\x01", b"x^", b"x\x9c", b"x\xda", b"\x1f\x8b", b"ZF")
            or head[:6] == b"\xfd7zXZ\x00" or head[:3] == b"BZh")


def _expected() -> str:
    return f"expected a JSON STPA model (format {MODEL_FORMAT!r}, version {MODEL_VERSION})"


def load_model(path: str | os.PathLike) -> StpaModel:
    """Load a JSON model file (see the module docstring); nothing in it is executed.

    Raises:
        FileNotFoundError: No file at ``path``.
        IncompatibleModelError: The file is a pickle (never unpickled), not
            JSON, or not a model of this code's format, version or feature
            schema (the message names the path and says which).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no STPA model at {path}")
    size = path.stat().st_size
    if size > MAX_MODEL_BYTES:
        raise IncompatibleModelError(f"{path} is {size} bytes, more than an STPA model can be "
                                     f"({MAX_MODEL_BYTES} bytes); {_expected()}")
    data = path.read_bytes()
    if _looks_pickled(path, data[:8]):
        raise IncompatibleModelError(
            f"{path} is a pickle/joblib file: SEER never unpickles model files (unpickling runs code); "
            f"{_expected()}; run `seer tune` to train one")
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise IncompatibleModelError(f"{path} is not a readable model file (not JSON: {exc}); {_expected()}") from None
    if not isinstance(doc, dict) or doc.get("format") != MODEL_FORMAT:
        raise IncompatibleModelError(f"{path} is not an STPA model file (format tag missing); {_expected()}")
    if doc.get("version") != MODEL_VERSION:
        old = (" (version 1 is the pickled format of earlier SEER builds, or its metadata sidecar; run `seer tune` to "
               "retrain)" if doc.get("version") == 1 else "")
        raise IncompatibleModelError(f"{path} has model version {doc.get('version')!r}; this SEER reads version "
                                     f"{MODEL_VERSION}{old}")
    schema = doc.get("schema")
    if doc.get("schema_version") != SCHEMA_VERSION or not isinstance(schema, list) or schema != FEATURE_SCHEMA:
        n = len(schema) if isinstance(schema, list) else "?"
        raise IncompatibleModelError(
            f"{path} was trained on feature schema v{doc.get('schema_version')!r} ({n} features); this SEER "
            f"computes schema v{SCHEMA_VERSION} ({len(FEATURE_SCHEMA)} features)")
    meta = doc.get("meta") or {}
    if not isinstance(meta, dict):
        raise IncompatibleModelError(f"{path}: 'meta' is {type(meta).__name__}, expected an object")
    try:
        est = PortableEstimator.from_dict(doc.get("estimator"))
        if est.n_features_in != len(FEATURE_SCHEMA):
            raise ValueError(f"n_features_in={est.n_features_in}, expected {len(FEATURE_SCHEMA)}")
    except ValueError as exc:
        raise IncompatibleModelError(f"{path} holds no usable estimator: {exc}") from None
    model = StpaModel(estimator=est, family=str(doc.get("family", "?")), schema=list(schema), meta=dict(meta),
                      path=str(path))
    try:  # shapes that validate may still not predict
        model.scores(machine_features() | {"entities": 64.0}, [1, 2], 2)
    except Exception as exc:
        raise IncompatibleModelError(f"{path} loads but cannot predict ({type(exc).__name__}: {exc})") from exc
    return model


# ---- where models live ----------------------------------------------------------------------

def cache_dir() -> Path:
    """Per-user cache directory: ``$SEER_CACHE_DIR``, else
    ``platformdirs.user_cache_dir("seer")`` (``$XDG_CACHE_HOME/seer`` on Linux).
    Not created here; what SEER creates there has mode 0700."""
    from seer._io import user_cache_dir

    return user_cache_dir()


def shipped_model_path() -> Path:
    return Path(__file__).resolve().parent.parent / "data" / MODEL_FILENAME


def shipped_dataset_path() -> Path:
    return Path(__file__).resolve().parent.parent / "data" / SHIPPED_DATASET_FILENAME


def model_search_path() -> list[tuple[str, Path]]:
    """(label, path) of the model files ``"auto"`` tries, in order."""
    out = []
    env = os.environ.get("SEER_STPA_MODEL")
    if env:
        out.append(("$SEER_STPA_MODEL", Path(env)))
    out.append(("tuned (cache)", cache_dir() / MODEL_FILENAME))
    out.append(("shipped default", shipped_model_path()))
    return out


_lock = threading.RLock()
_loaded: dict[tuple[str, float, int], StpaModel | str] = {}


def _load_cached(path: Path) -> StpaModel:
    st = path.stat()
    key = (str(path), st.st_mtime, st.st_size)
    with _lock:
        hit = _loaded.get(key)
        if hit is None:
            try:
                hit = load_model(path)
            except IncompatibleModelError as exc:
                hit = str(exc)
            _loaded[key] = hit
    if isinstance(hit, str):
        raise IncompatibleModelError(hit)
    return hit


def active_model(warn: bool = True) -> tuple[StpaModel | None, list[str]]:
    """The model ``workers="auto"`` uses, and why earlier candidates were skipped.

    Returns ``(None, reasons)`` when no model is usable.  With ``warn``,
    each skipped file that exists is reported as a :class:`StpaFallbackWarning`.
    """
    reasons = []
    for label, path in model_search_path():
        if not path.is_file():
            legacy = path.with_name(LEGACY_MODEL_FILENAME)
            if label == "tuned (cache)" and legacy.is_file():
                # A model `seer tune` saved as a pickle in an earlier SEER build: say why it is ignored.
                msg = (f"{legacy} is a pickled model of an older SEER and is not loaded (unpickling runs "
                       f"code); run `seer tune` to retrain it as {MODEL_FILENAME}")
                reasons.append(f"{label} model: {msg}")
                if warn:
                    warnings.warn(f"STPA: skipping the {label} model: {msg}", StpaFallbackWarning, stacklevel=3)
            elif label != "tuned (cache)":  # no tuned model is the normal case
                reasons.append(f"{label} model {path} is missing")
            continue
        try:
            return _load_cached(path), reasons
        except (IncompatibleModelError, OSError) as exc:
            if label == "shipped default":
                # A damaged or out-of-date shipped file: refit its family on the shipped dataset instead.
                m = _retrained_shipped()
                if m is not None:
                    reasons.append(f"{label} model: {exc}; refitted from {shipped_dataset_path().name}")
                    return m, reasons
            reasons.append(f"{label} model: {exc}")
            if warn:
                warnings.warn(f"STPA: skipping the {label} model: {exc}", StpaFallbackWarning, stacklevel=3)
    return None, reasons


def _shipped_family() -> str:
    # Read as JSON only: this runs when the shipped file failed to load, so it may be anything.
    try:
        doc = json.loads(shipped_model_path().read_text(encoding="utf-8"))
        family = doc.get("family") if isinstance(doc, dict) else None
        return family if family in ("gbr", "rf", "ridge", "knn") else "gbr"
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return "gbr"


def _retrained_shipped() -> StpaModel | None:
    """The shipped model refitted from the shipped dataset with this
    scikit-learn (cached in the cache directory, keyed by versions)."""
    ds = shipped_dataset_path()
    if not ds.is_file():
        return None
    with _lock:
        key = ("retrained", str(ds), ds.stat().st_mtime, 0)
        hit = _loaded.get(key)
        if hit is not None:
            return hit if isinstance(hit, StpaModel) else None
        try:
            import sklearn

            from seer import __version__

            family = _shipped_family()
            cached = cache_dir() / f"stpa_default-seer{__version__}-sklearn{sklearn.__version__}-{family}.json"
            model = None
            if cached.is_file() and cached.stat().st_mtime >= ds.stat().st_mtime:
                try:
                    model = load_model(cached)
                except (IncompatibleModelError, OSError):
                    model = None
            if model is None:
                from seer.stpa.train import load_rows, train

                model = train(load_rows(ds), families=(family,), family=family)
                model.meta["refitted_from"] = str(ds)
                try:
                    save_model(model, cached)
                    model.path = str(cached)
                except (OSError, ValueError):  # a read-only cache, or a link planted at the name
                    model.path = f"{ds} (refitted in memory)"
        except Exception:  # the dataset is unusable too: the heuristic decides
            _loaded[key] = "failed"
            return None
        _loaded[key] = model
        return model


# ---- the heuristic --------------------------------------------------------------------------

def heuristic_workers(num_entities: int, native_share: float, cores: int) -> int:
    """The documented fallback rule.

    One worker per usable core for native workloads with enough entities to
    share out (at least 32 per worker), else one worker: Python handlers
    serialize on the GIL and small workloads lose more to the per-window
    barrier than they gain.  ``native_share`` is the share of the model's
    event kinds with native handlers.
    """
    if native_share < 0.5 or num_entities < 64:
        return 1
    return max(1, min(int(cores), int(num_entities) // 32))


# ---- choosing -----------------------------------------------------------------------------

@dataclasses.dataclass
class Selection:
    """What the selector decided for one model, and from what."""

    workers: int
    source: str  # "model", "heuristic"
    reason: str = ""
    features: dict = dataclasses.field(default_factory=dict)
    scores: dict = dataclasses.field(default_factory=dict)
    model_path: str | None = None
    probe_s: float = 0.0


_hw_cache: dict | None = None


def machine_features() -> dict:
    """:func:`hardware_features` of this machine (read once per process)."""
    global _hw_cache
    if _hw_cache is None:
        _hw_cache = hardware_features()
    return dict(_hw_cache)


def select_workers(features: Mapping[str, Any], *, model: StpaModel | str | os.PathLike | None = None,
                   candidates=None, tolerance: float = 0.01) -> int:
    """Pool size for a workload described by ``features`` (hardware +
    probe features, as in :class:`Selection.features`).

    ``model`` is a :class:`StpaModel` or a path (default: the active model).
    A model that cannot be used falls back to :func:`heuristic_workers`
    with a :class:`StpaFallbackWarning`.  Deterministic: the same features
    and model always give the same choice.
    """
    cores = int(features.get("usable_cores", 1))
    m, why = _resolve(model)
    if m is None:
        warnings.warn(f"STPA: {why}; using the heuristic (run `seer tune` to train a model)",
                      StpaFallbackWarning, stacklevel=2)
        return heuristic_workers(int(features.get("entities", 1)),
                                 float(features.get("native_kind_share", 1.0)), cores)
    return m.choose(features, candidates, cores, tolerance)


def _resolve(model) -> tuple[StpaModel | None, str]:
    if isinstance(model, StpaModel):
        return model, ""
    if model is not None:
        path = Path(model)
        if not path.is_file():
            return None, f"model file {path} is missing"
        try:
            return _load_cached(path), ""
        except (IncompatibleModelError, OSError) as exc:
            return None, str(exc)
    m, reasons = active_model(warn=False)
    return m, "; ".join(reasons) or "no STPA model found"


# Per-process memo of choices by model signature: vector envs build many copies of one env.
_choices: "collections.OrderedDict[tuple, Selection]" = collections.OrderedDict()
_captures: list[tuple[list, bool]] = []


def clear_cache() -> None:
    """Forget memoized choices and loaded models (e.g. after ``seer tune``)."""
    global _hw_cache
    with _lock:
        _choices.clear()
        _loaded.clear()
        _hw_cache = None


def _signature(model, capacity) -> tuple | None:
    try:
        parts = [type(model).__module__, type(model).__qualname__, int(model.num_entities),
                 float(model.lookahead), tuple((k.name, k.native) for k in model.kinds), capacity,
                 getattr(model, "step_length", None)]
        for k, v in sorted(vars(model).items()):
            if k.startswith("_seer"):
                continue
            if isinstance(v, (bool, int, float, str, type(None))):
                parts.append((k, v))
            elif dataclasses.is_dataclass(v) and not isinstance(v, type):
                parts.append((k, repr(v)))
        key = tuple(parts)
        hash(key)
        return key
    except Exception:
        return None


@contextlib.contextmanager
def capture(features_only: bool = False) -> Iterator[list[Selection]]:
    """Record every :class:`Selection` made inside the block (by any
    ``workers="auto"``).  With ``features_only`` the selections only probe
    (no model, no memo) and return one worker: what ``seer tune`` uses to
    get a workload's features through the same path ``"auto"`` takes."""
    records: list[Selection] = []
    entry = (records, features_only)
    with _lock:
        _captures.append(entry)
    try:
        yield records
    finally:
        with _lock:
            _captures.remove(entry)


_nested = threading.local()


@contextlib.contextmanager
def nested_pool() -> Iterator[None]:
    """Inside this block (in this thread), ``workers="auto"`` is one worker,
    with no probe: the runtime being built will run inside another pool that
    already uses the cores.  seer.vector's thread backend creates its env
    copies inside it, so a built-in env's own runtime does not start threads
    that would fight the vector env's workers for the same cores."""
    _nested.depth = getattr(_nested, "depth", 0) + 1
    try:
        yield
    finally:
        _nested.depth -= 1


def select_for_model(model, *, capacity: int | None = None, stpa_model: StpaModel | None = None,
                     use_cache: bool = True, probe_budget_s: float = 0.05) -> Selection:
    """The full ``workers="auto"`` decision for a :class:`seer.Model`.

    Loads the active model (or uses ``stpa_model``); without one, applies
    :func:`heuristic_workers` with a warning.  With one, runs
    :func:`~seer.stpa.features.probe` (a few traced steps on one worker and
    on two, about 0.1-0.3 s) and chooses with the model.  Choices are
    memoized per model signature (class, size, scalar attributes) unless
    ``use_cache`` is False.

    The probe steps the model on runtimes of its own before the caller's
    runtime is built; that runtime's constructor then resets the model, so
    results are those of any fixed pool size, *provided the model's*
    ``reset`` *restores everything its handlers change* (as the design asks:
    state arrays, counter-based randomness).  A model that keeps other state
    (its own random generator, a log) can set ``stpa_probe = False``: then
    :func:`heuristic_workers` decides without a probe.  A model can also set
    ``step_length`` (simulated time per env step) so that the probe steps
    as the env does.
    """
    import time

    if getattr(_nested, "depth", 0):
        sel = Selection(1, "nested", "inside seer.stpa.nested_pool(): the caller's pool uses the cores")
        with _lock:
            for records, _ in _captures:
                records.append(sel)
        return sel
    with _lock:
        features_only = any(fo for _, fo in _captures)
        key = _signature(model, capacity) if use_cache and not features_only and stpa_model is None else None
        if key is not None and key in _choices:
            _choices.move_to_end(key)
            sel = _choices[key]
            for records, _ in _captures:
                records.append(sel)
            return sel
        hw = machine_features()
        cores = int(hw["usable_cores"])
        static = static_workload_features(model)
        if features_only:
            m, why = None, "features only"
        elif stpa_model is not None:
            m, why = stpa_model, ""
        else:
            m, reasons = active_model()
            why = "; ".join(reasons) or "no STPA model found"
        if not features_only and getattr(model, "stpa_probe", True) is False:
            w = heuristic_workers(model.num_entities, static["native_kind_share"], cores)
            sel = Selection(w, "heuristic", "the model sets stpa_probe = False", {**hw, **static})
        elif m is None and not features_only:
            warnings.warn(f"STPA: {why}; workers=\"auto\" uses the heuristic (run `seer tune` to train a model)",
                          StpaFallbackWarning, stacklevel=4)
            w = heuristic_workers(model.num_entities, static["native_kind_share"], cores)
            sel = Selection(w, "heuristic", why, {**hw, **static})
        else:
            from seer.stpa.features import probe

            t0 = time.perf_counter()
            feats = probe(model, capacity=capacity, budget_s=probe_budget_s)
            dt = time.perf_counter() - t0
            raw = {**hw, **feats}
            if features_only:
                sel = Selection(1, "features-only", "", raw, probe_s=dt)
            elif not feats.ok:
                reason = f"the probe failed ({feats.error})"
                warnings.warn(f"STPA: {reason}; workers=\"auto\" uses the heuristic", StpaFallbackWarning,
                              stacklevel=4)
                w = heuristic_workers(model.num_entities, static["native_kind_share"], cores)
                sel = Selection(w, "heuristic", reason, raw, probe_s=dt)
            else:
                scores = m.scores(raw, candidate_sizes(cores), cores)
                sel = Selection(choose_from_scores(scores), "model", "", raw, scores, m.path, probe_s=dt)
        if key is not None:
            _choices[key] = sel
            while len(_choices) > 256:
                _choices.popitem(last=False)
        for records, _ in _captures:
            records.append(sel)
        return sel


def select_workers_for_model(model, capacity: int | None = None) -> int:
    """Pool size for ``seer.Runtime(model, workers="auto")``; see :func:`select_for_model`."""
    return select_for_model(model, capacity=capacity).workers
