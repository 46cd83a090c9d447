"""MCP servers as tool sources for robots, on the official ``mcp`` SDK (extra ``robotlab[mcp]``).

Give a robot server configs with ``mcp=[...]`` and opt in per run with
``run(..., mcp="inherit")`` (or a list of server names); the servers' tools are
offered to the model next to the robot's local tools, narrowed by ``tools=``.

Example:
    >>> import sys, robotlab
    >>> from robotlab.llm import ScriptedModel, call
    >>> robot = robotlab.build(
    ...     name="clock",
    ...     model=ScriptedModel([call("get_current_time", timezone="UTC"), "It is late."]),
    ...     mcp=[{"name": "time", "transport": {"type": "stdio", "command": sys.executable,
    ...                                          "args": ["-m", "mcp_server_time"]}}],
    ... )
    >>> robot.run("What time is it?", mcp="inherit").tool_calls[0].name  # doctest: +SKIP
    'get_current_time'

Importing this package does not import the SDK; connecting does, and raises
``DependencyError`` naming ``pip install 'robotlab[mcp]'`` when it is missing.
"""

from __future__ import annotations

from robotlab.mcp.client import MCPClient, MCPToolInfo, MCPToolResult
from robotlab.mcp.config import TRANSPORTS, MCPServer, parse_servers
from robotlab.mcp.connections import MCPConnections, connect_servers
from robotlab.mcp.discovery import discover_servers, load_servers, relevant_servers
from robotlab.mcp.selection import offered_tools, select_servers
from robotlab.mcp.tools import MCPTool, mcp_tool_class, mcp_tools

__all__ = [
    "TRANSPORTS",
    "MCPClient",
    "MCPConnections",
    "MCPServer",
    "MCPTool",
    "MCPToolInfo",
    "MCPToolResult",
    "connect_servers",
    "discover_servers",
    "load_servers",
    "mcp_tool_class",
    "mcp_tools",
    "offered_tools",
    "parse_servers",
    "relevant_servers",
    "select_servers",
]
