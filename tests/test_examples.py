"""Every example in examples/ runs offline and prints what its docstring promises."""

import subprocess
import sys
from pathlib import Path

import pytest

from tests.ray_cluster import child_ray_env

EXAMPLES = sorted((Path(__file__).parent.parent / "examples").glob("*.py"))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(path):
    # The Ray example starts a local Ray: so that it writes nothing to /tmp/ray or ~/.ray.
    with child_ray_env() as env:
        out = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=60, check=False,
                             env={**env, "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip()


def test_quickstart_output():
    path = next(p for p in EXAMPLES if p.name == "quickstart.py")
    out = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=60, check=False).stdout
    assert "robot: Order 42 has shipped." in out
    assert "hook: lookup_order({'order_id': '42'}) -> 'shipped'" in out
    assert "network: Good news: order 42 is on its way!" in out


def test_hooks_demo_output():
    path = next(p for p in EXAMPLES if p.name == "hooks_demo.py")
    out = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=60, check=False).stdout
    assert out.count("global: before_run request='hello hooks'") == 2
    assert "'timer': {'ms':" in out
