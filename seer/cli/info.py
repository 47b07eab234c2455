"""``seer info``: this machine, the STPA model, the registered envs and what ``workers="auto"`` picks."""

from __future__ import annotations

import math
import os
import sys
import warnings

from seer import registry, stpa
from seer._text import markup_safe
from seer._version import __version__
from seer.cli.args import OUTPUT_HELP, existing_dir_arg, json_target_arg, write_output
from seer.errors import EnvLoadError, SeerError

#: Registered envs whose choice `seer info` shows next to the synthetic workloads.
INFO_ENVS = (("uav_swarm_v0", {"scenario": "large"}), ("wireless_v0", {"scenario": "large"}))

HELP = "machine, the STPA model, the registered envs and what workers=\"auto\" picks"
DESCRIPTION = ("Show this machine's hardware features, which STPA model is loaded, the "
               "registered envs (entry point group seer.envs), and what workers=\"auto\" "
               "picks for a few workloads.")


def _info_workloads():
    from seer.stpa.workloads import MixedSyntheticModel
    from seer.synthetic import PythonSyntheticModel, SyntheticModel

    yield "synthetic native, 32 entities, ~0.1 us/event", lambda: SyntheticModel(32, fanout=1, work=100, period=0.1, delay=0.1)
    yield "synthetic native, 1024 entities, ~5 us/event", lambda: SyntheticModel(1024, fanout=2, work=5000, period=0.1, delay=0.1)
    yield "synthetic Python handlers, 512 entities", lambda: PythonSyntheticModel(512, fanout=1, work=2, period=0.1, delay=0.1)
    yield "synthetic mixed (native ticks, Python messages), 256 entities", lambda: MixedSyntheticModel(
        256, fanout=2, work=2000, period=0.1, delay=0.1, py_work=1)


def _selection_row(name: str, sel) -> dict:
    return {"workload": name, "workers": sel.workers, "source": sel.source, "probe_ms": sel.probe_s * 1e3,
            "speedup": {str(w): math.exp(s) for w, s in sel.scores.items()}, "reason": sel.reason}


def _auto_choices() -> list[dict]:
    """What workers="auto" picks for the example workloads (runs their probes)."""
    rows = []
    for name, make in _info_workloads():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rows.append(_selection_row(name, stpa.select_for_model(make(), use_cache=False)))
    for env_name, kwargs in INFO_ENVS:
        label = f"{env_name} {kwargs}"
        try:
            mod = registry.load(env_name)
            with warnings.catch_warnings(), stpa.capture() as rec:
                warnings.simplefilter("ignore")
                env = mod.parallel_env(workers="auto", **kwargs)
                env.close()
        except SeerError as exc:  # not registered, or it does not import: say which
            rows.append({"workload": label, "workers": None, "source": "unavailable", "reason": str(exc)})
            continue
        except Exception as exc:  # an env that fails to build is skipped, not fatal to `seer info`
            rows.append({"workload": label, "workers": None, "source": "unavailable",
                         "reason": f"{type(exc).__name__}: {exc}"})
            continue
        if rec:
            rows.append(_selection_row(label, rec[-1]))
    return rows


def env_registry_rows() -> list[dict]:
    """The registered envs (``seer.envs`` entry points), each loaded to read its scenarios.

    Example:
        >>> [r["name"] for r in env_registry_rows()]
        ['uav_swarm_v0', 'wireless_v0']
    """
    rows = []
    for name, entry in registry.available().items():
        row = {"name": name, "module": entry.module, "distribution": entry.distribution,
               "version": entry.version, "scenarios": None, "error": None}
        try:
            row["scenarios"] = registry.scenarios(entry.load())
        except EnvLoadError as exc:  # listed with the reason: a broken plug-in must not hide the others
            row["error"] = str(exc)
        rows.append(row)
    return rows


def ignored_env_rows() -> list[dict]:
    """The entry points the registry left out (one of SEER's own env ids taken, or a name registered twice)."""
    return [{"name": e.name, "module": e.module, "distribution": e.distribution, "version": e.version,
             "error": why} for e, why in registry.ignored()]


def info_doc(sys_root=None, workloads: bool = True) -> dict:
    """Everything ``seer info`` shows, as JSON-ready data."""
    hw = stpa.hardware_features(sys_root or "/sys")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model, reasons = stpa.active_model()
    # the load the choices below are made under (the probe's own measurement of it)
    load = {"free_cores": stpa.free_cores(), "cpu_pressure": stpa.cpu_pressure(),
            "loadavg": list(os.getloadavg()) if hasattr(os, "getloadavg") else None}
    doc = {"seer": __version__, "python": sys.version.split()[0], "cpu_count": os.cpu_count(),
           "hardware": hw, "load": load,
           "model_search_path": [{"label": label, "path": str(path), "exists": path.is_file()}
                                 for label, path in stpa.model_search_path()],
           "model": None, "model_unusable": list(reasons), "warnings": [str(w.message) for w in caught],
           "envs": env_registry_rows(), "envs_ignored": ignored_env_rows(),
           "auto": _auto_choices() if workloads else None}
    if model is not None:
        meta = model.meta
        doc["model"] = {"path": str(model.path), "family": model.family, "trained": meta.get("trained"),
                        "rows": meta.get("rows"), "workloads": meta.get("workloads"),
                        "cores_seen": meta.get("cores_seen") or [], "machines": meta.get("machines"),
                        "sklearn": meta.get("sklearn")}
    return doc


def _print_info(doc: dict, console) -> None:
    """The tables of ``seer info``: every value that comes from a file, a path or a plug-in is shown
    through :func:`~seer._text.markup_safe` (as text, control characters escaped), never as markup."""
    from rich.table import Table

    t = markup_safe
    hw = doc["hardware"]
    console.print(f"[bold]SEER {t(doc['seer'])}[/bold]  Python {t(doc['python'])}  "
                  f"os.cpu_count()={t(doc['cpu_count'])}")
    tab = Table(title="hardware features")
    tab.add_column("feature")
    tab.add_column("value")
    for k, v in hw.items():
        tab.add_row(t(k), f"{v:.3g}" if isinstance(v, float) else t(v))
    console.print(tab)
    ld = doc.get("load") or {}
    pressure = ld.get("cpu_pressure")
    console.print(f"[bold]load now[/bold]: free cores {ld.get('free_cores', float('nan')):.2f} of "
                  f"{t(hw['usable_cores'])} usable (what threads get, measured); load average {t(ld.get('loadavg'))}"
                  + (f"; CPU pressure {pressure:.0%} (10 s)" if pressure is not None else ""))

    console.print("[bold]STPA model search path[/bold] (first usable wins):")
    for p in doc["model_search_path"]:
        console.print(f"  {t(p['label'])}: {t(p['path'])} {'(exists)' if p['exists'] else '(missing)'}")
    for w in doc["warnings"]:
        console.print(f"  [yellow]warning:[/yellow] {t(w)}")
    m = doc["model"]
    if m is None:
        console.print(f"[yellow]no usable STPA model[/yellow] ({t('; '.join(doc['model_unusable']))}): "
                      "workers=\"auto\" uses the heuristic; run `seer tune`")
    else:
        console.print(f"loaded: [bold]{t(m['path'])}[/bold] family={t(m['family'])} trained {t(m['trained'])} on "
                      f"{t(m['rows'])} measurements of {t(m['workloads'])} workloads, cores seen "
                      f"{t(m['cores_seen'])}, machines {t(m['machines'])}, scikit-learn {t(m['sklearn'])}")
        if m["cores_seen"] and hw["usable_cores"] not in m["cores_seen"]:
            console.print(f"[yellow]note:[/yellow] the model saw {t(m['cores_seen'])} usable cores, this machine "
                          f"has {t(hw['usable_cores'])}: run `seer tune` to learn this machine")

    tab = Table(title="registered envs (entry point group seer.envs)")
    for col in ("env", "module", "distribution", "scenarios"):
        tab.add_column(col)
    for e in doc["envs"]:
        dist = f"{e['distribution']} {e['version']}" if e["distribution"] else "-"
        scen = (f"[red]unavailable:[/red] {t(e['error'])}" if e["error"]
                else t(", ".join(e["scenarios"])) if e["scenarios"] is not None else "-")
        tab.add_row(t(e["name"]), t(e["module"]), t(dist), scen)
    for e in doc.get("envs_ignored") or []:
        dist = f"{e['distribution']} {e['version']}" if e["distribution"] else "-"
        tab.add_row(t(e["name"]), t(e["module"]), t(dist), f"[red]ignored:[/red] {t(e['error'])}")
    console.print(tab)
    if not doc["envs"]:
        console.print("[yellow]no env is registered[/yellow]: seer's own envs come from its package metadata; "
                      "reinstall seer-marl (pip install -e .)")

    if doc["auto"] is None:
        return
    tab = Table(title='what workers="auto" picks')
    for col in ("workload", "workers", "source", "probe ms", "predicted speedup by pool size"):
        tab.add_column(col)
    for r in doc["auto"]:
        if r["workers"] is None:
            tab.add_row(t(r["workload"]), "-", f"unavailable ({t(r['reason'])})", "", "")
            continue
        sc = ", ".join(f"{w}: {x:.2f}x" for w, x in r["speedup"].items()) or r["reason"]
        tab.add_row(t(r["workload"]), t(r["workers"]), t(r["source"]), f"{r['probe_ms']:.0f}", t(sc))
    console.print(tab)


def cmd_info(args) -> int:
    import json

    from rich.console import Console

    doc = info_doc(args.sys_root, workloads=not args.no_workloads)
    if args.json == "-":
        print(json.dumps(doc, indent=2, default=str))
        return 0
    console = Console(emoji=False)  # ":x:" in a path is text, not an emoji
    _print_info(doc, console)
    if args.json is not None:
        write_output(console, args.json, json.dumps(doc, indent=2, default=str) + "\n", "--json file")
    return 0


def add_info_parser(sub) -> None:
    p = sub.add_parser("info", help=HELP, description=DESCRIPTION)
    # No default through the type: a machine without /sys still runs `seer info`.
    p.add_argument("--sys-root", default=None, type=existing_dir_arg,
                   help="sysfs root to read the CPU topology from (default /sys)")
    p.add_argument("--no-workloads", action="store_true", help="skip the example choices (no probes run)")
    p.add_argument("--json", nargs="?", const="-", default=None, metavar="PATH", type=json_target_arg,
                   help=f"print everything as JSON instead of tables, or with PATH write it there; "
                        f"{OUTPUT_HELP}")
    p.set_defaults(func=cmd_info, parser=p)
