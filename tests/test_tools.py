import logging

import pytest

import robotlab
from robotlab import Tool, ToolError, ToolManifest, ToolNotFoundError, param, tool
from robotlab.hooks import Hook


class Fetch(Tool):
    description = "Fetch a record"
    param("id", type="string", desc="record id", required=True)
    param("limit", type="integer", required=False)

    def execute(self, *, id, limit=None):
        if id == "down":
            raise ToolError("upstream unavailable", retryable=True)
        if id == "bug":
            raise KeyError("oops")
        return {"id": id, "limit": limit}


class Strict(Fetch):
    raise_on_error = True


@tool
def add(a: int, b: int = 0) -> int:
    """Add two integers.

    Longer text that is not the description."""
    return a + b


def test_class_form_schema_and_name():
    assert Fetch.name == "fetch"
    assert Fetch.schema() == {
        "type": "function",
        "function": {
            "name": "fetch",
            "description": "Fetch a record",
            "parameters": {
                "type": "object",
                "properties": {"id": {"type": "string", "description": "record id"}, "limit": {"type": "integer"}},
                "required": ["id"],
            },
        },
    }
    assert [p.name for p in Strict.params] == ["id", "limit"]  # inherited


def test_function_form_derives_everything():
    assert add.name == "add" and add.description == "Add two integers."
    assert add.parameters_schema()["required"] == ["a"]
    assert add.parameters_schema()["properties"]["b"] == {"type": "integer"}
    assert add().call({"a": 2, "b": 3}) == 5
    assert add.fn(1, 1) == 2 and add.__module__ == __name__


def test_errors_become_text_with_retryable_suffix(caplog):
    with caplog.at_level(logging.WARNING, logger="robotlab.tools"):
        assert Fetch().call({"id": "down"}) == "Error (fetch): upstream unavailable (retryable)"
        assert caplog.records == []  # the ToolError path logs nothing
        assert Fetch().call({"id": "bug"}) == "Error (fetch): 'oops'"
    assert len(caplog.records) == 1 and "KeyError" in caplog.records[0].getMessage()


def test_bad_arguments_reach_the_model_as_text():
    text = Fetch().call({"limit": "ten", "bogus": 1})
    assert text.startswith("Error (fetch): invalid arguments:")
    assert "missing required parameter 'id'" in text and "unknown parameter 'bogus'" in text
    assert "'limit' must be integer, got str" in text
    assert add().call({"a": True}).startswith("Error (add): invalid arguments")


def test_raise_on_error():
    with pytest.raises(ToolError, match="upstream"):
        Strict().call({"id": "down"})


def test_tool_call_hooks_fire_and_around_can_block():
    seen = []

    class Audit(Hook):
        @classmethod
        def before_tool_call(cls, ctx):
            seen.append(("before", ctx.tool_name, dict(ctx.tool_args)))

        @classmethod
        def after_tool_call(cls, ctx):
            seen.append(("after", ctx.tool_result, ctx.tool_error))

    robotlab.on(Audit)
    assert Fetch().call({"id": "1"}) == {"id": "1", "limit": None}
    assert seen == [("before", "fetch", {"id": "1"}), ("after", {"id": "1", "limit": None}, None)]

    class Deny(Hook):
        @classmethod
        def around_tool_call(cls, ctx, block):
            ctx.tool_result = "denied by policy"

    robotlab.on(Deny)
    assert Fetch().call({"id": "down"}) == "denied by policy"


def test_parallel_safe_flag_and_alias_are_inherited():
    class Heavy(Tool):
        ractor_safe = True

        def execute(self):
            return 1

    class Heavier(Heavy):
        pass

    assert Heavy.parallel_safe and Heavier.parallel_safe and Heavier.ractor_safe
    assert not Fetch.parallel_safe
    assert tool(parallel_safe=True)(lambda: 1).parallel_safe


def test_manifest():
    manifest = ToolManifest([Fetch(), add()])
    assert manifest.names() == ["fetch", "add"]
    assert manifest.resolve("add").name == "add"
    with pytest.raises(ToolNotFoundError, match=r"'nope' not found\. Available tools: fetch, add"):
        manifest.resolve("nope")
    with pytest.raises(robotlab.ConfigurationError, match="unique"):
        ToolManifest([Fetch(), Fetch()])


def test_param_rejects_unknown_type():
    with pytest.raises(robotlab.ConfigurationError, match="type must be one of"):
        param("x", type="float")
