import threading
import time

import pytest

import robotlab
from robotlab import ConfigurationError
from robotlab.hooks import Hook
from robotlab.llm import EchoModel, ScriptedModel, call
from robotlab.task import UpstreamFailed


@robotlab.tool
def wait_io(seconds: float) -> str:
    """Sleep, standing in for an I/O-bound call."""
    time.sleep(seconds)
    return f"slept {seconds}"


def tool_robot(name, seconds=0.2):
    return robotlab.build(
        name=name, model=ScriptedModel([call("wait_io", seconds=seconds), f"{name} done"]), local_tools=[wait_io]
    )


def test_independent_tasks_run_concurrently():
    net = robotlab.create_network(name="fan")
    for i in range(8):
        net.task(f"t{i}", tool_robot(f"r{i}"), tools="inherit")
    result = net.run("go")
    assert result.ok and len(result.results) == 8
    ratio = result.duration / (8 * 0.2)
    assert ratio < 0.5, f"8 x 0.2 s tasks took {result.duration:.2f}s (ratio {ratio:.2f})"


def test_dependants_see_results_and_start_without_waiting_for_unrelated_tasks():
    net = robotlab.create_network(name="dag")
    net.task("slow", tool_robot("slow", 0.6), tools="inherit")
    net.task("fast", tool_robot("fast", 0.05), tools="inherit")
    after_fast = ScriptedModel(lambda messages, tools: messages[-1]["content"])
    net.task("after_fast", robotlab.build(name="af", model=after_fast), depends_on=["fast"])
    result = net.run("start")
    assert result["after_fast"].finished < result["slow"].finished  # no waves
    assert "[fast] fast done" in result.results["after_fast"].last_text_content
    assert set(result.sinks) == {"slow", "after_fast"}


def test_failed_task_fails_dependants_and_fires_on_error_while_other_branches_finish():
    errors = []

    class Watch(Hook):
        @classmethod
        def on_error(cls, ctx):
            errors.append((ctx.event, getattr(ctx, "task_name", None), type(ctx.error).__name__))

    def boom(messages, tools):
        raise ConnectionError("down")

    net = robotlab.create_network(name="f")
    net.task("bad", robotlab.build(name="bad", model=ScriptedModel(boom)))
    net.task("child", robotlab.build(name="child", model=EchoModel()), depends_on=["bad"])
    net.task("grandchild", robotlab.build(name="gc", model=EchoModel()), depends_on=["child"])
    net.task("ok", robotlab.build(name="okr", model=EchoModel()))
    net.on(Watch)
    result = net.run("x")
    assert not result.ok
    assert result["ok"].status == "ok"
    assert isinstance(result.errors["bad"], robotlab.InferenceError)
    assert isinstance(result.errors["child"], UpstreamFailed)
    assert isinstance(result.errors["grandchild"], UpstreamFailed)
    assert ("task", "bad", "InferenceError") in errors and ("task", "child", "UpstreamFailed") in errors
    with pytest.raises(robotlab.InferenceError):
        result.raise_for_errors()


def test_cycles_and_unknown_dependencies_are_refused_before_anything_runs():
    model = ScriptedModel([])
    net = robotlab.create_network(name="c")
    net.task("a", robotlab.build(name="a", model=model), depends_on=["b"])
    net.task("b", robotlab.build(name="b", model=model), depends_on=["a"])
    with pytest.raises(ConfigurationError, match="cycle: a -> b -> a"):
        net.run("x")
    net2 = robotlab.create_network(name="u")
    net2.task("a", robotlab.build(name="a", model=model), depends_on=["ghost"])
    with pytest.raises(ConfigurationError, match="unknown task"):
        net2.run("x")
    assert model.calls == []


def test_shared_memory_blocking_read_between_tasks():
    @robotlab.tool
    def publish(value: str) -> str:
        """Publish a value."""
        time.sleep(0.1)
        current_memory().set("sentiment", value)
        return "published"

    holder = {}

    def current_memory():
        return holder["memory"]

    def waiter(messages, tools):
        return f"got {holder['memory'].get('sentiment', wait=5)}"

    net = robotlab.create_network(name="m")
    holder["memory"] = net.memory
    net.task("writer", robotlab.build(name="w", model=ScriptedModel([call("publish", value="positive"), "ok"]),
                                      local_tools=[publish]), tools="inherit")
    net.task("reader", robotlab.build(name="rd", model=ScriptedModel(waiter)))
    result = net.run("x", customer="ada")
    assert result.results["reader"].last_text_content == "got positive"
    assert result.memory.data.customer == "ada"
    assert len(result.memory.results) == 2


def test_network_and_task_hooks_fire_in_order():
    log = []
    lock = threading.Lock()

    class Trace(Hook):
        @classmethod
        def before_network_run(cls, ctx):
            log.append("network.before")

        @classmethod
        def after_network_run(cls, ctx):
            log.append(f"network.after:{ctx.result.ok}")

        @classmethod
        def before_task(cls, ctx):
            with lock:
                log.append(f"task:{ctx.task_name}")

    net = robotlab.create_network(name="h")
    net.task("a", robotlab.build(name="a", model=EchoModel()))
    net.task("b", robotlab.build(name="b", model=EchoModel()), depends_on=["a"])
    net.on(Trace)
    net.run("x")
    assert log == ["network.before", "task:a", "task:b", "network.after:True"]


def test_optional_task_runs_only_when_activated():
    net = robotlab.create_network(name="o")

    @robotlab.tool
    def escalate() -> str:
        """Escalate to billing."""
        net.activate("billing")
        return "escalated"

    net.task("triage", robotlab.build(name="t", model=ScriptedModel([call("escalate"), "done"]),
                                      local_tools=[escalate]), tools="inherit")
    net.task("billing", robotlab.build(name="b", model=EchoModel()), depends_on="optional")
    net.task("never", robotlab.build(name="n", model=EchoModel()), depends_on="optional")
    result = net.run("refund please")
    assert result["billing"].status == "ok" and result["never"].status == "skipped"
    with pytest.raises(ConfigurationError):
        net.activate("billing")


def test_retries_only_for_retryable_errors():
    attempts = []

    def flaky(messages, tools):
        attempts.append(1)
        if len(attempts) < 3:
            raise ConnectionError("flaky")  # becomes a retryable InferenceError
        return "third time lucky"

    net = robotlab.create_network(name="r")
    net.task("t", robotlab.build(name="t", model=ScriptedModel(flaky)), retries=2)
    result = net.run("x")
    assert result.value == "third time lucky" and result["t"].attempts == 3

    def config_bug(messages, tools):
        attempts.append(1)
        raise robotlab.ConfigurationError("not retryable")

    attempts.clear()
    net2 = robotlab.create_network(name="r2")
    net2.task("t", robotlab.build(name="t", model=ScriptedModel(config_bug)), retries=5)
    assert net2.run("x")["t"].attempts == 1 and len(attempts) == 1


def test_shared_budget_allows_exactly_k_parallel_calls():
    from robotlab.llm import LlmReply, Usage

    def costly(messages, tools):
        time.sleep(0.05)  # keep the calls overlapping
        return LlmReply(text="answer", usage=Usage(0, 100))

    # Each call reserves its prompt estimate + max_tokens (~102) and spends 100: 310 fits exactly three.
    net = robotlab.create_network(name="b", config=robotlab.RunConfig(token_budget=310, max_tokens=100))
    for i in range(6):
        net.task(f"t{i}", robotlab.build(name=f"r{i}", model=ScriptedModel(costly)))
    result = net.run("go")
    assert len(result.results) == 3
    assert all(isinstance(e, robotlab.BudgetExceeded) for e in result.errors.values()) and len(result.errors) == 3
    assert net._ledger.committed("tokens") == 300


def test_parallel_modes_not_yet_available_raise_clearly():
    with pytest.raises(ConfigurationError, match="parallel_mode must be one of"):
        robotlab.create_network(name="x", parallel_mode="gpu")
    net = robotlab.create_network(name="x", parallel_mode="process")
    net.task("a", robotlab.build(name="a", model=EchoModel()))
    with pytest.raises(ConfigurationError, match="not available"):
        net.run("x")


def test_demo_runs_offline(capsys):
    from robotlab.demo import run_demo

    assert run_demo() == 0
    out = capsys.readouterr().out
    assert "final answer: Dear customer" in out and "hook events:" in out and "tool_call=3" in out
