"""The official ``mcp`` SDK, imported on first use, and the few places its major versions differ.

robotlab supports ``mcp>=1.10,<3``. Between 1.x and 2.x the model fields moved
from camelCase to snake_case (``inputSchema`` → ``input_schema``), the HTTP
transport was renamed (``streamablehttp_client`` → ``streamable_http_client``)
and the JSON-RPC error class was renamed (``McpError`` → ``MCPError``). Every
such difference is absorbed here, so the rest of ``robotlab.mcp`` reads one API.
"""

from __future__ import annotations

import inspect
import sys
from contextlib import AsyncExitStack
from types import ModuleType
from typing import IO, Any

from robotlab.errors import DependencyError

__all__ = [
    "CONNECTION_CLOSED",
    "REQUEST_TIMEOUT",
    "jsonrpc_error_code",
    "list_tools_page",
    "load",
    "model_field",
    "open_http",
    "open_stdio",
]

# JSON-RPC error codes the SDK uses for a dead connection and an unanswered request.
CONNECTION_CLOSED = -32000
REQUEST_TIMEOUT = -32001


def load() -> ModuleType:
    """``import mcp``, or raise ``DependencyError`` naming the extra that installs it."""
    try:
        import mcp
        import mcp.client.stdio
        import mcp.client.streamable_http
        import mcp.shared.exceptions
    except ImportError as exc:
        raise DependencyError.missing("robotlab.mcp (MCP servers as tools)", "robotlab[mcp]") from exc
    return mcp


def model_field(obj: Any, snake: str, camel: str | None = None, default: Any = None) -> Any:
    """Read a model field by its 2.x (snake_case) or 1.x (camelCase) name."""
    if hasattr(obj, snake):
        return getattr(obj, snake)
    return getattr(obj, camel, default) if camel else default


def jsonrpc_error_code(exc: BaseException) -> int | None:
    """The JSON-RPC error code if *exc* is the SDK's error for an error response, else ``None``."""
    exceptions = sys.modules.get("mcp.shared.exceptions")
    classes = tuple(c for c in (getattr(exceptions, "MCPError", None), getattr(exceptions, "McpError", None)) if c)
    if not classes or not isinstance(exc, classes):
        return None
    error = getattr(exc, "error", None)
    code = getattr(error, "code", None)
    return code if isinstance(code, int) else None


async def open_stdio(stack: AsyncExitStack, server: Any, errlog: IO[str]) -> tuple[Any, Any]:
    """Start *server* (an ``MCPServer``) as a subprocess; its streams live as long as *stack*."""
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=server.command, args=list(server.args), env=dict(server.env) if server.env else None, cwd=server.cwd
    )
    streams = await stack.enter_async_context(stdio_client(params, errlog=errlog))
    return streams[0], streams[1]


async def open_http(stack: AsyncExitStack, server: Any) -> tuple[Any, Any]:
    """Connect to *server*'s URL over streamable HTTP; the connection lives as long as *stack*."""
    from mcp.client import streamable_http

    headers = dict(server.headers) or None
    opener = getattr(streamable_http, "streamable_http_client", None)
    if opener is None:  # mcp < 1.24 took headers directly
        streams = await stack.enter_async_context(streamable_http.streamablehttp_client(server.url, headers=headers))
        return streams[0], streams[1]
    from mcp.shared._httpx_utils import create_mcp_http_client

    # Entered first, so it closes after the transport has ended the session with it.
    http_client = await stack.enter_async_context(create_mcp_http_client(headers=headers))
    streams = await stack.enter_async_context(opener(server.url, http_client=http_client))
    return streams[0], streams[1]


async def list_tools_page(session: Any, cursor: str | None) -> Any:
    """One ``tools/list`` page (the cursor argument's shape changed within 1.x)."""
    if cursor is None:
        return await session.list_tools()
    if "params" in inspect.signature(session.list_tools).parameters:
        from mcp.types import PaginatedRequestParams

        return await session.list_tools(params=PaginatedRequestParams(cursor=cursor))
    return await session.list_tools(cursor=cursor)
