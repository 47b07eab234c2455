"""How fast ``workers="auto"`` follows load that arrives and leaves mid-run.

One workload (a ``bench_under_load`` workload: uav_swarm_v0 through
``ParallelEnv.step``, or the synthetic model through ``Runtime.step``) is built
with ``workers="auto"`` and stepped without pause for three phases of
``--phase-s`` seconds: quiet, beside ``--busy`` busy processes (what a learner
in another process does to the cores), quiet again.  The timeline records,
step by step, the pool size and the tuner's rounds; the table gives, per phase
change, the seconds until the tuner started a round and until the pool size
changed, the size each phase ended on, and each phase's steps per second.

Fixed pool sizes under the same conditions are in ``bench_under_load.py``;
this measures the following, not the choice.

    python bench/bench_tuner_follow.py --json bench/results/tuner_follow.json --md bench/results/tuner_follow.md
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import contextlib  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

DEFAULT_WORKLOADS = ("synth_0.5us", "synth_2us", "uav_xlarge")


def follow(name: str, phase_s: float, busy: int) -> dict:
    from bench_under_load import Workload

    from seer.stpa.load import background_load

    wl = Workload(name, "auto")
    tuner = wl.runtime.tuner
    timeline = []  # (seconds since start, phase, pool size, load alarms so far)
    phases = ("quiet", f"busy{busy}", "quiet again")
    t0 = time.perf_counter()
    with contextlib.ExitStack() as stack:
        for i, phase in enumerate(phases):
            if i == 1:
                stack.enter_context(background_load(busy))
            elif i == 2:
                stack.close()
            start = time.perf_counter()
            while time.perf_counter() - start < phase_s:
                wl.step()
                timeline.append((time.perf_counter() - t0, i, int(wl.runtime.workers),
                                  tuner.load_alarms if tuner else 0))
    out = {"workload": name, "phases": list(phases), "phase_s": phase_s, "tuner": repr(tuner),
           "history": list(tuner.history) if tuner else [], "alarms": getattr(tuner, "alarms", 0),
           "load_alarms": getattr(tuner, "load_alarms", 0), "changes": []}
    for i in range(len(phases)):
        rows = [r for r in timeline if r[1] == i]
        begin = rows[0][0]
        out.setdefault("per_phase", []).append({
            "phase": phases[i], "steps_per_s": len(rows) / max(rows[-1][0] - begin, 1e-9),
            "end_workers": rows[-1][2], "sizes": sorted({r[2] for r in rows})})
        if i == 0:
            continue
        before = [r for r in timeline if r[1] == i - 1][-1]
        moved = next((r[0] - begin for r in rows if r[2] != before[2]), None)
        alarm = next((r[0] - begin for r in rows if r[3] > before[3]), None)
        out["changes"].append({"to": phases[i], "size_before": before[2], "load_alarm_after_s": alarm,
                               "size_changed_after_s": moved, "size_after": rows[-1][2]})
    (wl.env if hasattr(wl, "env") else wl.runtime).close()
    return out


def markdown(res: dict) -> str:
    m = res["machine"]
    lines = ["# `workers=\"auto\"` following load that arrives and leaves", "",
             f"Machine: {m['cpu']}, nproc {m['nproc']}. Load before: `{m['uptime_before']}`; after: "
             f"`{m['uptime_after']}`. Each workload stepped without pause: {res['phase_s']} s quiet, "
             f"{res['phase_s']} s beside {res['busy']} busy process(es) (a child spinning a Python loop), "
             f"{res['phase_s']} s quiet again. Command: `{res['command']}`.", "",
             "| workload | change | size before | load alarm after s | size changed after s | size at phase end |",
             "|---|---|---|---|---|---|"]
    f = lambda v: "-" if v is None else f"{v:.2f}"  # noqa: E731
    for w in res["runs"]:
        for c in w["changes"]:
            lines.append(f"| {w['workload']} | -> {c['to']} | {c['size_before']} | {f(c['load_alarm_after_s'])} | "
                         f"{f(c['size_changed_after_s'])} | {c['size_after']} |")
    lines += ["", "Steps per second and the sizes used in each phase:", "",
              "| workload | phase | steps/s | sizes used | size at end |", "|---|---|---|---|---|"]
    for w in res["runs"]:
        for p in w["per_phase"]:
            lines.append(f"| {w['workload']} | {p['phase']} | {p['steps_per_s']:.1f} | "
                         f"{', '.join(map(str, p['sizes']))} | {p['end_workers']} |")
    lines += ["", "A `-` under \"size changed\" means the tuner compared and kept its size (the best one under the "
              "new conditions, by its interleaved visits); `bench_under_load.py` has the fixed sizes' times.", ""]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workloads", default=",".join(DEFAULT_WORKLOADS))
    ap.add_argument("--phase-s", type=float, default=4.0)
    ap.add_argument("--busy", type=int, default=1)
    ap.add_argument("--json")
    ap.add_argument("--md")
    args = ap.parse_args()
    up = lambda: subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()  # noqa: E731
    cpu = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")), "?")
    res = {"machine": {"cpu": cpu, "nproc": os.cpu_count(), "uptime_before": up()}, "phase_s": args.phase_s,
           "busy": args.busy, "command": " ".join(["python"] + sys.argv), "runs": []}
    for name in args.workloads.split(","):
        res["runs"].append(follow(name, args.phase_s, args.busy))
        print(json.dumps(res["runs"][-1]["changes"]), flush=True)
    res["machine"]["uptime_after"] = up()
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(res, fh, indent=1, default=str)
    text = markdown(res)
    if args.md:
        with open(args.md, "w") as fh:
            fh.write(text)
    print(text)


if __name__ == "__main__":
    main()
