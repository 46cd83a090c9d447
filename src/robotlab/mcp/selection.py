"""Which MCP servers a run connects (``mcp=``) and which tools it offers the model (``tools=``).

The rule, for the servers chosen by ``mcp=``:

============  ======================  ==========================================
``tools=``    local tools offered     MCP tools offered
============  ======================  ==========================================
``"none"``    none                    all tools of the chosen servers
``"inherit"`` all ``local_tools``     all tools of the chosen servers
``[names]``   the named ones          the named ones
============  ======================  ==========================================

``mcp=`` is the opt-in to MCP tools (``"none"`` by default), so ``tools="none"``
does not hide them; an allowlist narrows local and MCP tools alike, which is how
to keep a server with dozens of tools from filling the model's context. Every
name in an allowlist must be a local or MCP tool (else ``ToolNotFoundError``);
two offered tools with one name are a ``ConfigurationError``.

Example:
    >>> from robotlab.mcp.config import MCPServer
    >>> servers = (MCPServer.stdio("time", "mcp-server-time"), MCPServer.http("calc", "http://127.0.0.1:8000/mcp"))
    >>> [s.name for s in select_servers(servers, ["calc"], where="robot 'r'")]
    ['calc']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from robotlab.errors import ConfigurationError, ToolNotFoundError
from robotlab.mcp.config import MCPServer
from robotlab.mcp.discovery import relevant_servers
from robotlab.tools import Tool, ToolManifest, tool_names

__all__ = ["offered_tools", "select_servers"]


def select_servers(configured: Sequence[MCPServer], mcp: Any, *, where: str, query: str = "") -> tuple[MCPServer, ...]:
    """The servers a run uses: ``"none"``, ``"inherit"`` (all configured), ``"discover"`` (those
    relevant to *query*, see :func:`robotlab.mcp.discovery.relevant_servers`) or a list of server names."""
    if mcp == "none":
        return ()
    if mcp == "inherit":
        return tuple(configured)
    if mcp == "discover":
        return relevant_servers(query, configured)
    if isinstance(mcp, str) or not isinstance(mcp, Sequence) or not all(isinstance(n, str) for n in mcp):
        raise ConfigurationError(
            f"mcp must be 'none', 'inherit', 'discover' or a list of MCP server names, got {mcp!r}"
        )
    by_name = {server.name: server for server in configured}
    for name in mcp:
        if name not in by_name:
            raise ConfigurationError(
                f"{where} has no MCP server named {name!r}; configured: {', '.join(by_name) or 'none'} "
                "(pass mcp=[...] to build())"
            )
    return tuple(by_name[name] for name in dict.fromkeys(mcp))


def _source(tool: Tool) -> str:
    server = getattr(type(tool), "server_name", None)
    return f"MCP server {server!r}" if server else "local_tools"


def offered_tools(local: ToolManifest, remote: Sequence[Tool], tools: Any) -> ToolManifest:
    """The manifest a run offers: *local* tools and *remote* (MCP) tools filtered by *tools* (see the table)."""
    if tools == "none":
        chosen = list(remote)
    elif tools == "inherit":
        chosen = [*local, *remote]
    elif isinstance(tools, str) or not isinstance(tools, Sequence):
        raise ConfigurationError(
            f"tools must be 'none', 'inherit' or a list of tool names or Tool classes, got {tools!r}"
        )
    else:
        everything = [*local, *remote]
        chosen = []
        for name in dict.fromkeys(tool_names(tools)):  # a Tool class stands for its name
            matches = [t for t in everything if t.name == name]
            if not matches:
                available = ", ".join(dict.fromkeys(t.name for t in everything)) or "none"
                raise ToolNotFoundError(f"Tool {name!r} not found. Available tools: {available}")
            chosen += matches
    by_name: dict[str, list[Tool]] = {}
    for t in chosen:
        by_name.setdefault(t.name, []).append(t)
    for name, same in by_name.items():
        if len(same) > 1:
            raise ConfigurationError(
                f"tool name {name!r} is offered by both {_source(same[0])} and {_source(same[1])}; "
                "choose servers with mcp=[...] so that tool names are unique"
            )
    return ToolManifest(chosen)
