"""Structured output: a robot's final answer validated into a Python type (``output_type=``).

A run with ``output_type=T`` (any type pydantic's ``TypeAdapter`` accepts: a
model, a dataclass, a ``TypedDict``, ``list[int]``, ``Literal[...]``, a union)
sends T's JSON schema to the model and validates the answer into a T:

- ``output_mode="response_format"``: the schema goes as litellm's
  ``response_format`` (``json_schema``) and the reply text is the JSON value;
- ``output_mode="tool"``: the model gets a ``final_result`` tool whose
  arguments are the value, and answers by calling it;
- ``"auto"`` (the default) takes ``response_format`` where the model says it
  supports it (``model.supports_response_schema()``), else the tool.

A schema that is not a JSON object (``list[int]``, a union, ``Literal``)
travels wrapped as ``{"result": ...}``, as providers require an object. An
answer that fails validation goes back to the model with pydantic's errors, up
to ``output_retries`` times (default 1); then the run fails with
``OutputValidationError``.

Example:
    >>> schema = output_schema(list[int])
    >>> schema.wrapped, schema.parse_text('{"result": [1, 2]}')
    (True, ([1, 2], []))
    >>> schema.parse_text('[1, "x"]')[1]
    ["'result.1': Input should be a valid integer, unable to parse string as an integer"]
"""

from __future__ import annotations

import json
import re
from typing import Any

from robotlab.errors import ConfigurationError

__all__ = ["FINAL_RESULT_TOOL", "OUTPUT_MODES", "OutputSchema", "TypedOutput", "output_mode_for", "output_schema"]

FINAL_RESULT_TOOL = "final_result"
OUTPUT_MODES = ("auto", "response_format", "tool")
_FENCE = re.compile(r"^\s*```(?:json)?\s*\n(.*)\n\s*```\s*$", re.DOTALL)


class OutputSchema:
    """What a run needs of an output type: its JSON schema and a validator (subclasses say how to validate)."""

    def __init__(self, name: str, json_schema: dict[str, Any]) -> None:
        self.name = re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64] or "output"
        self.type_schema = json_schema
        self.wrapped = json_schema.get("type") != "object"
        if self.wrapped:
            inner = {k: v for k, v in json_schema.items() if k != "$defs"}
            self.json_schema: dict[str, Any] = {"type": "object", "properties": {"result": inner},
                                                "required": ["result"]}
            if "$defs" in json_schema:
                self.json_schema["$defs"] = json_schema["$defs"]
        else:
            self.json_schema = json_schema

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    def response_format(self) -> dict[str, Any]:
        """litellm's / OpenAI's ``response_format`` for this schema."""
        return {"type": "json_schema", "json_schema": {"name": self.name, "schema": self.json_schema}}

    def final_result_tool(self) -> dict[str, Any]:
        """The OpenAI tool schema of ``final_result``, whose arguments are the output."""
        return {"type": "function", "function": {
            "name": FINAL_RESULT_TOOL,
            "description": f"Give your final answer as a {self.name} value; call this instead of replying in text.",
            "parameters": self.json_schema,
        }}

    def parse_text(self, text: str | None) -> tuple[Any, list[str]]:
        """(value, problems) for a reply text holding the JSON value (a ```json fence is allowed)."""
        raw = (text or "").strip()
        fenced = _FENCE.match(raw)
        if fenced:
            raw = fenced.group(1)
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            return None, [f"the reply is not JSON ({exc.msg} at position {exc.pos}); reply with only the JSON value"]
        return self.parse_arguments(data)

    def parse_arguments(self, data: Any) -> tuple[Any, list[str]]:
        """(value, problems) for decoded JSON: ``{"result": v}`` when wrapped (a bare ``v`` is accepted too)."""
        if self.wrapped and isinstance(data, dict) and set(data) == {"result"}:
            data = data["result"]
        return self.validate(data)

    def validate(self, data: Any) -> tuple[Any, list[str]]:
        """(value, problems) for the decoded output *data*; problems empty when it is valid."""
        raise NotImplementedError


class TypedOutput(OutputSchema):
    """An :class:`OutputSchema` from a Python type, validated with pydantic."""

    def __init__(self, output_type: Any) -> None:
        from robotlab.tool_schemas import typed_spec

        spec = typed_spec(output_type, "output_type")
        super().__init__(getattr(output_type, "__name__", None) or "output", spec.json_schema)
        self.output_type = output_type
        self._adapter = spec.adapter

    def validate(self, data: Any) -> tuple[Any, list[str]]:
        from robotlab.tool_schemas import validate_value

        return validate_value(self._adapter, "result" if self.wrapped else "", data)

    def dump(self, value: Any) -> Any:
        """*value* as JSON-ready data (what crosses back from a worker)."""
        return self._adapter.dump_python(value, mode="json")


_SCHEMAS: dict[Any, TypedOutput] = {}


def output_schema(output_type: Any) -> OutputSchema:
    """The :class:`OutputSchema` for *output_type* (one per type); ``ConfigurationError`` if pydantic cannot."""
    if isinstance(output_type, OutputSchema):
        return output_type
    if isinstance(output_type, str):
        raise ConfigurationError(
            f"output_type must be a type (a pydantic model, dataclass, TypedDict, list[int], ...), "
            f"got the string {output_type!r}"
        )
    try:
        return _SCHEMAS[output_type]
    except TypeError:  # unhashable annotation: build it each time
        return TypedOutput(output_type)
    except KeyError:
        schema = _SCHEMAS[output_type] = TypedOutput(output_type)
        return schema


def output_mode_for(mode: str, model: Any) -> str:
    """``"response_format"`` or ``"tool"``: *mode* itself, or for ``"auto"`` what *model* supports."""
    if mode != "auto":
        return mode
    supports = getattr(model, "supports_response_schema", None)
    return "response_format" if callable(supports) and supports() else "tool"
