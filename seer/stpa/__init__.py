"""STPA: choose the worker-pool size from measurements (the policy layer above ``seer.Runtime``).

``seer.Runtime`` takes an integer pool size; the layers that offer
``workers="auto"`` (the envs, ``seer.vector``, ``seer.wrap``) resolve it
here, with :func:`resolve_workers` or :func:`select_workers_for_model`: it runs a short traced probe of the model (a few steps on one worker, before
the runtime's own reset, so results are unaffected), combines the probe's
workload and trace features with this machine's hardware features, and asks
a learned model which pool size runs fastest.  The envs then attach a
:class:`PoolTuner` to their runtime (:func:`attach_tuner`): it times the
chosen size against its neighbours on the first real steps (interleaved,
bounded) and keeps the fastest, and checks again now and then, since
results are the same for every pool size.  ``seer tune`` measures pool
sizes on this machine and trains that model; a default one ships in
``seer/data/``.  Without a usable model the documented
:func:`heuristic_workers` decides, with a :class:`StpaFallbackWarning`.

Models can help the probe: ``step_length`` (the simulated time one env step
covers) makes it step as the env does; a ``prepare_step()`` method is called
before each probe step; ``stpa_probe = False`` skips the probe (for models
whose ``reset`` does not restore everything their handlers change) and lets
the heuristic decide.

A caller whose own pool already uses the cores caps the choice explicitly:
``max_workers=``, or :func:`default_pool_limit` around code it does not
control (seer.vector builds its env copies inside ``default_pool_limit(1)``).

Modules, by role (none imports a module that imports it back):

* :mod:`~seer.stpa.hardware`: :func:`hardware_features`, :func:`machine_features`;
* :mod:`~seer.stpa.features`: :func:`static_workload_features`, :func:`probe`,
  :func:`probe_stepper` (for what only steps as a whole), :func:`trace_features`;
* :mod:`~seer.stpa.load`: :func:`free_cores` (the load feature: cores free
  now), :class:`ForeignLoad` (other processes' CPU on these cores between
  two readings: what the tuner watches), :func:`background_load` and :func:`restricted_affinity` (how
  ``seer tune`` evaluates under load and on a smaller machine shape);
* :mod:`~seer.stpa.model`: the shared types: :data:`FEATURE_SCHEMA`,
  :class:`StpaModel`, :func:`load_model`, :func:`save_model` (JSON model
  files, never pickles);
* :mod:`~seer.stpa.estimator`: :class:`PortableEstimator` (numpy predictions);
* :mod:`~seer.stpa.lookup`: where models live, :func:`active_model`;
* :mod:`~seer.stpa.selector`: :func:`select_for_model`, :func:`select_for_stepper`,
  :func:`select_workers_for_model`, :func:`resolve_workers`,
  :func:`select_workers`, :func:`heuristic_workers`, :func:`default_pool_limit`;
* :mod:`~seer.stpa.online`: :class:`PoolTuner` and :func:`attach_tuner`
  (``"auto"``'s check of neighbouring pool sizes on the real steps of the
  running runtime, which :meth:`seer.Runtime.resize` makes free of any
  effect on results), :func:`make_runtime` (a runtime for an env's
  ``workers=`` argument: the choice, then the tuner) and
  :func:`online_refine` (the same check before the run, on throwaway
  runtimes);
* :mod:`~seer.stpa.train`, :mod:`~seer.stpa.tune`, :mod:`~seer.stpa.workloads`:
  training and ``seer tune`` (they import scikit-learn when they run).
"""

from seer.errors import IncompatibleModelError, StpaFallbackWarning
from seer.stpa.estimator import PortableEstimator
from seer.stpa.features import (ProbeResult, candidate_features, probe, probe_stepper, static_workload_features,
                                trace_features)
from seer.stpa.hardware import hardware_features, machine_features
from seer.stpa.load import ForeignLoad, background_load, cpu_pressure, free_cores, restricted_affinity
from seer.stpa.lookup import active_model, cache_dir, model_search_path, shipped_dataset_path, shipped_model_path
from seer.stpa.model import (FEATURE_SCHEMA, MODEL_VERSION, SCHEMA_VERSION, StpaModel,
                             allowed_sizes, candidate_sizes, choose_by_rules, choose_from_scores, feature_matrix,
                             free_bound,
                             load_model, measured_overrule, probe_measured, save_model)
from seer.stpa.online import PoolTuner, attach_tuner, make_runtime, online_refine
from seer.stpa.selector import (Selection, capture, clear_cache, current_pool_limit, default_pool_limit,
                                heuristic_workers, resolve_workers, select_for_model, select_for_stepper,
                                select_workers, select_workers_for_model)

__all__ = [
    "FEATURE_SCHEMA", "ForeignLoad", "MODEL_VERSION", "SCHEMA_VERSION", "IncompatibleModelError", "PoolTuner",
    "PortableEstimator",
    "ProbeResult", "attach_tuner",
    "Selection", "StpaFallbackWarning", "StpaModel", "active_model", "allowed_sizes", "background_load",
    "cache_dir", "candidate_features", "candidate_sizes", "capture", "choose_by_rules", "choose_from_scores", "clear_cache",
    "cpu_pressure", "current_pool_limit", "default_pool_limit", "feature_matrix", "free_bound", "free_cores",
    "hardware_features", "heuristic_workers", "load_model", "machine_features", "make_runtime", "measured_overrule",
    "model_search_path",
    "probe_measured",
    "online_refine", "probe", "probe_stepper", "resolve_workers", "restricted_affinity", "save_model",
    "select_for_model", "select_for_stepper", "select_workers", "select_workers_for_model", "shipped_dataset_path",
    "shipped_model_path", "static_workload_features", "trace_features",
]
