"""STPA's shared types: the feature schema, :class:`StpaModel` and its JSON file format.

The selector (:mod:`seer.stpa.selector`) and training
(:mod:`seer.stpa.train`) both import this module and neither imports the
other.

Model file (JSON, never a pickle): an object with ``format``
(``"seer-stpa-model"``), ``version`` (:data:`MODEL_VERSION`), ``schema``
(the feature names, in order, :data:`FEATURE_SCHEMA`), ``schema_version``
(:data:`SCHEMA_VERSION`), ``family`` (which estimator), ``target``, ``meta``
(what it was trained on, held-out scores) and ``estimator``: the fitted
parameters as plain arrays (tree nodes, coefficients, neighbour points; see
:class:`~seer.stpa.estimator.PortableEstimator`), predicted with numpy alone.
Loading a model therefore runs no code from the file and needs no
scikit-learn.  A file whose format, version or schema differs from this
code's is *incompatible*: it is not used.  A pickle (or joblib) file is
refused, never unpickled: unpickling a planted file would run arbitrary
code.

The estimator predicts, for a workload's features and a candidate pool size
``w``, the log parallel efficiency ``log(speedup(w) / min(w, cores))`` where
``speedup(w)`` is steps/s at ``w`` over steps/s at one worker.  The score of
``w`` is then ``prediction + log(min(w, cores))``, the predicted log speedup
(0 for one worker, the reference, which the estimator is not asked about),
and the choice is the smallest ``w`` whose score is within ``tolerance`` of
the best (ties go to fewer threads).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from seer.errors import IncompatibleModelError
from seer.stpa.estimator import PortableEstimator, export_estimator
from seer.stpa.features import candidate_features
from seer.stpa.hardware import machine_features

MODEL_FORMAT = "seer-stpa-model"
#: Version of the model file layout and of the target's meaning (2: JSON of the fitted parameters).
MODEL_VERSION = 2
#: Version of the feature definitions (bump when a feature's meaning changes).
#: 2: the load features (``free_cores``, ``free_core_share``,
#: ``workers_per_free_core``) and ``probe_traced``.
SCHEMA_VERSION = 2
#: Dataset rows of these feature versions are read; a version-1 row has no
#: load features and reads as measured on a quiet machine.
ROW_SCHEMA_VERSIONS = (1, 2)
#: How much faster (relative) than every size within the usable cores a
#: measured pool size above them must be to be allowed: twice as fast.  More
#: threads than cores can only win where threads wait (the GIL, I/O), and
#: then by a wide margin; a smaller gain is within the probe's noise under a
#: background load, and there a pool above the cores spins against the busy
#: process and loses to it.  The held-out evaluation's "loaded" condition
#: (bench/results/stpa_tune_eval.md) is where a lower bar shows.
MEASURED_GAIN = 1.0
#: How much faster the probe must have timed an allowed size than the model's
#: choice to overrule it (:func:`measured_overrule`), when foreign load may
#: have shared the cores with the probe's pool: well clear of how far its
#: timings of one size scatter then.
MEASURED_OVERRULE = 1.4
#: The same when the probe found a core free for every thread beyond the first
#: of both pools (``free_cores`` >= size - 1 + :data:`FREE_MARGIN`), where its
#: timings scatter less, so a smaller gap is still not noise; it cannot fire
#: under load (the cores are not free then).  Much lower, a workload whose
#: event probe overstates its whole step's speedup (consensus_v0 large)
#: starts to win.
MEASURED_OVERRULE_FREE = 1.3
FREE_MARGIN = 0.1
#: The same for a probe that timed whole steps of the workload itself
#: (``probe_traced`` 0: an env or vector env stepped as a whole), whose only
#: doubt is timing noise, not a probe that differs from the workload's steps;
#: the held-out evaluation's vector workloads (bench/results/stpa_tune_eval.md)
#: are the ones it decides.
STEPPER_OVERRULE = 1.15
#: The most tracing slows a pool's probe relative to one worker (a trace
#: adds a serial pass per step, which hides a pool's gain on short steps); a
#: probe whose untraced best beats its traced ratio by more than this
#: scattered instead, and its traced ratio is used (:func:`probe_measured`).
TRACE_COST_MAX = 1.5
#: A larger pool predicted less than this much faster (log units) than a
#: smaller one that the probe timed faster is not chosen (:func:`thin_margin_fallback`).
THIN_MARGIN = 0.05
#: A larger pool must be predicted this much faster (log units) to be chosen:
#: ties go to fewer threads, which lose less when the prediction is off or the machine gets busier.
TOLERANCE = 0.01

MODEL_FILENAME = "stpa_model.json"
DATASET_FILENAME = "stpa_dataset.jsonl"
SHIPPED_DATASET_FILENAME = "stpa_dataset.jsonl.gz"
#: Largest model file load_model reads: the shipped dataset's random forest
#: (111,136 nodes) is about 8 MB; parsing costs several times the file in memory.
MAX_MODEL_BYTES = 64 << 20
#: Deepest nesting of lists and objects in a model's ``meta`` (what it was trained on).
MAX_META_DEPTH = 16

HARDWARE_SCHEMA = ["usable_cores", "physical_cores", "smt", "log_l2_kb", "log_l3_kb", "log_mem_gb"]
LOAD_SCHEMA = ["free_cores", "free_core_share"]
WORKLOAD_SCHEMA = [
    "log_entities", "kinds", "native_kind_share", "native_event_share", "gil_share", "python_share",
    "log_events_per_window", "log_busy_us_per_window", "busy_cv", "log_idle_us_per_window", "overhead_share",
    "log_cost_us", "cost_cv", "log_active_entities", "log_parallelism", "log_events_per_entity_window",
    "fanout", "cross_share", "empty_polls_per_window", "log_step_us", "log_windows_per_step",
    "log_probe2_speedup", "probe2_idle_share", "probe2_empty_polls", "probe2_imbalance", "probe_traced",
]
CANDIDATE_SCHEMA = ["workers", "workers_per_core", "oversubscription", "log_work_per_worker",
                    "log_parallelism_per_worker", "log_entities_per_worker", "workers_per_free_core"]
#: The model's inputs, in order.
FEATURE_SCHEMA = HARDWARE_SCHEMA + LOAD_SCHEMA + WORKLOAD_SCHEMA + CANDIDATE_SCHEMA


# ---- features -> model inputs ---------------------------------------------------------------

def _log1p(x) -> float:
    return math.log1p(max(float(x), 0.0))


def derived_features(raw: Mapping[str, Any]) -> dict[str, float]:
    """Hardware + workload inputs of the model from raw features (those of
    :func:`hardware_features` and :func:`~seer.stpa.features.probe`)."""
    g = lambda k, d=0.0: float(raw.get(k, d))  # noqa: E731
    cores = max(g("usable_cores", 1.0), 1.0)
    free = min(max(g("free_cores", cores), 0.0), cores)  # absent: measured before the feature, quiet
    return {
        "usable_cores": g("usable_cores", 1.0),
        "free_cores": free,
        "free_core_share": free / cores,
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
        "probe_traced": g("probe_traced", 1.0),
    }


def candidate_sizes(cores: int) -> list[int]:
    """Pool sizes ``seer tune`` sweeps and the selector chooses from: 1 up to max(2 x cores, 4)."""
    return list(range(1, max(2 * int(cores), 4) + 1))


def probe_measured(raw: Mapping[str, Any]) -> dict[int, float]:
    """The pool sizes the probe timed on the workload itself: {size: speedup over one worker}.

    For the compared size, the ratio of each size's fastest run, traced or
    not (``probe2_speedup_best``), where the probe made untraced runs: the
    traced ratio, which the model reads, is biased against pools on short
    steps."""
    measured = {1: 1.0}
    for k in ("probe2", "probe3"):
        w = int(round(float(raw.get(f"{k}_workers", 1.0))))
        if w > 1 and f"{k}_speedup" in raw:
            traced = float(raw[f"{k}_speedup"])
            best = float(raw.get(f"{k}_speedup_best", traced))
            # Tracing costs a pool at most TRACE_COST_MAX; a wider gap means
            # the runs scattered (foreign load), and the lucky one must not
            # decide: under a busy process the fastest of scattered runs can
            # be several times what the workload then runs at.
            measured[w] = best if traced * TRACE_COST_MAX >= best else traced
    return measured


def measured_faster(cores: int, raw: Mapping[str, Any]) -> dict[int, float]:
    """Pool sizes above the usable ``cores`` that the probe timed faster than
    every size it timed within them, by :data:`MEASURED_GAIN`: {size: speedup over one worker}."""
    measured = probe_measured(raw)
    within = max(sp for w, sp in measured.items() if w <= cores)
    return {w: sp for w, sp in measured.items() if w > cores and sp >= within * (1.0 + MEASURED_GAIN)}


def allowed_sizes(candidates, cores: int, raw: Mapping[str, Any]) -> list[int]:
    """The candidates a choice may take: the hard rules every selection obeys.

    * Never more workers than usable ``cores``, unless the probe measured that
      size faster than every size it measured within them
      (:func:`measured_faster`): threads beyond the cores only add barrier
      and scheduling cost on a machine of one's own, and a model trained
      elsewhere must not talk a 1-core machine into a pool of 4.
    * Never more workers than the cores the probe found free (``free_cores``,
      rounded), unless the probe timed that size faster than every size it
      timed within them: beside a busy process the free cores are fewer than
      the usable ones, and a pool that counts on the usable ones stalls on
      the threads the scheduler parks.
    * Never more than 2 workers beyond what a traced probe showed a window
      can use (its ``parallelism``, busy time over the busiest entity's, and
      its active entities per window): on a machine with more cores than any
      training run had, the model extrapolates; this keeps it from asking
      for 64 threads for work that 8 entities make.

    Returns the allowed candidates, sorted; never empty (the smallest
    candidate when no other is allowed).
    """
    cores = max(int(cores), 1)
    faster = measured_faster(cores, raw)
    bound = math.inf
    if float(raw.get("probe_traced", 1.0)) > 0 and "parallelism" in raw:
        usable = min(float(raw.get("parallelism", 1.0)), max(float(raw.get("active_entities", 1.0)), 1.0))
        bound = max(2, math.ceil(usable))
    cands = sorted({int(w) for w in candidates})
    free = free_bound(cores, raw)
    measured = probe_measured(raw)
    within_free = max(sp for w, sp in measured.items() if w <= free)
    timed_faster = {w for w, sp in measured.items() if w > free and sp > within_free}
    out = [w for w in cands if (w <= cores and w <= bound and (w <= free or w in timed_faster)) or w in faster]
    return out or cands[:1] or [1]


def free_bound(cores: int, raw: Mapping[str, Any]) -> int:
    """The pool size the probe's ``free_cores`` reading allows without a
    measurement: the free cores rounded to the nearest whole one, in
    [1, ``cores``]; ``cores`` where the probe did not read them."""
    free = raw.get("free_cores")
    if free is None:
        return max(int(cores), 1)
    return min(max(int(math.floor(float(free) + 0.5)), 1), max(int(cores), 1))


def choose_by_rules(scores: Mapping[int, float], cores: int, raw: Mapping[str, Any],
                    tolerance: float = None) -> int:
    """The choice from predicted ``scores`` under the hard rules: a size above
    the cores that the probe measured faster wins outright (a measurement on
    the workload itself, moments ago, beats a prediction); otherwise the best
    predicted of :func:`allowed_sizes`."""
    tolerance = TOLERANCE if tolerance is None else tolerance
    over = {w: sp for w, sp in measured_faster(cores, raw).items() if w in scores}
    if over:
        return max(over, key=over.get)
    allowed = set(allowed_sizes(scores, cores, raw))
    best = choose_from_scores({w: v for w, v in scores.items() if w in allowed}, tolerance)
    best = measured_overrule(best, allowed, raw) or best
    return thin_margin_fallback(best, scores, raw)


def thin_margin_fallback(best: int, scores: Mapping[int, float], raw: Mapping[str, Any]) -> int:
    """The smaller pool where the model predicts ``best`` less than
    :data:`THIN_MARGIN` faster than it but the probe timed ``best`` slower.

    A thin prediction does not outweigh a measurement on the workload
    itself: more threads cost more when the guess is wrong (uav_swarm_v0
    ``large`` was such a case: a thin predicted gain for 2 workers, a probe
    that timed them slower, and a whole step slower still)."""
    measured = probe_measured(raw)
    if best == 1 or best not in measured:
        return best
    smaller = {w: sp for w, sp in measured.items() if w < best and w in scores}
    if not smaller:
        return best
    s = max(smaller, key=smaller.get)
    if measured[best] < smaller[s] and scores[best] - scores[s] < THIN_MARGIN:
        return s
    return best


def measured_overrule(best: int, allowed, raw: Mapping[str, Any]) -> int | None:
    """An allowed size the probe timed :data:`MEASURED_OVERRULE` times faster
    (:data:`MEASURED_OVERRULE_FREE` where the probe found cores free for both
    pools, :data:`STEPPER_OVERRULE` for whole steps of the workload) than the
    predicted ``best`` (both timed on the workload moments ago), or None.

    The model reads the probe's speedups among many features and sometimes
    outweighs them; a gap this wide is not the probe's noise (its timings of
    one size scatter more on a busy machine than on a quiet one, hence the
    two bars), so the measurement wins.  Where that matters is the worst
    workloads of the held-out evaluation (bench/results/stpa_eval.md and
    stpa_tune_eval.md)."""
    measured = probe_measured(raw)
    if best not in measured:
        return None
    timed = {w: sp for w, sp in measured.items() if w in allowed}
    top = max(timed, key=timed.get)
    if not float(raw.get("probe_traced", 1.0)):
        gap = STEPPER_OVERRULE
    else:
        free = raw.get("free_cores")
        own_cores = free is not None and float(free) >= max(top, best) - 1 + FREE_MARGIN
        gap = MEASURED_OVERRULE_FREE if own_cores else MEASURED_OVERRULE
    return top if top != best and timed[top] >= measured[best] * gap else None


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
               tolerance: float = TOLERANCE) -> int:
        """The pool size with the best predicted throughput among the
        :func:`allowed_sizes` (the smallest within ``tolerance``, in log
        units, of the best)."""
        cores = int(cores if cores is not None else raw.get("usable_cores", 1))
        cands = list(candidates) if candidates is not None else candidate_sizes(cores)
        return choose_by_rules(self.scores(raw, allowed_sizes(cands, cores, raw), cores), cores, raw, tolerance)

    def to_dict(self) -> dict:
        """The model file's content (JSON-able; a scikit-learn estimator is exported)."""
        est = self.estimator
        if not isinstance(est, PortableEstimator):
            est = export_estimator(est)
        return {
            "format": MODEL_FORMAT, "version": MODEL_VERSION, "schema_version": SCHEMA_VERSION,
            "schema": list(self.schema), "family": self.family, "target": "log_parallel_efficiency",
            "meta": _json_safe(dict(self.meta)), "estimator": est.to_dict(),
        }


def choose_from_scores(scores: Mapping[int, float], tolerance: float = TOLERANCE) -> int:
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
        seer.errors.OutputPathError: ``path`` is a symbolic link or a directory.
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


def _nesting(doc, stop: int = MAX_META_DEPTH + 1) -> int:
    """How deeply lists and objects nest in ``doc`` (1 for a flat one), counted
    without recursion and up to ``stop``."""
    level, depth = [doc], 0
    while level and depth < stop:
        depth += 1
        level = [v for x in level for v in (x.values() if isinstance(x, dict) else x)
                 if isinstance(v, (dict, list))]
    return depth


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
    with open(path, "rb") as f:
        data = f.read(MAX_MODEL_BYTES + 1)  # the file may have grown since the stat
    if len(data) > MAX_MODEL_BYTES:
        raise IncompatibleModelError(f"{path} is more than {MAX_MODEL_BYTES} bytes, more than an STPA model "
                                     f"can be; {_expected()}")
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
        raise IncompatibleModelError(f"{path} has model version {doc.get('version')!r}; this SEER reads version "
                                     f"{MODEL_VERSION} (run `seer tune` to train one)")
    schema = doc.get("schema")
    if doc.get("schema_version") != SCHEMA_VERSION or not isinstance(schema, list) or schema != FEATURE_SCHEMA:
        n = len(schema) if isinstance(schema, list) else "?"
        raise IncompatibleModelError(
            f"{path} was trained on feature schema v{doc.get('schema_version')!r} ({n} features); this SEER "
            f"computes schema v{SCHEMA_VERSION} ({len(FEATURE_SCHEMA)} features)")
    meta = doc.get("meta") or {}
    if not isinstance(meta, dict):
        raise IncompatibleModelError(f"{path}: 'meta' is {type(meta).__name__}, expected an object")
    nesting = _nesting(meta)
    if nesting > MAX_META_DEPTH:
        raise IncompatibleModelError(f"{path}: 'meta' is nested {nesting} levels deep, more than a model's "
                                     f"metadata may be ({MAX_META_DEPTH})")
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


