"""Suite-wide fixtures. Offline always: litellm must never fetch its cost map."""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import pytest

import robotlab


@pytest.fixture(autouse=True)
def _fresh_global_state():
    """Each test starts with no global hooks and no configure() overrides."""
    robotlab.clear_hooks()
    robotlab.reload_config()
    yield
    robotlab.clear_hooks()
    robotlab.reload_config()
