import pickle
import threading

import pytest

import robotlab
from robotlab import ConfigurationError, InferenceError
from robotlab.llm import EchoModel, LiteLLMModel, LlmReply, LlmRequest, ScriptedModel, ToolCall, call, resolve_model
from tests.openai_server import Script, completion, serve

USER = [{"role": "user", "content": "hello there"}]


def test_scripted_list_replies_usage_prices_and_exhaustion():
    model = ScriptedModel(["hi", call("lookup", id="1"), [call("a"), call("b")]], prices=(0.001, 0.002))
    first = model.complete(LlmRequest(messages=USER))
    assert first.text == "hi" and first.usage.prompt_tokens == 2 and first.usage.completion_tokens == 1
    assert first.cost == pytest.approx(0.001 * 2 + 0.002 * 1)
    assert model.complete(LlmRequest(messages=USER)).tool_calls[0].arguments == {"id": "1"}
    assert [c.name for c in model.complete(LlmRequest(messages=USER)).tool_calls] == ["a", "b"]
    with pytest.raises(ConfigurationError, match="ran out of replies after 3 calls"):
        model.complete(LlmRequest(messages=USER))
    assert len(model.calls) == 4


def test_scripted_function_and_bad_reply():
    model = ScriptedModel(lambda messages, tools: f"{len(tools)} tools, last={messages[-1]['content']}")
    assert model.complete(LlmRequest(messages=USER, tools=[{"x": 1}])).text == "1 tools, last=hello there"
    with pytest.raises(ConfigurationError, match="a reply must be"):
        ScriptedModel([42]).complete(LlmRequest(messages=USER))


def test_scripted_is_thread_safe_and_picklable():
    model = ScriptedModel([str(i) for i in range(200)])
    got, lock = [], threading.Lock()

    def worker():
        for _ in range(50):
            text = model.complete(LlmRequest(messages=USER)).text
            with lock:
                got.append(text)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(got, key=int) == [str(i) for i in range(200)]
    clone = pickle.loads(pickle.dumps(ScriptedModel(["x"])))
    assert clone.complete(LlmRequest(messages=USER)).text == "x"
    assert pickle.loads(pickle.dumps(EchoModel())).complete(LlmRequest(messages=USER)).text == "hello there"


def test_resolve_model():
    assert isinstance(resolve_model("openai/gpt-4o-mini"), LiteLLMModel)
    echo = EchoModel()
    assert resolve_model(echo) is echo
    with pytest.raises(ConfigurationError, match="model must be"):
        resolve_model(3)


def test_litellm_mock_response_text():
    reply = LiteLLMModel("openai/gpt-4o-mini", mock_response="mocked!").complete(LlmRequest(messages=USER))
    assert reply.text == "mocked!" and reply.usage.total_tokens > 0


def test_litellm_scripted_model_response_with_tool_calls():
    import litellm

    response = litellm.ModelResponse(
        choices=[{"message": {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": '{"id": "7"}'}}]}}],
        usage={"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7},
    )
    reply = LiteLLMModel("openai/gpt-4o-mini", mock_response=response).complete(LlmRequest(messages=USER))
    assert reply.tool_calls == [ToolCall(id="call_1", name="lookup", arguments={"id": "7"})]


def test_robot_on_litellm_real_http_client_with_tool_calls():
    tool_call = {"id": "call_9", "type": "function", "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'}}
    script = Script([(200, completion(tool_calls=[tool_call])), (200, completion("The sum is 5."))])

    @robotlab.tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    with serve(script) as base:
        robot = robotlab.build(
            name="calc",
            model=LiteLLMModel("openai/gpt-4o-mini", api_base=base, api_key="sk-test", num_retries=0),
            local_tools=[add],
        )
        result = robot.run("What is 2 + 3?", tools="inherit")
    assert result.last_text_content == "The sum is 5."
    assert result.tool_calls[0].result == 5
    assert len(script.requests) == 2
    assert script.requests[0]["tools"][0]["function"]["name"] == "add"
    assert script.requests[1]["messages"][-1] == {"role": "tool", "tool_call_id": "call_9", "content": "5"}
    assert result.prompt_tokens == 24 and result.cost > 0  # gpt-4o-mini is in litellm's local price map


@pytest.mark.parametrize("status", [429, 500])
def test_http_errors_become_retryable_inference_errors(status):
    script = Script([(status, {"error": {"message": "try later", "type": "server_error"}})])
    model = LiteLLMModel("openai/gpt-4o-mini", api_key="sk-test", num_retries=0, max_retries=0)
    with serve(script) as base:
        with pytest.raises(InferenceError) as caught:
            model.complete(LlmRequest(messages=USER, options={"api_base": base}))
    assert caught.value.status_code == status
    assert robotlab.retryable(caught.value)
    assert len(script.requests) == 1


def test_unknown_model_costs_nothing_unless_priced():
    script = Script([(200, completion("a")), (200, completion("b"))])
    with serve(script) as base:
        free = LiteLLMModel("openai/some-private-model", api_base=base, api_key="k", num_retries=0)
        assert free.complete(LlmRequest(messages=USER)).cost == 0.0
        priced = LiteLLMModel("openai/some-private-model", api_base=base, api_key="k", num_retries=0,
                              prices=(0.01, 0.02))
        assert priced.complete(LlmRequest(messages=USER)).cost == pytest.approx(12 * 0.01 + 5 * 0.02)


def test_llmreply_defaults():
    assert LlmReply().tool_calls == [] and LlmReply().usage.total_tokens == 0
