"""A worker run's structured output (``output_type=``): validated in the parent, where the type lives.

The output type need not be importable in the worker: the worker's run gets a
:class:`RemoteOutput` (the type's JSON schema, by value) whose ``validate``
asks the parent's :class:`OutputEndpoint`, so the model sees pydantic's own
errors and the value that comes back is a real instance of the type.
"""

from __future__ import annotations

from typing import Any

from robotlab.parallel.boundary import thaw_json
from robotlab.parallel.endpoints import Endpoint
from robotlab.parallel.parent_calls import RemoteEndpoint
from robotlab.structured_output import OutputSchema, TypedOutput

__all__ = ["OutputEndpoint", "RemoteOutput"]


class OutputEndpoint(Endpoint):
    """The parent side: validates each answer the worker's model gives; keeps the last valid value."""

    def __init__(self, schema: TypedOutput) -> None:
        self.schema = schema
        self.value: Any = None

    def handle(self, op: str, args: tuple, still_waiting: Any) -> Any:
        if op != "validate":
            raise self.unknown(op)
        value, problems = self.schema.validate(thaw_json(args[0]))
        if not problems:
            self.value = value
        return tuple(problems)


class RemoteOutput(OutputSchema):
    """The worker side: the schema by value; validation in the parent (the value is kept as JSON data here)."""

    def __init__(self, name: str, json_schema: dict[str, Any], remote: RemoteEndpoint) -> None:
        super().__init__(name, json_schema)
        self._remote = remote

    def validate(self, data: Any) -> tuple[Any, list[str]]:
        return data, list(self._remote.call("validate", data))
