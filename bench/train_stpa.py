"""Train the STPA model that ships in ``seer/data/`` and record its evaluation.

    python bench/train_stpa.py                 # sweep, train, evaluate; replace the shipped files
    python bench/train_stpa.py --append        # add a new sweep to the shipped dataset, retrain, evaluate
    python bench/train_stpa.py --from-dataset  # retrain from the shipped dataset only, then evaluate
    python bench/train_stpa.py --no-evaluate
    python bench/train_stpa.py --render-only   # rewrite the .md from the recorded .json

Writes:

* ``seer/data/stpa_dataset.jsonl.gz``: every measurement (one JSON line per
  workload and pool size, with the workload's features);
* ``seer/data/stpa_model.json``: the model as JSON (the fitted parameters, and
  what it was trained on, the model families compared on held-out workloads);
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

from seer._io import atomic_write_text, atomic_writer
from seer.stpa import selector as S
from seer.stpa import tune

ROOT = Path(__file__).resolve().parent.parent

NOTES = [
    "Result vs the targets (3 evaluation runs of the shipped model on 44 held-out workloads, the oracle "
    "re-measured in each): pooled over the runs (per workload, the mean fraction of each run's oracle) all three "
    "are met: mean 0.994 (>= 0.95), min 0.890 (>= 0.85), better than 1 worker (0.862) and os.cpu_count() "
    "(0.764). Per run the mean is 0.994 / 0.990 / 0.999 and the min 0.782 / 0.792 / 0.970: in runs 1 and 2 one "
    "workload each fell under 0.85. Both are close calls between 1 and 2 workers (2 measured 1.2-1.3x faster, "
    "e.g. mixed-E1721, 0.89 pooled) that the probe, itself ~0.2 s of measurement on a shared VM, can flip.",
    "The online check (seer.stpa.online_refine, started from the model's choice, neighbours timed on the "
    "workload itself with a 2 s budget) lifts the pooled result to mean 0.997, min 0.927 (per run 0.963 / "
    "0.781 / 0.981): it repairs the close calls above; its own measurement noise made one other workload miss "
    "in run 2.",
    "What changed since the previous model (which missed the min in every run: 0.545 / 0.621 / 0.799): the "
    "probe now runs 1, 2, 1, 2 workers on the same replayed steps and compares each size's best total, so one "
    "burst of foreign load no longer decides probe2_speedup; and the sweep ran on a quiet machine (load "
    "average 0.7-1.7, the sweep's own two workers included) instead of at 2-3.",
    "The shipped dataset was measured by `python bench/train_stpa.py --workloads 240 --eval-workloads 40 "
    "--eval-repeats 3` (sweep id in every JSON line); `--from-dataset` refits the same model on it (training is "
    "deterministic) and re-runs the evaluation, which always measures its oracle anew.",
    "Each steps/s is the best of `reps` runs, pool sizes interleaved in a rotated order, and the oracle of a "
    "held-out workload is measured in the same run, right after the probe that made the choice.",
    "Held-out workloads are other random draws of the synthetic generator (another seed) and env sizes that "
    "are not in the training set (uav_swarm_v0 default/large; wireless_v0 medium/xlarge vs. uav 8/96/512 UAVs, "
    "wireless small/large/xlarge-200 in training).",
    "No 16-core machine was available in this session: the shipped model has seen only 2 usable cores "
    "(pool sizes 1..4). On other machines `seer tune` (or `--quick`) measures the machine and saves a model "
    "that workers=\"auto\" prefers to the shipped one.",
    "The model-family rows are grouped cross-validation on the training sweep itself (folds of whole "
    "workloads, each scored against its own measured best); their minimum (~0.5) comes from sweep rows where "
    "foreign load hit one pool size's measurement (e.g. 2 workers measured no faster than 1 while 3 measured "
    "1.7x), which no model can fit.",
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
        atomic_write_text(args.results.with_suffix(".md"), md)
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
        with open(work_ds, "rb") as src, atomic_writer(shipped_ds, "wb", what="shipped dataset") as raw, \
                gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9) as dst:
            shutil.copyfileobj(src, dst)
    # The model's metadata names the shipped dataset, not the temporary copy.
    result["model"]["meta"]["datasets"] = [f"seer/data/{S.SHIPPED_DATASET_FILENAME}"]
    model = S.load_model(model_path)
    model.meta["datasets"] = result["model"]["meta"]["datasets"]
    S.save_model(model, model_path)
    legacy = data / S.LEGACY_MODEL_FILENAME
    if legacy.is_file():  # the pickled model of earlier SEER builds must not ship beside the JSON one
        legacy.unlink()
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
        atomic_write_text(args.results.with_suffix(".md"), md)
        print(f"wrote {args.results.with_suffix('.json')} and .md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
