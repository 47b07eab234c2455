"""The STPA selector: a learned model of throughput per pool size, its file
format, where it is looked up, the fallback heuristic, and the choice.

Model file (``joblib``): a dict with ``format`` (``"seer-stpa-model"``),
``version`` (:data:`MODEL_VERSION`), ``schema`` (the feature names, in
order, :data:`FEATURE_SCHEMA`), ``schema_version`` (:data:`SCHEMA_VERSION`),
``family`` (which estimator), ``estimator`` (a fitted scikit-learn
regressor), ``target`` and ``meta`` (what it was trained on, held-out scores).
A file whose format, version or schema differs from this code's is
*incompatible*: it is not used.

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
is refitted from the shipped dataset when its pickle does not load (another
scikit-learn) and cached in the cache directory; when none can be used the
documented :func:`heuristic_workers` decides, with a warning.  Models load
lazily: ``joblib`` and scikit-learn are imported only when ``"auto"`` is used.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import math
import os
import threading
import warnings
from pathlib import Path
from typing import Any, Iterator, Mapping

import numpy as np

from seer.stpa.features import candidate_features, hardware_features, static_workload_features

MODEL_FORMAT = "seer-stpa-model"
#: Version of the model file layout and of the target's meaning.
MODEL_VERSION = 1
#: Version of the feature definitions (bump when a feature's meaning changes).
SCHEMA_VERSION = 1

MODEL_FILENAME = "stpa_model.joblib"
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


# ---- the model ----------------------------------------------------------------------------

@dataclasses.dataclass
class StpaModel:
    """A fitted selector: ``estimator`` maps :data:`FEATURE_SCHEMA` rows to log parallel efficiency."""

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
        return {
            "format": MODEL_FORMAT, "version": MODEL_VERSION, "schema_version": SCHEMA_VERSION,
            "schema": list(self.schema), "family": self.family, "estimator": self.estimator,
            "target": "log_parallel_efficiency", "meta": dict(self.meta),
        }


def choose_from_scores(scores: Mapping[int, float], tolerance: float = 0.01) -> int:
    finite = {w: s for w, s in scores.items() if math.isfinite(s)}
    if not finite:
        return 1
    best = max(finite.values())
    return min(w for w, s in finite.items() if s >= best - tolerance)


def save_model(model: StpaModel, path: str | os.PathLike) -> Path:
    """Write ``model`` (joblib, compressed) atomically; return the path."""
    import joblib

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    joblib.dump(model.to_dict(), tmp, compress=3)
    os.replace(tmp, path)
    return path


def load_model(path: str | os.PathLike) -> StpaModel:
    """Load a model file.

    Raises:
        FileNotFoundError: No file at ``path``.
        IncompatibleModelError: The file is corrupt, or its format, version
            or feature schema is not this code's (the message says which).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no STPA model at {path}")
    import joblib

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # scikit-learn version notes; checked below
            doc = joblib.load(path)
    except Exception as exc:  # pickle errors come in many types
        raise IncompatibleModelError(f"{path} is not a readable model file ({type(exc).__name__}: {exc})") from exc
    if not isinstance(doc, dict) or doc.get("format") != MODEL_FORMAT:
        raise IncompatibleModelError(f"{path} is not an STPA model file (format tag missing)")
    if doc.get("version") != MODEL_VERSION:
        raise IncompatibleModelError(f"{path} has model version {doc.get('version')!r}; this SEER reads version {MODEL_VERSION}")
    if doc.get("schema_version") != SCHEMA_VERSION or list(doc.get("schema") or []) != FEATURE_SCHEMA:
        raise IncompatibleModelError(
            f"{path} was trained on feature schema v{doc.get('schema_version')!r} "
            f"({len(doc.get('schema') or [])} features); this SEER computes schema v{SCHEMA_VERSION} "
            f"({len(FEATURE_SCHEMA)} features)")
    est = doc.get("estimator")
    if not hasattr(est, "predict"):
        raise IncompatibleModelError(f"{path} holds no fitted estimator")
    model = StpaModel(estimator=est, family=str(doc.get("family", "?")), schema=list(doc["schema"]),
                      meta=dict(doc.get("meta") or {}), path=str(path))
    try:  # a pickle from another scikit-learn may load and still fail to predict
        model.scores(machine_features() | {"entities": 64.0}, [1, 2], 2)
    except Exception as exc:
        raise IncompatibleModelError(f"{path} loads but cannot predict ({type(exc).__name__}: {exc}); "
                                     f"it was written by scikit-learn {model.meta.get('sklearn', '?')}") from exc
    return model


# ---- where models live ----------------------------------------------------------------------

def cache_dir() -> Path:
    """Per-user cache directory: ``$SEER_CACHE_DIR``, else
    ``platformdirs.user_cache_dir("seer")`` (``$XDG_CACHE_HOME/seer`` on Linux)."""
    env = os.environ.get("SEER_CACHE_DIR")
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_cache_dir("seer"))


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
            if label != "tuned (cache)":  # no tuned model is the normal case
                reasons.append(f"{label} model {path} is missing")
            continue
        try:
            return _load_cached(path), reasons
        except (IncompatibleModelError, OSError) as exc:
            if label == "shipped default":
                # Most often a pickle from another scikit-learn: refit the
                # shipped model's family on the shipped dataset instead.
                m = _retrained_shipped()
                if m is not None:
                    reasons.append(f"{label} model: {exc}; refitted from {shipped_dataset_path().name}")
                    return m, reasons
            reasons.append(f"{label} model: {exc}")
            if warn:
                warnings.warn(f"STPA: skipping the {label} model: {exc}", StpaFallbackWarning, stacklevel=3)
    return None, reasons


def _retrained_shipped() -> StpaModel | None:
    """The shipped model refitted from the shipped dataset with this
    scikit-learn (cached in the cache directory, keyed by versions)."""
    import json

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

            side = shipped_model_path().with_suffix(".json")
            family = "gbr"
            if side.is_file():
                family = str(json.loads(side.read_text()).get("family", "gbr"))
            cached = cache_dir() / f"stpa_default-seer{__version__}-sklearn{sklearn.__version__}-{family}.joblib"
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
                except OSError:
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
