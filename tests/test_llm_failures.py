"""LLM failures say what really happened, and only transient ones are retried (real litellm calls, offline)."""

from __future__ import annotations

import pickle
import socket

import pytest

import robotlab
from robotlab import InferenceError
from robotlab.llm import LiteLLMModel, LlmRequest, ScriptedModel
from robotlab.llm.failures import model_failure
from tests.openai_server import Script, completion, serve

USER = [{"role": "user", "content": "hi"}]


class CountingModel(LiteLLMModel):
    """A real LiteLLMModel that counts how often the run loop called it."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.attempts = 0

    def complete(self, request: LlmRequest):
        self.attempts += 1
        return super().complete(request)

    async def acomplete(self, request: LlmRequest, on_delta=None):
        self.attempts += 1
        return await super().acomplete(request, on_delta)


def run_with_retries(model, retries: int = 2):
    """Run *model* as a network task with *retries*: the outcome of the task."""
    net = robotlab.create_network(name="faults")
    net.task("t", robotlab.build(name="t", model=model), retries=retries)
    return net.run("hello")["t"]


@pytest.fixture
def no_keys(monkeypatch):
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_ADMIN_KEY"):
        monkeypatch.delenv(key, raising=False)


@pytest.mark.parametrize(("model", "provider", "key"), [
    ("openai/gpt-4o-mini", "openai", "OPENAI_API_KEY"),  # litellm says InternalServerError, HTTP 500
    ("gpt-4o-mini", "openai", "OPENAI_API_KEY"),
    ("anthropic/claude-3-haiku-20240307", "anthropic", "ANTHROPIC_API_KEY"),  # litellm says 401
])
def test_a_missing_api_key_is_named_and_never_retried(no_keys, model, provider, key):
    counting = CountingModel(model, num_retries=0, max_retries=0)
    outcome = run_with_retries(counting)
    err = outcome.error
    assert isinstance(err, InferenceError)
    assert str(err) == f"no API key for provider {provider!r} (model {model!r}): set {key}"
    assert err.status_code is None and "HTTP" not in str(err)
    assert not robotlab.retryable(err)
    assert outcome.attempts == 1 and counting.attempts == 1


@pytest.mark.parametrize("model", ["foo", "nosuch/model"])
def test_an_unknown_provider_is_named_and_never_retried(model):
    counting = CountingModel(model, num_retries=0)
    outcome = run_with_retries(counting)
    err = outcome.error
    assert str(err) == (f"unknown provider for model {model!r}: name it as 'provider/model', e.g. "
                        "'openai/gpt-4o-mini' (see https://docs.litellm.ai/docs/providers)")
    assert err.status_code is None and err.provider_error == "BadRequestError"
    assert not robotlab.retryable(err)
    assert outcome.attempts == 1 and counting.attempts == 1


@pytest.mark.parametrize(("status", "transient"), [
    (400, False), (401, False), (403, False), (404, False), (422, False),
    (408, True), (429, True), (500, True), (503, True),
])
def test_http_statuses_from_a_real_response(status, transient):
    script = Script([(status, {"error": {"message": f"answer {status}", "type": "x"}})] * 3)
    with serve(script) as base:
        counting = CountingModel("openai/gpt-4o-mini", api_base=base, api_key="sk-test", num_retries=0,
                                 max_retries=0)
        outcome = run_with_retries(counting)
    err = outcome.error
    assert isinstance(err, InferenceError)
    assert str(err).startswith(f"LLM call to 'openai/gpt-4o-mini' failed (HTTP {status}): ")
    assert f"answer {status}" in str(err)
    assert err.status_code == status
    assert robotlab.retryable(err) is transient
    expected = 3 if transient else 1  # retries=2: two more attempts, only for a transient failure
    assert outcome.attempts == expected and counting.attempts == expected and len(script.requests) == expected
    if status == 401:
        assert str(err).endswith("(check the API key)")


def test_a_transient_failure_then_success_is_retried_to_the_answer():
    script = Script([(429, {"error": {"message": "slow down", "type": "rate"}}), (200, completion("done"))])
    with serve(script) as base:
        counting = CountingModel("openai/gpt-4o-mini", api_base=base, api_key="sk-test", num_retries=0,
                                 max_retries=0)
        outcome = run_with_retries(counting)
    assert outcome.status == "ok" and outcome.result.last_text_content == "done" and outcome.attempts == 2


def test_a_refused_connection_is_transient_and_has_no_status():
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    counting = CountingModel("openai/gpt-4o-mini", api_base=f"http://127.0.0.1:{port}/v1", api_key="sk-test",
                             num_retries=0, max_retries=0)
    outcome = run_with_retries(counting, retries=1)
    err = outcome.error
    assert str(err).startswith("LLM call to 'openai/gpt-4o-mini' could not connect: ")
    assert err.status_code is None and robotlab.retryable(err)
    assert outcome.attempts == 2 and counting.attempts == 2


def test_a_budget_overspend_is_not_retried():
    model = ScriptedModel(lambda messages, tools: "a long answer " * 50)
    net = robotlab.create_network(name="budget")
    net.task("t", robotlab.build(name="t", model=model, token_budget=20), retries=2)
    outcome = net.run("hello")["t"]
    assert str(outcome.error).startswith("Token budget exceeded: ")
    assert not robotlab.retryable(outcome.error)
    assert outcome.attempts == 1 and len(model.calls) == 1


def test_exceptions_of_other_models_are_transient_only_for_timeouts_and_connections():
    assert model_failure("m", TimeoutError("slow")).retryable
    assert model_failure("m", ConnectionResetError("reset")).retryable
    assert not model_failure("m", ValueError("bad reply")).retryable
    assert str(model_failure("m", ValueError("bad reply"))) == "model 'm' failed: bad reply"


def test_the_classification_survives_pickling():
    err = InferenceError("no", retryable=False, status_code=404, provider_error="NotFoundError")
    back = pickle.loads(pickle.dumps(err))
    assert (str(back), back.retryable, back.status_code, back.provider_error) == (
        "no", False, 404, "NotFoundError")
    assert not robotlab.retryable(back)
    loop = pickle.loads(pickle.dumps(robotlab.ToolLoopError.for_limit(3)))
    assert not robotlab.retryable(loop) and loop.retryable is False


def test_a_provider_that_never_answers_times_out_transiently():
    with socket.socket() as sock:  # accepts connections (the backlog) and never answers
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        port = sock.getsockname()[1]
        counting = CountingModel("openai/gpt-4o-mini", api_base=f"http://127.0.0.1:{port}/v1", api_key="sk-test",
                                 num_retries=0, max_retries=0, timeout=0.3)
        outcome = run_with_retries(counting, retries=1)
    err = outcome.error
    assert str(err).startswith("LLM call to 'openai/gpt-4o-mini' timed out: ")
    assert err.status_code is None and robotlab.retryable(err)
    assert outcome.attempts == 2 and counting.attempts == 2


def test_streamed_calls_are_classified_the_same_way():
    script = Script([(404, {"error": {"message": "no such model", "type": "invalid_request_error"}})])
    with serve(script) as base:
        model = LiteLLMModel("openai/gpt-4o-mini", api_base=base, api_key="sk-test", num_retries=0, max_retries=0)
        robot = robotlab.build(name="s", model=model)
        with pytest.raises(InferenceError) as caught:
            list(robot.stream("hi"))
    assert str(caught.value).startswith("LLM call to 'openai/gpt-4o-mini' failed (HTTP 404): ")
    assert caught.value.status_code == 404 and not robotlab.retryable(caught.value)
    assert len(script.requests) == 1 and script.requests[0]["stream"] is True
