"""STPA training: the measurement dataset and the model that learns from it.

Dataset: JSON lines (optionally gzipped), one row per measured
(workload, machine state, pool size) of a sweep::

    {"sweep": "...", "workload": "native-E256-...", "family": "synthetic-native",
     "params": {...}, "condition": "quiet", "workers": 2, "steps_per_s": 812.4, "steps_per_s_best": 830.1,
     "features": {...hardware and probe features...},
     "schema_version": 2, "seer": "0.1.0", "time": "2026-..."}

``steps_per_s`` is the throughput over a measurement's repetitions (total
steps over total time; version-1 rows hold the best repetition), and
``condition`` the machine state (``"quiet"``; ``"loaded"``: beside a busy
process pinned to one core).

Training target: for each (sweep, workload, condition), ``log(speedup(w) / min(w, cores))``
with ``speedup(w) = steps_per_s(w) / steps_per_s(1)`` (rows of a workload
without a one-worker measurement are skipped).  Several scikit-learn model
families are compared by grouped cross-validation over workloads (every
fold's workloads are unseen in its training folds); the family whose
choices reach the highest mean fraction of the best measured throughput
(ties: lower RMSE) is refitted on all rows, then exported with
:func:`~seer.stpa.estimator.export_estimator` to the JSON-able :class:`~seer.stpa.estimator.PortableEstimator`
that model files hold.
"""

from __future__ import annotations

import dataclasses
import datetime
import gzip
import json
import math
import os
from pathlib import Path
from typing import Iterable

import numpy as np

from seer._version import __version__
from seer.errors import TooLittleDataError
from seer.stpa.estimator import FAMILIES, MAX_TREE_DEPTH, MAX_TREE_NODES, export_estimator
from seer.stpa.model import (
    FEATURE_SCHEMA,
    ROW_SCHEMA_VERSIONS,
    SCHEMA_VERSION,
    StpaModel,
    choose_by_rules,
    feature_matrix,
)


# ---- dataset -------------------------------------------------------------------------------

def _open(path: Path, mode: str):
    return gzip.open(path, mode + "t", encoding="utf-8") if str(path).endswith(".gz") else open(path, mode, encoding="utf-8")


def load_rows(*paths: str | os.PathLike) -> list[dict]:
    """Rows of the dataset files that exist (bad lines are skipped)."""
    rows = []
    for p in paths:
        p = Path(p)
        if not p.is_file():
            continue
        with _open(p, "r") as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(row, dict) and "features" in row and "workers" in row and "steps_per_s" in row:
                    rows.append(row)
    return rows


def append_rows(path: str | os.PathLike, rows: Iterable[dict]) -> Path:
    """Append rows (JSON lines) to ``path``, creating it and its folder (mode 0700)."""
    from seer._io import ensure_private_dir

    path = Path(path)
    ensure_private_dir(path.parent, what="STPA dataset directory")
    with _open(path, "a") as f:
        for row in rows:
            f.write(json.dumps(row, sort_keys=True) + "\n")
    return path


def make_row(sweep: str, workload: str, family: str, params: dict, workers: int, steps_per_s: float,
             features: dict, condition: str = "quiet", steps_per_s_best: float | None = None) -> dict:
    return {
        "sweep": sweep, "workload": workload, "family": family, "params": params, "condition": condition,
        "workers": int(workers), "steps_per_s_best": None if steps_per_s_best is None else float(steps_per_s_best),
        "steps_per_s": float(steps_per_s), "features": features, "schema_version": SCHEMA_VERSION,
        "seer": __version__, "time": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }


@dataclasses.dataclass
class Table:
    """The dataset as arrays: one entry per (workload, pool size)."""

    X: np.ndarray
    y: np.ndarray
    groups: np.ndarray          # workload index per row
    workers: np.ndarray
    steps_per_s: np.ndarray
    cores: np.ndarray
    keys: list                  # (sweep, workload, condition) per group
    families: list              # family per group
    raws: list = dataclasses.field(default_factory=list)  # raw features per group (for the hard rules)


def build_table(rows: list[dict]) -> Table:
    by: dict[tuple, dict[int, dict]] = {}
    for r in rows:
        if r.get("schema_version") not in ROW_SCHEMA_VERSIONS:
            continue
        sps = float(r["steps_per_s"])
        if not (math.isfinite(sps) and sps > 0):
            continue
        # one group per measured (workload, machine state): quiet and loaded measurements are apart
        key = (str(r.get("sweep", "")), str(r["workload"]), str(r.get("condition", "quiet")))
        g = by.setdefault(key, {})
        w = int(r["workers"])
        if w not in g or sps > float(g[w]["steps_per_s"]):
            g[w] = r
    X, y, groups, workers, sps_all, cores_all, keys, fams, raws = [], [], [], [], [], [], [], [], []
    for key in sorted(by):
        g = by[key]
        if 1 not in g or len(g) < 2:
            continue
        gi = len(keys)
        keys.append(key)
        fams.append(str(g[1].get("family", "")))
        raws.append(g[1]["features"])
        base = float(g[1]["steps_per_s"])
        for w in sorted(g):
            feats = g[w]["features"]
            cores = int(feats.get("usable_cores", 1))
            X.append(feature_matrix(feats, [w], cores)[0])
            y.append(math.log(float(g[w]["steps_per_s"]) / base) - math.log(min(w, cores)))
            groups.append(gi)
            workers.append(w)
            sps_all.append(float(g[w]["steps_per_s"]))
            cores_all.append(cores)
    n = len(FEATURE_SCHEMA)
    return Table(np.asarray(X, np.float64).reshape(-1, n), np.asarray(y), np.asarray(groups, np.int64),
                 np.asarray(workers, np.int64), np.asarray(sps_all), np.asarray(cores_all, np.int64), keys, fams,
                 raws)


# ---- model families ------------------------------------------------------------------------

def make_estimator(family: str):
    """A fresh, unfitted estimator of ``family`` (fixed seeds: training is deterministic)."""
    from sklearn.ensemble import GradientBoostingRegressor, RandomForestRegressor
    from sklearn.linear_model import Ridge
    from sklearn.neighbors import KNeighborsRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import PolynomialFeatures, StandardScaler

    if family == "gbr":
        return GradientBoostingRegressor(n_estimators=300, max_depth=3, learning_rate=0.05, subsample=0.8,
                                         min_samples_leaf=3, random_state=0)
    if family == "rf":
        # max_depth: a model file's trees may be at most that deep (load_model refuses deeper ones).
        return RandomForestRegressor(n_estimators=200, min_samples_leaf=2, max_features=0.5, random_state=0, n_jobs=1,
                                     max_depth=MAX_TREE_DEPTH)
    if family == "ridge":
        return make_pipeline(StandardScaler(), PolynomialFeatures(2, include_bias=False), StandardScaler(),
                             Ridge(alpha=30.0))
    if family == "knn":
        return make_pipeline(StandardScaler(), KNeighborsRegressor(n_neighbors=7, weights="distance"))
    raise ValueError(f"family={family!r} is unknown: expected one of {list(FAMILIES)}")


def _fit(family: str, X: np.ndarray, y: np.ndarray):
    est = make_estimator(family)
    if family == "knn":  # fewer rows than neighbours on tiny datasets
        est.set_params(kneighborsregressor__n_neighbors=max(1, min(7, len(y))))
    if family == "gbr" and len(y) < 20:  # a subsample of a handful of rows may be empty
        est.set_params(subsample=1.0)
    if family == "rf" and len(y) * est.n_estimators > MAX_TREE_NODES:
        # A tree has at most one node per row; a model file holds MAX_TREE_NODES in all (load_model
        # refuses more), so on a dataset that large cap the leaves (a tree of L leaves has 2L - 1 nodes).
        est.set_params(max_leaf_nodes=MAX_TREE_NODES // (2 * est.n_estimators))
    est.fit(X, y)
    return est


def decision_scores(table: Table, pred: np.ndarray, rows: np.ndarray | None = None) -> dict:
    """How good the choices from predictions ``pred`` are, per workload:
    mean and min fraction of the best measured throughput, next to the
    fixed rules (1 worker; ``os.cpu_count()`` workers)."""
    idx = np.arange(len(table.y)) if rows is None else rows
    fr, f1, fc = [], [], []
    cpu = os.cpu_count() or 1
    for g in np.unique(table.groups[idx]):
        sel = idx[table.groups[idx] == g]
        ws, sps = table.workers[sel], table.steps_per_s[sel]
        cores = int(table.cores[sel][0])
        scores = {int(w): float(p + math.log(min(w, cores))) for w, p in zip(ws, pred[sel])}
        raw = table.raws[int(g)] if table.raws else {}
        chosen = choose_by_rules(scores, cores, raw)
        best = sps.max()
        fr.append(sps[ws == chosen][0] / best)
        f1.append(sps[ws == 1][0] / best if (ws == 1).any() else np.nan)
        rule = min(cpu, int(ws.max()))
        fc.append(sps[ws == rule][0] / best if (ws == rule).any() else np.nan)
    fr, f1, fc = np.asarray(fr), np.asarray(f1), np.asarray(fc)
    return {"workloads": int(len(fr)), "mean_frac": float(fr.mean()) if len(fr) else float("nan"),
            "min_frac": float(fr.min()) if len(fr) else float("nan"),
            "rule_1_mean": float(np.nanmean(f1)) if len(f1) else float("nan"),
            "rule_cpu_mean": float(np.nanmean(fc)) if len(fc) else float("nan")}


def cv_groups(table: Table) -> np.ndarray:
    """Per row, the unit cross-validation holds out whole: a registered env
    (all its scenarios, single and vector, quiet and loaded), else a workload
    (both of its machine states)."""
    ids: dict[str, int] = {}
    per_group = []
    for (_, workload, _), fam in zip(table.keys, table.families):
        env = fam.split("-", 1)[1] if fam.startswith(("env-", "vector-")) else None
        per_group.append(ids.setdefault(f"env:{env}" if env else f"wl:{workload}", len(ids)))
    return np.asarray(per_group, np.int64)[table.groups]


def compare_families(table: Table, families=("gbr", "rf", "ridge", "knn"), n_splits: int = 5) -> dict:
    """Grouped cross-validation (folds of whole workloads) of each family:
    RMSE and R^2 of the target (pool sizes > 1), and the quality of the
    resulting choices."""
    from sklearn.model_selection import GroupKFold

    n_groups = len(np.unique(cv_groups(table)))
    k = max(2, min(n_splits, n_groups))
    multi = table.workers != 1  # one worker is the reference: its target is 0 by definition
    out = {}
    for fam in families:
        pred = np.zeros_like(table.y)
        for tr, te in GroupKFold(n_splits=k).split(table.X, table.y, cv_groups(table)):
            tr = tr[multi[tr]]
            te = te[multi[te]]
            if len(tr) and len(te):
                pred[te] = _fit(fam, table.X[tr], table.y[tr]).predict(table.X[te])
        resid = (pred - table.y)[multi]
        table_y = table.y[multi]
        var = float(np.var(table_y))
        res = {"rmse": float(np.sqrt(np.mean(resid ** 2))),
               "r2": float(1.0 - np.mean(resid ** 2) / var) if var > 0 else float("nan")}
        res.update(decision_scores(table, pred))
        out[fam] = res
    return out


def pick_family(comparison: dict) -> str:
    return sorted(comparison, key=lambda f: (-round(comparison[f]["mean_frac"], 3), comparison[f]["rmse"]))[0]


def fit(table: Table, family: str) -> object:
    multi = table.workers != 1
    return _fit(family, table.X[multi], table.y[multi])


def train(rows: list[dict], families=("gbr", "rf", "ridge", "knn"), n_splits: int = 5,
          family: str | None = None) -> StpaModel:
    """Compare ``families`` on ``rows`` and fit the best (or ``family``) on all of them."""
    import sklearn

    table = build_table(rows)
    if len(np.unique(table.groups)) < 2:
        raise TooLittleDataError(f"too little data to train: {len(np.unique(table.groups))} workloads with a one-worker "
                         f"measurement (need at least 2)")
    comparison = compare_families(table, families, n_splits) if len(families) > 1 or family is None else {}
    chosen = family or pick_family(comparison)
    est = fit(table, chosen)
    cores = sorted({int(c) for c in table.cores})
    machines = sorted({str(r["features"].get("cpu_model", "?")) for r in rows})
    meta = {
        "trained": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "rows": int(len(table.y)), "workloads": int(len(table.keys)),
        "families": sorted(set(table.families)), "cores_seen": cores, "machines": machines,
        "workers_seen": sorted({int(w) for w in table.workers}),
        "sklearn": sklearn.__version__, "seer": __version__, "comparison": comparison, "chosen": chosen,
    }
    return StpaModel(estimator=export_estimator(est), family=chosen, meta=meta)
