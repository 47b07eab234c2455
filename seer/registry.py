"""The env registry: envs registered under the entry point group ``seer.envs``.

SEER's built-in envs and outside packages register the same way, in their
``pyproject.toml``::

    [project.entry-points."seer.envs"]
    my_env_v0 = "my_package.my_env_v0"

The entry point's name is the env id; its value names the env module.  The
module must have ``parallel_env(**kwargs)`` (a PettingZoo ParallelEnv
factory).  Optional module-level attributes that SEER's tools use:

- ``env(**kwargs)``: the AEC factory.
- ``SCENARIOS``: a mapping whose keys are the values ``scenario=`` accepts
  (``seer info`` lists them, ``seer trace --scenario`` checks them).
- ``make_traced(scenario=None, entities=None, workers=2)``: the env's core on
  a :class:`seer.Runtime` built with ``trace=True``, as a tuple
  ``(runtime, step, close)`` where ``step()`` advances one env step and
  returns the number of events it ran.  ``seer trace ENV`` uses it; without
  it, ``seer trace`` runs ``parallel_env()`` through
  ``seer.wrap(..., trace=True)`` (one event per step).

SEER's own env ids (those its own distribution registers, ``uav_swarm_v0``
and ``wireless_v0``) cannot be taken over: an outside distribution that
registers one of them is ignored with a warning naming it (and listed by
``seer info``); register an outside env under a name of its own.  A module
that fails to import in any way (an exception, ``SystemExit``), or whose
``SCENARIOS`` is malformed, is reported as :class:`~seer.errors.EnvLoadError`
for that env alone.

The CLI, STPA and the benchmarks find envs only through this module.
Nothing is imported until an env is loaded, so listing the registry is cheap
and a broken outside package cannot break ``import seer``.

Example:
    >>> from seer import registry
    >>> sorted(registry.available())[:2]
    ['uav_swarm_v0', 'wireless_v0']
    >>> uav = registry.load("uav_swarm_v0")
    >>> env = uav.parallel_env(scenario="small", workers=1)
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import threading
import warnings
from types import ModuleType
from typing import Any, Mapping

from seer._text import for_terminal
from seer._version import DISTRIBUTION, installed_distribution
from seer.errors import EnvLoadError, UnknownEnvError

__all__ = ["GROUP", "EnvEntry", "available", "ignored", "load", "scenarios"]

#: The entry point group envs register under.
GROUP = "seer.envs"

_lock = threading.Lock()
_cache: dict[str, "EnvEntry"] | None = None
_ignored: list[tuple["EnvEntry", str]] = []


@dataclasses.dataclass(frozen=True)
class EnvEntry:
    """One registered env, not imported yet.

    Attributes:
        name: The env id (the entry point's name), e.g. ``"uav_swarm_v0"``.
        module: What the entry point points at (its value), e.g.
            ``"seer.envs.uav_swarm_v0"``.
        distribution: The installed distribution that registered it (None
            for an entry point that belongs to none).
        version: That distribution's version (None likewise).
        entry_point: The :class:`importlib.metadata.EntryPoint` itself.

    Example:
        >>> entry = registry.available()["uav_swarm_v0"]
        >>> entry.module, entry.distribution
        ('seer.envs.uav_swarm_v0', 'seer-marl')
        >>> entry.load().parallel_env
        <function parallel_env at ...>
    """

    name: str
    module: str
    distribution: str | None
    version: str | None
    entry_point: importlib.metadata.EntryPoint = dataclasses.field(repr=False, compare=False)

    @property
    def origin(self) -> str:
        """``"NAME = MODULE"`` and its distribution, for error messages."""
        dist = f"distribution {self.distribution} {self.version}" if self.distribution else "no distribution"
        return f"entry point {self.name!r} = {self.module!r} of group {GROUP!r} ({dist})"

    def load(self) -> ModuleType:
        """Import the env module and check that it has ``parallel_env``.

        Raises:
            EnvLoadError: The module failed to import (the cause is chained),
                or it has no callable ``parallel_env``.
        """
        try:
            mod = self.entry_point.load()
            ok = callable(getattr(mod, "parallel_env", None))
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: B036  a plug-in's SystemExit must not end the caller's process
            raise EnvLoadError(f"{self.origin} failed to import: {type(exc).__name__}: {_short(exc)}",
                               env=self.name, name=self.module) from exc
        if not ok:
            raise EnvLoadError(f"{self.origin} is not an env module: {self.module!r} has no callable "
                               f"parallel_env(**kwargs) (expected a PettingZoo ParallelEnv factory)",
                               env=self.name, name=self.module)
        try:
            _scenario_names(mod)
        except ValueError as exc:
            raise EnvLoadError(f"{self.origin} is not a usable env module: {exc}", env=self.name,
                               name=self.module) from None
        return mod


def _short(exc: BaseException, limit: int = 500) -> str:
    try:
        text = str(exc)
    except Exception:  # a plug-in's exception whose __str__ itself fails
        text = f"<{type(exc).__name__} whose message cannot be read>"
    return text if len(text) <= limit else text[:limit] + "..."


def _scenario_names(module: Any) -> list[str] | None:
    """``module.SCENARIOS``'s names, checked: a mapping (or list) of non-empty strings.

    Raises:
        ValueError: it is of another type, its keys are not strings, or reading it fails.
    """
    try:
        table = getattr(module, "SCENARIOS", None)
        if table is None:
            return None
        name = getattr(module, "__name__", "?")
        if isinstance(table, (str, bytes)) or not isinstance(table, (Mapping, list, tuple)):
            raise ValueError(f"{name}.SCENARIOS is {type(table).__name__}: expected a mapping whose keys are "
                             f"the scenario names")
        names = list(table)
    except ValueError:
        raise
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: B036  e.g. a mapping whose iteration raises
        raise ValueError(f"reading {getattr(module, '__name__', '?')}.SCENARIOS failed: "
                         f"{type(exc).__name__}: {_short(exc)}") from None
    bad = [k for k in names if not isinstance(k, str) or not k]
    if bad:
        raise ValueError(f"{name}.SCENARIOS has keys {bad[:5]!r}: expected non-empty strings (scenario names)")
    return names


def _own_distribution():
    own = installed_distribution()
    return None if own is None else (own.metadata["Name"], str(own.locate_file("")))


def _is_installed(entry: "EnvEntry", own) -> bool:
    # Registered by the distribution that provides the running ``seer`` package.
    dist = getattr(entry.entry_point, "dist", None)
    if dist is None or own is None:
        return False
    return (dist.metadata["Name"], str(dist.locate_file(""))) == own


def _is_own(entry: "EnvEntry", own) -> bool:
    # SEER's distribution, or (stale metadata of an earlier install) an entry that loads SEER's own module.
    return entry.module == f"seer.envs.{entry.name}" or _is_installed(entry, own)


def _uninstall_hint(entry: "EnvEntry") -> str:
    return f" 'pip uninstall {entry.distribution}' removes it" if entry.distribution else ""


def _scan() -> tuple[dict[str, EnvEntry], list[tuple[EnvEntry, str]]]:
    entries = []
    for ep in importlib.metadata.entry_points(group=GROUP):
        dist = getattr(ep, "dist", None)
        name = dist.metadata["Name"] if dist is not None else None
        entries.append(EnvEntry(ep.name, ep.value, name, dist.version if dist is not None else None, ep))
    own = _own_distribution()
    ours: dict[str, EnvEntry] = {}
    # The installed distribution's own entries first, then (stale metadata of an
    # earlier install, e.g. under the pre-rename name) entries loading SEER's module;
    # within each, the first on sys.path, as importlib.metadata's lookup by name.
    for e in sorted((e for e in entries if _is_own(e, own)), key=lambda e: not _is_installed(e, own)):
        ours.setdefault(e.name, e)
    found: dict[str, EnvEntry] = dict(ours)
    ignored = []
    for entry in entries:
        if found.get(entry.name) is entry:
            continue
        if entry.name in ours and entry.module == ours[entry.name].module:
            why = (f"env {entry.name!r}: {entry.origin} registers SEER's own module too and is ignored "
                   f"(metadata of an earlier install?{_uninstall_hint(entry)})")
        elif entry.name in ours:
            # SEER's own env ids are not for outside packages to replace, whatever the order on sys.path.
            why = (f"env {entry.name!r} is SEER's own: {entry.origin} registers it too and is ignored "
                   f"(SEER's {ours[entry.name].module!r} is used); register the outside env under another name")
        elif entry.name in found:
            # The first on sys.path wins, as importlib.metadata's own lookup by name does;
            # saying so beats silently running another package's env.
            why = (f"env {entry.name!r} is registered twice: {found[entry.name].origin} is used, "
                   f"{entry.origin} is ignored")
        else:
            found[entry.name] = entry
            continue
        warnings.warn(for_terminal(why), RuntimeWarning, stacklevel=4)  # names from the outside package's metadata
        ignored.append((entry, why))
    return dict(sorted(found.items())), ignored


def available(refresh: bool = False) -> dict[str, EnvEntry]:
    """Every registered env, by name (sorted), without importing any.

    Args:
        refresh: Scan the entry points again instead of using the cached
            scan (after installing a package in this process, or in tests).

    Example:
        >>> {name: e.module for name, e in registry.available().items()}
        {'uav_swarm_v0': 'seer.envs.uav_swarm_v0', 'wireless_v0': 'seer.envs.wireless_v0'}
    """
    global _cache, _ignored
    with _lock:
        if _cache is None or refresh:
            _cache, _ignored = _scan()
        return dict(_cache)


def ignored() -> list[tuple[EnvEntry, str]]:
    """The entry points the last scan left out, each with why: outside ones
    registering one of SEER's own env ids, and later duplicates of a name."""
    available()
    with _lock:
        return list(_ignored)


def load(name: str) -> ModuleType:
    """The env module registered as ``name``.

    Args:
        name: An env id, e.g. ``"uav_swarm_v0"``.

    Raises:
        UnknownEnvError: ``name`` is not registered (the message lists what is).
        EnvLoadError: The module failed to import or has no ``parallel_env``.

    Example:
        >>> env = registry.load("wireless_v0").parallel_env(scenario="small")
    """
    entries = available()
    entry = entries.get(name) if isinstance(name, str) else None
    if entry is None:
        names = sorted(entries)
        hint = _metadata_hint()
        raise UnknownEnvError(f"env {name!r} is not registered: expected one of {names} (entry point group "
                              f"{GROUP!r}){hint}", name=name, available=names)
    return entry.load()


def _metadata_hint() -> str:
    """Why seer's own envs may be missing: entry points come from package
    metadata, and the copy found first on sys.path can be stale (an old
    ``seer.egg-info`` in the working directory shadows the installed one)."""
    dist = installed_distribution()
    if dist is None:
        return f"; seer's package metadata was not found: install {DISTRIBUTION} (e.g. pip install -e .)"
    if any(ep.group == GROUP for ep in dist.entry_points):
        return ""
    return (f"; the seer package metadata found first on sys.path (in {dist.locate_file('')}) registers no "
            f"env: it is stale, e.g. an old seer.egg-info there; reinstall {DISTRIBUTION} (pip install -e .)")


def scenarios(module: Any) -> list[str] | None:
    """The scenario names an env module declares (``SCENARIOS``), in its order, or None.

    Example:
        >>> registry.scenarios(registry.load("uav_swarm_v0"))
        ['small', 'default', 'large', 'xlarge']
    """
    try:
        return _scenario_names(module)
    except ValueError as exc:
        raise EnvLoadError(f"env module {getattr(module, '__name__', '?')!r} is not usable: {exc}",
                           name=getattr(module, "__name__", None)) from None
