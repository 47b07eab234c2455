"""Shared test setup: the repository root, and ``tests/`` on ``sys.path`` for ``toy_envs``.

The suite mirrors the package (``tests/core/`` for the modules directly
under ``seer/``, ``tests/stpa/``, ``tests/vector/``, ``tests/envs/``,
``tests/cli/``, ``tests/bench/``, ``tests/integrations/``).  There is no
``tests/__init__.py`` (see DESIGN.md: with one, ``python -m pytest`` after a
plain install would import the source tree's ``seer``), so pytest imports
each test file by its basename: basenames are unique across the suite.
Loading this file puts ``tests/`` on ``sys.path``, which is how every test
file imports the shared toy envs (``from toy_envs import ToyEnv``).
"""

import pathlib

import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def repo_root() -> pathlib.Path:
    """The repository's root folder (csrc/, examples/, bench/ are below it)."""
    return REPO_ROOT


def pytest_collection_modifyitems(config, items):
    """RLlib's tests run last: after RLlib has started and stopped Ray in this
    process, a later ``ray.init`` here gets actors that never start (Ray
    2.5x), so the Ray backend's tests must come first."""
    items.sort(key=lambda item: "integrations/test_rllib" in item.nodeid.replace("\\", "/"))
