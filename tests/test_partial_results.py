"""A failed run keeps what it did: ``err.partial_result`` and the failed task's ``partial_result``."""

from __future__ import annotations

import os
import pickle

import pytest

import robotlab
from robotlab import ConfigurationError, InferenceError
from robotlab.llm import LlmReply, ScriptedModel, Usage, call
from robotlab.parallel import shutdown_pool
from tests import network_jobs as jobs
from tests.openai_server import Script, completion, serve


@pytest.fixture(autouse=True, scope="module")
def _stop_pools():
    yield
    shutdown_pool()


def tool_then_failure(error: Exception):
    """A model function: ask for the ``where`` tool (10 + 4 tokens, $0.01), then raise *error*."""

    def reply(messages, tools):
        if not any(m["role"] == "tool" for m in messages):
            return LlmReply(tool_calls=[call("where")], usage=Usage(10, 4), cost=0.01)
        raise error

    return reply


def check_partial(partial, robot_name: str, tool_pid: int | None = None) -> None:
    assert isinstance(partial, robotlab.RobotResult)
    assert partial.robot_name == robot_name
    assert partial.llm_calls == 1 and (partial.prompt_tokens, partial.completion_tokens) == (10, 4)
    assert partial.cost == pytest.approx(0.01)
    assert partial.last_text_content is None
    assert [c.name for c in partial.tool_calls] == ["where"]
    assert isinstance(partial.tool_calls[0].result, int)
    if tool_pid is not None:
        assert partial.tool_calls[0].result == tool_pid
    roles = [m["role"] for m in partial.messages]
    assert roles == ["user", "assistant", "tool"]  # up to the failure: the tool's answer is there
    assert partial.messages[0]["content"] == "where are you?"
    assert partial.messages[2]["content"] == str(partial.tool_calls[0].result)


def test_a_failed_run_attaches_what_it_did_to_its_error():
    robot = robotlab.build(name="r", model=ScriptedModel(tool_then_failure(ValueError("model broke"))),
                           local_tools=[jobs.where])
    with pytest.raises(InferenceError, match="model 'scripted' failed: model broke") as caught:
        robot.run("where are you?", tools="inherit")
    check_partial(caught.value.partial_result, "r", tool_pid=os.getpid())
    assert robot.messages == []  # the conversation itself is rolled back, as before
    again = pickle.loads(pickle.dumps(caught.value))  # and it crosses process boundaries with the error
    check_partial(again.partial_result, "r")


def test_robotlab_errors_that_are_not_inference_errors_carry_it_too():
    robot = robotlab.build(name="r", model=ScriptedModel([call("where")]), local_tools=[jobs.where])
    with pytest.raises(ConfigurationError, match="ran out of replies") as caught:
        robot.run("where are you?", tools="inherit")
    partial = caught.value.partial_result
    assert [m["role"] for m in partial.messages] == ["user", "assistant", "tool"] and partial.llm_calls == 1
    back = pickle.loads(pickle.dumps(robotlab.ToolError("x", retryable=True)))
    assert back.partial_result is None and back.retryable  # the default, on every robotlab error


def test_a_budget_overspend_keeps_the_tokens_of_the_call_that_overspent():
    model = ScriptedModel([LlmReply(text="too long", usage=Usage(900, 300))])
    robot = robotlab.build(name="r", model=model, token_budget=1000)
    with pytest.raises(InferenceError, match="Token budget exceeded: 1200 tokens used") as caught:
        robot.run("hi")
    partial = caught.value.partial_result
    assert partial.total_tokens == 1200 and partial.llm_calls == 1
    assert partial.messages[-1] == {"role": "assistant", "content": "too long"}


def test_a_real_litellm_failure_after_a_tool_call():
    tool_call = {"id": "call_1", "type": "function", "function": {"name": "where", "arguments": "{}"}}
    script = Script([(200, completion(tool_calls=[tool_call], prompt_tokens=30, completion_tokens=7)),
                     (401, {"error": {"message": "key revoked", "type": "auth"}})])
    with serve(script) as base:
        model = robotlab.llm.LiteLLMModel("openai/gpt-4o-mini", api_base=base, api_key="sk-test", num_retries=0,
                                          max_retries=0)
        robot = robotlab.build(name="r", model=model, local_tools=[jobs.where])
        with pytest.raises(InferenceError, match=r"HTTP 401") as caught:
            robot.run("where are you?", tools="inherit")
    partial = caught.value.partial_result
    assert (partial.prompt_tokens, partial.completion_tokens, partial.llm_calls) == (30, 7, 1)
    assert partial.cost > 0 and [c.result for c in partial.tool_calls] == [os.getpid()]
    assert [m["role"] for m in partial.messages] == ["user", "assistant", "tool"]


def test_after_retries_the_partial_result_is_the_last_attempts():
    attempts = []

    def flaky(messages, tools):
        if not any(m["role"] == "tool" for m in messages):
            attempts.append(1)
            return LlmReply(tool_calls=[call("where")], usage=Usage(10, 4), cost=0.01)
        raise ConnectionError(f"down on attempt {len(attempts)}")  # transient: retried

    net = robotlab.create_network(name="retried")
    net.task("t", robotlab.build(name="f", model=ScriptedModel(flaky), local_tools=[jobs.where]), tools="inherit",
             retries=1)
    outcome = net.run("where are you?")["t"]
    assert outcome.attempts == 2 and "down on attempt 2" in str(outcome.error)
    check_partial(outcome.partial_result, "f")


class SeeError(robotlab.Hook):
    """Records what the run's on_error hook sees."""

    seen: list = []

    @classmethod
    def on_error(cls, ctx):
        cls.seen.append(ctx.error.partial_result)


def test_the_run_on_error_hook_sees_the_partial_result():
    SeeError.seen.clear()
    robot = robotlab.build(name="r", model=ScriptedModel(tool_then_failure(ValueError("model broke"))),
                           local_tools=[jobs.where])
    robot.on(SeeError)
    with pytest.raises(InferenceError) as caught:
        robot.run("where are you?", tools="inherit")
    assert len(SeeError.seen) == 1
    check_partial(SeeError.seen[0], "r")
    check_partial(caught.value.partial_result, "r")
