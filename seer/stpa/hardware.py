"""STPA's hardware features: the CPUs, cores, caches and memory this process may use.

:func:`hardware_features` reads ``/sys/devices/system/cpu`` and ``/proc``
(both roots are parameters, so tests can point them at a fake tree);
:func:`machine_features` is the same for this machine, read once per CPU affinity set.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from seer._host import usable_cpus

__all__ = ["hardware_features", "machine_features", "forget_machine_features"]


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _parse_cpu_list(text: str | None) -> list[int]:
    """``"0-3,8,10-11"`` -> ``[0, 1, 2, 3, 8, 10, 11]``."""
    out: list[int] = []
    if not text:
        return out
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            a, b = part.split("-", 1)
            out.extend(range(int(a), int(b) + 1))
        else:
            out.append(int(part))
    return out


def _parse_size_kb(text: str | None) -> float:
    """``"32K"`` / ``"1024K"`` / ``"32M"`` / ``"32768"`` (bytes) -> KiB."""
    if not text:
        return 0.0
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMG]?)i?B?\s*", text, re.IGNORECASE)
    if not m:
        return 0.0
    value, unit = float(m.group(1)), m.group(2).upper()
    return {"": value / 1024.0, "K": value, "M": value * 1024.0, "G": value * 1024.0 * 1024.0}[unit]



def _usable_cpus(affinity) -> list[int]:
    return sorted(int(c) for c in affinity) if affinity is not None else usable_cpus()


def hardware_features(sys_root: str | os.PathLike = "/sys", proc_root: str | os.PathLike = "/proc",
                      affinity=None) -> dict[str, Any]:
    """Hardware features of this machine.

    Args:
        sys_root: Root of the sysfs tree (``/sys``); the CPU topology and
            caches are read from ``<sys_root>/devices/system/cpu``.
        proc_root: Root of procfs (``/proc``), for the CPU model and memory.
        affinity: The CPUs this process may run on (default:
            ``os.sched_getaffinity(0)``).

    Returns:
        ``usable_cores`` (affinity-aware), ``logical_cores`` (online CPUs),
        ``physical_cores`` (distinct (package, core) among the usable CPUs),
        ``smt`` (usable logical per physical core), ``packages``,
        ``l1d_kb`` / ``l2_kb`` / ``l3_kb`` (per instance, of the first usable
        CPU), ``l3_total_kb`` (distinct L3 instances the usable CPUs reach),
        ``mem_gb``, and ``cpu_model`` (a string).  Whatever cannot be read is
        estimated (cores) or 0 (sizes).
    """
    cpu_dir = Path(sys_root) / "devices" / "system" / "cpu"
    usable = _usable_cpus(affinity)
    online = _parse_cpu_list(_read(cpu_dir / "online"))
    if not online:
        try:
            online = sorted(int(p.name[3:]) for p in cpu_dir.iterdir() if re.fullmatch(r"cpu\d+", p.name))
        except OSError:
            online = []
    logical = len(online) or (os.cpu_count() or len(usable) or 1)

    cores, packages = set(), set()
    for c in usable:
        topo = cpu_dir / f"cpu{c}" / "topology"
        core, pkg = _read(topo / "core_id"), _read(topo / "physical_package_id")
        if core is None:
            cores.add(("cpu", c))  # no topology: count the CPU as its own core
            packages.add("0")
            continue
        pkg = pkg if pkg is not None else "0"
        cores.add((pkg, core))
        packages.add(pkg)
    physical = max(1, len(cores))

    l1d = l2 = l3 = 0.0
    l3_instances: set[str] = set()
    l3_total = 0.0
    for i, c in enumerate(usable):
        cache_dir = cpu_dir / f"cpu{c}" / "cache"
        try:
            indices = sorted(p for p in cache_dir.iterdir() if p.name.startswith("index"))
        except OSError:
            continue
        for idx in indices:
            level, kind = _read(idx / "level"), (_read(idx / "type") or "").lower()
            size = _parse_size_kb(_read(idx / "size"))
            if i == 0:
                if level == "1" and kind in ("data", "unified"):
                    l1d = size
                elif level == "2":
                    l2 = size
                elif level == "3":
                    l3 = size
            if level == "3":
                key = _read(idx / "shared_cpu_list") or _read(idx / "id") or f"cpu{c}"
                if key not in l3_instances:
                    l3_instances.add(key)
                    l3_total += size

    model = "unknown"
    cpuinfo = _read(Path(proc_root) / "cpuinfo") or ""
    for line in cpuinfo.splitlines():
        if line.lower().startswith(("model name", "hardware", "cpu model")) and ":" in line:
            model = line.split(":", 1)[1].strip()
            break
    mem_gb = 0.0
    meminfo = _read(Path(proc_root) / "meminfo") or ""
    m = re.search(r"^MemTotal:\s+(\d+)\s*kB", meminfo, re.MULTILINE)
    if m:
        mem_gb = int(m.group(1)) / (1024.0 * 1024.0)

    return {
        "usable_cores": len(usable) or 1,
        "logical_cores": int(logical),
        "physical_cores": int(physical),
        "smt": (len(usable) or 1) / physical,
        "packages": max(1, len(packages)),
        "l1d_kb": l1d,
        "l2_kb": l2,
        "l3_kb": l3,
        "l3_total_kb": l3_total,
        "mem_gb": mem_gb,
        "cpu_model": model,
    }



_machine: dict[tuple[int, ...], dict] = {}


def machine_features() -> dict:
    """:func:`hardware_features` of this machine, as this thread's CPU affinity
    now allows (read once per affinity set; a copy): narrowing the affinity
    (``taskset``, :func:`seer.stpa.load.restricted_affinity`) is a smaller machine."""
    key = tuple(usable_cpus())
    hit = _machine.get(key)
    if hit is None:
        hit = _machine[key] = hardware_features(affinity=key)
    return dict(hit)


def forget_machine_features() -> None:
    """Read the hardware again on the next :func:`machine_features` (see ``seer.stpa.clear_cache``)."""
    _machine.clear()
