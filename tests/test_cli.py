"""The ``robotlab`` command as a user runs it: ``python -m robotlab ...`` in a fresh process."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import robotlab
from robotlab.errors import DependencyError
from robotlab.parallel.subinterpreter_backend import load_interpreters


def robotlab_cmd(*args: str, code: str | None = None) -> subprocess.CompletedProcess:
    """``python -m robotlab *args`` (or ``python -c code *args``), offline, output captured on pipes."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_ADMIN_KEY")}
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    command = [sys.executable, "-m", "robotlab"] if code is None else [sys.executable, "-c", code]
    return subprocess.run([*command, *args], capture_output=True, text=True, env=env, timeout=60, check=False)


def test_version():
    run = robotlab_cmd("--version")
    assert (run.returncode, run.stdout, run.stderr) == (0, f"robotlab {robotlab.__version__}\n", "")


def test_demo_offers_every_parallel_mode():
    run = robotlab_cmd("demo", "--help")
    assert run.returncode == 0
    assert "--parallel {thread,process,subinterpreter,ray}" in run.stdout
    assert "--progress, --no-progress" in run.stdout


def _has_subinterpreters() -> bool:
    try:
        load_interpreters()
    except DependencyError:
        return False
    return True


@pytest.mark.skipif(_has_subinterpreters(), reason="this Python runs subinterpreters (test_demo runs that demo)")
def test_subinterpreter_mode_without_subinterpreters_says_what_it_needs_and_exits_2():
    run = robotlab_cmd("demo", "--parallel", "subinterpreter")
    version = ".".join(map(str, sys.version_info[:3]))
    assert run.returncode == 2
    assert run.stdout == ""
    assert run.stderr == (f"robotlab demo: --parallel subinterpreter needs CPython 3.13+ with the subinterpreters "
                          f"extra (in a checkout: pip install -e '.[subinterpreters]'); this is Python {version}. "
                          "--parallel process runs everywhere\n")


def test_ray_mode_without_ray_says_what_it_needs_and_exits_2():
    code = "import sys; sys.modules['ray'] = None; from robotlab.cli import main; sys.exit(main(sys.argv[1:]))"
    run = robotlab_cmd("demo", "--parallel", "ray", code=code)
    assert (run.returncode, run.stdout) == (2, "")
    assert run.stderr == ("robotlab demo: --parallel ray needs Ray: the ray extra "
                          "(in a checkout: pip install -e '.[ray]')\n")


def test_demo_progress_shows_on_a_pipe_only_when_asked():
    quiet = robotlab_cmd("demo")
    assert quiet.returncode == 0 and quiet.stderr == ""
    shown = robotlab_cmd("demo", "--progress")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[0] == quiet.stdout.splitlines()[0]  # the summary stays on stdout
    lines = shown.stderr.splitlines()
    assert lines[0].endswith("] network 'support_triage': 5 tasks")
    assert lines[-1].endswith("] network 'support_triage' finished: 5/5 done: 5 ok")
    assert sum("check_order_" in line and ": ok " in line for line in lines) == 3


def test_a_failed_litellm_call_prints_nothing_of_litellm_s_own(capfd):
    robot = robotlab.build(name="r", model="foo")
    with pytest.raises(robotlab.InferenceError, match="unknown provider for model 'foo'"):
        robot.run("hi")
    # litellm prints its banners on stdout unless robotlab turned them off (`robotlab demo --model foo`:
    # test_demo.py checks the command's output too)
    out, err = capfd.readouterr()
    for banner in ("Provider List", "Give Feedback", "LiteLLM.Info"):
        assert banner not in out + err
