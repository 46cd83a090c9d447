"""MCPConnections: the MCP servers one run uses, connected together and closed together.

``Robot.run(..., mcp=...)`` opens one around its tool loop: every chosen server
is connected (in parallel) and its tools listed on entry; on exit every client
is closed, so no server subprocess or loop thread outlives the run, whether it
succeeded or raised.

Example:
    >>> import sys
    >>> from robotlab.mcp import MCPServer, connect_servers
    >>> time_server = MCPServer.stdio("time", sys.executable, ["-m", "mcp_server_time"])
    >>> with connect_servers([time_server]) as connections:  # doctest: +SKIP
    ...     [t.name for t in connections.tools()]
    ['get_current_time', 'convert_time']
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Mapping, Sequence
from typing import Any

from robotlab.mcp.client import MCPClient, MCPToolInfo
from robotlab.mcp.config import MCPServer
from robotlab.mcp.selection import offered_tools
from robotlab.mcp.tools import MCPTool, mcp_tools
from robotlab.tools import ToolManifest

__all__ = ["MCPConnections", "connect_servers"]


class MCPConnections:
    """Clients for several servers with one lifetime. Use it as a context manager."""

    def __init__(self, servers: Sequence[MCPServer | Mapping[str, Any]]) -> None:
        self.clients = [MCPClient(server) for server in servers]
        self._listed: dict[str, list[MCPToolInfo]] | None = None

    def __enter__(self) -> MCPConnections:
        return self.open()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def open(self) -> MCPConnections:
        """Connect every server and list its tools; on any failure close them all and raise it.

        Opening open connections does nothing."""
        if self._listed is not None:
            return self
        self._listed = {}
        if len(self.clients) <= 1:
            outcomes = [_attempt(self._open_one, c) for c in self.clients]
        else:  # servers start in parallel: a run waits for the slowest, not for the sum
            with concurrent.futures.ThreadPoolExecutor(len(self.clients), "robotlab-mcp-connect") as pool:
                outcomes = list(pool.map(lambda c: _attempt(self._open_one, c), self.clients))
        failures = [error for error in outcomes if error is not None]
        if failures:
            self.close()
            raise failures[0]
        return self

    def _open_one(self, client: MCPClient) -> None:
        client.connect()
        listed = client.list_tools()
        assert self._listed is not None
        self._listed[client.server.name] = listed

    def close(self) -> None:
        """Close every client (in parallel: a stdio server may take a moment to exit). Idempotent."""
        self._listed = None
        if len(self.clients) <= 1:
            for client in self.clients:
                client.close()
            return
        with concurrent.futures.ThreadPoolExecutor(len(self.clients), "robotlab-mcp-close") as pool:
            list(pool.map(lambda c: c.close(), self.clients))

    def tools(self, *, robot: Any = None, memory: Any = None) -> list[MCPTool]:
        """Tool objects for every listed tool, in server order."""
        return [
            tool
            for client in self.clients
            for tool in mcp_tools(client, (self._listed or {}).get(client.server.name, ()), robot=robot, memory=memory)
        ]

    def manifest(self, local: ToolManifest, tools: Any, *, robot: Any = None, memory: Any = None) -> ToolManifest:
        """What a run offers the model: *local* and MCP tools filtered by the run's ``tools=``."""
        return offered_tools(local, self.tools(robot=robot, memory=memory), tools)


def _attempt(step: Any, client: MCPClient) -> BaseException | None:
    try:
        step(client)
    except Exception as exc:
        return exc
    return None


def connect_servers(servers: Sequence[MCPServer | Mapping[str, Any]]) -> MCPConnections:
    """Connect *servers* now; close them with ``close()`` or by leaving the ``with`` block."""
    return MCPConnections(servers).open()
