import json
import threading
import time

import pytest

import robotlab
from robotlab import BudgetExceeded, ConfigurationError, InferenceError, ToolLoopError
from robotlab.hooks import Hook
from robotlab.llm import EchoModel, LlmReply, ScriptedModel, Usage, call


@robotlab.tool
def slow_echo(text: str) -> str:
    """Echo after 0.2 s of I/O."""
    time.sleep(0.2)
    return text.upper()


def test_tools_are_opt_in_per_call():
    model = ScriptedModel(["a", "b", "c"])
    robot = robotlab.build(name="r", model=model, local_tools=[slow_echo])
    robot.run("x")
    robot.run("y", tools="inherit")
    robot.run("z", tools=["slow_echo"])
    assert [len(req.tools) for req in model.calls] == [0, 1, 1]
    assert model.calls[1].tools[0]["function"]["name"] == "slow_echo"
    with pytest.raises(robotlab.ToolNotFoundError):
        robot.run("w", tools=["missing"])


def test_tool_loop_and_result():
    model = ScriptedModel([call("slow_echo", text="hi"), "The tool said HI."])
    robot = robotlab.build(name="r", model=model, system_prompt="Be brief.", local_tools=[slow_echo])
    result = robot.run("say hi", tools="inherit")
    assert result.last_text_content == "The tool said HI."
    assert [(c.name, c.arguments, c.result) for c in result.tool_calls] == [("slow_echo", {"text": "hi"}, "HI")]
    assert [m["role"] for m in result.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert result.llm_calls == 2 and result.total_tokens > 0 and result.robot_name == "r"
    json.dumps(result.to_dict())  # JSON-serialisable
    assert model.calls[1].messages[-1] == {"role": "tool", "tool_call_id": result.tool_calls[0].id, "content": "HI"}


def test_several_calls_in_one_reply_run_concurrently_with_the_hook_scope():
    seen = []

    class PerRun(Hook):
        @classmethod
        def before_tool_call(cls, ctx):
            seen.append(threading.current_thread().name)

    calls = [call("slow_echo", text=str(i)) for i in range(4)]
    robot = robotlab.build(name="r", model=ScriptedModel([calls, "done"]), local_tools=[slow_echo])
    started = time.perf_counter()
    result = robot.run("go", tools="inherit", hooks=PerRun)
    elapsed = time.perf_counter() - started
    assert [c.result for c in result.tool_calls] == ["0", "1", "2", "3"]
    assert elapsed < 0.6  # 4 x 0.2 s serial would be 0.8 s
    assert len(seen) == 4  # the per-run hook reaches every one of the concurrent calls


def test_unknown_tool_requested_by_model_is_reported_not_raised():
    robot = robotlab.build(name="r", model=ScriptedModel([call("nope"), "ok"]), local_tools=[slow_echo])
    result = robot.run("x", tools="inherit")
    assert result.last_text_content == "ok" and "not found" in result.tool_calls[0].error


def test_circuit_breaker_and_clear_messages():
    model = ScriptedModel(lambda messages, tools: call("slow_echo", text="again"))
    robot = robotlab.build(name="looper", model=model, local_tools=[slow_echo], max_tool_rounds=2)
    with pytest.raises(ToolLoopError) as caught:
        robot.run("loop", tools="inherit")
    assert str(caught.value) == "Circuit breaker triggered: 3 tool rounds exceeded max_tool_rounds (2)"
    assert not robotlab.retryable(caught.value)
    with pytest.raises(ConfigurationError, match="clear_messages"):
        robot.run("again", tools="inherit")
    robot.clear_messages()
    robot.config = robot.config.merge(robotlab.RunConfig(model=ScriptedModel(["fine"])))
    assert robot.run("again").last_text_content == "fine"


class Strict(robotlab.Tool):
    raise_on_error = True

    def execute(self, fail: bool) -> str:
        if fail:
            raise RuntimeError("strict tool failed")
        return "fine"


def test_a_failed_run_leaves_the_conversation_as_it_found_it():
    model = ScriptedModel(["first answer", call("strict", fail=True), call("strict", fail=False), "second answer"])
    robot = robotlab.build(name="strict", model=model, local_tools=[Strict], system_prompt="be strict")
    robot.run("one")
    before = robot.messages
    with pytest.raises(RuntimeError, match="strict tool failed"):
        robot.run("two", tools="inherit")
    assert robot.messages == before  # no unanswered user turn, no tool call without its result
    assert robot.run("three", tools="inherit").last_text_content == "second answer"
    sent = model.calls[-1].messages  # what the next run sent the model: every tool call is answered
    calls = {c["id"] for m in sent if m["role"] == "assistant" for c in m.get("tool_calls") or ()}
    answers = {m["tool_call_id"] for m in sent if m["role"] == "tool"}
    assert len(calls) == 1 and calls == answers
    assert [m["content"] for m in sent if m["role"] == "user"] == ["one", "three"]


def test_token_budget_refuses_before_the_call_and_reports_overspend():
    reply = LlmReply(text="x", usage=Usage(600, 100))
    model = ScriptedModel([reply, reply, reply])
    robot = robotlab.build(name="capped", model=model, token_budget=1000)
    robot.run("one")
    with pytest.raises(InferenceError) as overspend:
        robot.run("two")
    assert str(overspend.value) == "Token budget exceeded: 1400 tokens used, budget is 1000"
    calls_before = len(model.calls)
    with pytest.raises(BudgetExceeded, match=r"^budget exceeded for tokens: \d+ > 1000$"):
        robot.run("three")
    assert len(model.calls) == calls_before  # refused outright: no LLM call made


def test_cost_budget_uses_prices_for_unpriced_models():
    model = ScriptedModel([LlmReply(text="x", usage=Usage(1000, 1000))] * 2, prices=(0.0002, 0.0001))
    robot = robotlab.build(name="c", model=model, cost_budget=0.25)
    with pytest.raises(InferenceError, match=r"^Cost budget exceeded: \$0\.300000 used, budget is \$0\.250000$"):
        robot.run("x")


def test_model_failures_become_inference_errors_and_missing_model_is_a_config_error():
    def broken(messages, tools):
        raise ConnectionError("socket closed")

    with pytest.raises(InferenceError, match="socket closed") as caught:
        robotlab.build(name="b", model=ScriptedModel(broken)).run("x")
    assert isinstance(caught.value.__cause__, ConnectionError) and robotlab.retryable(caught.value)
    with pytest.raises(ConfigurationError, match="has no model"):
        robotlab.build(name="nomodel").run("x")
    with pytest.raises(ConfigurationError, match="temprature"):
        robotlab.build(name="typo", model=EchoModel(), temprature=1)


def test_before_run_may_rewrite_the_request_and_hooks_see_every_family():
    events = []

    class Rewrite(Hook):
        @classmethod
        def before_run(cls, ctx):
            ctx.request = ctx.request + "!"

        @classmethod
        def after_llm_generation(cls, ctx):
            events.append(("llm", ctx.iteration))

        @classmethod
        def after_run(cls, ctx):
            events.append(("run", ctx.response.last_text_content))

    robot = robotlab.build(name="e", model=EchoModel())
    robot.on(Rewrite)
    assert robot.run("hello").last_text_content == "hello!"
    assert events == [("llm", 0), ("run", "hello!")]


def test_learn_dedupes_fires_hooks_and_reaches_the_prompt():
    log = []

    class Learn(Hook):
        @classmethod
        def on_learn(cls, ctx):
            log.append(("on", ctx.text, ctx.learnings_before))

        @classmethod
        def after_learn(cls, ctx):
            log.append(("after", ctx.stored))

    model = ScriptedModel(["ok"])
    robot = robotlab.build(name="l", model=model, system_prompt="Base.")
    robot.on(Learn)
    assert robot.learn("  prefers metric units ") is True
    assert robot.learn("prefers metric units") is False
    assert robot.learnings == ("prefers metric units",)
    assert log == [("on", "prefers metric units", ()), ("after", True),
                   ("on", "prefers metric units", ("prefers metric units",)), ("after", False)]
    robot.run("x")
    assert "prefers metric units" in model.calls[0].messages[0]["content"]


def test_auto_compact_context_window_and_on_compaction_override():
    model = ScriptedModel(lambda m, t: "a fairly long answer " * 5)
    robot = robotlab.build(name="c", model=model, auto_compact="context_window", context_window=120)
    for i in range(6):
        robot.run(f"question number {i} " * 3)
    assert len(robot.messages) < 12  # older turns were compacted away
    assert any("compacted" in (m["content"] or "") for m in robot.messages)

    class Replace(Hook):
        @classmethod
        def on_compaction(cls, ctx):
            ctx.compacted_messages = [m for m in ctx.messages_before if m["role"] == "user"][-1:]

    robot2 = robotlab.build(name="c2", model=model, auto_compact="context_window", context_window=60)
    robot2.on(Replace)
    for i in range(3):
        robot2.run(f"q{i} " * 20)
    assert all(m["role"] != "system" for m in robot2.messages)


def test_auto_compact_callable():
    robot = robotlab.build(name="k", model=EchoModel(), auto_compact=lambda msgs: msgs[-1:])
    robot.run("one")
    robot.run("two")
    assert [m["content"] for m in robot.messages] == ["two", "two"]
