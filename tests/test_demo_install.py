"""``make demo`` installs what the demo needs, not the dev extra; ``make test`` still installs everything.

The demo's environment is built the way ``make demo`` builds it: the pip command
comes from ``make -n demo``, pip resolves it (``--dry-run --report``, robotlab
itself only: a few seconds), and the packages that come with robotlab's
requirements are followed through the metadata of the distributions installed
here (the test venv holds the dev extra, a superset of the demo's).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).parent.parent
DEV_ONLY = {"ray", "pytest", "ruff"}


def make_plan(target: str, **variables: str) -> list[str]:
    """The commands ``make -n target`` would run (with *variables* set on the command line)."""
    # Under `make test` this is a sub-make: without the parent's MAKEFLAGS / MAKELEVEL it plans as a user's would.
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "PYTHON")}
    run = subprocess.run(["make", "--no-print-directory", "-n", target,
                          *(f"{k}={v}" for k, v in variables.items())],
                         cwd=ROOT, capture_output=True, text=True, env=env, timeout=30, check=True)
    return run.stdout.splitlines()


def pip_install_args(plan: list[str]) -> list[str]:
    """The arguments of the plan's one ``pip install`` command."""
    (line,) = [line for line in plan if " -m pip install " in line]
    return shlex.split(line.split(" -m pip install ", 1)[1])


def wanted(requirements: list[str], extras: set[str]) -> list[Requirement]:
    """The requirements that apply to this Python with *extras* requested."""
    out = []
    for text in requirements:
        requirement = Requirement(text)
        marker = requirement.marker
        if marker is None or any(marker.evaluate({"extra": extra}) for extra in extras or {""}):
            out.append(requirement)
    return out


def environment(name: str, requires_dist: list[str], extras: set[str]) -> set[str]:
    """Every distribution installing *name* with *extras* brings in (canonical names, *name* included)."""
    name = canonicalize_name(name)
    found, seen = {name}, set()
    todo = [(name, frozenset(extras))]
    while todo:
        dist_name, dist_extras = todo.pop()
        if (dist_name, dist_extras) in seen:
            continue
        seen.add((dist_name, dist_extras))
        requires = requires_dist if dist_name == name else metadata.distribution(dist_name).requires or []
        for requirement in wanted(requires, set(dist_extras)):
            required = canonicalize_name(requirement.name)
            found.add(required)
            todo.append((required, frozenset(requirement.extras)))
    return found


def test_make_demo_installs_robotlab_without_the_dev_extra(tmp_path):
    venv = tmp_path / "demo-venv"
    plan = make_plan("demo", VENV_DEMO=str(venv))
    assert plan[0] == f"python3 -m venv {venv}"  # a venv of its own, not the test venv
    assert plan[-1] == f"{venv}/bin/robotlab demo"
    args = pip_install_args(plan)
    assert args[-2:] == ["-e", ".[rich]"]
    report = tmp_path / "report.json"
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    # pip builds robotlab's metadata in an isolated env: setuptools comes from the registry (or pip's cache).
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps", "--ignore-installed",
                          "--report", str(report), *args], cwd=ROOT, capture_output=True, text=True, env=env,
                         timeout=120, check=False)
    assert pip.returncode == 0, pip.stderr[-2000:]
    (robotlab,) = json.loads(report.read_text())["install"]
    assert robotlab["metadata"]["name"] == "robotlab"
    requires, extras = robotlab["metadata"]["requires_dist"], set(robotlab.get("requested_extras", ()))
    demo = environment("robotlab", requires, extras)
    assert {"litellm", "msgspec", "cloudpickle", "pydantic", "pydantic-settings", "rich"} <= demo
    assert not demo & DEV_ONLY, sorted(demo & DEV_ONLY)
    assert not demo & {"mcp", "redis", "hypothesis", "psutil"}
    # The same metadata with the dev extra, as make test installs it, has them all: the check can see them.
    assert environment("robotlab", requires, {"dev"}) >= DEV_ONLY


def test_make_test_still_installs_the_dev_extra(tmp_path):
    for target, variable in (("test-default", "VENV"), ("lint", "VENV")):
        plan = make_plan(target, **{variable: str(tmp_path / "venv")})
        assert pip_install_args(plan)[-2:] == ["-e", ".[dev]"], plan
