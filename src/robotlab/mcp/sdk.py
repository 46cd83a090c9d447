"""The official ``mcp`` SDK, imported on first use, and the few places its major versions differ.

robotlab supports ``mcp>=1.10,<3``. Between 1.x and 2.x the model fields moved
from camelCase to snake_case (``inputSchema`` → ``input_schema``), the HTTP
transport was renamed (``streamablehttp_client`` → ``streamable_http_client``),
the JSON-RPC error class was renamed (``McpError`` → ``MCPError``) and the
WebSocket transport was removed (it was never part of the MCP specification).
Every such difference is absorbed here, so the rest of ``robotlab.mcp`` reads one API.

The WebSocket client is therefore robotlab's own, on the ``websockets`` package,
speaking what 1.x's ``mcp.client.websocket`` spoke: the ``mcp`` subprotocol, one
JSON-RPC message per text frame.
"""

from __future__ import annotations

import contextlib
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
    "open_sse",
    "open_stdio",
    "open_transport",
    "open_websocket",
]

# JSON-RPC error codes the SDK uses for a dead connection and an unanswered request.
CONNECTION_CLOSED = -32000
REQUEST_TIMEOUT = -32001


def load(transport: str = "stdio") -> ModuleType:
    """``import mcp`` (and ``websockets`` for *transport* ``"websocket"``), or raise ``DependencyError``
    naming the extra that installs it."""
    try:
        import mcp
        import mcp.client.stdio
        import mcp.client.streamable_http
        import mcp.shared.exceptions
    except ImportError as exc:
        raise DependencyError.missing("robotlab.mcp (MCP servers as tools)", "robotlab[mcp]") from exc
    if transport == "websocket":
        try:
            import websockets.asyncio.client  # noqa: F401
        except ImportError as exc:
            raise DependencyError.missing("MCP servers over WebSocket (the websockets package)",
                                          "robotlab[mcp]") from exc
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


async def open_sse(stack: AsyncExitStack, server: Any) -> tuple[Any, Any]:
    """Connect to *server*'s URL with the HTTP+SSE transport; the connection lives as long as *stack*."""
    from mcp.client.sse import sse_client

    # No read timeout on the event stream: a session may sit idle between a run's tool calls;
    # each request still has its own timeout (call_timeout).
    streams = await stack.enter_async_context(
        sse_client(server.url, headers=dict(server.headers) or None, timeout=server.connect_timeout,
                   sse_read_timeout=None)
    )
    return streams[0], streams[1]


async def open_websocket(stack: AsyncExitStack, server: Any) -> tuple[Any, Any]:
    """Connect to *server*'s ``ws://`` URL (subprotocol ``mcp``); the connection lives as long as *stack*."""
    import anyio
    from mcp.shared.message import SessionMessage
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed

    socket = await stack.enter_async_context(connect(
        server.url, subprotocols=["mcp"], additional_headers=dict(server.headers) or None,  # type: ignore[list-item]
        open_timeout=server.connect_timeout, proxy=None,
    ))
    incoming_writer, incoming = anyio.create_memory_object_stream[Any](0)
    outgoing, outgoing_reader = anyio.create_memory_object_stream[Any](0)
    parse = _message_parser()

    # A closed connection ends the frame loops; the session then sees its stream end (the
    # CONNECTION_CLOSED error of the requests in flight), as when a stdio server exits.
    async def read_frames() -> None:
        async with incoming_writer:
            with contextlib.suppress(ConnectionClosed):
                async for frame in socket:
                    try:
                        message: Any = SessionMessage(parse(frame))
                    except Exception as exc:  # a bad frame is the session's to report, not the connection's end
                        message = exc
                    await incoming_writer.send(message)

    async def write_frames() -> None:
        async with outgoing_reader:
            with contextlib.suppress(ConnectionClosed):
                async for message in outgoing_reader:
                    await socket.send(message.message.model_dump_json(by_alias=True, exclude_unset=True))

    tasks = await stack.enter_async_context(anyio.create_task_group())
    stack.callback(tasks.cancel_scope.cancel)  # runs first on exit: the frame loops end, then the socket closes
    tasks.start_soon(read_frames)
    tasks.start_soon(write_frames)
    return incoming, outgoing


def _message_parser() -> Any:
    """JSON text → a JSON-RPC message model (``mcp_types`` in 2.x, ``mcp.types`` in 1.x)."""
    try:
        import mcp_types

        return lambda text: mcp_types.jsonrpc_message_adapter.validate_json(text, by_name=False)
    except ImportError:
        from mcp.types import JSONRPCMessage

        return JSONRPCMessage.model_validate_json


async def open_transport(stack: AsyncExitStack, server: Any, errlog: IO[str]) -> tuple[Any, Any]:
    """The read and write streams of *server*'s transport, whichever it is."""
    if server.transport == "stdio":
        return await open_stdio(stack, server, errlog)
    if server.transport == "sse":
        return await open_sse(stack, server)
    if server.transport == "websocket":
        return await open_websocket(stack, server)
    return await open_http(stack, server)


async def list_tools_page(session: Any, cursor: str | None) -> Any:
    """One ``tools/list`` page (the cursor argument's shape changed within 1.x)."""
    if cursor is None:
        return await session.list_tools()
    if "params" in inspect.signature(session.list_tools).parameters:
        from mcp.types import PaginatedRequestParams

        return await session.list_tools(params=PaginatedRequestParams(cursor=cursor))
    return await session.list_tools(cursor=cursor)
