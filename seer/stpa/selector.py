"""The STPA selector: which pool size ``workers="auto"`` gets, and the limit a caller may set on it.

:func:`select_for_model` is the whole decision for a :class:`seer.Model`:
the active learned model (:mod:`seer.stpa.lookup`) scores every candidate
pool size from a short probe's features (:mod:`seer.stpa.features`) and
this machine's (:mod:`seer.stpa.hardware`); without a usable model the
documented :func:`heuristic_workers` decides, with a
:class:`~seer.errors.StpaFallbackWarning`.  :func:`resolve_workers` is
what the layers that offer ``workers="auto"`` (the envs, ``seer.vector``,
``seer.wrap``) call: it checks the argument and resolves ``"auto"``.

The pool limit.  A caller that already spreads work over the cores (the
vector env's thread, process and Ray backends building their env copies)
caps the choice explicitly: ``max_workers=`` on the functions here, or
:func:`default_pool_limit` around code it does not control (a user's
``env_fn``), which sets the default of ``max_workers`` for the choices made
inside the block.  A capped choice says so (``Selection.source ==
"limited"`` when the cap decided); nothing else changes what ``"auto"`` means.
"""

from __future__ import annotations

import collections
import contextlib
import contextvars
import dataclasses
import functools
import os
import threading
import time
import warnings
from pathlib import Path
from typing import Any, Hashable, Iterator, Mapping

from seer._checks import check_workers
from seer.errors import IncompatibleModelError, StpaFallbackWarning
from seer.stpa import lookup
from seer.stpa.features import probe, probe_stepper, static_workload_features
from seer.stpa.hardware import forget_machine_features, machine_features
from seer.stpa.model import (
    TOLERANCE,
    StpaModel,
    allowed_sizes,
    candidate_sizes,
    choose_by_rules,
    choose_from_scores,
    measured_faster,
    probe_measured,
)


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
    source: str  # "model", "heuristic", "limited" (max_workers decided), "features-only"
    reason: str = ""
    features: dict = dataclasses.field(default_factory=dict)
    scores: dict = dataclasses.field(default_factory=dict)
    model_path: str | None = None
    probe_s: float = 0.0


def select_workers(features: Mapping[str, Any], *, model: StpaModel | str | os.PathLike | None = None,
                   candidates=None, tolerance: float = TOLERANCE) -> int:
    """Pool size for a workload described by ``features`` (hardware +
    probe features, as in :class:`Selection.features`).

    ``model`` is a :class:`StpaModel` or a path (default: the active model).
    A model that cannot be used falls back to :func:`heuristic_workers`
    with a :class:`StpaFallbackWarning`.  Deterministic: the same features
    and model always give the same choice.  The choice obeys
    :func:`~seer.stpa.model.allowed_sizes` (never more workers than usable
    cores unless the probe measured that size faster).
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
            return lookup.load_cached(path), ""
        except (IncompatibleModelError, OSError) as exc:
            return None, str(exc)
    m, reasons = lookup.active_model(warn=False)
    return m, "; ".join(reasons) or "no STPA model found"



# Per-process memo of choices by model signature: vector envs build many copies of one env.
_lock = threading.RLock()
_choices: "collections.OrderedDict[tuple, Selection]" = collections.OrderedDict()
_captures: list[tuple[list, bool]] = []


def clear_cache() -> None:
    """Forget memoized choices, loaded models and the hardware read (e.g. after ``seer tune``)."""
    with _lock:
        _choices.clear()
    lookup.forget_loaded()
    forget_machine_features()


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


# ---- the pool limit ---------------------------------------------------------------------------

_default_limit: contextvars.ContextVar[int | None] = contextvars.ContextVar("seer_stpa_default_pool_limit",
                                                                            default=None)


def current_pool_limit() -> int | None:
    """The ``max_workers`` that ``"auto"`` choices made here get by default (None: no limit)."""
    return _default_limit.get()


@contextlib.contextmanager
def default_pool_limit(max_workers: int | None) -> Iterator[None]:
    """Inside this block, ``workers="auto"`` chooses at most ``max_workers`` workers.

    For a caller whose own pool already uses the cores and that builds
    runtimes through code it does not control: seer.vector builds its env
    copies inside ``default_pool_limit(1)``, so that a copy's own runtime
    (an env made with ``workers="auto"``) does not start threads that fight
    the vector env's workers.  With a limit of 1 no probe runs.  It sets the
    *default* of ``max_workers`` of :func:`select_for_model`,
    :func:`select_workers_for_model` and :func:`resolve_workers`; an
    explicit argument wins, and an integer ``workers=`` is never changed.

    The setting belongs to the current thread (a :mod:`contextvars`
    variable, so also to an asyncio task): other threads are unaffected.
    Blocks nest; the innermost wins, and ``None`` lifts the limit.

    Args:
        max_workers: The largest pool size, an integer in [1, 1024], or None.

    Raises:
        InvalidArgumentError: ``max_workers`` is neither.

    Example:
        >>> from seer import stpa
        >>> with stpa.default_pool_limit(1):
        ...     stpa.current_pool_limit()
        1
    """
    if max_workers is not None:
        max_workers = check_workers(max_workers, auto=False)
    token = _default_limit.set(max_workers)
    try:
        yield
    finally:
        _default_limit.reset(token)


# ---- choosing -----------------------------------------------------------------------------------

def select_for_model(model, *, capacity: int | None = None, stpa_model: StpaModel | None = None,
                     use_cache: bool = True, probe_budget_s: float = 0.05,
                     max_workers: int | None = None) -> Selection:
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

    ``max_workers`` caps the choice (default: :func:`current_pool_limit`,
    see :func:`default_pool_limit`); with 1 nothing is probed and the
    selection's ``source`` is ``"limited"``.
    """
    limit = current_pool_limit() if max_workers is None else check_workers(max_workers, auto=False)
    if limit == 1:
        sel = Selection(1, "limited", "max_workers=1 (an explicit argument or seer.stpa.default_pool_limit): "
                                      "the caller's own pool uses the cores")
        with _lock:
            for records, _ in _captures:
                records.append(sel)
        return sel
    with _lock:
        features_only = any(fo for _, fo in _captures)
        key = _signature(model, capacity) if use_cache and not features_only and stpa_model is None else None
        if key is not None:
            key = (*key, ("max_workers", limit))
        if key is not None and key in _choices:
            _choices.move_to_end(key)
            sel = _choices[key]
            for records, _ in _captures:
                records.append(sel)
            return sel
        hw = machine_features()
        cores = int(hw["usable_cores"])
        static = static_workload_features(model)

        def heuristic() -> int:
            return heuristic_workers(model.num_entities, static["native_kind_share"], cores)

        if features_only:
            m, why = None, "features only"
        elif stpa_model is not None:
            m, why = stpa_model, ""
        else:
            m, reasons = lookup.active_model()
            why = "; ".join(reasons) or "no STPA model found"
        if not features_only and getattr(model, "stpa_probe", True) is False:
            sel = Selection(heuristic(), "heuristic", "the model sets stpa_probe = False", {**hw, **static})
        else:
            sel = _decide(m, why, functools.partial(probe, model, capacity=capacity, budget_s=probe_budget_s), hw,
                          static, limit, features_only, heuristic, 'workers="auto" uses the heuristic', stacklevel=4)
        sel = _capped(sel, limit)
        if key is not None:
            _choices[key] = sel
            while len(_choices) > 256:
                _choices.popitem(last=False)
        for records, _ in _captures:
            records.append(sel)
        return sel


def _decide(m: StpaModel | None, why: str, run_probe, hw: dict, static: Mapping[str, float], limit: int | None,
            features_only: bool, heuristic, fallback: str, stacklevel: int) -> Selection:
    """The choice from the model ``m``: without one, the heuristic (with a
    warning that says ``why`` and ends in ``fallback``); with one, from the
    features of ``run_probe()``, or none for a features-only capture, or the
    heuristic if the probe failed.  ``stacklevel`` is the warnings', as seen by
    the caller."""
    if m is None and not features_only:
        warnings.warn(f"STPA: {why}; {fallback} (run `seer tune` to train a model)", StpaFallbackWarning,
                      stacklevel=stacklevel + 1)
        return Selection(heuristic(), "heuristic", why, {**hw, **static})
    t0 = time.perf_counter()
    feats = run_probe()
    probe_s = time.perf_counter() - t0
    raw = {**hw, **feats}
    if features_only:
        return Selection(1, "features-only", "" if feats.ok else f"the probe failed ({feats.error})", raw,
                         probe_s=probe_s)
    if not feats.ok:
        reason = f"the probe failed ({feats.error})"
        warnings.warn(f"STPA: {reason}; {fallback}", StpaFallbackWarning, stacklevel=stacklevel + 1)
        return Selection(heuristic(), "heuristic", reason, raw, probe_s=probe_s)
    return _choose(m, raw, int(hw["usable_cores"]), limit, probe_s)


def _capped(sel: Selection, limit: int | None) -> Selection:
    """``sel`` held to ``max_workers``: the heuristic's choice may be over the cap."""
    if limit is not None and sel.workers > limit:
        sel = dataclasses.replace(sel, workers=limit, source="limited",
                                  reason=f"{sel.source} chose {sel.workers}, capped at max_workers={limit}")
    return sel


def _choose(m: StpaModel, raw: dict, cores: int, limit: int | None, probe_s: float) -> Selection:
    """The model's choice among the allowed sizes (all sizes are scored, for the record)."""
    sizes = [w for w in candidate_sizes(cores) if limit is None or w <= limit]
    scores = m.scores(raw, sizes, cores)
    best = choose_by_rules(scores, cores, raw)
    unconstrained = choose_from_scores(scores)
    allowed = allowed_sizes(sizes, cores, raw)
    predicted = choose_from_scores({w: v for w, v in scores.items() if w in allowed})
    over = measured_faster(cores, raw)
    if best in over:
        why = (f"{best} workers (above the {cores} usable cores) measured {over[best]:.2f}x one worker by the probe, "
               f"faster than every size within them")
    elif best != predicted:
        timed = probe_measured(raw)
        why = (f"the model predicted {predicted} workers best, but the probe timed {best} workers "
               f"{timed[best] / timed[predicted]:.2f}x as fast on this workload: the measurement wins")
    elif unconstrained != best:
        why = (f"the model preferred {unconstrained} workers; the hard rule kept the choice within "
               f"{allowed_sizes(sizes, cores, raw)} (usable cores {cores}; nothing measured faster beyond them)")
    else:
        why = ""
    return Selection(best, "model", why, raw, scores, m.path, probe_s=probe_s)


def select_for_stepper(make, static: Mapping[str, float], *, max_workers: int | None = None,
                       stpa_model: StpaModel | None = None, probe_budget_s: float = 0.12,
                       key: Hashable | None = None) -> Selection:
    """The ``"auto"`` decision for a workload that only steps as a whole (see
    :func:`~seer.stpa.features.probe_stepper`): a vector env of copies, or an
    env whose model cannot be probed through a runtime.

    ``make(workers) -> (step, close)`` builds a throwaway instance on a pool of
    ``workers``; ``static`` is what the workload declares (``entities``,
    ``kinds``, ``native_kind_share``, ``lookahead``).  ``key`` memoizes the
    choice for the process under it, as :func:`select_for_model` does by
    model signature (the same workload built again is not probed again);
    None: not memoized.  Without a usable model the heuristic decides, with a
    warning, as for models.
    """
    limit = current_pool_limit() if max_workers is None else check_workers(max_workers, auto=False)
    hw = machine_features()
    cores = int(hw["usable_cores"])
    with _lock:
        features_only = any(fo for _, fo in _captures)

    def heuristic() -> int:
        return heuristic_workers(int(static.get("entities", 1)), float(static.get("native_kind_share", 1.0)), cores)

    memo = (("stepper", key, ("max_workers", limit)) if key is not None and not features_only
            and stpa_model is None and limit != 1 else None)
    with _lock:
        sel = _choices.get(memo) if memo is not None else None
        if sel is not None:
            _choices.move_to_end(memo)
    if sel is None and limit == 1:
        sel = Selection(1, "limited", "max_workers=1 (an explicit argument or seer.stpa.default_pool_limit)")
    elif sel is None:
        m, why = (None, "features only") if features_only else (
            (stpa_model, "") if stpa_model is not None else _resolve(None))
        sel = _decide(m, why, functools.partial(probe_stepper, make, static, budget_s=probe_budget_s), hw, static,
                      limit, features_only, heuristic, "using the heuristic", stacklevel=2)
        sel = _capped(sel, limit)
        if memo is not None:
            with _lock:
                _choices[memo] = sel
                while len(_choices) > 256:
                    _choices.popitem(last=False)
    with _lock:
        for records, _ in _captures:
            records.append(sel)
    return sel


def select_workers_for_model(model, capacity: int | None = None, *, max_workers: int | None = None) -> int:
    """The pool size ``workers="auto"`` means for ``model``; see :func:`select_for_model`.

    Pass the result to ``seer.Runtime(model, workers=...)``: the runtime
    itself takes integers only (it sits below STPA).
    """
    return select_for_model(model, capacity=capacity, max_workers=max_workers).workers


def resolve_workers(workers: Any, model, *, capacity: int | None = None, max_workers: int | None = None) -> int:
    """A checked ``workers`` argument as a pool size: ``"auto"`` asks :func:`select_workers_for_model`.

    What the envs, ``seer.wrap`` and ``seer.vector`` call with their
    ``workers=`` argument before building a :class:`seer.Runtime`.

    Args:
        workers: ``"auto"`` or an integer in [1, 1024].
        model: The :class:`seer.Model` the runtime will run (used for ``"auto"`` only).
        capacity: The runtime's queue capacity (``"auto"``'s probe uses the same).
        max_workers: Cap for ``"auto"`` (default: :func:`current_pool_limit`).

    Raises:
        InvalidArgumentError: ``workers`` is neither (also a ``ValueError``).
    """
    workers = check_workers(workers)
    if workers == "auto":
        return select_workers_for_model(model, capacity, max_workers=max_workers)
    return workers
