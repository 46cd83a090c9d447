"""A small real MCP server for tests, on the official SDK: stdio by default, the URL transports with --http.

    python tests/mcp_test_server.py            # stdio
    python tests/mcp_test_server.py --http     # binds 127.0.0.1 on a free port, prints "PORT <n>", and serves
                                               # streamable HTTP at /mcp, HTTP+SSE at /sse, WebSocket at /ws

mcp 2.x has no WebSocket server transport any more, so /ws bridges a Starlette WebSocket to the
SDK's server loop here (the ``mcp`` subprotocol, one JSON-RPC message per text frame, as 1.x did).

Binding the socket here and printing its port avoids the race of picking a free port in the test.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys

try:  # mcp 2.x
    from mcp.server.mcpserver import Context
    from mcp.server.mcpserver import MCPServer as Server
    from mcp.server.mcpserver.exceptions import ToolError
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import Context
    from mcp.server.fastmcp import FastMCP as Server
    from mcp.server.fastmcp.exceptions import ToolError

server = Server("robotlab-test")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def shout(text: str) -> str:
    """Upper-case a text."""
    return text.upper()


@server.tool()
def fail(reason: str) -> str:
    """Always fails with *reason*."""
    raise ToolError(reason)


@server.tool()
def crash() -> str:
    """Kill the server process mid-call."""
    os._exit(3)


@server.tool()
async def wait(seconds: float) -> str:
    """Sleep, then answer."""
    await asyncio.sleep(seconds)
    return f"waited {seconds}"


@server.tool()
def header(key: str, ctx: Context) -> str:
    """The value of the HTTP request header *key* (empty over stdio)."""
    headers = getattr(getattr(ctx.request_context, "request", None), "headers", None) or {}
    return headers.get(key.lower(), "")


def _parse(text: str):
    try:  # mcp 2.x
        import mcp_types

        return mcp_types.jsonrpc_message_adapter.validate_json(text, by_name=False)
    except ImportError:  # mcp 1.x
        from mcp.types import JSONRPCMessage

        return JSONRPCMessage.model_validate_json(text)


async def serve_websocket(websocket) -> None:
    import anyio
    from mcp.shared.message import SessionMessage

    await websocket.accept(subprotocol="mcp")
    incoming_writer, incoming = anyio.create_memory_object_stream(0)
    outgoing, outgoing_reader = anyio.create_memory_object_stream(0)

    async def read_frames() -> None:
        async with incoming_writer:
            async for text in websocket.iter_text():
                await incoming_writer.send(SessionMessage(_parse(text)))

    async def write_frames() -> None:
        async with outgoing_reader:
            async for message in outgoing_reader:
                await websocket.send_text(message.message.model_dump_json(by_alias=True, exclude_unset=True))

    lowlevel = getattr(server, "_lowlevel_server", None) or server._mcp_server
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(read_frames)
        tasks.start_soon(write_frames)
        await lowlevel.run(incoming, outgoing, lowlevel.create_initialization_options())
        tasks.cancel_scope.cancel()


def web_app():
    """One Starlette app with all three URL transports."""
    from starlette.routing import WebSocketRoute

    app = server.streamable_http_app()
    app.router.routes.extend(server.sse_app().routes)
    app.router.routes.append(WebSocketRoute("/ws", serve_websocket))
    return app


def serve_http() -> None:
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)  # connections queue from now on, before uvicorn accepts them
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(web_app(), log_level="warning")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    if "--http" in sys.argv[1:]:
        serve_http()
    else:
        server.run()
