"""Finding MCP servers: config files on disk, and the servers relevant to one message.

**Config files.** :func:`load_servers` reads one file, :func:`discover_servers` the
standard places, in robot_lab's order — the user's file, then the project's, a
project entry replacing a user entry of the same name:

1. ``$XDG_CONFIG_HOME/robotlab/mcp.json`` (``~/.config/robotlab/mcp.json``),
2. ``./.mcp.json`` in the working directory (the file Claude Code and other clients use),

or only ``$ROBOTLAB_MCP_CONFIG`` when that is set. A file is JSON (``.json``) or TOML
(``.toml``) and holds either the ``mcpServers`` mapping Claude Desktop, Claude Code
and Cursor write::

    {"mcpServers": {"time": {"command": "mcp-server-time", "args": ["--local-timezone", "UTC"]},
                    "docs": {"type": "sse", "url": "http://127.0.0.1:8000/sse"}}}

or robot_lab's list of server configs, ``{"mcp": [{"name": "time", "transport": {...}}]}``.
An entry with ``"disabled": true`` is skipped.

**Relevance** (robot_lab's ``MCP::ServerDiscovery``). ``run(..., mcp="discover")``
connects only the servers whose name and ``description`` are relevant to the
message: term-frequency cosine similarity of the message against each server's
text (the term vectors of :mod:`robotlab.history.term_vectors`), at least
:data:`DEFAULT_THRESHOLD`. When no server has a description, the message is
blank, or nothing scores high enough, every server is used.

Example:
    >>> from robotlab.mcp.config import MCPServer
    >>> servers = [MCPServer.stdio("files", "fs-server", description="Read and write local files"),
    ...            MCPServer.stdio("brew", "brew-server", description="Install macOS packages with Homebrew")]
    >>> [s.name for s in relevant_servers("install imagemagick with brew", servers)]
    ['brew']

Standard library only.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from robotlab.errors import ConfigurationError
from robotlab.history.term_vectors import cosine_similarity, text_vector
from robotlab.mcp.config import MCPServer, parse_servers

__all__ = ["DEFAULT_THRESHOLD", "discover_servers", "load_servers", "relevant_servers", "search_paths"]

# Low by design, as in robot_lab: descriptions are short, so even on-topic scores are small.
DEFAULT_THRESHOLD = 0.05
ENV_VAR = "ROBOTLAB_MCP_CONFIG"


def search_paths() -> list[Path]:
    """Where :func:`discover_servers` looks, in order (later files win on a name clash)."""
    explicit = os.environ.get(ENV_VAR)
    if explicit:
        return [Path(explicit)]
    config_home = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return [config_home / "robotlab" / "mcp.json", Path.cwd() / ".mcp.json"]


def discover_servers() -> tuple[MCPServer, ...]:
    """The servers of every config file found in :func:`search_paths`; ``()`` when there is none.

    ``$ROBOTLAB_MCP_CONFIG`` naming a file that does not exist is a ``ConfigurationError``.
    """
    paths = search_paths()
    explicit = os.environ.get(ENV_VAR)
    if explicit and not paths[0].is_file():
        raise ConfigurationError(f"{ENV_VAR} points to {paths[0]}, which is not a file")
    found: dict[str, MCPServer] = {}
    for path in paths:
        if path.is_file():
            for server in load_servers(path):
                found.pop(server.name, None)  # the later file's entry takes the place, and the order, of the earlier
                found[server.name] = server
    return tuple(found.values())


def load_servers(path: str | Path) -> tuple[MCPServer, ...]:
    """The MCP servers a JSON or TOML config file describes (see the module docs for the shapes).

    Raises ``ConfigurationError`` naming the file when it is missing, not valid JSON/TOML,
    has neither ``mcpServers`` nor ``mcp``, or holds an invalid server config.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigurationError(f"MCP config file {path} cannot be read: {exc.strerror or exc}") from exc
    document = _parse(path, text)
    where = f"MCP config file {path}"
    if not isinstance(document, Mapping) or not ("mcpServers" in document or "mcp" in document):
        raise ConfigurationError(
            f"{where} has neither an 'mcpServers' mapping (Claude Desktop's format) nor an 'mcp' list "
            "(robot_lab's); see docs/mcp.md"
        )
    try:
        if "mcpServers" in document:
            return parse_servers(_named_entries(document["mcpServers"], where), where=where)
        entries = document["mcp"]
        if isinstance(entries, Sequence) and not isinstance(entries, str):
            entries = [e for e in entries if not (isinstance(e, Mapping) and e.get("disabled") is True)]
            entries = [{k: v for k, v in e.items() if k != "disabled"} if isinstance(e, Mapping) else e
                       for e in entries]
        return parse_servers(entries, where=where)
    except ConfigurationError as exc:
        message = str(exc)
        raise ConfigurationError(message if message.startswith(where) else f"{where}: {message}") from None


def _parse(path: Path, text: str) -> Any:
    if path.suffix == ".toml":
        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigurationError(f"MCP config file {path} is not valid TOML: {exc}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigurationError(
            f"MCP config file {path} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
        ) from None


def _named_entries(servers: Any, where: str) -> list[dict[str, Any]]:
    """``{"name": {...}}`` entries as robotlab configs: the key is the name, ``type`` is the transport."""
    if not isinstance(servers, Mapping):
        raise ConfigurationError(f"{where}: mcpServers must map server names to configs, got {servers!r}")
    entries = []
    for name, entry in servers.items():
        if not isinstance(entry, Mapping):
            raise ConfigurationError(f"{where}: mcpServers[{name!r}] must be a mapping, got {entry!r}")
        if entry.get("disabled") is True:
            continue
        config = {k: v for k, v in entry.items() if k not in ("disabled", "type")}
        if "type" in entry:
            if "transport" in entry:
                raise ConfigurationError(f"{where}: mcpServers[{name!r}] gives both type and transport")
            config["transport"] = entry["type"]
        entries.append({"name": name, **config})
    return entries


# -- relevance -----------------------------------------------------------------------------------------


def relevant_servers(query: str, servers: Sequence[MCPServer], *,
                     threshold: float = DEFAULT_THRESHOLD) -> tuple[MCPServer, ...]:
    """The servers whose name and description match *query* (cosine ≥ *threshold*), else all of them."""
    servers = tuple(servers)
    if not servers or not str(query).strip() or not any(s.description.strip() for s in servers):
        return servers
    wanted = text_vector(str(query))
    matches = tuple(s for s in servers
                    if cosine_similarity(wanted, text_vector(f"{s.name} {s.description}")) >= threshold)
    return matches or servers
