"""``seer tune``: measure pool sizes on this machine, grow the dataset, train
the selector, and evaluate it on held-out workloads.

Steps of :func:`run_tune`:

1. sweep pool sizes 1..max(2 x cores, 4) over the training workloads
   (:func:`seer.stpa.workloads.training_workloads`), best-of-``reps``
   steps/s each, with a rich progress bar; append one row per measurement
   (with the workload's features) to ``<cache>/stpa_dataset.jsonl``;
2. train on that dataset (plus the shipped one unless told not to),
   comparing model families on held-out workloads (grouped CV), and save
   the best to ``<cache>/stpa_model.json`` (a JSON model file, see
   :mod:`seer.stpa.selector`; the cache folder is created with mode 0700),
   which ``workers="auto"`` then prefers to the shipped model;
3. with ``evaluate``: on workloads that were not in training, measure every
   pool size (the oracle) in this same run and report the throughput of the
   model's choice as a fraction of the best, next to fixed rules.
"""

from __future__ import annotations

import json
import math
import os
import platform
import sys
import time
import uuid
from pathlib import Path

import numpy as np

from seer._version import __version__
from seer.stpa import train as T
from seer.stpa import workloads as W
from seer.stpa.hardware import machine_features
from seer.stpa.lookup import active_model, cache_dir, shipped_dataset_path
from seer.stpa.model import (
    DATASET_FILENAME,
    MODEL_FILENAME,
    StpaModel,
    candidate_sizes,
    choose_from_scores,
    save_model,
)
from seer.stpa.online import online_refine
from seer.stpa.selector import clear_cache, heuristic_workers

QUICK = dict(n_train=40, n_eval=12, reps=2, target_s=0.03)
FULL = dict(n_train=110, n_eval=36, reps=3, target_s=0.06)


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
        return self._p.add_task(description, total=total, what="")

    def advance(self, task, what: str = ""):
        if self._p is not None and task is not None:
            self._p.update(task, advance=1, what=what)

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
          progress: _Progress, log=print) -> list[dict]:
    """Measure ``workloads`` at every size; append rows to ``dataset``; return them."""
    rows = []
    for wl, (feats, best, _, _) in _measured(workloads, sizes, reps, target_s, progress, "sweep", log):
        new = [T.make_row(sweep_id, wl.name, wl.family, wl.params, w, sps, feats) for w, sps in sorted(best.items())]
        if dataset is not None:
            T.append_rows(dataset, new)
        rows += new
    return rows


def evaluate(workloads, model: StpaModel | None, sizes, *, reps: int, target_s: float, progress: _Progress,
             log=print) -> dict:
    """Choices on ``workloads`` against the best measured size, in this run."""
    cpu = os.cpu_count() or 1
    rule_cpu = min(cpu, max(sizes))
    per = []
    for wl, (feats, best, steps, run) in _measured(workloads, sizes, reps, target_s, progress, "evaluate", log):
        cores = int(feats.get("usable_cores", 1))
        if model is not None:
            scores = model.scores(feats, sizes, cores)
            chosen = choose_from_scores(scores)
        else:
            scores, chosen = {}, heuristic_workers(int(feats.get("entities", 1)),
                                                     float(feats.get("native_kind_share", 1)), cores)
        heur = heuristic_workers(int(feats.get("entities", 1)), float(feats.get("native_kind_share", 1)), cores)
        # the optional online check (seer.stpa.online_refine) from the
        # choice: neighbouring sizes timed on the workload itself, best of 2
        refined, tried = online_refine(lambda w: 1.0 / max(run(w), run(w)), workers=chosen,
                                       max_workers=max(sizes), budget_s=2.0, details=True)
        oracle = max(best, key=best.get)
        top = best[oracle]
        per.append({
            "workload": wl.name, "family": wl.family, "params": wl.params, "steps_timed": steps,
            "steps_per_s": {str(w): v for w, v in sorted(best.items())}, "oracle": int(oracle),
            "chosen": int(chosen), "predicted_log_speedup": {str(w): v for w, v in scores.items()},
            "frac_chosen": best[chosen] / top, "frac_rule_1": best[1] / top,
            "frac_rule_cpu": best[rule_cpu] / top, "heuristic": int(heur), "frac_heuristic": best[heur] / top,
            "refined": int(refined), "refine_tried": sorted(int(w) for w in tried), "frac_refined": best[refined] / top,
        })
    summary = {}
    for key in FRACS:
        v = np.array([p[key] for p in per]) if per else np.array([np.nan])
        summary[key] = {"mean": float(np.mean(v)), "min": float(np.min(v))}
    return {"workloads": per, "summary": summary, "rule_cpu_workers": rule_cpu,
            "targets": targets(summary), "targets_refined": targets(summary, "frac_refined")}


FRACS = ("frac_chosen", "frac_refined", "frac_rule_1", "frac_rule_cpu", "frac_heuristic")


def targets(summary: dict, key: str = "frac_chosen") -> dict:
    """The issue's targets for one rule (the model's choice, or with the online check)."""
    s = summary[key]
    ok_mean, ok_min = s["mean"] >= 0.95, s["min"] >= 0.85
    beats = s["mean"] > summary["frac_rule_1"]["mean"] and s["mean"] > summary["frac_rule_cpu"]["mean"]
    return {"mean_ge_0.95": ok_mean, "min_ge_0.85": ok_min, "beats_fixed_rules": beats,
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
    out = {"runs": len(runs), "workloads": per, "summary": summary, "targets": targets(summary)}
    if "frac_refined" in summary:
        out["targets_refined"] = targets(summary, "frac_refined")
    return out


def run_tune(*, quick: bool = False, cache: Path | None = None, do_sweep: bool = True, do_train: bool = True,
             do_evaluate: bool = False, n_train: int | None = None, n_eval: int | None = None,
             reps: int | None = None, target_s: float | None = None, seed: int = 1, envs: bool = True,
             include_shipped: bool = True, sizes=None, progress: bool = True, console=None,
             dataset_path: Path | None = None, model_path: Path | None = None,
             families=("gbr", "rf", "ridge", "knn"), eval_repeats: int = 1, log=print) -> dict:
    """Sweep, train and (optionally) evaluate; see the module docstring."""
    cfg = dict(QUICK if quick else FULL)
    for k, v in (("n_train", n_train), ("n_eval", n_eval), ("reps", reps), ("target_s", target_s)):
        if v is not None:
            cfg[k] = v
    cache = Path(cache) if cache is not None else cache_dir()
    dataset_path = Path(dataset_path) if dataset_path is not None else cache / DATASET_FILENAME
    model_path = Path(model_path) if model_path is not None else cache / MODEL_FILENAME
    hw = machine_features()
    sizes = list(sizes) if sizes is not None else candidate_sizes(hw["usable_cores"])
    out: dict = {"machine": machine_description(), "sizes": sizes, "config": cfg, "quick": quick,
                 "dataset": str(dataset_path), "model_path": None}
    t0 = time.perf_counter()
    with _Progress(progress, console) as prog:
        if do_sweep:
            sweep_id = f"{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:6]}"
            wls = W.training_workloads(cfg["n_train"], seed=seed, envs=envs, quick=quick)
            rows = sweep(wls, sizes, reps=cfg["reps"], target_s=cfg["target_s"], dataset=dataset_path,
                         sweep_id=sweep_id, progress=prog, log=log)
            out["sweep"] = {"id": sweep_id, "workloads": len(wls), "rows": len(rows),
                            "seconds": time.perf_counter() - t0}
        model = None
        if do_train:
            paths = [dataset_path] + ([shipped_dataset_path()] if include_shipped else [])
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
            ev_wls = W.heldout_workloads(cfg["n_eval"], seed=seed + 1_000_002, envs=envs, quick=quick)
            runs = []
            for _ in range(max(1, int(eval_repeats))):
                load0 = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
                # At least 3 repetitions: the oracle is a max over noisy measurements.
                ev = evaluate(ev_wls, model, sizes, reps=max(3, cfg["reps"]), target_s=cfg["target_s"],
                              progress=prog, log=log)
                ev["loadavg"] = [load0, list(os.getloadavg()) if hasattr(os, "getloadavg") else None]
                ev["model"] = (model.path or str(model_path)) if model is not None else "heuristic"
                ev["model_family"] = model.family if model is not None else "heuristic"
                runs.append(ev)
            out["evaluation"] = runs[-1]
            if len(runs) > 1:
                out["evaluation_runs"] = [{"summary": r["summary"], "targets": r["targets"],
                                           "targets_refined": r.get("targets_refined"), "loadavg": r["loadavg"],
                                           "below_0.85": [(p["workload"], p["frac_chosen"], p.get("frac_refined"))
                                                          for p in r["workloads"]
                                                          if min(p["frac_chosen"], p.get("frac_refined", 1)) < 0.85]}
                                          for r in runs]
                out["evaluation_pooled"] = pool_runs(runs)
    out["seconds"] = time.perf_counter() - t0
    out["machine"]["loadavg_end"] = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
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
    lines = ["| rule | mean frac of oracle | min frac of oracle |", "|---|---|---|",
             f"| STPA ({ev.get('model_family', '?')}) | {s['frac_chosen']['mean']:.3f} | {s['frac_chosen']['min']:.3f} |"]
    if "frac_refined" in s:
        lines.append(f"| STPA + online check (online_refine from its choice) | {s['frac_refined']['mean']:.3f} | "
                     f"{s['frac_refined']['min']:.3f} |")
    lines += [
             f"| 1 worker | {s['frac_rule_1']['mean']:.3f} | {s['frac_rule_1']['min']:.3f} |",
             f"| os.cpu_count() = {ev['rule_cpu_workers']} | {s['frac_rule_cpu']['mean']:.3f} | "
             f"{s['frac_rule_cpu']['min']:.3f} |",
             f"| heuristic_workers (fallback) | {s['frac_heuristic']['mean']:.3f} | {s['frac_heuristic']['min']:.3f} |",
             "", "| workload | steps/s by pool size | oracle | chosen | frac | online check: tried -> kept | frac | "
             "1 worker | cpu_count |", "|---|---|---|---|---|---|---|---|---|"]
    for p in ev["workloads"]:
        sps = ", ".join(f"{w}: {v:.1f}" for w, v in p["steps_per_s"].items())
        ref = (f"{p['refine_tried']} -> {p['refined']} | {p['frac_refined']:.3f}" if "refined" in p else "- | -")
        lines.append(f"| {p['workload']} | {sps} | {p['oracle']} | {p['chosen']} | {p['frac_chosen']:.3f} | {ref} | "
                     f"{p['frac_rule_1']:.3f} | {p['frac_rule_cpu']:.3f} |")
    return "\n".join(lines)


def _verdict(t: dict | None) -> str:
    if not t:
        return "-"
    return "all met" if t["all"] else ", ".join(k for k, v in t.items() if not v and k != "all") + " missed"


def render_markdown(result: dict, command: str, title: str = "STPA evaluation", notes=()) -> str:
    m = result["machine"]
    ev = result.get("evaluation")
    parts = [f"# {title}", "", f"Command: `{command}`", "",
             f"Machine: {m.get('cpu_model')}, {m.get('usable_cores')} usable cores "
             f"({m.get('physical_cores')} physical, {m.get('logical_cores')} logical), "
             f"L2 {m.get('l2_kb', 0):.0f} KiB, L3 {m.get('l3_kb', 0):.0f} KiB, {m.get('mem_gb', 0):.1f} GiB, "
             f"Python {m.get('python')}, numpy {m.get('numpy')}, {m.get('platform')}; load average "
             f"{m.get('loadavg')} at the start, {m.get('loadavg_end')} at the end (shared machine).", "",
             f"Pool sizes swept: {result['sizes']}; config: {result['config']}; total {result['seconds']:.0f} s.", ""]
    if "model" in result:
        meta = result["model"]["meta"]
        parts += ["## Model families (grouped CV: each fold's workloads unseen in training)", "",
                  f"Dataset: {meta.get('rows')} measurements of {meta.get('workloads')} workloads "
                  f"({', '.join(meta.get('families', []))}).", "", comparison_table(meta), ""]
    if ev:
        t = ev["targets"]
        parts += ["## Held-out workloads (oracle measured in this run)" if not result.get("evaluation_runs") else
                  "## Held-out workloads, last run (oracle measured in that run)", "",
                  f"Model: {ev.get('model')}", "",
                  f"Targets: mean >= 0.95: {'met' if t['mean_ge_0.95'] else 'MISSED'}; "
                  f"min >= 0.85: {'met' if t['min_ge_0.85'] else 'MISSED'}; better than both fixed rules: "
                  f"{'met' if t['beats_fixed_rules'] else 'MISSED'}."]
        tr = ev.get("targets_refined")
        if tr:
            parts.append(f"With the online check: mean >= 0.95: {'met' if tr['mean_ge_0.95'] else 'MISSED'}; "
                         f"min >= 0.85: {'met' if tr['min_ge_0.85'] else 'MISSED'}; better than both fixed rules: "
                         f"{'met' if tr['beats_fixed_rules'] else 'MISSED'}.")
        parts += ["", evaluation_tables(ev), ""]
    if result.get("evaluation_runs"):
        parts += ["## Repeated evaluation runs (same held-out workloads, oracle re-measured each run)", "",
                  "| run | load average (start / end) | STPA mean | STPA min | + online check mean | + online check min | "
                  "1 worker mean | 1 worker min | cpu_count mean | cpu_count min | targets (STPA / + online check) |",
                  "|---|---|---|---|---|---|---|---|---|---|---|"]
        for i, r in enumerate(result["evaluation_runs"], 1):
            s, t = r["summary"], r["targets"]
            la = r.get("loadavg") or [None, None]
            fmt = lambda v: f"{v[0]:.2f}" if v else "?"  # noqa: E731
            rf = s.get("frac_refined", {"mean": float("nan"), "min": float("nan")})
            parts.append(f"| {i} | {fmt(la[0])} / {fmt(la[1])} | {s['frac_chosen']['mean']:.3f} | "
                         f"{s['frac_chosen']['min']:.3f} | {rf['mean']:.3f} | {rf['min']:.3f} | "
                         f"{s['frac_rule_1']['mean']:.3f} | {s['frac_rule_1']['min']:.3f} | "
                         f"{s['frac_rule_cpu']['mean']:.3f} | {s['frac_rule_cpu']['min']:.3f} | "
                         f"{_verdict(t)} / {_verdict(targets(s, 'frac_refined') if 'frac_refined' in s else None)} |")
        pooled = result["evaluation_pooled"]
        s, t = pooled["summary"], pooled["targets"]
        refined = ""
        if "frac_refined" in s:
            refined = (f"STPA + online check mean {s['frac_refined']['mean']:.3f}, min {s['frac_refined']['min']:.3f} "
                       f"(targets {_verdict(pooled.get('targets_refined'))}); ")
        parts += ["", f"Pooled over the {pooled['runs']} runs (per workload, the mean fraction of each run's oracle): "
                  f"STPA mean {s['frac_chosen']['mean']:.3f}, min {s['frac_chosen']['min']:.3f}; {refined}1 worker mean "
                  f"{s['frac_rule_1']['mean']:.3f}, min {s['frac_rule_1']['min']:.3f}; os.cpu_count() mean "
                  f"{s['frac_rule_cpu']['mean']:.3f}, min {s['frac_rule_cpu']['min']:.3f}; STPA targets "
                  f"{_verdict(t)}.",
                  "", "The per-workload table above is the last run.", ""]
    if notes:
        parts += ["## Notes", ""] + [f"- {n}" for n in notes] + [""]
    return "\n".join(parts)


def print_summary(result: dict, console=None) -> None:
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    if "sweep" in result:
        s = result["sweep"]
        console.print(f"sweep {s['id']}: {s['rows']} measurements of {s['workloads']} workloads in "
                      f"{s['seconds']:.0f} s -> {result['dataset']}")
    if "model" in result:
        meta = result["model"]["meta"]
        tab = Table(title=f"model families (grouped CV over {meta.get('workloads')} workloads)")
        for col in ("family", "mean frac of best", "min frac", "RMSE", "R^2"):
            tab.add_column(col)
        for fam, r in (meta.get("comparison") or {}).items():
            tab.add_row(fam + (" *" if fam == meta.get("chosen") else ""), f"{r['mean_frac']:.3f}",
                        f"{r['min_frac']:.3f}", f"{r['rmse']:.3f}", f"{r['r2']:.3f}")
        console.print(tab)
        console.print(f"saved {result['model']['family']} model -> {result['model_path']}")
    ev = result.get("evaluation")
    if ev:
        s = ev["summary"]
        tab = Table(title=f"held-out workloads ({len(ev['workloads'])}), fraction of the best measured pool size")
        for col in ("rule", "mean", "min"):
            tab.add_column(col)
        tab.add_row(f"STPA ({ev.get('model_family')})", f"{s['frac_chosen']['mean']:.3f}", f"{s['frac_chosen']['min']:.3f}")
        if "frac_refined" in s:
            tab.add_row("STPA + online check", f"{s['frac_refined']['mean']:.3f}", f"{s['frac_refined']['min']:.3f}")
        tab.add_row("1 worker", f"{s['frac_rule_1']['mean']:.3f}", f"{s['frac_rule_1']['min']:.3f}")
        tab.add_row(f"os.cpu_count() = {ev['rule_cpu_workers']}", f"{s['frac_rule_cpu']['mean']:.3f}",
                    f"{s['frac_rule_cpu']['min']:.3f}")
        tab.add_row("heuristic (fallback)", f"{s['frac_heuristic']['mean']:.3f}", f"{s['frac_heuristic']['min']:.3f}")
        console.print(tab)
        t = ev["targets"]
        console.print(f"targets: mean>=0.95 {'ok' if t['mean_ge_0.95'] else 'MISSED'}, "
                      f"min>=0.85 {'ok' if t['min_ge_0.85'] else 'MISSED'}, "
                      f"beats fixed rules {'ok' if t['beats_fixed_rules'] else 'MISSED'}; with the online check: "
                      f"{_verdict(ev.get('targets_refined'))}")
    console.print(f"total {result['seconds']:.0f} s")


def _finite(x):
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def write_json(result: dict, path: Path, what: str = "JSON file") -> None:
    """Write ``result`` atomically (see :mod:`seer._io`; the folder must exist).

    Raises:
        seer._io.OutputPathError: ``path`` is a symbolic link, a directory or
            in a missing folder.
    """
    from seer._io import atomic_write_text

    atomic_write_text(path, json.dumps(result, indent=2, default=_finite) + "\n", what=what)
