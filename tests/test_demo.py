"""``robotlab demo --parallel MODE``: the demo network on workers, compared with thread mode (speed never asserted)."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from robotlab import cli
from robotlab.demo import EventLog, risk_score, run_demo
from robotlab.parallel import shutdown_pool
from tests import backends

SPEEDUP = re.compile(r"speedup measured: the same network took (\d+\.\d\d)s with parallel_mode='thread' and "
                     r"(\d+\.\d\d)s with parallel_mode='(\w+)': (\d+\.\d)x \(starting the workers")


@pytest.fixture(autouse=True, scope="module")
def _stop_pools():
    yield
    shutdown_pool()


def check_parallel_demo(out: str, mode: str) -> None:
    assert f"parallel_mode={mode!r}; each order check calls a 0.2 s lookup tool and a CPU-bound risk_score" in out
    found = SPEEDUP.search(out)
    assert found, out
    thread_s, parallel_s, shown_mode, ratio = found.groups()
    assert shown_mode == mode
    assert float(ratio) == pytest.approx(float(thread_s) / float(parallel_s), abs=0.1)
    for order_id in ("A-1001", "B-2002", "C-3003"):
        assert f"order {order_id}: " in out and re.search(rf"order {order_id}: \w+, risk \d+/100", out)
    # run, llm_generation and tool_call hooks fired in the workers; their tallies came back with the results.
    assert "hook events: llm_generation=8, network_run=1, run=5, task=5, tool_call=6" in out


def test_demo_on_worker_processes_prints_the_speedup_it_measured(capsys):
    assert cli.main(["demo", "--parallel", "process"]) == 0
    check_parallel_demo(capsys.readouterr().out, "process")


def test_demo_on_subinterpreters_prints_the_speedup_it_measured(capsys):
    backends.use("subinterpreter")
    assert run_demo(parallel_mode="subinterpreter") == 0
    check_parallel_demo(capsys.readouterr().out, "subinterpreter")


def test_thread_mode_demo_has_no_risk_scores_and_no_comparison(capsys):
    assert run_demo() == 0
    out = capsys.readouterr().out
    assert "risk" not in out and "speedup measured" not in out
    assert "hook events: llm_generation=8, network_run=1, run=5, task=5, tool_call=3" in out
    assert EventLog.counts == {"network_run": 1, "task": 5}  # the rest came back in the results' hook metadata


def test_risk_score_is_deterministic_per_order():
    scores = {order_id: risk_score().call({"order_id": order_id}) for order_id in ("A-1001", "B-2002")}
    assert all(re.fullmatch(r"risk \d+/100", s) for s in scores.values())
    assert risk_score().call({"order_id": "A-1001"}) == scores["A-1001"]


def test_parallel_network_example_output():
    example = Path(__file__).parent.parent / "examples" / "parallel_network.py"
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    run = subprocess.run([sys.executable, str(example)], capture_output=True, text=True, env=env, timeout=60,
                         check=False)
    assert run.returncode == 0, run.stderr
    parent = int(re.search(r"this process: pid (\d+)", run.stdout).group(1))
    assert "NetworkResult ok=True value='all scored'" in run.stdout
    for order_id in ("A-1001", "B-2002", "C-3003"):
        found = re.search(rf"{order_id}: worker=process answer='{order_id}: risk \d+/100 \(pid (\d+)\)' "
                          r"hook metadata=\{'pid': (\d+)\}", run.stdout)
        assert found, run.stdout
        tool_pid, hook_pid = map(int, found.groups())
        assert tool_pid == hook_pid != parent  # the tool and the run hook ran in the same worker, not here
    assert ("memory written from the workers: ['started.scorer_A-1001', 'started.scorer_B-2002', "
            "'started.scorer_C-3003']") in run.stdout
    assert "refused before the run: network 'refused': task 'bad' cannot run with parallel_mode='process'" in run.stdout
    assert "it is defined inside a function" in run.stdout


def run_cli(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_ADMIN_KEY")}
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    return subprocess.run([sys.executable, "-m", "robotlab", *args], capture_output=True, text=True, env=env,
                          timeout=120, check=False)


@pytest.mark.parametrize(("model", "cause"), [
    ("foo", "InferenceError: unknown provider for model 'foo': name it as 'provider/model'"),
    ("openai/gpt-4o-mini", "InferenceError: no API key for provider 'openai' (model 'openai/gpt-4o-mini'): "
                           "set OPENAI_API_KEY"),
])
def test_a_demo_whose_tasks_fail_exits_non_zero_and_says_why(model, cause):
    run = run_cli("demo", "--model", model)
    assert run.returncode == 1, run.stdout + run.stderr
    for task in ("intake", "check_order_1", "check_order_2", "check_order_3", "reply"):
        assert re.search(rf"^{task}\s+failed ", run.stdout, re.MULTILINE), run.stdout
    assert run.stderr.startswith("robotlab demo: 5 of 5 tasks failed\n  intake: " + cause), run.stderr
    assert "check_order_1:" not in run.stderr  # the dependants' UpstreamFailed only repeat the cause
    for banner in ("Provider List", "Give Feedback", "LiteLLM.Info"):  # litellm's own stdout noise
        assert banner not in run.stdout + run.stderr


def test_a_partly_failed_demo_exits_non_zero(monkeypatch, capsys):
    import robotlab.demo as demo

    real = demo._last_tool_result

    def answer(messages):  # the checker of order B-2002 fails after its lookup
        if "B-2002" in real(messages):
            raise ValueError("lost the thread")
        return real(messages)

    monkeypatch.setattr(demo, "_last_tool_result", answer)
    assert run_demo() == 1
    captured = capsys.readouterr()
    assert re.search(r"^check_order_1\s+ok ", captured.out, re.MULTILINE)
    assert re.search(r"^check_order_2\s+failed ", captured.out, re.MULTILINE)
    assert captured.err == ("robotlab demo: 2 of 5 tasks failed\n"
                            "  check_order_2: InferenceError: model 'scripted' failed: lost the thread\n")
