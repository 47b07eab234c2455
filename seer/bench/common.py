"""What every SEER benchmark shares: the machine's description, step rates, latency percentiles,
markdown tables and the JSON/markdown report files (and the flags that name them).

Used by ``seer bench`` (:mod:`seer.bench.harness`) and by every script in
``bench/``, so that recorded runs describe the machine and summarise
latencies the same way.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import subprocess
import time
from typing import Any, Iterable, Sequence

import numpy as np

from seer._host import usable_cores
from seer._io import atomic_write_text
from seer._version import __version__

__all__ = ["machine_info", "parallel_capacity", "steps_per_s", "latency_stats", "markdown_table", "add_report_args",
           "write_report", "rounds_main"]


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_bytes() -> int | None:
    try:
        with open("/proc/meminfo") as f:
            return int(f.readline().split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None


def _git_commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip()
    except OSError:
        return ""


def machine_info(packages: Sequence[str] = ()) -> dict:
    """A description of this machine, recorded with every benchmark run.

    Args:
        packages: Distributions whose versions to add, each under its name
            with dashes as underscores and together in ``packages`` (None
            when not installed).

    Returns:
        ``cpu`` (model), ``usable_cores`` (affinity-aware), ``logical_cpus``,
        ``memory_bytes``, ``kernel``, ``platform``, ``python``, ``numpy``,
        ``cffi``, ``seer``, ``git_commit``, ``loadavg_at_start`` and the
        package versions (plus the older aliases ``cpu_model``,
        ``usable_cpus`` and ``nproc``).
    """
    import cffi

    cpu, cores = _cpu_model(), usable_cores()
    info: dict[str, Any] = {
        "cpu": cpu, "cpu_model": cpu, "usable_cores": cores, "usable_cpus": cores, "nproc": os.cpu_count(),
        "logical_cpus": os.cpu_count(), "memory_bytes": _memory_bytes(), "python": platform.python_version(),
        "numpy": np.__version__, "cffi": cffi.__version__, "platform": platform.platform(),
        "kernel": platform.release(), "seer": __version__, "git_commit": _git_commit(),
        "loadavg_at_start": os.getloadavg(),
    }
    versions = {}
    for name in packages:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
        info[name.replace("-", "_")] = versions[name]
    info["packages"] = versions
    return info


def _spin(seconds, q):
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        n += 1
    q.put(n)


def parallel_capacity(seconds: float = 0.2) -> float:
    """How many cores two busy processes get right now, relative to one (2.0
    on an idle 2-core machine; less while other jobs run)."""
    import multiprocessing as mp

    ctx = mp.get_context("forkserver")
    q = ctx.Queue()
    p = ctx.Process(target=_spin, args=(seconds, q))
    p.start()
    one = q.get()
    p.join()
    ps = [ctx.Process(target=_spin, args=(seconds, q)) for _ in range(2)]
    for p in ps:
        p.start()
    two = q.get() + q.get()
    for p in ps:
        p.join()
    return two / max(one, 1)


def steps_per_s(step, inputs: Sequence[Any], steps: int, warmup: int = 1) -> float:
    """Calls per second of ``step(inputs[k % len(inputs)])`` for ``k`` in
    ``range(steps)``, timed after ``warmup`` untimed calls (from ``k = 0`` too).

    ``inputs`` are made before the clock starts (a few action batches, say),
    so the timed loop is the calls alone.
    """
    n = len(inputs)
    for k in range(warmup):
        step(inputs[k % n])
    t0 = time.perf_counter()
    for k in range(steps):
        step(inputs[k % n])
    return steps / (time.perf_counter() - t0)


def latency_stats(seconds: Iterable[float], unit: str = "ms") -> dict[str, float]:
    """Mean, p50 and p99 of latencies given in seconds, in ``unit`` (``"s"``, ``"ms"``, ``"us"``, ``"ns"``).

    Returns:
        ``{"mean_<unit>", "p50_<unit>", "p99_<unit>"}``; NaN for no latencies.

    Raises:
        ValueError: ``unit`` is none of the four.
    """
    scale = {"s": 1.0, "ms": 1e3, "us": 1e6, "ns": 1e9}.get(unit)
    if scale is None:
        raise ValueError(f"unit={unit!r} is unknown: expected one of 's', 'ms', 'us', 'ns'")
    lat = np.asarray(list(seconds) if not isinstance(seconds, np.ndarray) else seconds, np.float64)
    if not lat.size:
        return {f"mean_{unit}": float("nan"), f"p50_{unit}": float("nan"), f"p99_{unit}": float("nan")}
    return {f"mean_{unit}": float(lat.mean() * scale), f"p50_{unit}": float(np.percentile(lat, 50) * scale),
            f"p99_{unit}": float(np.percentile(lat, 99) * scale)}


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A GitHub markdown table: one header row, a separator, one line per row (cells via ``str``)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def report_header(doc: dict, title: str) -> list[str]:
    """A report's first lines: its title, the command, the date, and the machine with the parallel
    capacity measured before and after (``doc``: ``command``, ``date``, ``machine`` from
    :func:`machine_info`, ``capacity_before``, ``capacity_after``)."""
    info = doc["machine"]
    return [f"# {title}", "", f"Command: `{doc['command']}`  ", f"Date: {doc['date']}  ",
            f"Machine: {info['cpu']}, {info['usable_cores']} usable cores, {info['platform']}, Python "
            f"{info['python']}, numpy {info['numpy']}, commit {info['git_commit']}; load average at start "
            f"{info['loadavg_at_start']}; parallel capacity before {doc['capacity_before']:.2f}, after "
            f"{doc['capacity_after']:.2f}", ""]


def add_report_args(parser) -> None:
    """``--json`` and ``--md`` on an argparse parser: the files :func:`write_report` writes."""
    parser.add_argument("--json", help="write the run as JSON here")
    parser.add_argument("--md", help="write the markdown report here")


def write_report(doc: Any, json_path: str | os.PathLike | None = None, md_path: str | os.PathLike | None = None,
                 text: str | None = None, *, indent: int = 2, make_dirs: bool = False) -> None:
    """Write a run's JSON and its markdown text, each atomically (never through a symlink).

    Args:
        doc: The run, JSON-able.
        json_path: Where the JSON goes (None: not written).
        md_path: Where ``text`` goes (None: not written).
        text: The markdown report.
        indent: JSON indentation.
        make_dirs: Create missing folders of the two paths first (the
            scripts in ``bench/`` do, for ``bench/results/``); otherwise a
            missing folder is an error.
    """
    if make_dirs:
        for path in (json_path, md_path if text is not None else None):
            if path:
                os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    if json_path:
        atomic_write_text(json_path, json.dumps(doc, indent=indent), what="JSON report")
    if md_path and text is not None:
        atomic_write_text(md_path, text, what="markdown report")


def rerender(out_dir: str, stem: str, markdown) -> dict:
    """A script's ``--render``: rewrite ``stem``.md in ``out_dir`` from its ``stem``.json."""
    with open(os.path.join(out_dir, f"{stem}.json")) as f:
        res = json.load(f)
    write_report(res, None, os.path.join(out_dir, f"{stem}.md"), markdown(res) + "\n")
    return res


def rounds_main(description: str, run, markdown, *, rounds: int, argv: Sequence[str] | None = None) -> Any:
    """The command line of a benchmark measured in rounds: ``--rounds`` (default
    ``rounds``), ``--json`` and ``--md``.  ``run(rounds)`` measures and returns
    the run, ``markdown(run)`` its report, which is printed and written
    (:func:`write_report`); returns the run."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--rounds", type=int, default=rounds)
    add_report_args(ap)
    args = ap.parse_args(argv)
    doc = run(args.rounds)
    text = markdown(doc)
    print(text)
    write_report(doc, args.json, args.md, text)
    return doc
