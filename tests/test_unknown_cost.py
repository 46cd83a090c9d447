"""A cost budget with a model that has no price: one warning per run, since such calls count as 0.0."""

from __future__ import annotations

import logging

import pytest

import robotlab
from robotlab.llm import LiteLLMModel, LlmRequest, ScriptedModel, call
from robotlab.parallel import shutdown_pool

WARNING = ("robot 'r': model 'scripted' has no known price, so its calls count as 0.0 against cost_budget=0.5 "
           "and the budget cannot stop this run; give prices=(input_per_token, output_per_token) in the "
           "RunConfig or to the model")


@robotlab.tool
def noop() -> str:
    """Do nothing."""
    return "done"


def warnings_of(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "robotlab.budget" and r.levelno == logging.WARNING]


def robot(**config) -> robotlab.Robot:
    model = ScriptedModel([call("noop"), "first", call("noop"), "second"])
    return robotlab.build(name="r", model=model, local_tools=[noop], config=robotlab.RunConfig(**config))


def test_one_warning_per_run_when_a_cost_budget_meets_an_unpriced_model(caplog):
    r = robot(cost_budget=0.5)
    assert r.run("go", tools="inherit").cost == 0.0  # two LLM calls, both at 0.0
    assert warnings_of(caplog) == [WARNING]
    r.run("again", tools="inherit")
    assert warnings_of(caplog) == [WARNING, WARNING]  # once per run, not once per process


def test_no_warning_with_prices_or_without_a_cost_budget(caplog):
    priced = robot(cost_budget=0.5, prices=(1e-6, 2e-6)).run("go", tools="inherit")
    assert priced.cost > 0
    robot(token_budget=10_000).run("go", tools="inherit")
    free = robotlab.build(name="free", model=ScriptedModel(["x"], prices=(0.0, 0.0)),
                          config=robotlab.RunConfig(cost_budget=0.5)).run("go")
    assert free.cost == 0.0  # a known price of zero is not an unknown one
    assert warnings_of(caplog) == []


def test_litellm_marks_a_model_it_has_no_price_for():
    request = LlmRequest(messages=[{"role": "user", "content": "hi"}])
    unknown = LiteLLMModel("openai/my-local-model", mock_response="hello").complete(request)
    assert (unknown.cost, unknown.cost_known) == (0.0, False)
    known = LiteLLMModel("openai/gpt-4o-mini", mock_response="hello").complete(request)
    assert known.cost > 0 and known.cost_known
    priced = LiteLLMModel("openai/my-local-model", mock_response="hello", prices=(1e-6, 1e-6)).complete(request)
    assert priced.cost > 0 and priced.cost_known


@pytest.mark.parametrize("mode", ["thread", "process"])
def test_a_network_budget_warns_once_per_task_in_every_mode(caplog, mode):
    net = robotlab.create_network(name="n", parallel_mode=mode, config=robotlab.RunConfig(cost_budget=0.25))
    for name in ("a", "b"):
        net.task(name, robotlab.build(name=name, model=ScriptedModel(["x"])))
    try:
        assert net.run("go").ok
    finally:
        if mode != "thread":
            shutdown_pool()
    # From a worker process the log record travels back to this process's logger.
    assert sorted(warnings_of(caplog)) == [WARNING.replace("'r'", f"'{n}'").replace("0.5", "0.25") for n in "ab"]
