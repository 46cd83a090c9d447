"""Suite-wide fixtures. Offline always: litellm must never fetch its cost map."""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import pytest

import robotlab
from tests import backends
from tests.ray_cluster import ray_cluster  # noqa: F401  (one local Ray cluster per session, started on first use)


@pytest.fixture(autouse=True)
def _fresh_global_state():
    """Each test starts with no global hooks and no configure() overrides."""
    robotlab.clear_hooks()
    robotlab.reload_config()
    yield
    robotlab.clear_hooks()
    robotlab.reload_config()


@pytest.fixture(scope="module", params=list(backends.BACKENDS))
def backend(request: pytest.FixtureRequest) -> str:
    """Each WorkerPool backend of ``tests/backends.py`` in turn; one this interpreter lacks is skipped with
    its DependencyError (or fails, when its ``ROBOTLAB_REQUIRE_...`` variable is 1)."""
    return backends.prepared(request, request.param)


@pytest.fixture(params=list(backends.BACKENDS))
def mode(request: pytest.FixtureRequest) -> str:
    """Each network ``parallel_mode`` in turn (they are the backends' names), skipped or failed as ``backend`` is."""
    return backends.prepared(request, request.param)
