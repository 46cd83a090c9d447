"""A small real MCP server for tests, on the official SDK: stdio by default, streamable HTTP with --http.

    python tests/mcp_test_server.py            # stdio
    python tests/mcp_test_server.py --http     # binds 127.0.0.1 on a free port, prints "PORT <n>", serves /mcp

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


def serve_http() -> None:
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)  # connections queue from now on, before uvicorn accepts them
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(server.streamable_http_app(), log_level="warning")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    if "--http" in sys.argv[1:]:
        serve_http()
    else:
        server.run()
