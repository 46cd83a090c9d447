"""MCP tools as robotlab ``Tool`` objects, so the tool loop, ``tool_call`` hooks and records work unchanged.

Each listed tool becomes a ``Tool`` subclass whose schema is the server's
``inputSchema`` verbatim (nested objects, ``anyOf`` and all), and whose
``execute`` calls the server through an :class:`~robotlab.mcp.MCPClient`.

* The server reports a failure (``isError``, unknown tool, bad arguments): the
  model gets ``Error (<tool>): <server's text>``, as for a local tool that raised.
* The transport fails (server died, connection lost, timeout): ``Tool.call``
  raises ``MCPError`` after the ``tool_call`` hooks have seen it, and the run stops.

Example:
    >>> info = MCPToolInfo("add", "Add two integers", {"type": "object", "properties": {
    ...     "a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}, server="calc")
    >>> cls = mcp_tool_class(info)
    >>> cls.name, cls.server_name, cls.schema()["function"]["parameters"]["required"]
    ('add', 'calc', ['a', 'b'])
"""

from __future__ import annotations

import contextvars
import copy
import re
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

from robotlab.errors import MCPError, ToolError
from robotlab.mcp.client import MCPClient, MCPToolInfo
from robotlab.tools import Tool

__all__ = ["MCPTool", "mcp_tool_class", "mcp_tools"]

# Transport failures seen by execute() during one Tool.call, so call() can re-raise them after the hooks ran.
_transport_failures: contextvars.ContextVar[list[MCPError] | None] = contextvars.ContextVar(
    "robotlab_mcp_transport_failures", default=None
)


class MCPTool(Tool):
    """A tool served by an MCP server. Made per listed tool by :func:`mcp_tool_class`.

    Class attributes (besides ``name`` and ``description``):
        server_name: the server that offers the tool.
        input_schema: the server's JSON schema of the arguments.

    An instance carries the connected ``client`` it calls through.
    """

    server_name: ClassVar[str] = ""
    input_schema: ClassVar[dict[str, Any]] = {"type": "object", "properties": {}}
    parallel_safe: ClassVar[bool] = False  # the connection lives in this process

    def __init__(self, *, client: MCPClient, robot: Any = None, memory: Any = None) -> None:
        super().__init__(robot=robot, memory=memory)
        self.client = client

    @classmethod
    def parameters_schema(cls) -> dict[str, Any]:
        return copy.deepcopy(cls.input_schema)

    def validate(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """Only what needs no JSON-schema engine: required keys present, no unknown keys when the
        schema forbids them. The server validates the rest and its complaint reaches the model."""
        schema = self.input_schema
        properties = schema.get("properties") or {}
        problems = [f"missing required parameter {name!r}" for name in schema.get("required") or () if name not in args]
        if schema.get("additionalProperties") is False:
            problems += [f"unknown parameter {key!r}" for key in args if key not in properties]
        if problems:
            raise ToolError("invalid arguments: " + "; ".join(problems))
        return dict(args)

    def execute(self, **kwargs: Any) -> Any:
        try:
            result = self.client.call_tool(self.name, kwargs)
        except MCPError as exc:
            sink = _transport_failures.get()
            if sink is not None:
                sink.append(exc)
            raise
        if result.is_error:
            raise ToolError(result.text or f"MCP server {self.server_name!r} reported an error without a message")
        if not result.text and result.structured is not None:
            return result.structured
        return result.text

    def call(self, args: Mapping[str, Any] | None = None, **options: Any) -> Any:
        """``Tool.call``, except that a transport failure raises ``MCPError`` instead of becoming text."""
        failures: list[MCPError] = []
        token = _transport_failures.set(failures)
        try:
            result = super().call(args, **options)
        finally:
            _transport_failures.reset(token)
        return _first_failure_or(failures, result)

    async def acall(self, args: Mapping[str, Any] | None = None, **options: Any) -> Any:
        """``Tool.acall``, with the transport failures of :meth:`call`."""
        failures: list[MCPError] = []
        token = _transport_failures.set(failures)
        try:
            result = await super().acall(args, **options)
        finally:
            _transport_failures.reset(token)
        return _first_failure_or(failures, result)


def _first_failure_or(failures: list[MCPError], result: Any) -> Any:
    if failures:
        raise failures[0]
    return result


def mcp_tool_class(info: MCPToolInfo) -> type[MCPTool]:
    """A ``Tool`` subclass for one listed MCP tool."""
    schema = dict(info.input_schema) if isinstance(info.input_schema, Mapping) else {}
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    ident = re.sub(r"\W", "_", f"{info.server}_{info.name}")
    attrs = {
        "name": info.name,
        "description": info.description,
        "server_name": info.server,
        "input_schema": schema,
        "__module__": __name__,
        "__qualname__": f"MCPTool[{info.server}:{info.name}]",
        "__doc__": info.description or None,
    }
    return type(ident, (MCPTool,), attrs)


def mcp_tools(client: MCPClient, infos: Iterable[MCPToolInfo] | None = None, *, robot: Any = None,
              memory: Any = None) -> list[MCPTool]:
    """Tool objects for *client*'s tools (listed now unless *infos* is given), calling through *client*."""
    listed = client.list_tools() if infos is None else infos
    return [mcp_tool_class(info)(client=client, robot=robot, memory=memory) for info in listed]
