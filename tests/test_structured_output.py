"""Structured output (``output_type=``): every kind of type, retries, both modes, litellm's wire, workers."""

from __future__ import annotations

import dataclasses
import json
from typing import Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel
from typing_extensions import TypedDict  # pydantic needs this one on Python < 3.12

import robotlab
from robotlab import ConfigurationError, OutputValidationError
from robotlab.llm import LiteLLMModel, ScriptedModel, ToolCall, call
from robotlab.parallel import shutdown_pool
from robotlab.structured_output import FINAL_RESULT_TOOL, output_schema
from tests import backends
from tests.openai_server import Script, completion, serve


class City(BaseModel):
    name: str
    population: int


@dataclasses.dataclass
class Point:
    x: float
    y: float


class Movie(TypedDict):
    title: str
    year: int


@pytest.fixture(autouse=True, scope="module")
def _stop_pools():
    yield
    shutdown_pool()


def text_robot(*replies, response_schema=True):
    return robotlab.build(name="typed", model=ScriptedModel(list(replies), response_schema=response_schema))


@pytest.mark.parametrize(("output_type", "reply", "expected"), [
    (City, '{"name": "Oslo", "population": 709000}', City(name="Oslo", population=709000)),
    (Point, '{"x": 1, "y": 2.5}', Point(1.0, 2.5)),
    (Movie, '{"title": "Alien", "year": 1979}', {"title": "Alien", "year": 1979}),
    (list[int], '{"result": [1, 2, 3]}', [1, 2, 3]),
    (Literal["yes", "no"], '{"result": "no"}', "no"),
    (int | City, '{"result": {"name": "Rome", "population": 2800000}}', City(name="Rome", population=2800000)),
    (list[City], '```json\n{"result": [{"name": "Oslo", "population": 1}]}\n```', [City(name="Oslo", population=1)]),
])
def test_each_kind_of_type_validates_into_an_instance(output_type, reply, expected):
    result = text_robot(reply).run("answer", output_type=output_type)
    assert result.output == expected and type(result.output) is type(expected)
    assert result.last_text_content == reply and result.llm_calls == 1


def test_response_format_carries_the_schema_and_wraps_non_objects():
    model = ScriptedModel(['{"result": [4]}'])
    robotlab.build(name="r", model=model).run("go", output_type=list[int])
    fmt = model.calls[0].response_format
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["name"] == "list"
    assert fmt["json_schema"]["schema"] == {
        "type": "object", "properties": {"result": {"type": "array", "items": {"type": "integer"}}},
        "required": ["result"],
    }
    assert model.calls[0].tools == []


def test_an_invalid_answer_goes_back_with_pydantics_errors_and_the_retry_is_accepted():
    robot = text_robot('{"name": "Oslo", "population": "many"}', '{"name": "Oslo", "population": 709000}')
    events = list(robot.stream("answer", output_type=City))
    result = next(e.result for e in events if e.type == "run.completed")
    assert result.output == City(name="Oslo", population=709000) and result.llm_calls == 2
    feedback = result.messages[2]
    assert feedback["role"] == "user"
    assert "'population': Input should be a valid integer" in feedback["content"]
    invalid = [e.data for e in events if e.type == "output.invalid"]
    assert len(invalid) == 1 and invalid[0]["text"] == '{"name": "Oslo", "population": "many"}'


def test_answers_that_never_validate_raise_after_output_retries():
    robot = text_robot("not json", '{"name": 1}', '{"name": "x"}')
    with pytest.raises(OutputValidationError) as caught:
        robot.run("answer", output_type=City, output_retries=1)
    assert caught.value.text == '{"name": 1}'
    assert any("'population': Field required" in p for p in caught.value.problems)
    assert "not a valid City" in str(caught.value)
    with pytest.raises(OutputValidationError, match="not JSON"):
        text_robot("not json").run("answer", output_type=City, output_retries=0)


def test_retries_are_charged_to_the_budget():
    replies = ['{"name": "Oslo"}', '{"name": "Oslo", "population": 1}']
    result = text_robot(*replies).run("answer", output_type=City)
    assert result.llm_calls == 2 and result.total_tokens > 0
    with pytest.raises(robotlab.InferenceError, match="Token budget exceeded"):
        text_robot(*replies).run("answer", output_type=City, token_budget=result.total_tokens - 5)


def test_tool_mode_answers_through_final_result_and_retries_there():
    model = ScriptedModel([
        [call(FINAL_RESULT_TOOL, result=[1, "x"]), call("lookup", q="y")],
        call(FINAL_RESULT_TOOL, result=[1, 2]),
    ], response_schema=False)
    result = robotlab.build(name="r", model=model).run("go", output_type=list[int])
    assert result.output == [1, 2] and result.tool_calls == []  # final_result is not a tool round
    assert model.calls[0].response_format is None
    assert model.calls[0].tools[-1]["function"]["name"] == FINAL_RESULT_TOOL
    answers = [m["content"] for m in result.messages if m["role"] == "tool"]
    assert answers[0].startswith("Error (final_result): invalid arguments: 'result.1': Input should be")
    assert answers[1] == "Not run: final_result was called in the same reply."
    assert answers[2] == "Final result accepted."


def test_tool_mode_runs_ordinary_tools_first_and_a_text_answer_is_asked_again():
    @robotlab.tool
    def population(city: str) -> int:
        """The population of a city."""
        return 709000

    model = ScriptedModel([
        call("population", city="Oslo"),
        "It is Oslo.",
        ToolCall("c9", FINAL_RESULT_TOOL, {"name": "Oslo", "population": 709000}),
    ], response_schema=False)
    robot = robotlab.build(name="r", model=model, local_tools=[population])
    result = robot.run("go", tools="inherit", output_type=City, output_mode="tool")
    assert result.output == City(name="Oslo", population=709000)
    assert [r.name for r in result.tool_calls] == ["population"]
    assert "Give it by calling the final_result tool." in result.messages[4]["content"]


def test_auto_mode_follows_the_model_and_explicit_modes_override_it():
    for response_schema, mode, expected in [(True, "auto", "response_format"), (False, "auto", "tool"),
                                            (True, "tool", "tool"), (False, "response_format", "response_format")]:
        model = ScriptedModel([call(FINAL_RESULT_TOOL, result=1) if expected == "tool" else '{"result": 1}'],
                              response_schema=response_schema)
        result = robotlab.build(name="r", model=model).run("go", output_type=int, output_mode=mode)
        assert result.output == 1
        assert (model.calls[0].response_format is not None) is (expected == "response_format")


def test_litellm_sends_response_format_over_the_wire():
    script = Script([(200, completion('{"name": "Oslo", "population": 709000}'))])
    with serve(script) as base:
        model = LiteLLMModel("openai/gpt-4o-mini", api_base=base, api_key="sk-test", num_retries=0)
        result = robotlab.build(name="r", model=model).run("go", output_type=City)
    assert result.output == City(name="Oslo", population=709000)
    sent = script.requests[0]["response_format"]
    assert sent["type"] == "json_schema" and sent["json_schema"]["name"] == "City"
    assert sent["json_schema"]["schema"]["required"] == ["name", "population"]
    assert "tools" not in script.requests[0]


def test_bad_output_settings_fail_where_they_are_given():
    with pytest.raises(ConfigurationError, match="must be a type"):
        robotlab.RunConfig(output_type="City")
    with pytest.raises(ConfigurationError, match="output_mode must be"):
        robotlab.RunConfig(output_mode="json")
    with pytest.raises(ConfigurationError, match="output_retries"):
        robotlab.RunConfig(output_retries=-1)
    class Opaque:
        pass

    with pytest.raises(ConfigurationError, match="output_type: cannot build a JSON schema"):
        robotlab.RunConfig(output_type=Opaque)


def test_the_result_serialises_its_output():
    result = text_robot('{"name": "Oslo", "population": 1}').run("go", output_type=City)
    assert result.to_dict()["output"] == {"name": "Oslo", "population": 1}
    json.dumps(result.to_dict())


def test_build_sets_a_default_that_a_run_overrides():
    robot = robotlab.build(name="r", model=ScriptedModel(['{"name": "a", "population": 1}', '{"result": 2}']),
                           output_type=City)
    assert robot.run("go").output == City(name="a", population=1)
    assert robot.run("go", output_type=int).output == 2


@pytest.mark.parametrize("mode", ["process", "subinterpreter", "ray"])
def test_network_tasks_in_workers_return_typed_output(mode, request):
    # The worker gets the schema by value; validation and the typed value stay in the parent, so neither
    # City (defined in this test module) nor pydantic has to load in the worker: a subinterpreter works too.
    backends.use(mode)
    if mode == "ray":
        request.getfixturevalue("ray_cluster")  # else robotlab would start a Ray of its own
    net = robotlab.create_network(name="typed", parallel_mode=mode)
    net.task("city", text_robot('{"name": "Oslo"}', '{"name": "Oslo", "population": 709000}'), output_type=City)
    net.task("tags", text_robot('{"result": ["a", "b"]}'), output_type=list[str])
    result = net.run("go")
    assert result.ok, result.errors
    assert result["city"].worker == mode
    city = result["city"].result
    assert city.output == City(name="Oslo", population=709000) and city.llm_calls == 2
    assert result["tags"].result.output == ["a", "b"]


def test_a_worker_run_that_never_validates_fails_its_task():
    backends.use("process")
    net = robotlab.create_network(name="bad", parallel_mode="process")
    net.task("city", text_robot("nope", "still nope"), output_type=City)
    result = net.run("go")
    assert not result.ok
    error = result.errors["city"]
    assert isinstance(error, OutputValidationError) and error.text == "still nope"


# -- the schema itself (property-based) ------------------------------------------------------------

cities = st.builds(City, name=st.text(max_size=20), population=st.integers(-(2**53), 2**53))


@given(st.lists(cities, max_size=4))
def test_any_valid_value_round_trips_through_text_and_tool_arguments(values):
    schema = output_schema(list[City])
    data = schema.dump(values)
    assert schema.parse_text(json.dumps({"result": data})) == (values, [])
    assert schema.parse_arguments({"result": data}) == (values, [])
    assert schema.parse_arguments(data) == (values, [])  # a bare value is accepted too


@given(st.text(max_size=60))
def test_any_reply_text_gives_a_value_or_problems_never_an_exception(text):
    value, problems = output_schema(City).parse_text(text)
    assert isinstance(value, City) or problems
    assert all(isinstance(p, str) and p for p in problems)
