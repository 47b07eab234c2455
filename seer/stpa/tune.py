"""``seer tune``: measure pool sizes on this machine, grow the dataset, train
the selector, and evaluate it on held-out workloads, quiet, under load and on one core.

Steps of :func:`run_tune`:

1. sweep pool sizes 1..max(2 x cores, 4) over the training workloads
   (:func:`seer.stpa.workloads.training_workloads`: synthetic draws, every
   scenario of every registered env, and the ``seer.vector`` workloads the
   CLI passes in), each size's throughput over ``reps`` interleaved
   repetitions, with a rich progress bar; then measure a share of them
   again beside a busy process (:func:`seer.stpa.load.background_load`);
   append one row per measurement (with the workload's features and the
   machine state) to ``<cache>/stpa_dataset.jsonl``;
2. train on that dataset (plus the shipped one unless told not to),
   comparing model families by grouped cross-validation (whole workloads,
   whole envs), and save the best to ``<cache>/stpa_model.json`` (a JSON
   model file, see :mod:`seer.stpa.model`; the cache folder is created with
   mode 0700), which ``workers="auto"`` then prefers to the shipped model;
3. with ``evaluate``: on held-out workloads (other synthetic draws; each env
   decided by a model trained without any row of it) measure every pool
   size (the oracle) in this same run and report the throughput of the
   model's choice as a fraction of the best, next to fixed rules, under each
   machine state of :data:`CONDITIONS` (quiet; beside one busy process
   pinned to one core; restricted to one CPU).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import platform
import sys
import time
import uuid
from pathlib import Path

import numpy as np

from seer._host import usable_cpus
from seer._text import markup_safe
from seer._version import __version__
from seer.stpa import train as T
from seer.stpa import workloads as W
from seer.stpa.hardware import machine_features
from seer.stpa.load import background_load, restricted_affinity
from seer.stpa.lookup import active_model, cache_dir, shipped_dataset_path
from seer.stpa.model import (
    DATASET_FILENAME,
    MODEL_FILENAME,
    StpaModel,
    candidate_sizes,
    save_model,
)
from seer.stpa.online import PoolTuner, online_refine
from seer.stpa.selector import clear_cache, heuristic_workers

QUICK = dict(n_train=40, n_eval=12, reps=2, target_s=0.03, loaded_share=0.25)
FULL = dict(n_train=110, n_eval=36, reps=3, target_s=0.06, loaded_share=0.5)


def machine_description() -> dict:
    import numpy

    hw = machine_features()
    return {**hw, "os_cpu_count": os.cpu_count(), "python": sys.version.split()[0], "numpy": numpy.__version__,
            "platform": platform.platform(), "seer": __version__,
            "loadavg": list(os.getloadavg()) if hasattr(os, "getloadavg") else None}


class _Progress:
    """A rich progress bar (or nothing)."""

    def __init__(self, enabled: bool, console=None):
        self.enabled = enabled
        self.console = console
        self._p = None

    def __enter__(self):
        if self.enabled:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, \
                TimeRemainingColumn

            self._p = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                               TimeElapsedColumn(), TimeRemainingColumn(), TextColumn("{task.fields[what]}"),
                               console=self.console, transient=False)
            self._p.__enter__()
        return self

    def task(self, description: str, total: int):
        if self._p is None:
            return None
        return self._p.add_task(markup_safe(description), total=total, what="")

    def advance(self, task, what: str = ""):
        if self._p is not None and task is not None:
            self._p.update(task, advance=1, what=markup_safe(what))  # workload names may come from plug-ins

    def __exit__(self, *exc):
        if self._p is not None:
            self._p.__exit__(*exc)


def _measured(workloads, sizes, reps: int, target_s: float, progress: _Progress, name: str, log):
    """``(workload, measurement)`` of :func:`seer.stpa.workloads.measure` for each workload that
    runs, with progress; one that fails is logged and skipped."""
    task = progress.task(name, len(workloads) * len(sizes) * reps)
    for wl in workloads:
        try:
            got = W.measure(wl, sizes, reps, target_s, on_measure=lambda wl, w: progress.advance(task, f"{wl.name} w={w}"))
        except Exception as exc:  # one broken workload (an env in flux) must not sink the sweep
            log(f"skipped {wl.name}: {type(exc).__name__}: {exc}")
            for _ in range(len(sizes) * reps):
                progress.advance(task, wl.name)
            continue
        yield wl, got


def sweep(workloads, sizes, *, reps: int, target_s: float, dataset: Path | None, sweep_id: str,
          progress: _Progress, log=print, condition: str = "quiet") -> list[dict]:
    """Measure ``workloads`` at every size; append rows to ``dataset``; return them.

    ``condition`` names the machine state the caller set up (``"quiet"``,
    ``"loaded"``); it goes into every row and keeps the two measurements of
    one workload apart."""
    rows = []
    for wl, (feats, best, _, _) in _measured(workloads, sizes, reps, target_s, progress, f"sweep ({condition})", log):
        new = [T.make_row(sweep_id, wl.name, wl.family, wl.params, w, sps, feats, condition=condition,
                          steps_per_s_best=getattr(best, "best", {}).get(w)) for w, sps in sorted(best.items())]
        if dataset is not None:
            T.append_rows(dataset, new)
        rows += new
    return rows


#: Machine states the evaluation runs under: busy processes started for it, CPUs it may use (None: all).
CONDITIONS = {"quiet": {"load": 0, "cpus": None}, "loaded": {"load": 1, "cpus": None}, "1core": {"load": 0, "cpus": 1}}
#: The issue's targets per condition: (mean >=, min >=) of the oracle's throughput.
TARGETS = {"quiet": (0.98, 0.90), "loaded": (0.95, 0.85), "1core": (0.98, 0.90)}


@contextlib.contextmanager
def condition(name: str):
    """Put this process in machine state ``name`` (see :data:`CONDITIONS`) for the block.

    Raises:
        ValueError: ``name`` is not one of :data:`CONDITIONS`.
    """
    if name not in CONDITIONS:
        raise ValueError(f"condition={name!r} is unknown: expected one of {list(CONDITIONS)}")
    spec = CONDITIONS[name]
    with contextlib.ExitStack() as stack:
        if spec["cpus"]:
            stack.enter_context(restricted_affinity(usable_cpus()[:spec["cpus"]]))
        if spec["load"]:
            stack.enter_context(background_load(spec["load"]))
        yield spec


def _loadavg():
    return list(os.getloadavg()) if hasattr(os, "getloadavg") else None


def evaluate(workloads, model: StpaModel | None, sizes, *, reps: int, target_s: float, progress: _Progress,
             log=print, env_models: dict | None = None, condition_name: str = "quiet",
             refine_budget_s: float = 1.0) -> dict:
    """Choices on ``workloads`` against the best measured size, in this run.

    An env workload (single or through seer.vector) is decided by
    ``env_models[env]`` when given: a model trained without any row of that
    env, so the env is held out as a whole; its shipped-model choice is
    recorded too (``chosen_all``).  Every choice obeys the hard rules
    (:func:`~seer.stpa.model.allowed_sizes`)."""
    cpu = os.cpu_count() or 1
    rule_cpu = min(cpu, max(sizes))
    env_models = env_models or {}
    per = []
    for wl, (feats, best, steps, run) in _measured(workloads, sizes, reps, target_s, progress,
                                                   f"evaluate ({condition_name})", log):
        cores = int(feats.get("usable_cores", 1))
        env = W.env_of(wl.family)
        decider = env_models.get(env, model) if env else model
        if decider is not None:
            scores = decider.scores(feats, sizes, cores)
            chosen = decider.choose(feats, sizes, cores)
        else:
            scores, chosen = {}, heuristic_workers(int(feats.get("entities", 1)),
                                                     float(feats.get("native_kind_share", 1)), cores)
        chosen_all = model.choose(feats, sizes, cores) if model is not None else chosen
        heur = heuristic_workers(int(feats.get("entities", 1)), float(feats.get("native_kind_share", 1)), cores)
        # the optional online check (seer.stpa.online_refine) from the
        # choice: neighbouring sizes timed on the workload itself, best of 2
        refined, tried = online_refine(lambda w: 1.0 / max(run(w), run(w)), workers=chosen,
                                       max_workers=max(sizes), budget_s=refine_budget_s, details=True)
        # what workers="auto" runs on: the choice, then the tuner on the
        # workload's steps (each visit one block of timed steps)
        tuner = PoolTuner(chosen, cores=cores, max_workers=max(sizes), visit_s=0.0, settle_steps=0,
                          above_cores=float(feats.get("native_kind_share", 1.0)) >= 1.0)  # as attach_tuner
        tuned = tuner.settle(lambda w: 1.0 / run(w))
        oracle = max(best, key=best.get)
        top = best[oracle]
        per.append({
            "workload": wl.name, "family": wl.family, "params": wl.params, "steps_timed": steps,
            "env_held_out": bool(env and env in env_models),
            "free_cores": feats.get("free_cores"), "cpu_pressure": feats.get("cpu_pressure"),
            "probe_speedups": {str(int(feats[f"{k}_workers"])): feats[f"{k}_speedup"] for k in ("probe2", "probe3")
                               if f"{k}_workers" in feats and f"{k}_speedup" in feats},
            "probe_speedups_best": {str(int(feats["probe2_workers"])): feats["probe2_speedup_best"]}
            if "probe2_speedup_best" in feats else {},
            "steps_per_s": {str(w): v for w, v in sorted(best.items())}, "oracle": int(oracle),
            "steps_per_s_best": {str(w): v for w, v in sorted(getattr(best, "best", {}).items())},
            "chosen": int(chosen), "predicted_log_speedup": {str(w): v for w, v in scores.items()},
            "frac_chosen": best[chosen] / top, "chosen_all": int(chosen_all), "frac_chosen_all": best[chosen_all] / top,
            "frac_rule_1": best[1] / top,
            "frac_rule_cpu": best[rule_cpu] / top, "heuristic": int(heur), "frac_heuristic": best[heur] / top,
            "refined": int(refined), "refine_tried": sorted(int(w) for w in tried), "frac_refined": best[refined] / top,
            "tuned": int(tuned), "tuner_tried": sorted({h["candidate"] for h in tuner.history} | {int(chosen)}),
            "frac_tuned": best[tuned] / top,
        })
    summary = {}
    for key in FRACS:
        v = np.array([p[key] for p in per]) if per else np.array([np.nan])
        summary[key] = {"mean": float(np.mean(v)), "min": float(np.min(v))}
    for group, keep in (("synthetic", lambda p: W.env_of(p["family"]) is None),
                        ("envs", lambda p: W.env_of(p["family"]) is not None)):
        v = np.array([p["frac_chosen"] for p in per if keep(p)])
        if v.size:
            summary[f"frac_chosen_{group}"] = {"mean": float(v.mean()), "min": float(v.min())}
    fc = [p["free_cores"] for p in per if p.get("free_cores") is not None]
    return {"condition": condition_name, "workloads": per, "summary": summary, "rule_cpu_workers": rule_cpu,
            "usable_cores": int(machine_features()["usable_cores"]),
            "free_cores_mean": float(np.mean(fc)) if fc else None,
            "targets": targets(summary, condition=condition_name),
            "targets_refined": targets(summary, "frac_refined", condition=condition_name),
            "targets_tuned": targets(summary, "frac_tuned", condition=condition_name)}


FRACS = ("frac_chosen", "frac_chosen_all", "frac_tuned", "frac_refined", "frac_rule_1", "frac_rule_cpu",
         "frac_heuristic")


def targets(summary: dict, key: str = "frac_chosen", condition: str = "quiet") -> dict:
    """The issue's targets for one rule (the model's choice, or with the online check) under ``condition``."""
    s = summary[key]
    want_mean, want_min = TARGETS.get(condition, TARGETS["quiet"])
    ok_mean, ok_min = s["mean"] >= want_mean, s["min"] >= want_min
    beats = s["mean"] >= summary["frac_rule_1"]["mean"] and s["mean"] >= summary["frac_rule_cpu"]["mean"]
    return {f"mean_ge_{want_mean}": ok_mean, f"min_ge_{want_min}": ok_min, "beats_fixed_rules": beats,
            "all": ok_mean and ok_min and beats}


def pool_runs(runs: list[dict]) -> dict:
    """Per held-out workload, the mean over evaluation runs of each rule's
    fraction of that run's oracle; and the summary of those means."""
    keys = [k for k in FRACS if all(k in p for r in runs for p in r["workloads"])]
    by: dict[str, dict[str, list]] = {}
    for r in runs:
        for p in r["workloads"]:
            d = by.setdefault(p["workload"], {k: [] for k in keys})
            for k in keys:
                d[k].append(p[k])
    per = {w: {k: float(np.mean(v)) for k, v in d.items()} for w, d in by.items()}
    summary = {k: {"mean": float(np.mean([p[k] for p in per.values()])),
                   "min": float(np.min([p[k] for p in per.values()]))} for k in keys}
    cond = runs[0].get("condition", "quiet") if runs else "quiet"
    out = {"runs": len(runs), "workloads": per, "summary": summary, "targets": targets(summary, condition=cond)}
    for key, name in (("frac_refined", "targets_refined"), ("frac_tuned", "targets_tuned")):
        if key in summary:
            out[name] = targets(summary, key, condition=cond)
    return out


def env_held_out_models(rows: list[dict], envs, family: str, log=print) -> dict:
    """Per env id, a model of ``family`` trained on ``rows`` without any row of
    that env (single or vector): how the evaluation holds whole envs out."""
    out = {}
    for env in sorted({e for e in envs if e}):
        keep = [r for r in rows if W.env_of(str(r.get("family", ""))) != env]
        try:
            out[env] = T.train(keep, families=(family,), family=family)
        except T.TooLittleDataError as exc:
            log(f"no held-out model for {env}: {exc}")
    return out


def _check_trusted_folders(*paths: Path) -> None:
    """Refuse to read a dataset from, or write a model into, a folder another
    user could write to (the model written there is what ``workers="auto"`` loads).

    Raises:
        seer.errors.UntrustedPathError: naming the folder, its owner or mode, and the fix.
    """
    from seer._io import check_trusted_dir

    for folder in dict.fromkeys(Path(p).parent for p in paths):
        if folder.exists():  # a missing one is created with mode 0700
            check_trusted_dir(folder, what="STPA cache directory")


def run_tune(*, quick: bool = False, cache: Path | None = None, do_sweep: bool = True, do_train: bool = True,
             do_evaluate: bool = False, n_train: int | None = None, n_eval: int | None = None,
             reps: int | None = None, target_s: float | None = None, seed: int = 1, envs: bool = True,
             include_shipped: bool = True, sizes=None, progress: bool = True, console=None,
             dataset_path: Path | None = None, model_path: Path | None = None,
             families=("gbr", "rf", "ridge", "knn"), eval_repeats: int = 1, log=print, extra_workloads=(),
             loaded_share: float | None = None, conditions=("quiet", "loaded", "1core"),
             hold_out_envs: bool = True) -> dict:
    """Sweep, train and (optionally) evaluate; see the module docstring.

    Args:
        extra_workloads: More workloads for the sweep and the evaluation
            (the CLI passes the ``seer.vector`` ones).
        loaded_share: Share of the synthetic training workloads measured a
            second time under a background load (every env workload is);
            0 measures nothing loaded.
        conditions: Machine states to evaluate under (:data:`CONDITIONS`).
        hold_out_envs: Decide each env workload with a model trained without that env.
    """
    cfg = dict(QUICK if quick else FULL)
    for k, v in (("n_train", n_train), ("n_eval", n_eval), ("reps", reps), ("target_s", target_s),
                 ("loaded_share", loaded_share)):
        if v is not None:
            cfg[k] = v
    unknown = [c for c in conditions if c not in CONDITIONS]
    if unknown:
        raise ValueError(f"conditions={list(conditions)!r} has unknown {unknown}: expected some of {list(CONDITIONS)}")
    if not 0.0 <= float(cfg["loaded_share"]) <= 1.0:
        raise ValueError(f"loaded_share={cfg['loaded_share']!r} is out of range: expected a number in [0, 1]")
    cache = Path(cache) if cache is not None else cache_dir()
    dataset_path = Path(dataset_path) if dataset_path is not None else cache / DATASET_FILENAME
    model_path = Path(model_path) if model_path is not None else cache / MODEL_FILENAME
    _check_trusted_folders(dataset_path, model_path)
    hw = machine_features()
    sizes = list(sizes) if sizes is not None else candidate_sizes(hw["usable_cores"])
    out: dict = {"machine": machine_description(), "sizes": sizes, "config": cfg, "quick": quick,
                 "dataset": str(dataset_path), "model_path": None}
    t0 = time.perf_counter()
    with _Progress(progress, console) as prog:
        if do_sweep:
            sweep_id = f"{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:6]}"
            wls = W.training_workloads(cfg["n_train"], seed=seed, envs=envs, quick=quick, extra=extra_workloads)
            rows = sweep(wls, sizes, reps=cfg["reps"], target_s=cfg["target_s"], dataset=dataset_path,
                         sweep_id=sweep_id, progress=prog, log=log)
            out["sweep"] = {"id": sweep_id, "workloads": len(wls), "rows": len(rows),
                            "seconds": time.perf_counter() - t0, "loadavg": [out["machine"]["loadavg"], _loadavg()]}
            synth = [w for w in wls if W.env_of(w.family) is None]
            step = int(round(1.0 / cfg["loaded_share"])) if cfg["loaded_share"] > 0 else 0
            loaded = (synth[::step] if step else []) + ([w for w in wls if W.env_of(w.family)] if step else [])
            if loaded:
                t1 = time.perf_counter()
                la0 = _loadavg()
                with condition("loaded"):
                    more = sweep(loaded, sizes, reps=cfg["reps"], target_s=cfg["target_s"], dataset=dataset_path,
                                 sweep_id=sweep_id, progress=prog, log=log, condition="loaded")
                out["sweep"].update(loaded_workloads=len(loaded), loaded_rows=len(more),
                                    loaded_seconds=time.perf_counter() - t1, loaded_loadavg=[la0, _loadavg()],
                                    rows=len(rows) + len(more), seconds=time.perf_counter() - t0)
        model = None
        paths = [dataset_path] + ([shipped_dataset_path()] if include_shipped else [])
        data = None
        if do_train:
            data = T.load_rows(*paths)
            model = T.train(data, families=families)
            model.meta["datasets"] = [str(p) for p in paths if Path(p).is_file()]
            save_model(model, model_path)
            clear_cache()
            out["model_path"] = str(model_path)
            out["model"] = {"family": model.family, "meta": model.meta}
        if do_evaluate:
            if model is None:
                model, _ = active_model()
            ev_wls = W.heldout_workloads(cfg["n_eval"], seed=seed + 1_000_002, envs=envs, quick=quick,
                                         extra=extra_workloads)
            env_models = {}
            if hold_out_envs and model is not None:
                if data is None:
                    data = T.load_rows(*paths)
                env_models = env_held_out_models(data, {W.env_of(w.family) for w in ev_wls}, model.family, log)
            out["evaluations"] = {}
            for cond in conditions:
                runs = []
                for _ in range(max(1, int(eval_repeats))):
                    load0 = _loadavg()
                    with condition(cond):
                        # At least 4 repetitions: the oracle is the best of noisy measurements.
                        ev = evaluate(ev_wls, model, sizes, reps=max(4, cfg["reps"]), target_s=cfg["target_s"],
                                      progress=prog, log=log, env_models=env_models, condition_name=cond)
                    ev["loadavg"] = [load0, _loadavg()]
                    ev["model"] = (model.path or str(model_path)) if model is not None else "heuristic"
                    ev["model_family"] = model.family if model is not None else "heuristic"
                    ev["envs_held_out"] = sorted(env_models)
                    runs.append(ev)
                rec = {"last": runs[-1]}
                if len(runs) > 1:
                    rec["runs"] = [{"summary": r["summary"], "targets": r["targets"],
                                    "targets_refined": r.get("targets_refined"), "loadavg": r["loadavg"],
                                    "free_cores_mean": r.get("free_cores_mean"),
                                    "below_target": [(p["workload"], p["frac_chosen"], p.get("frac_refined"))
                                                     for p in r["workloads"]
                                                     if p["frac_chosen"] < TARGETS[cond][1]]} for r in runs]
                    rec["pooled"] = pool_runs(runs)
                out["evaluations"][cond] = rec
            first = out["evaluations"][conditions[0]] if conditions else None
            if first is not None:  # the single-condition layout of earlier reports
                out["evaluation"] = first["last"]
                if "runs" in first:
                    out["evaluation_runs"], out["evaluation_pooled"] = first["runs"], first["pooled"]
    out["seconds"] = time.perf_counter() - t0
    out["machine"]["loadavg_end"] = _loadavg()
    return out


# ---- reports -----------------------------------------------------------------------------------

def comparison_table(meta: dict) -> str:
    comp = meta.get("comparison") or {}
    if not comp:
        return ""
    lines = ["| family | held-out workloads | mean frac of best | min frac | RMSE (log eff.) | R^2 |",
             "|---|---|---|---|---|---|"]
    for fam, r in comp.items():
        mark = " (chosen)" if fam == meta.get("chosen") else ""
        lines.append(f"| {fam}{mark}: {T.FAMILIES.get(fam, '')} | {r['workloads']} | {r['mean_frac']:.3f} | "
                     f"{r['min_frac']:.3f} | {r['rmse']:.3f} | {r['r2']:.3f} |")
    any_r = next(iter(comp.values()))
    lines.append(f"| fixed rule: 1 worker | {any_r['workloads']} | {any_r['rule_1_mean']:.3f} | | | |")
    lines.append(f"| fixed rule: os.cpu_count() | {any_r['workloads']} | {any_r['rule_cpu_mean']:.3f} | | | |")
    return "\n".join(lines)


def evaluation_tables(ev: dict) -> str:
    s = ev["summary"]
    held = ", ".join(ev.get("envs_held_out") or []) or "none"
    rules = [("frac_chosen", f"STPA ({ev.get('model_family', '?')}; envs held out: {held})")]
    rules += [(key, rule) for key, rule in (
        ("frac_chosen_synthetic", "- of which synthetic workloads"), ("frac_chosen_envs", "- of which envs workloads"),
        ("frac_chosen_all", "STPA, the model trained on every env (envs not held out)"),
        ("frac_tuned", 'workers="auto": the choice + PoolTuner on the workload\'s steps'),
        ("frac_refined", "STPA + online check (online_refine from its choice)")) if key in s]
    rules += [("frac_rule_1", "1 worker"), ("frac_rule_cpu", f"os.cpu_count() = {ev['rule_cpu_workers']}"),
              ("frac_heuristic", "heuristic_workers (fallback)")]
    lines = ["| rule | mean frac of oracle | min frac of oracle |", "|---|---|---|"]
    lines += [f"| {rule} | {s[key]['mean']:.3f} | {s[key]['min']:.3f} |" for key, rule in rules]
    lines += ["", "| workload | free cores | steps/s by pool size | oracle | chosen | frac | tuner: tried -> kept "
              "| frac | online check: tried -> kept | frac | 1 worker | cpu_count |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for p in ev["workloads"]:
        sps = ", ".join(f"{w}: {v:.1f}" for w, v in p["steps_per_s"].items())
        ref = (f"{p['refine_tried']} -> {p['refined']} | {p['frac_refined']:.3f}" if "refined" in p else "- | -")
        tun = (f"{p['tuner_tried']} -> {p['tuned']} | {p['frac_tuned']:.3f}" if "tuned" in p else "- | -")
        fc = f"{p['free_cores']:.2f}" if p.get("free_cores") is not None else "-"
        name = p["workload"] + (" (env held out)" if p.get("env_held_out") else "")
        lines.append(f"| {name} | {fc} | {sps} | {p['oracle']} | {p['chosen']} | {p['frac_chosen']:.3f} | {tun} | {ref} | "
                     f"{p['frac_rule_1']:.3f} | {p['frac_rule_cpu']:.3f} |")
    return "\n".join(lines)


def _verdict(t: dict | None) -> str:
    if not t:
        return "-"
    return "all met" if t["all"] else ", ".join(k for k, v in t.items() if not v and k != "all") + " missed"


def _target_text(t: dict) -> str:
    return "; ".join(f"{k.replace('_ge_', ' >= ').replace('_', ' ')}: {'met' if v else 'MISSED'}"
                     for k, v in t.items() if k != "all")


def _fmt_load(v) -> str:
    return f"{v[0]:.2f}" if v else "?"


def conditions_table(result: dict) -> str:
    """One line per evaluated machine state: the figures the issue's targets are about."""
    lines = ["| condition | usable cores | free cores (probe mean) | load average (start / end) | STPA mean | STPA min "
             "| target (mean / min) | auto (+ tuner) mean / min | + online check mean / min | 1 worker mean / min "
             "| cpu_count mean / min | targets (STPA / auto) |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    pair = lambda d: f"{d['mean']:.3f} / {d['min']:.3f}"  # noqa: E731
    for cond, rec in (result.get("evaluations") or {}).items():
        ev = rec["last"]
        pooled = rec.get("pooled")
        s = pooled["summary"] if pooled else ev["summary"]
        t = pooled["targets"] if pooled else ev["targets"]
        tt = (pooled or ev).get("targets_tuned")
        la = ev.get("loadavg") or [None, None]
        want = TARGETS.get(cond, TARGETS["quiet"])
        fc = ev.get("free_cores_mean")
        name = f"{cond} (pooled over {pooled['runs']} runs)" if pooled else cond
        lines.append(f"| {name} | {ev.get('usable_cores', '?')} | {'-' if fc is None else f'{fc:.2f}'} | "
                     f"{_fmt_load(la[0])} / {_fmt_load(la[1])} | {s['frac_chosen']['mean']:.3f} | "
                     f"{s['frac_chosen']['min']:.3f} | {want[0]} / {want[1]} | "
                     f"{pair(s['frac_tuned']) if 'frac_tuned' in s else '-'} | "
                     f"{pair(s['frac_refined']) if 'frac_refined' in s else '-'} | {pair(s['frac_rule_1'])} | "
                     f"{pair(s['frac_rule_cpu'])} | {_verdict(t)} / {_verdict(tt)} |")
    return "\n".join(lines)


def render_markdown(result: dict, command: str, title: str = "STPA evaluation", notes=()) -> str:
    m = result["machine"]
    parts = [f"# {title}", "", f"Command: `{command}`", "",
             f"Machine: {m.get('cpu_model')}, {m.get('usable_cores')} usable cores "
             f"({m.get('physical_cores')} physical, {m.get('logical_cores')} logical), "
             f"L2 {m.get('l2_kb', 0):.0f} KiB, L3 {m.get('l3_kb', 0):.0f} KiB, {m.get('mem_gb', 0):.1f} GiB, "
             f"Python {m.get('python')}, numpy {m.get('numpy')}, {m.get('platform')}; load average "
             f"{m.get('loadavg')} at the start, {m.get('loadavg_end')} at the end (shared machine).", "",
             f"Pool sizes swept: {result['sizes']}; config: {result['config']}; total {result['seconds']:.0f} s.", ""]
    sw = result.get("sweep")
    if sw:
        parts += [f"Sweep {sw['id']}: {sw['workloads']} workloads quiet"
                  + (f" + {sw['loaded_workloads']} again under the background load" if sw.get("loaded_workloads") else "")
                  + f", {sw['rows']} measurements, {sw['seconds']:.0f} s; load average {sw.get('loadavg')}"
                  + (f", loaded phase {sw.get('loaded_loadavg')}" if sw.get("loaded_loadavg") else "") + ".", ""]
    if "model" in result:
        meta = result["model"]["meta"]
        parts += ["## Model families (grouped CV: each fold's workloads, and each env as a whole, unseen in training)",
                  "", f"Dataset: {meta.get('rows')} measurements of {meta.get('workloads')} workload groups "
                  f"({', '.join(meta.get('families', []))}).", "", comparison_table(meta), ""]
    if result.get("evaluations"):
        parts += ["## Held-out evaluation per machine state", "",
                  "quiet: all usable cores, nothing started; loaded: one busy process pinned to one usable core, "
                  "started before and stopped after the condition's measurements; 1core: every thread of the "
                  "process restricted to one CPU (os.sched_setaffinity).", "", conditions_table(result), ""]
        for cond, rec in result["evaluations"].items():
            ev = rec["last"]
            parts += [f"### {cond}" + (" (last run)" if rec.get("runs") else ""), "",
                      f"Model: {ev.get('model')}", "",
                      f"Targets: {_target_text(ev['targets'])}.",
                      f'workers="auto" (the choice + PoolTuner): {_target_text(ev["targets_tuned"])}.'
                      if ev.get("targets_tuned") else "",
                      f"With the online check: {_target_text(ev['targets_refined'])}." if ev.get("targets_refined")
                      else "", "", evaluation_tables(ev), ""]
            if rec.get("runs"):
                parts += ["| run | load average (start / end) | free cores | STPA mean | STPA min | + online mean | "
                          "+ online min | targets (STPA / + online check) |", "|---|---|---|---|---|---|---|---|"]
                for i, r in enumerate(rec["runs"], 1):
                    s, la = r["summary"], r.get("loadavg") or [None, None]
                    rf = s.get("frac_refined", {"mean": float("nan"), "min": float("nan")})
                    fc = r.get("free_cores_mean")
                    parts.append(f"| {i} | {_fmt_load(la[0])} / {_fmt_load(la[1])} | "
                                 f"{'-' if fc is None else f'{fc:.2f}'} | {s['frac_chosen']['mean']:.3f} | "
                                 f"{s['frac_chosen']['min']:.3f} | {rf['mean']:.3f} | {rf['min']:.3f} | "
                                 f"{_verdict(r['targets'])} / {_verdict(r.get('targets_refined'))} |")
                parts.append("")
    elif result.get("evaluation"):
        ev = result["evaluation"]
        parts += ["## Held-out workloads", "", f"Targets: {_target_text(ev['targets'])}.", "", evaluation_tables(ev), ""]
    if notes:
        parts += ["## Notes", ""] + [f"- {n}" for n in notes] + [""]
    return "\n".join(parts)


def print_summary(result: dict, console=None) -> None:
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    if "sweep" in result:
        s = result["sweep"]
        console.print(f"sweep {s['id']}: {s['rows']} measurements of {s['workloads']} workloads"
                      + (f" (+{s['loaded_workloads']} under load)" if s.get("loaded_workloads") else "")
                      + f" in {s['seconds']:.0f} s -> {markup_safe(result['dataset'])}")
    if "model" in result:
        meta = result["model"]["meta"]
        tab = Table(title=f"model families (grouped CV over {meta.get('workloads')} workload groups)")
        for col in ("family", "mean frac of best", "min frac", "RMSE", "R^2"):
            tab.add_column(col)
        for fam, r in (meta.get("comparison") or {}).items():
            tab.add_row(fam + (" *" if fam == meta.get("chosen") else ""), f"{r['mean_frac']:.3f}",
                        f"{r['min_frac']:.3f}", f"{r['rmse']:.3f}", f"{r['r2']:.3f}")
        console.print(tab)
        console.print(f"saved {result['model']['family']} model -> {markup_safe(result['model_path'])}")
    evs = result.get("evaluations") or {}
    if evs:
        tab = Table(title="held-out workloads: fraction of the best measured pool size, per machine state")
        for col in ("condition", "usable cores", "free cores", "workloads", "STPA mean", "STPA min", "target",
                    "auto (+ tuner)", "+ online check", "1 worker", "cpu_count", "targets (STPA / auto)"):
            tab.add_column(col)
        for cond, rec in evs.items():
            ev = rec["last"]
            s = rec["pooled"]["summary"] if rec.get("pooled") else ev["summary"]
            t = rec["pooled"]["targets"] if rec.get("pooled") else ev["targets"]
            tt = (rec.get("pooled") or ev).get("targets_tuned")
            tun = s.get("frac_tuned")
            want = TARGETS.get(cond, TARGETS["quiet"])
            fc = ev.get("free_cores_mean")
            tab.add_row(cond, str(ev.get("usable_cores")), "-" if fc is None else f"{fc:.2f}",
                        str(len(ev["workloads"])), f"{s['frac_chosen']['mean']:.3f}", f"{s['frac_chosen']['min']:.3f}",
                        f">= {want[0]} / {want[1]}", f"{tun['mean']:.3f} / {tun['min']:.3f}" if tun else "-",
                        f"{s['frac_refined']['mean']:.3f} / {s['frac_refined']['min']:.3f}",
                        f"{s['frac_rule_1']['mean']:.3f} / {s['frac_rule_1']['min']:.3f}",
                        f"{s['frac_rule_cpu']['mean']:.3f} / {s['frac_rule_cpu']['min']:.3f}",
                        f"{_verdict(t)} / {_verdict(tt)}")
        console.print(tab)
    console.print(f"total {result['seconds']:.0f} s")


def _finite(x):
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def write_json(result: dict, path: Path, what: str = "JSON file") -> None:
    """Write ``result`` atomically (see :mod:`seer._io`; the folder must exist).

    Raises:
        seer.errors.OutputPathError: ``path`` is a symbolic link, a directory or
            in a missing folder.
    """
    from seer._io import atomic_write_text

    atomic_write_text(path, json.dumps(result, indent=2, default=_finite) + "\n", what=what)
