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
  workloads (other random draws of the synthetic generator; every scenario of
  every registered env, single and through seer.vector, each env decided by
  a model trained without any of its rows) against the best pool size
  measured in the same run, and the fixed rules, under three machine states:
  quiet, beside one busy process pinned to one core, and with the process
  restricted to one CPU.

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
from seer.cli.tune import vector_workloads
from seer.stpa import model as M
from seer.stpa import tune

ROOT = Path(__file__).resolve().parent.parent

STATIC_NOTES = [
    "Machine states: quiet is the machine as it is (this 2-core VM is shared with other engineers' builds and "
    "tests: its load average and the probe's free-cores reading are in every table, and 'quiet' is rarely idle); "
    "loaded adds one busy process pinned to one usable core, started before and stopped after the condition's "
    "measurements (seer.stpa.background_load); 1core restricts every thread of the evaluating process to one CPU "
    "(os.sched_setaffinity through seer.stpa.restricted_affinity).",
    "Held out: synthetic workloads are other random draws of the generator (another seed); every env workload "
    "(each scenario of uav_swarm_v0, wireless_v0 event-driven and full-buffer, consensus_v0, single and through "
    "seer.vector's thread backend) is decided by a model of the same family trained without any row of that env, "
    "so each env is held out as a whole. 'STPA, the model trained on every env' is the shipped model's own choice.",
    "Each steps/s is the throughput over `reps` interleaved repetitions (total steps over total time, pool sizes "
    "in a rotated order); the oracle is the best pool size measured in the same run, right after the probe that "
    "made the choice. On a loaded machine the best single repetition would reward the pool sizes whose timings "
    "scatter most, which is why the figure is the throughput over all of them.",
    "Hard rules of every choice (seer.stpa.allowed_sizes, choose_by_rules): never more workers than usable cores "
    "unless the probe measured that size at least 10% faster than every size within them; on a loaded machine "
    "the probe also times one thread above the usable cores (a pool of 3 on 2 cores, of 2 on 1 core), because "
    "under foreign load the scheduler shares a core per thread and one more thread can win back CPU time; never "
    "more than 2 workers beyond the probe's measured window parallelism (for machines larger than any in the "
    "dataset). In the 1core state the choice is 1 unless a pool of 2 was measured faster.",
    "Skipped: the xxlarge scenarios (uav_swarm_v0 65536 UAVs, wireless_v0 10000 UEs): a probe and twelve "
    "timings of them take minutes on 2 cores. No device machine was lent to this task: the dataset has 2-core "
    "measurements only (pool sizes 1..4).",
]


#: What the recorded run (bench/results/stpa_eval.json) showed, beyond its tables.
FINDINGS = [
    "Sizes: 200 synthetic training workloads, 15 single-env scenarios (uav_swarm_v0 small/default/large/xlarge; "
    "wireless_v0 small/medium/large/xlarge, event-driven and full-buffer; consensus_v0 small/default/large) and 4 "
    "seer.vector workloads (uav small x16, uav default x8, wireless medium x8, consensus default x8), all measured "
    "quiet (219), and half the synthetic ones plus every env workload again beside the busy process (119): 1352 "
    "measurements at pool sizes 1..4 in 1093 s (load average 1.3 -> 4.3 from the other engineers' jobs); the "
    "whole command, with training and the three-state evaluation of 59 held-out workloads, 1600 s.",
    "Where the quiet figures miss: model errors against the probe's own measurement on synthetic workloads "
    "(native-E52 and native-E64: the probe measured 1.6x at 2 workers and the model kept 1, 0.60 of the oracle; "
    "python-E15: the model chose 2 against a probe reading of 0.64x, 0.535). The sweep's labels are noisy (it ran "
    "at load average up to 4.3; grouped cross-validation: mean 0.956 against 0.935 for always one worker). "
    "Letting a large probe measurement overrule the model would have lifted this run's quiet figure to "
    "0.989-0.998 but lowered the loaded one and changed nothing in cross-validation on the sweep, so it is not "
    "shipped; the online check (seer.stpa.online_refine from the model's choice) reaches 0.999 / 0.965 quiet. "
    "Held-out envs alone: quiet 0.977 / 0.834, loaded 0.999 / 0.988, 1core 0.997 / 0.958.",
    "Where 1core misses: at load average 3-4.6, two threads on the one CPU won it a larger share of time "
    "(mixed-E1782: 1.20x, mixed-E235: 1.25x); the hard rule keeps one worker unless the probe measures two at "
    "least 10% faster, which its short timing did not.",
    "seer bench (full, recorded in bench/results/seer_bench.md, run right after with this model): auto chose 1 "
    "worker in every scenario and reached 0.984-1.023 of the best fixed pool size's throughput (target >= 0.95: "
    "met on every row, no warning line); 2 workers were 2.5-11x slower per step on this shared VM.",
]


def _pct(x: float) -> str:
    return f"{x:.3f}"


def result_notes(result: dict) -> list[str]:
    """What the run says against the issue's targets, by how much each misses."""
    out = []
    for cond, rec in (result.get("evaluations") or {}).items():
        ev = rec["last"]
        s = rec["pooled"]["summary"] if rec.get("pooled") else ev["summary"]
        want_mean, want_min = tune.TARGETS.get(cond, tune.TARGETS["quiet"])
        m, lo = s["frac_chosen"]["mean"], s["frac_chosen"]["min"]
        misses = [f"mean {_pct(m)} vs {want_mean} ({m - want_mean:+.3f})" if m < want_mean else "",
                  f"worst {_pct(lo)} vs {want_min} ({lo - want_min:+.3f})" if lo < want_min else ""]
        misses = [x for x in misses if x]
        worst = min(ev["workloads"], key=lambda p: p["frac_chosen"]) if ev["workloads"] else None
        la = ev.get("loadavg") or [None, None]
        line = (f"{cond}: STPA mean {_pct(m)}, worst {_pct(lo)} of the oracle (targets mean >= {want_mean}, worst >= "
                f"{want_min}): " + ("met" if not misses else "missed: " + "; ".join(misses)) +
                f"; 1 worker {_pct(s['frac_rule_1']['mean'])} / {_pct(s['frac_rule_1']['min'])}, os.cpu_count() "
                f"{_pct(s['frac_rule_cpu']['mean'])} / {_pct(s['frac_rule_cpu']['min'])}; free cores (probe mean) "
                f"{ev.get('free_cores_mean') or float('nan'):.2f} of {ev.get('usable_cores')}, load average "
                f"{la[0][0] if la[0] else '?':.2f} -> {la[1][0] if la[1] else '?':.2f}.")
        if worst is not None and misses:
            line += (f" Worst: {worst['workload']} (steps/s {', '.join(f'{w}: {v:.0f}' for w, v in worst['steps_per_s'].items())}; "
                     f"chose {worst['chosen']}, oracle {worst['oracle']}).")
        out.append(line)
    return out


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
    ap.add_argument("--eval-repeats", type=int, default=1,
                    help="evaluation runs per machine state (each re-measures the oracle)")
    ap.add_argument("--loaded-share", type=float, default=None,
                    help="share of the synthetic training workloads measured again beside a busy process")
    ap.add_argument("--conditions", default="quiet,loaded,1core",
                    help="machine states of the evaluation (quiet, loaded, 1core)")
    ap.add_argument("--no-vector", action="store_true", help="leave the seer.vector workloads out")
    ap.add_argument("--no-progress", action="store_true")
    ap.add_argument("--render-only", action="store_true", help="rewrite the .md from the recorded .json")
    args = ap.parse_args(argv)
    if args.render_only:
        import json

        result = json.loads(args.results.with_suffix(".json").read_text())
        md = tune.render_markdown(result, result["command"], title="STPA: shipped model, held-out evaluation",
                                  notes=result_notes(result) + FINDINGS + STATIC_NOTES)
        atomic_write_text(args.results.with_suffix(".md"), md)
        print(f"wrote {args.results.with_suffix('.md')}")
        return 0

    data = args.data_dir
    data.mkdir(parents=True, exist_ok=True)
    shipped_ds = data / M.SHIPPED_DATASET_FILENAME
    model_path = data / M.MODEL_FILENAME
    with tempfile.TemporaryDirectory(prefix="seer-train-") as tmp:
        work_ds = Path(tmp) / "dataset.jsonl"
        if (args.append or args.from_dataset) and shipped_ds.is_file():
            with gzip.open(shipped_ds, "rt") as src, open(work_ds, "w") as dst:
                shutil.copyfileobj(src, dst)
        extra = [] if args.no_envs or args.no_vector else vector_workloads()
        result = tune.run_tune(
            quick=False, cache=Path(tmp), do_sweep=not args.from_dataset, do_train=True,
            do_evaluate=not args.no_evaluate, n_train=args.workloads, n_eval=args.eval_workloads, reps=args.reps,
            seed=args.seed, envs=not args.no_envs, include_shipped=False, progress=not args.no_progress,
            dataset_path=work_ds, model_path=model_path, eval_repeats=args.eval_repeats, extra_workloads=extra,
            loaded_share=args.loaded_share, conditions=[c.strip() for c in args.conditions.split(",") if c.strip()])
        with open(work_ds, "rb") as src, atomic_writer(shipped_ds, "wb", what="shipped dataset") as raw, \
                gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9) as dst:
            shutil.copyfileobj(src, dst)
    # The model's metadata names the shipped dataset, not the temporary copy.
    result["model"]["meta"]["datasets"] = [f"seer/data/{M.SHIPPED_DATASET_FILENAME}"]
    model = M.load_model(model_path)
    model.meta["datasets"] = result["model"]["meta"]["datasets"]
    M.save_model(model, model_path)
    result["dataset"] = f"seer/data/{M.SHIPPED_DATASET_FILENAME}"
    result["model_path"] = f"seer/data/{M.MODEL_FILENAME}"
    for rec in (result.get("evaluations") or {}).values():
        rec["last"]["model"] = result["model_path"]
    tune.print_summary(result)
    command = "python bench/train_stpa.py " + " ".join(sys.argv[1:] if argv is None else argv)
    if not args.no_evaluate:
        args.results.parent.mkdir(parents=True, exist_ok=True)
        tune.write_json({**result, "command": command}, args.results.with_suffix(".json"))
        md = tune.render_markdown(result, command, title="STPA: shipped model, held-out evaluation",
                                  notes=result_notes(result) + FINDINGS + STATIC_NOTES)
        atomic_write_text(args.results.with_suffix(".md"), md)
        print(f"wrote {args.results.with_suffix('.json')} and .md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
