"""Shared test setup: the repository root, and ``tests/`` on ``sys.path`` for ``toy_envs``.

The suite mirrors the package (``tests/core/`` for the modules directly
under ``seer/``, ``tests/stpa/``, ``tests/vector/``, ``tests/envs/``,
``tests/cli/``, ``tests/bench/``, ``tests/integrations/``).  There is no
``tests/__init__.py`` (with one, ``python -m pytest`` after a
plain install would import the source tree's ``seer``), so pytest imports
each test file by its basename: basenames are unique across the suite.
Loading this file puts ``tests/`` on ``sys.path``, which is how every test
file imports the shared toy envs (``from toy_envs import ToyEnv``).

Shared fixtures: ``ray_cluster`` (one local Ray node per test module that
asks for it: 2 CPUs, no dashboard, its files in a short temporary folder
removed at the end) and ``vector_backend`` (the keyword arguments of
``seer.vector.make`` for each backend, Ray where installed), over which the
vector contract tests run.
"""

import pathlib
import shutil
import tempfile

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


@pytest.fixture(scope="module")
def ray_cluster():
    """A local Ray node for the module (skips the test where Ray is not installed)."""
    ray = pytest.importorskip("ray")
    tmp = tempfile.mkdtemp(prefix="sray-", dir="/tmp")  # short: Ray's socket paths live under it
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RAY_AUTH_MODE", "disabled")
        mp.setenv("RAY_USAGE_STATS_ENABLED", "0")
        ray.init(num_cpus=2, include_dashboard=False, object_store_memory=96 << 20, _temp_dir=tmp,
                 log_to_driver=False)
        try:
            yield ray
        finally:
            ray.shutdown()
            shutil.rmtree(tmp, ignore_errors=True)


#: ``seer.vector.make`` keywords per backend: two workers, or two Ray shards.
VECTOR_BACKENDS = {
    "thread": dict(backend="thread", workers=2),
    "process": dict(backend="process", workers=2),
    "ray": dict(backend="ray", num_shards=2, num_cpus_per_shard=0.5),
}


@pytest.fixture(params=list(VECTOR_BACKENDS))
def vector_backend(request) -> dict:
    """The keywords that make a vector env on each backend (Ray: on ``ray_cluster``, where installed)."""
    if request.param == "ray":
        request.getfixturevalue("ray_cluster")
    return dict(VECTOR_BACKENDS[request.param])
