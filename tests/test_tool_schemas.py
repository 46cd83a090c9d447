"""Tool parameters and return values typed with pydantic-supported annotations."""

import asyncio
import dataclasses
import enum
import json
import os
import sys
import textwrap
import types
from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any, Literal, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field, TypeAdapter
from typing_extensions import TypedDict

import robotlab
from robotlab import ConfigurationError, Tool, ToolManifest, tool
from robotlab.llm import ScriptedModel
from tests.doc_blocks import python_blocks


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Item(BaseModel):
    sku: str
    qty: int


class Order(BaseModel):
    items: list[Item]
    color: Color = Color.RED
    when: datetime | None = None


class Tree(BaseModel):
    label: str
    children: list["Tree"] = []


@dataclasses.dataclass
class Point:
    x: float
    y: float


class Address(TypedDict):
    street: str
    zip: int


ANNOTATIONS: dict[str, Any] = {
    "model": Order,
    "enum": Color,
    "literal": Literal["a", "b"],  # plain path: the same schema without pydantic
    "literal_mixed": Literal["a", 1],
    "list": list[Item],
    "dict": dict[str, int],
    "optional": Optional[Item],  # noqa: UP045 - the Optional spelling is what is tested
    "union_none": Item | None,
    "annotated": Annotated[int, Field(description="how many", ge=0)],
    "dataclass": Point,
    "typeddict": Address,
    "datetime": datetime,
    "recursive": Tree,  # {"$ref": "#/$defs/Tree"} with the definition hoisted
}


def echo_tool(annotation: Any) -> type[Tool]:
    """A tool whose one parameter ``value`` has *annotation* and which returns what it received."""

    def echo(value):
        return value

    echo.__annotations__ = {"value": annotation}
    return tool(echo)


def resolve_refs(schema: Any, defs: dict[str, Any]) -> Any:
    if isinstance(schema, dict):
        if "$ref" in schema:
            return resolve_refs(defs[schema["$ref"].rsplit("/", 1)[1]], defs)
        return {k: resolve_refs(v, defs) for k, v in schema.items() if k != "$defs"}
    if isinstance(schema, list):
        return [resolve_refs(v, defs) for v in schema]
    return schema


@pytest.mark.parametrize("kind", ANNOTATIONS)
def test_schema_is_pydantics(kind):
    annotation = ANNOTATIONS[kind]
    expected = TypeAdapter(annotation).json_schema()
    parameters = echo_tool(annotation).parameters_schema()
    defs = expected.pop("$defs", None)
    assert parameters["properties"]["value"] == expected
    assert parameters.get("$defs") == defs  # hoisted so "#/$defs/..." refs resolve from the top
    optional = kind in ("optional", "union_none")
    assert parameters["required"] == ([] if optional else ["value"])


def test_several_params_share_defs_and_keep_plain_ones():
    @tool
    def place(order: Order, extra: Item, note: str, count: int = 1) -> str:
        """Place an order."""
        return note

    schema = place.parameters_schema()
    assert schema["properties"]["note"] == {"type": "string"}
    assert schema["properties"]["count"] == {"type": "integer"}
    assert schema["required"] == ["order", "extra", "note"]
    assert set(schema["$defs"]) == {"Item", "Color"}
    assert resolve_refs(schema["properties"]["order"], schema["$defs"]) == resolve_refs(
        TypeAdapter(Order).json_schema(), TypeAdapter(Order).json_schema()["$defs"]
    )
    json.dumps(place.schema())  # what is sent to the model is JSON


def test_arguments_are_converted_before_execute():
    seen = {}

    class Ship(Tool):
        description = "Ship an order"

        def execute(self, *, order: Order, at: datetime, where: Address, to: Point, n: int = 0) -> str:
            seen.update(order=order, at=at, where=where, to=to, n=n)
            return "ok"

    args = {"order": {"items": [{"sku": "a", "qty": "2"}], "color": "blue"}, "at": "2024-01-01",
            "where": {"street": "Main", "zip": 1}, "to": {"x": 1, "y": 2.5}}
    assert Ship().call(args) == "ok"
    assert seen["order"] == Order(items=[Item(sku="a", qty=2)], color=Color.BLUE)
    assert seen["at"] == datetime(2024, 1, 1) and seen["to"] == Point(1.0, 2.5)
    assert seen["where"] == {"street": "Main", "zip": 1} and seen["n"] == 0


def test_async_call_converts_too():
    @tool
    async def count(order: Order) -> int:
        return sum(i.qty for i in order.items)

    args = {"order": {"items": [{"sku": "a", "qty": 3}, {"sku": "b", "qty": 4}]}}
    assert asyncio.run(count().acall(args)) == 7
    assert count().call(args) == 7


def test_invalid_arguments_name_the_field_path():
    @tool
    def place(order: Order, note: str) -> str:
        return note

    text = place().call({"order": {"items": [{"sku": "a", "qty": "many"}], "color": "green"}, "note": 3})
    assert text.startswith("Error (place): invalid arguments: ")
    assert "'order.items.0.qty': Input should be a valid integer" in text
    assert "'order.color': Input should be 'red' or 'blue'" in text
    assert "'order.items': Field required" in place().call({"order": {}, "note": "x"})
    assert "'note' must be string, got int" in text  # plain params keep their text
    assert place().call({"note": "x"}) == "Error (place): invalid arguments: missing required parameter 'order'"


def test_typed_return_value_becomes_json_data():
    @tool
    def latest() -> Order:
        return Order(items=[Item(sku="a", qty=1)], when=datetime(2024, 5, 6, 7, 8))

    assert latest().call({}) == {"items": [{"sku": "a", "qty": 1}], "color": "red", "when": "2024-05-06T07:08:00"}
    assert latest.returns_schema() == TypeAdapter(Order).json_schema()

    @tool
    def wrong() -> Order:
        return "not an order"

    assert wrong().call({}).startswith("Error (wrong): returned a value that does not match its return annotation")


def test_json_native_return_values_need_no_adapter():
    @tool
    def names() -> dict[str, list[int] | None]:
        return {"a": [1]}

    @tool
    def moment() -> list[datetime]:
        return [datetime(2024, 1, 1)]

    assert names.return_adapter is None and names.returns_schema() is None and names().call({}) == {"a": [1]}
    assert moment().call({}) == ["2024-01-01T00:00:00"]


def test_unschemable_annotation_fails_at_definition_time():
    class Opaque:
        pass

    with pytest.raises(ConfigurationError, match=r"tool 'use', parameter 'thing'.*Opaque"):
        @tool
        def use(thing: Opaque) -> None:
            pass

    with pytest.raises(ConfigurationError, match=r"tool 'handle', parameter 'fn'.*Callable"):
        class Handle(Tool):
            def execute(self, *, fn: Callable[[], int]) -> None:
                pass

    with pytest.raises(ConfigurationError, match=r"tool 'make', return value.*Opaque"):
        @tool
        def make() -> Opaque:
            pass

    with pytest.raises(ConfigurationError, match=r"tool 'late': cannot resolve the annotations.*Missing"):
        @tool
        def late(x: "Missing") -> None:  # noqa: F821 - the unresolvable forward reference is the point
            pass


def test_same_def_name_for_two_types_is_a_definition_time_error():
    other = type("Item", (BaseModel,), {"__annotations__": {"name": str}, "__module__": "elsewhere"})

    def both(a, b):
        return a

    both.__annotations__ = {"a": list[Item], "b": list[other]}
    with pytest.raises(ConfigurationError, match=r"tool 'both': parameters 'a' and 'b' use two different types"):
        tool(both)


def test_tool_classes_select_like_names():
    @tool
    def place(order: Order) -> int:
        return len(order.items)

    @tool
    def other(x: int) -> int:
        return x

    manifest = ToolManifest([place(), other()])
    assert manifest.select([place]).names() == ["place"]
    assert manifest.select([place, "other"]).names() == ["place", "other"]
    with pytest.raises(ConfigurationError, match="not a robotlab Tool"):
        manifest.select([object])
    with pytest.raises(robotlab.ToolNotFoundError):
        ToolManifest([other()]).select([place])

    impostor = type("Impostor", (Tool,), {"name": "place", "execute": lambda self: None})
    with pytest.raises(ConfigurationError, match=r"tools=\[Impostor\]: the tool named 'place' here is a .*place,"):
        manifest.select([impostor])

    from robotlab.mcp.selection import offered_tools

    assert offered_tools(manifest, [], [other, "place"]).names() == ["other", "place"]
    robot = robotlab.build(name="r", model=ScriptedModel([]), local_tools=[place, other])
    assert robot._select_tools([place]).names() == ["place"]


# -- round trip: schema -> JSON arguments -> validated value equal to the original -------------

ROUND_TRIP: dict[str, tuple[Any, st.SearchStrategy[Any]]] = {
    "order": (Order, st.builds(
        Order,
        items=st.lists(st.builds(Item, sku=st.text(max_size=5), qty=st.integers()), max_size=3),
        color=st.sampled_from(Color),
        when=st.none() | st.datetimes(),
    )),
    "points": (list[Point], st.lists(st.builds(
        Point, x=st.floats(allow_nan=False, allow_infinity=False), y=st.floats(allow_nan=False, allow_infinity=False)
    ), max_size=4)),
    "counts": (dict[str, int], st.dictionaries(st.text(max_size=4), st.integers(), max_size=4)),
    "colors": (list[Color], st.lists(st.sampled_from(Color), max_size=4)),
    "moment": (datetime, st.datetimes()),
    "address": (Address, st.builds(Address, street=st.text(max_size=8), zip=st.integers())),
}
ROUND_TRIP_TOOLS = {name: echo_tool(annotation) for name, (annotation, _) in ROUND_TRIP.items()}


@pytest.mark.parametrize("name", ROUND_TRIP)
def test_arguments_round_trip(name):
    annotation, values = ROUND_TRIP[name]
    adapter = TypeAdapter(annotation)

    @settings(max_examples=25, deadline=None)
    @given(values)
    def check(original):
        arguments = json.loads(json.dumps({"value": adapter.dump_python(original, mode="json")}))
        assert ROUND_TRIP_TOOLS[name]().call(arguments) == original

    check()


# -- worker side ------------------------------------------------------------------------------------


def _interpreters() -> Any:
    if sys.version_info >= (3, 14):
        from concurrent import interpreters
        return interpreters
    try:
        from interpreters_backport import interpreters
    except ImportError:
        return None
    return interpreters


def test_typed_tool_in_a_subinterpreter_fails_clearly():
    interpreters = _interpreters() if sys.version_info >= (3, 13) else None
    if interpreters is None:
        pytest.skip("subinterpreters need CPython 3.13+ with robotlab[subinterpreters]")
    interp = interpreters.create()
    try:
        interp.exec(f"import sys; sys.path[:] = {sys.path!r}")
        interp.exec(textwrap.dedent(
            """
            from datetime import datetime
            from robotlab.errors import ConfigurationError
            from robotlab.tools import tool
            @tool
            def plain(a: int) -> int:
                return a
            assert plain().call({"a": 1}) == 1  # plain tools need no pydantic
            @tool
            def tags(names: list[str], limit: dict[str, int] | None = None) -> list[str]:
                return names
            # JSON-native containers fall back to their coarse type where pydantic cannot load
            assert tags.parameters_schema()["properties"] == {"names": {"type": "array", "items": {}},
                                                              "limit": {"type": "object"}}
            assert tags().call({"names": ["a"]}) == ["a"] and tags.return_adapter is None
            assert "must be array" in tags().call({"names": "a"})
            try:
                @tool
                def stamp(at: datetime) -> str:
                    return str(at)
            except ConfigurationError as exc:
                assert "cannot run in a subinterpreter worker" in str(exc), exc
            else:
                raise AssertionError("a typed tool was defined without pydantic")
            """
        ))
    finally:
        interp.close()


# -- docs -----------------------------------------------------------------------------------------------


# The blocks that call a hosted model ("openai/...") need a network and a key: not run offline.
OFFLINE_BLOCKS = [i for i, code in enumerate(python_blocks("docs/robots-and-tools.md")) if '"openai/' not in code]


@pytest.mark.parametrize("index", OFFLINE_BLOCKS)
def test_docs_robots_and_tools_examples_run(index, monkeypatch):
    # pydantic resolves a model's field types through sys.modules[Model.__module__]: the block
    # runs as a registered module, as user code does (exec'd classes would claim "builtins").
    module = types.ModuleType(f"docs_robots_and_tools_{index}")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    module.robotlab = robotlab
    exec(compile(python_blocks("docs/robots-and-tools.md")[index], f"docs/robots-and-tools.md[{index}]", "exec"),
         module.__dict__)


def test_typed_tool_on_a_process_worker_gets_converted_arguments():
    from robotlab.llm import call
    from robotlab.parallel import shutdown_pool
    from tests import typed_tool_jobs

    robot = robotlab.build(name="till", model=ScriptedModel([
        call("checkout", lines=[{"sku": "a", "qty": "2"}], at="2024-01-01T10:00:00"), "done"]),
        local_tools=[typed_tool_jobs.checkout], pool_backend="process")
    try:
        result = robot.run("go", tools=[typed_tool_jobs.checkout])
    finally:
        shutdown_pool()
    (done,) = result.tool_calls
    assert done.error is None, done.result
    assert done.result["lines"] == [{"sku": "a", "qty": 2}] and done.result["at"] == "2024-01-01T10:00:00"
    assert done.result["pid"] != os.getpid() and done.where == "process"


def test_typed_tool_on_a_subinterpreter_pool_is_a_clear_dependency_error():
    from robotlab.llm import call
    from robotlab.parallel import shutdown_pool
    from robotlab.testing import available_backends
    from tests import typed_tool_jobs

    if "subinterpreter" not in available_backends():
        pytest.skip("subinterpreters need CPython 3.13+ with robotlab[subinterpreters]")
    robot = robotlab.build(name="till", model=ScriptedModel([call("checkout", lines=[], at="2024-01-01"), "done"]),
                           local_tools=[typed_tool_jobs.checkout], pool_backend="subinterpreter")
    try:
        with pytest.raises(robotlab.errors.DependencyError, match=r"pydantic_core.*backend='process'"):
            robot.run("go", tools=[typed_tool_jobs.checkout])
    finally:
        shutdown_pool()
