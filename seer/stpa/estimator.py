"""STPA's portable estimator: a fitted regressor as plain arrays, predicted with numpy only.

A model file holds the fitted parameters as plain JSON arrays; the numpy
predictors here reproduce scikit-learn's ``predict()`` for the families
training uses, so loading a model never unpickles (which can run code) and
never needs scikit-learn.  :func:`export_estimator` turns a fitted
scikit-learn estimator into one (it needs scikit-learn, imported then).
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

#: The estimator families training compares, all of which a model file can describe.
FAMILIES = {
    "gbr": "gradient-boosted trees",
    "rf": "random forest",
    "ridge": "ridge regression on degree-2 features",
    "knn": "k nearest neighbours (k=7)",
}

#: Bounds on what a model file may describe, checked before anything is built
#: from it: walking a tree costs a step per level for every prediction, so a
#: planted 300,000-deep tree made each ``workers="auto"`` choice take seconds.
#: The shipped dataset's random forest has 200 trees, 111,136 nodes, depth 28.
MAX_TREE_DEPTH = 64
MAX_TREE_NODES = 1_000_000
MAX_TREES = 5_000
MAX_KNN_POINTS = 200_000
MAX_POLY_OUTPUTS = 10_000

_TRANSFORMS = ("standard_scaler", "polynomial")
_PREDICTORS = ("linear", "knn", "trees")


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


def _tree_depth(cl: np.ndarray, cr: np.ndarray, leaf: np.ndarray, where: str) -> int:
    """The depth of a tree whose children follow their parent (checked by the
    caller), level by level without recursion; refused above :data:`MAX_TREE_DEPTH`."""
    children = np.concatenate([cl[~leaf], cr[~leaf]])
    # One parent per node (none for the root) makes it a tree, not a graph whose
    # levels could repeat nodes: each level below is then visited once.
    if (children == 0).any() or len(np.unique(children)) != len(children):
        raise ValueError(f"{where}: children_left/right do not form a tree (a node has two parents)")
    frontier = np.zeros(1, np.int64)
    depth = 0
    while True:
        inner = frontier[~leaf[frontier]]
        if not len(inner):
            return depth
        depth += 1
        if depth > MAX_TREE_DEPTH:
            raise ValueError(f"{where}: {_exact_depth(cl, cr)} levels deep, more than a model tree may be "
                             f"({MAX_TREE_DEPTH})")
        frontier = np.concatenate([cl[inner], cr[inner]])


def _exact_depth(cl: np.ndarray, cr: np.ndarray) -> int:
    # One pass in index order (children follow their parent), only to name the depth of a refused tree.
    depth = [0] * len(cl)
    left, right = cl.tolist(), cr.tolist()
    for i, (a, b) in enumerate(zip(left, right)):
        if a != -1:
            depth[a] = depth[b] = depth[i] + 1
    return max(depth)


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
        if len(trees) > MAX_TREES:
            raise ValueError(f"{where}: {len(trees)} trees, more than a model may hold ({MAX_TREES})")
        nodes = 0
        for t, tree in enumerate(trees):  # count before converting anything: the bound is on the file
            if not isinstance(tree, Mapping):
                raise ValueError(f"{where} tree {t}: expected an object")
            cl = tree.get("children_left")
            nodes += len(cl) if isinstance(cl, list) else 0
        if nodes > MAX_TREE_NODES:
            raise ValueError(f"{where}: {nodes} tree nodes, more than a model may hold ({MAX_TREE_NODES})")
        self.trees = []
        left, right, feat, thr, val, mgl, roots = [], [], [], [], [], [], []
        offset = 0
        depth = 0
        for t, tree in enumerate(trees):
            w = f"{where} tree {t}"
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
            depth = max(depth, _tree_depth(cl, cr, leaf, w))
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
        self.max_steps = depth  # every walk reaches its leaf within the deepest tree's depth

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
    JSON-able parameters.  :func:`export_estimator` makes one
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
                if isinstance(step.get("powers"), list) and len(step["powers"]) > MAX_POLY_OUTPUTS:
                    raise ValueError(f"{where}: {len(step['powers'])} outputs, more than a model may have "
                                     f"({MAX_POLY_OUTPUTS})")
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
                if isinstance(step.get("X"), list) and len(step["X"]) > MAX_KNN_POINTS:
                    raise ValueError(f"{where}: {len(step['X'])} neighbour points, more than a model may hold "
                                     f"({MAX_KNN_POINTS})")
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



# ---- export from scikit-learn ------------------------------------------------------------------

def _tree_dict(tree) -> dict:
    t = tree.tree_
    if t.n_outputs != 1 or t.value.shape[2] != 1:
        raise ValueError(f"a tree with {t.n_outputs} outputs: expected a single-output regression tree")
    out = {"children_left": t.children_left.tolist(), "children_right": t.children_right.tolist(),
           "feature": t.feature.tolist(), "threshold": t.threshold.tolist(), "value": t.value[:, 0, 0].tolist()}
    if hasattr(t, "missing_go_to_left"):
        out["missing_go_to_left"] = [int(v) for v in t.missing_go_to_left]
    return out


def _export_steps(est) -> list[dict]:
    from sklearn.dummy import DummyRegressor
    from sklearn.ensemble import GradientBoostingRegressor, RandomForestRegressor
    from sklearn.linear_model import LinearRegression, Ridge
    from sklearn.neighbors import KNeighborsRegressor
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import PolynomialFeatures, StandardScaler

    if isinstance(est, Pipeline):
        return [s for _, step in est.steps if step not in (None, "passthrough") for s in _export_steps(step)]
    if isinstance(est, StandardScaler):
        return [{"type": "standard_scaler", "mean": None if est.mean_ is None else est.mean_.tolist(),
                 "scale": None if est.scale_ is None else est.scale_.tolist()}]
    if isinstance(est, PolynomialFeatures):
        if est.powers_.sum(axis=1).max(initial=0) > 2:
            raise ValueError(f"PolynomialFeatures(degree={est.degree!r}): expected degree <= 2")
        return [{"type": "polynomial", "powers": est.powers_.tolist()}]
    if isinstance(est, (Ridge, LinearRegression)):
        coef = np.asarray(est.coef_, np.float64)
        if coef.ndim != 1:
            raise ValueError(f"{type(est).__name__} with coef_ of shape {coef.shape}: expected one target")
        return [{"type": "linear", "coef": coef.tolist(), "intercept": float(est.intercept_)}]
    if isinstance(est, KNeighborsRegressor):
        metric_ok = est.effective_metric_ == "euclidean" or (
            est.effective_metric_ == "minkowski" and (est.effective_metric_params_ or {}).get("p", 2) == 2)
        if not metric_ok or est.weights not in ("uniform", "distance") or np.ndim(est._y) != 1:
            raise ValueError(f"KNeighborsRegressor(metric={est.effective_metric_!r}, weights={est.weights!r}): "
                             f"expected the euclidean metric, uniform or distance weights and one target")
        return [{"type": "knn", "k": int(est.n_neighbors), "weights": est.weights,
                 "X": np.asarray(est._fit_X, np.float64).tolist(), "y": np.asarray(est._y, np.float64).tolist()}]
    if isinstance(est, GradientBoostingRegressor):
        if est.loss != "squared_error" or est.estimators_.shape[1] != 1:
            raise ValueError(f"GradientBoostingRegressor(loss={est.loss!r}): expected loss='squared_error'")
        if est.init_ == "zero":
            init = 0.0
        elif isinstance(est.init_, DummyRegressor):
            init = float(np.asarray(est.init_.constant_, np.float64).reshape(-1)[0])
        else:
            raise ValueError(f"GradientBoostingRegressor(init={est.init_!r}): expected the default or 'zero'")
        return [{"type": "trees", "kind": "boosting", "init": init, "learning_rate": float(est.learning_rate),
                 "trees": [_tree_dict(t) for t in est.estimators_[:, 0]]}]
    if isinstance(est, RandomForestRegressor):
        return [{"type": "trees", "kind": "forest", "trees": [_tree_dict(t) for t in est.estimators_]}]
    raise ValueError(f"{type(est).__name__} cannot be exported: expected one of the families {list(FAMILIES)} "
                     f"(gradient boosting, random forest, ridge, kNN, in a pipeline with scalers)")


def export_estimator(est) -> PortableEstimator:
    """A fitted scikit-learn estimator as a :class:`PortableEstimator`
    (plain arrays a model file can hold; its predictions equal ``est``'s).

    Raises:
        ValueError: ``est`` is of a kind the model file cannot describe.
    """
    if isinstance(est, PortableEstimator):
        return est
    return PortableEstimator(_export_steps(est), int(est.n_features_in_))
