"""SEER's version string and distribution name, in a module of its own so that
any module can read them without importing the package façade
(``seer/__init__.py``); pyproject.toml reads the version from here."""

from __future__ import annotations

import importlib.metadata

__version__ = "0.1.0"

#: The name SEER is installed under (``pip install seer-marl``); the import
#: name is ``seer``, since the distribution ``seer`` on PyPI is another project.
DISTRIBUTION = "seer-marl"


def installed_distribution() -> importlib.metadata.Distribution | None:
    """The installed distribution that provides the ``seer`` package, or None.

    Looked up by the package it provides rather than by name, so that an
    install made before the rename (distribution ``seer``) is still found.
    """
    names = importlib.metadata.packages_distributions().get("seer") or []
    for name in [DISTRIBUTION, *names]:
        try:
            return importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None
