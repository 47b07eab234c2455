"""STPA: choose the worker-pool size from measurements.

``seer.Runtime(model, workers="auto")`` calls :func:`select_workers_for_model`:
it runs a short traced probe of the model (a few steps on one worker, before
the runtime's own reset, so results are unaffected), combines the probe's
workload and trace features with this machine's hardware features, and asks
a learned model which pool size runs fastest.  ``seer tune`` measures pool
sizes on this machine and trains that model; a default one ships in
``seer/data/``.  Without a usable model the documented
:func:`heuristic_workers` decides, with a :class:`StpaFallbackWarning`.

Models can help the probe: ``step_length`` (the simulated time one env step
covers) makes it step as the env does; a ``prepare_step()`` method is called
before each probe step; ``stpa_probe = False`` skips the probe (for models
whose ``reset`` does not restore everything their handlers change) and lets
the heuristic decide.

Main names:

* features: :func:`hardware_features`, :func:`static_workload_features`,
  :func:`probe`, :func:`trace_features`;
* the selector: :func:`select_workers`, :func:`select_workers_for_model`,
  :func:`select_for_model`, :class:`StpaModel`, :func:`load_model`,
  :func:`save_model` (JSON model files, never pickles: see
  :class:`PortableEstimator`), :func:`active_model`, :func:`heuristic_workers`;
* :func:`online_refine`: an optional, bounded check of neighbouring pool
  sizes on the real workload (see its docstring for how to use it);
* training and tuning live in :mod:`seer.stpa.train` and
  :mod:`seer.stpa.tune` (they import scikit-learn).
"""

from seer.stpa.features import (
    ProbeResult,
    candidate_features,
    hardware_features,
    probe,
    static_workload_features,
    trace_features,
)
from seer.stpa.online import online_refine
from seer.stpa.selector import (
    FEATURE_SCHEMA,
    MODEL_VERSION,
    SCHEMA_VERSION,
    IncompatibleModelError,
    PortableEstimator,
    Selection,
    StpaFallbackWarning,
    StpaModel,
    active_model,
    cache_dir,
    candidate_sizes,
    capture,
    choose_from_scores,
    clear_cache,
    feature_matrix,
    heuristic_workers,
    load_model,
    machine_features,
    model_search_path,
    nested_pool,
    save_model,
    select_for_model,
    select_workers,
    select_workers_for_model,
    shipped_dataset_path,
    shipped_model_path,
)

__all__ = [
    "FEATURE_SCHEMA", "MODEL_VERSION", "SCHEMA_VERSION", "IncompatibleModelError", "PortableEstimator", "ProbeResult", "Selection",
    "StpaFallbackWarning", "StpaModel", "active_model", "cache_dir", "candidate_features", "candidate_sizes",
    "capture", "choose_from_scores", "clear_cache", "feature_matrix", "hardware_features", "heuristic_workers",
    "load_model", "machine_features", "model_search_path", "nested_pool", "online_refine", "probe", "save_model",
    "select_for_model", "select_workers", "select_workers_for_model", "shipped_dataset_path",
    "shipped_model_path", "static_workload_features", "trace_features",
]
