"""`seer bench`'s output: the markdown table, the rich tables and the latency plot."""

from __future__ import annotations

import os

from seer._io import atomic_writer
from seer._text import markup_safe


def plot(doc: dict, path: str) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise RuntimeError("--plot needs matplotlib: pip install 'seer-marl[bench]'") from exc
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, domain, title in zip(axes, ("uav", "wireless"), ("UAV swarm control", "Wireless management")):
        rows = [r for r in doc["rows"] if r["domain"] == domain and r["steps"] > 0]
        for system in dict.fromkeys(r["system"].split(" (N=")[0].split(" (n_agents=")[0] for r in rows):
            pts = sorted((r["entities"], r["mean_ms"]) for r in rows if r["system"].startswith(system))
            ax.plot(*zip(*pts), marker="o", label=system)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("entities")
        ax.set_ylabel("mean step latency (ms)")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    with atomic_writer(path, "wb", what="--plot file") as f:  # atomic; never through a symlink
        fig.savefig(f, dpi=120, format=os.path.splitext(str(path))[1][1:].lower() or "png")
    plt.close(fig)


def markdown(doc: dict) -> str:
    """The step-latency rows and SEER's reductions as one markdown table."""
    red = {(d["domain"], d["scenario"], d["against"]): d for d in doc["reductions"]}
    lines = ["| domain | scenario | condition | entities | system | model | mean ms | p50 ms | p99 ms | "
             "SEER (auto) reduction |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in doc["rows"]:
        head = (f"| {r['domain']} | {r['scenario']} | {r.get('condition', 'quiet')} | {r['entities']} | "
                f"{r['system']} | {r['kind']} | ")
        if not r["steps"]:
            lines.append(f"{head}- | - | - | skipped: {r['note']} |")
            continue
        d = red.get((r["domain"], r["scenario"], r["system"]))
        cut = f"{d['reduction_pct']:.1f}% ({d['speedup']:.1f}x)" if d else ""
        lines.append(f"{head}{r['mean_ms']:.3f} | {r['p50_ms']:.3f} | {r['p99_ms']:.3f} | {cut} |")
    return "\n".join(lines)


def auto_markdown(doc: dict) -> str:
    """Auto's choice beside the best fixed pool size of the same run, per scenario, and the warning lines."""
    checks = doc.get("auto_vs_fixed") or []
    if not checks:
        return ""
    lines = ["| domain | scenario | condition | auto chose | best fixed | auto mean ms | best fixed mean ms | "
             "auto / best throughput | fixed sizes (mean ms) |", "|---|---|---|---|---|---|---|---|---|"]
    for d in checks:
        fixed = ", ".join(f"{w}: {v:.3f}" for w, v in d["fixed_mean_ms"].items())
        lines.append(f"| {d['domain']} | {d['scenario']} | {d.get('condition', 'quiet')} | {d['auto_workers']} | "
                     f"{d['best_fixed_workers']} | "
                     f"{d['auto_mean_ms']:.3f} | {d['best_fixed_mean_ms']:.3f} | {d['auto_frac_of_best']:.3f}"
                     f"{' (warning)' if d['warning'] else ''} | {fixed} |")
    return "\n".join(lines + [""] + warnings_lines(doc))


def document(doc: dict) -> str:
    """The whole run as a markdown page: machine and load, latencies, auto against the fixed sizes."""
    m = doc["machine"]
    load = lambda k: m.get(k) or {}  # noqa: E731
    a, b = load("load_at_start"), load("load_at_end")
    fc = lambda d: f"{d['free_cores']:.2f}" if d.get("free_cores") is not None else "?"  # noqa: E731
    return "\n".join([
        "# seer bench", "", f"Command: `{doc.get('command', 'seer bench')}`", "",
        f"Machine: {m.get('cpu')}, {m.get('usable_cores')} usable cores, Python {m.get('python')}, numpy "
        f"{m.get('numpy')}, {m.get('platform')}, seer {m.get('seer')} (commit {m.get('git_commit') or '?'}); "
        f"load average {a.get('loadavg') or m.get('loadavg_at_start')} at the start, {b.get('loadavg')} at the end; "
        f"free cores (seer.stpa probe) {fc(a)} at the start, {fc(b)} at the end (shared machine).", "",
        "## Step latency", "", markdown(doc), "",
        "## workers=\"auto\" against the best fixed pool size (same run, interleaved rounds)", "",
        auto_markdown(doc) or "(no auto rows)", ""])


def warnings_lines(doc: dict) -> list[str]:
    """One line per scenario where auto lost to the best fixed size by more than 5%."""
    return [d["warning"] for d in doc.get("auto_vs_fixed") or [] if d["warning"]]


def table(doc: dict):
    from rich.table import Table

    t = Table(title="seer bench: step latency")
    for col in ("domain", "scenario", "condition", "entities", "system", "model", "workers", "mean ms", "p50 ms",
                "p99 ms", "steps", "note"):
        t.add_column(col)
    for r in doc["rows"]:
        num = (lambda v: f"{v:.3f}") if r["steps"] else (lambda v: "-")
        # The note may hold an exception's message: shown as text, never as markup.
        t.add_row(*map(markup_safe, (r["domain"], r["scenario"], r.get("condition", "quiet"), str(r["entities"]),
                                     r["system"], r["kind"],
                                     str(r["workers"] or "-"), num(r["mean_ms"]), num(r["p50_ms"]), num(r["p99_ms"]),
                                     str(r["steps"]), r["note"])))
    red = Table(title="latency reduction of SEER (auto), as the paper reports it")
    for col in ("domain", "scenario", "against", "reduction", "speedup", "paper"):
        red.add_column(col)
    for d in doc["reductions"]:
        red.add_row(*map(markup_safe, (d["domain"], d["scenario"], d["against"])), f"{d['reduction_pct']:.1f}%",
                    f"{d['speedup']:.2f}x",
                    f"{d['paper_reduction_pct']}%" + (" (up to)" if d["domain"] == "wireless" else ""))
    auto = Table(title="workers=\"auto\" against the best fixed pool size measured in the same run")
    for col in ("domain", "scenario", "condition", "auto chose", "best fixed", "auto mean ms", "best fixed mean ms",
                "auto / best throughput"):
        auto.add_column(col)
    for d in doc.get("auto_vs_fixed") or []:
        frac = f"{d['auto_frac_of_best']:.3f}"
        auto.add_row(markup_safe(d["domain"]), markup_safe(d["scenario"]), markup_safe(d.get("condition", "quiet")),
                     str(d["auto_workers"]), str(d["best_fixed_workers"]),
                     f"{d['auto_mean_ms']:.3f}", f"{d['best_fixed_mean_ms']:.3f}",
                     f"[bold red]{frac}[/]" if d["warning"] else frac)
    return t, red, auto
