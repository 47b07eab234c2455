"""Train the STPA model that ships in ``seer/data/`` and record its evaluation.

    python bench/train_stpa.py                 # sweep, train, evaluate; replace the shipped files
    python bench/train_stpa.py --append        # add a new sweep to the shipped dataset, retrain, evaluate
    python bench/train_stpa.py --from-dataset  # retrain from the shipped dataset only, then evaluate
    python bench/train_stpa.py --no-evaluate
    python bench/train_stpa.py --render-only   # rewrite the .md from the recorded .json

Writes:

* ``seer/data/stpa_dataset.jsonl.gz``: every measurement (one JSON line per
  workload and pool size, with the workload's features);
* ``seer/data/stpa_model.joblib`` and ``seer/data/stpa_model.json`` (what it
  was trained on, the model families compared on held-out workloads);
* ``bench/results/stpa_eval.json`` and ``.md``: the choices on held-out
  workloads (other random draws, env sizes not trained on) against the best
  pool size measured in the same run, and the fixed rules.

The sweep is the one ``seer tune`` runs (:mod:`seer.stpa.tune`), larger.
"""

from __future__ import annotations

import argparse
import gzip
import shutil
import sys
import tempfile
from pathlib import Path

from seer.stpa import selector as S
from seer.stpa import tune

ROOT = Path(__file__).resolve().parent.parent

NOTES = [
    "Result vs the targets (3 evaluation runs of the shipped model, oracle re-measured in each): mean >= 0.95 "
    "met in every run (0.973 / 0.986 / 0.988; pooled 0.982) and better than both fixed rules in every run "
    "(1 worker pooled 0.898, os.cpu_count() pooled 0.753); min >= 0.85 MISSED in every run (0.545 / 0.621 / "
    "0.799; pooled per workload 0.750, 0.10 short). Every miss is the cautious kind: the model chose 1 worker "
    "where 2 measured 1.2-1.8x faster (the two workloads under 0.85 pooled are a mixed native/Python one and a "
    "small native one with fan-out 8; 2 workers were best for both in every run). No held-out choice of 2+ "
    "workers scored under 0.95 in the last run. Why: the training sweep ran at load averages of 2-3 (other "
    "engineers' benchmarks on the same 2 cores), when a second worker often gained nothing, so the model asks "
    "for a clear predicted gain before leaving 1 worker; and the probe that feeds the choice (~40 ms on 1 "
    "worker, then ~40 ms on 2) and the oracle measured seconds later see different load.",
    "An earlier run of the same pipeline (commit a36af25: a random forest on a 206-workload sweep, before the "
    "two-worker probe replay got its time budget) measured at load averages of 1.5-2.1 met all three targets "
    "on 44 held-out workloads: mean 0.997, min 0.889 (1 worker 0.863, os.cpu_count() 0.766). It was replaced "
    "because its features came from the older probe.",
    "The shipped dataset was measured by `python bench/train_stpa.py --workloads 240 --eval-workloads 40` "
    "(sweep id in every JSON line); `--from-dataset` refits the same model on it (training is deterministic) "
    "and re-runs the evaluation, which always measures its oracle anew.",
    "Measured on one shared 2-core VM while other engineers ran builds and tests on it: the load average "
    "(above) was often near or above 2, so every number carries scheduling noise. Each steps/s is the best of "
    "`reps` runs, pool sizes interleaved in a rotated order, and the oracle of a held-out workload is measured "
    "in the same run, right after the probe that made the choice.",
    "Held-out workloads are other random draws of the synthetic generator (another seed) and env sizes that "
    "are not in the training set (uav_swarm_v0 default/large; wireless_v0 medium/xlarge vs. uav 8/96/512 UAVs, "
    "wireless small/large/xlarge-200 in training).",
    "No 16-core machine was available in this session: the shipped model has seen only 2 usable cores "
    "(pool sizes 1..4). On other machines `seer tune` (or `--quick`) measures the machine and saves a model "
    "that workers=\"auto\" prefers to the shipped one.",
    "The model-family rows are grouped cross-validation on the training sweep itself (folds of whole "
    "workloads, each scored against its own measured best). Their minimum (0.726 for the chosen gradient-"
    "boosted trees) comes from small native workloads with ~30-50 us steps, where 2 workers won by 1.1-1.4x in "
    "the sweep but the probe, itself noisy at that scale, predicted a loss; choosing 1 there costs 10-27%, while "
    "over-choosing on the same workloads costs 80-90% (3-4 workers ran at 0.07-0.2x of one worker).",
]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workloads", type=int, default=None, help="synthetic training workloads (default: tune's full)")
    ap.add_argument("--eval-workloads", type=int, default=None, help="synthetic held-out workloads")
    ap.add_argument("--reps", type=int, default=None, help="repetitions per measurement (best kept)")
    ap.add_argument("--seed", type=int, default=1, help="workload sampler seed")
    ap.add_argument("--append", action="store_true", help="add to the shipped dataset instead of replacing it")
    ap.add_argument("--from-dataset", action="store_true", help="no sweep: retrain on the shipped dataset")
    ap.add_argument("--no-evaluate", action="store_true")
    ap.add_argument("--no-envs", action="store_true")
    ap.add_argument("--data-dir", type=Path, default=ROOT / "seer" / "data")
    ap.add_argument("--results", type=Path, default=ROOT / "bench" / "results" / "stpa_eval")
    ap.add_argument("--eval-repeats", type=int, default=3, help="evaluation runs (each re-measures the oracle)")
    ap.add_argument("--no-progress", action="store_true")
    ap.add_argument("--render-only", action="store_true", help="rewrite the .md from the recorded .json")
    args = ap.parse_args(argv)
    if args.render_only:
        import json

        result = json.loads(args.results.with_suffix(".json").read_text())
        md = tune.render_markdown(result, result["command"], title="STPA: shipped model, held-out evaluation",
                                  notes=NOTES)
        args.results.with_suffix(".md").write_text(md)
        print(f"wrote {args.results.with_suffix('.md')}")
        return 0

    data = args.data_dir
    data.mkdir(parents=True, exist_ok=True)
    shipped_ds = data / S.SHIPPED_DATASET_FILENAME
    model_path = data / S.MODEL_FILENAME
    with tempfile.TemporaryDirectory(prefix="seer-train-") as tmp:
        work_ds = Path(tmp) / "dataset.jsonl"
        if (args.append or args.from_dataset) and shipped_ds.is_file():
            with gzip.open(shipped_ds, "rt") as src, open(work_ds, "w") as dst:
                shutil.copyfileobj(src, dst)
        result = tune.run_tune(
            quick=False, cache=Path(tmp), do_sweep=not args.from_dataset, do_train=True,
            do_evaluate=not args.no_evaluate, n_train=args.workloads, n_eval=args.eval_workloads, reps=args.reps,
            seed=args.seed, envs=not args.no_envs, include_shipped=False, progress=not args.no_progress,
            dataset_path=work_ds, model_path=model_path, eval_repeats=args.eval_repeats)
        with open(work_ds, "rb") as src, gzip.open(shipped_ds, "wb", compresslevel=9) as dst:
            shutil.copyfileobj(src, dst)
    # The model's sidecar names the shipped dataset, not the temporary copy.
    result["model"]["meta"]["datasets"] = [f"seer/data/{S.SHIPPED_DATASET_FILENAME}"]
    model = S.load_model(model_path)
    model.meta["datasets"] = result["model"]["meta"]["datasets"]
    S.save_model(model, model_path)
    tune.write_sidecar(model, model_path)
    result["dataset"] = f"seer/data/{S.SHIPPED_DATASET_FILENAME}"
    result["model_path"] = f"seer/data/{S.MODEL_FILENAME}"
    if "evaluation" in result:
        result["evaluation"]["model"] = result["model_path"]
    tune.print_summary(result)
    command = "python bench/train_stpa.py " + " ".join(sys.argv[1:] if argv is None else argv)
    if not args.no_evaluate:
        args.results.parent.mkdir(parents=True, exist_ok=True)
        tune.write_json({**result, "command": command}, args.results.with_suffix(".json"))
        md = tune.render_markdown(result, command, title="STPA: shipped model, held-out evaluation", notes=NOTES)
        args.results.with_suffix(".md").write_text(md)
        print(f"wrote {args.results.with_suffix('.json')} and .md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
