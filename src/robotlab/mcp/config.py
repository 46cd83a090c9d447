"""MCP server configurations: what to launch or where to connect, validated up front.

Four transports: ``stdio`` (robotlab starts the server as a subprocess), and three
for a server that already listens at a URL: ``streamable_http``, ``sse`` (the older
HTTP+SSE transport) and ``websocket`` (``ws://`` / ``wss://``). A config is an
:class:`MCPServer` or a mapping in robot_lab's shape::

    {"name": "time", "transport": {"type": "stdio", "command": "mcp-server-time", "args": ["--local-timezone", "UTC"]}}
    {"name": "search", "transport": {"type": "streamable_http", "url": "https://mcp.example.com/mcp"}}
    {"name": "legacy", "transport": {"type": "sse", "url": "http://127.0.0.1:8000/sse"}}
    {"name": "neon", "transport": {"type": "ws", "url": "ws://127.0.0.1:8080/ws"}}

or the flat shape ``{"name": "time", "transport": "stdio", "command": "mcp-server-time"}``
(without ``transport``: ``stdio`` when ``command`` is given; with ``url``, ``websocket`` for
a ``ws://`` or ``wss://`` URL, else ``streamable_http``).

Example:
    >>> server = MCPServer.from_config({"name": "time", "transport": {"type": "stdio", "command": "mcp-server-time"}})
    >>> server.transport, server.command, server.describe()
    ('stdio', 'mcp-server-time', 'stdio: mcp-server-time')

Standard library only: building a robot with ``mcp=[...]`` must not import the MCP SDK.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

from robotlab.errors import ConfigurationError

__all__ = ["TRANSPORTS", "MCPServer", "parse_servers"]

Transport = Literal["stdio", "streamable_http", "sse", "websocket"]
TRANSPORTS: tuple[str, ...] = ("stdio", "streamable_http", "sse", "websocket")
_ALIASES = {"stdio": "stdio", "streamable_http": "streamable_http", "streamable-http": "streamable_http",
            "http": "streamable_http", "sse": "sse", "websocket": "websocket", "ws": "websocket"}
# The URL schemes each URL transport accepts.
_SCHEMES = {"streamable_http": ("http", "https"), "sse": ("http", "https"), "websocket": ("ws", "wss")}
_STDIO_KEYS = ("command", "args", "env", "cwd")
_HTTP_KEYS = ("url", "headers")
_COMMON_KEYS = ("name", "transport", "description", "connect_timeout", "call_timeout")


@dataclass(frozen=True)
class MCPServer:
    """One MCP server a robot can use. Build it with :meth:`stdio`, :meth:`http` or :meth:`from_config`.

    Attributes:
        name: how ``run(mcp=[...])`` and error messages refer to the server.
        transport: ``"stdio"``, ``"streamable_http"``, ``"sse"`` or ``"websocket"``.
        command, args, env, cwd: the subprocess to start (stdio). ``env`` is added to
            the MCP SDK's minimal inherited environment (PATH, HOME, ...), not to all of ``os.environ``.
        url, headers: the endpoint and extra HTTP headers, e.g. ``Authorization`` (the URL transports;
            for ``websocket`` they go with the opening handshake).
        connect_timeout: seconds to start/connect, handshake and list the tools.
        call_timeout: seconds one tool call may take.
        description: what the server is for, in words; ``run(mcp="discover")`` matches messages against it.

    >>> MCPServer.http("search", "http://127.0.0.1:8000/mcp").describe()
    'streamable_http: http://127.0.0.1:8000/mcp'
    """

    name: str
    transport: Transport
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] | None = None
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    connect_timeout: float = 30.0
    call_timeout: float = 60.0
    description: str = ""

    def __repr__(self) -> str:  # env values, headers and URL passwords may be secrets
        return f"MCPServer({self.name!r}, {self.describe()!r})"

    def __hash__(self) -> int:  # env and headers are dicts; the rest identifies a server
        return hash((self.name, self.transport, self.command, self.args, self.url))

    def __post_init__(self) -> None:
        where = f"MCP server {self.name!r}" if isinstance(self.name, str) and self.name else "MCP server"
        if not isinstance(self.name, str) or not self.name.strip():
            raise ConfigurationError(f"{where}: name must be a non-empty string, got {self.name!r}")
        if self.transport not in TRANSPORTS:
            raise ConfigurationError(
                f"{where}: transport must be one of {', '.join(TRANSPORTS)}, got {self.transport!r}"
            )
        if not isinstance(self.description, str):
            raise ConfigurationError(f"{where}: description must be a string, got {self.description!r}")
        for key in ("connect_timeout", "call_timeout"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise ConfigurationError(f"{where}: {key} must be a positive number of seconds, got {value!r}")
        if self.transport == "stdio":
            self._check_stdio(where)
        else:
            self._check_url(where)

    def _check_stdio(self, where: str) -> None:
        if not isinstance(self.command, str) or not self.command.strip():
            raise ConfigurationError(f"{where}: a stdio server needs command= (the executable to start)")
        if isinstance(self.args, str) or not isinstance(self.args, Sequence) or not all(
            isinstance(a, str) for a in self.args
        ):
            raise ConfigurationError(f"{where}: args must be a list of strings, got {self.args!r}")
        object.__setattr__(self, "args", tuple(self.args))
        if self.env is not None:
            object.__setattr__(self, "env", _string_map(self.env, "env", where))
        if self.cwd is not None:
            if not isinstance(self.cwd, str | Path):
                raise ConfigurationError(f"{where}: cwd must be a path, got {self.cwd!r}")
            object.__setattr__(self, "cwd", str(self.cwd))
        if self.url is not None or self.headers:
            raise ConfigurationError(
                f"{where}: url and headers belong to a URL server (streamable_http, sse, websocket), not stdio"
            )

    def _check_url(self, where: str) -> None:
        schemes = _SCHEMES[self.transport]
        parts = urlsplit(self.url) if isinstance(self.url, str) else None
        if parts is None or parts.scheme not in schemes or not parts.netloc:
            wanted = " or ".join(f"{scheme}://" for scheme in schemes)
            raise ConfigurationError(
                f"{where}: a {self.transport} server needs url= with a {wanted} address, got {self.url!r}"
            )
        object.__setattr__(self, "headers", _string_map(self.headers or {}, "headers", where))
        if self.command is not None or self.args or self.env is not None or self.cwd is not None:
            raise ConfigurationError(
                f"{where}: command, args, env and cwd belong to a stdio server, not {self.transport}"
            )

    # -- construction ----------------------------------------------------------

    @classmethod
    def stdio(
        cls,
        name: str,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        connect_timeout: float = 30.0,
        call_timeout: float = 60.0,
        description: str = "",
    ) -> MCPServer:
        """A server robotlab starts as a subprocess and talks to over stdin/stdout.

        >>> MCPServer.stdio("time", "mcp-server-time", ["--local-timezone", "UTC"]).args
        ('--local-timezone', 'UTC')
        """
        return cls(name, "stdio", command=command, args=tuple(args) if not isinstance(args, str) else args,
                   env=env, cwd=cwd, connect_timeout=connect_timeout, call_timeout=call_timeout,
                   description=description)

    @classmethod
    def http(
        cls,
        name: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        connect_timeout: float = 30.0,
        call_timeout: float = 60.0,
        description: str = "",
    ) -> MCPServer:
        """A server listening at *url* (MCP streamable HTTP transport)."""
        return cls(name, "streamable_http", url=url, headers=dict(headers or {}),
                   connect_timeout=connect_timeout, call_timeout=call_timeout, description=description)

    @classmethod
    def sse(
        cls,
        name: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        connect_timeout: float = 30.0,
        call_timeout: float = 60.0,
        description: str = "",
    ) -> MCPServer:
        """A server listening at *url* with the HTTP+SSE transport (GET the event stream, POST messages).

        >>> MCPServer.sse("legacy", "http://127.0.0.1:8000/sse").describe()
        'sse: http://127.0.0.1:8000/sse'
        """
        return cls(name, "sse", url=url, headers=dict(headers or {}),
                   connect_timeout=connect_timeout, call_timeout=call_timeout, description=description)

    @classmethod
    def websocket(
        cls,
        name: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        connect_timeout: float = 30.0,
        call_timeout: float = 60.0,
        description: str = "",
    ) -> MCPServer:
        """A server listening at a ``ws://`` or ``wss://`` *url* (one JSON-RPC message per text frame).

        >>> MCPServer.websocket("neon", "ws://127.0.0.1:8080/ws").transport
        'websocket'
        """
        return cls(name, "websocket", url=url, headers=dict(headers or {}),
                   connect_timeout=connect_timeout, call_timeout=call_timeout, description=description)

    @classmethod
    def from_config(cls, config: MCPServer | Mapping[str, Any]) -> MCPServer:
        """Validate one server config (nested robot_lab shape, flat shape, or an ``MCPServer``)."""
        if isinstance(config, MCPServer):
            return config
        if not isinstance(config, Mapping):
            raise ConfigurationError(
                f"an MCP server config must be a mapping such as "
                f"{{'name': 'time', 'transport': {{'type': 'stdio', 'command': 'mcp-server-time'}}}}, got {config!r}"
            )
        name = config.get("name")
        where = f"MCP server {name!r}" if isinstance(name, str) and name else "MCP server config"
        options = dict(config)
        transport = options.pop("transport", None)
        if isinstance(transport, Mapping):
            nested = dict(transport)
            kind = nested.pop("type", None)
            clash = sorted(set(nested) & set(options))
            if clash:
                raise ConfigurationError(f"{where}: {', '.join(clash)} given both inside and outside transport")
            options.update(nested)
        else:
            kind = transport
        if kind is None:
            kind = "stdio" if "command" in options else _url_transport(options["url"]) if "url" in options else None
        if kind is None:
            raise ConfigurationError(
                f"{where}: say which transport to use: transport='stdio' with command=..., "
                "or transport='streamable_http', 'sse' or 'websocket' with url=..."
            )
        resolved = _ALIASES.get(kind.lower()) if isinstance(kind, str) else None
        if resolved is None:
            raise ConfigurationError(
                f"{where}: transport {kind!r} is not supported; use 'stdio', 'streamable_http' (alias 'http'), "
                "'sse' or 'websocket' (alias 'ws')"
            )
        valid = (*_COMMON_KEYS, *_STDIO_KEYS, *_HTTP_KEYS)
        unknown = sorted(k for k in options if k not in valid)
        if unknown:
            raise ConfigurationError(
                f"{where}: unknown option(s) {', '.join(map(repr, unknown))}; valid: {', '.join(valid)}"
            )
        options.pop("name", None)
        return cls(name, resolved, **options)  # type: ignore[arg-type]

    # -- display -------------------------------------------------------------------

    def describe(self) -> str:
        """``stdio: <command line>`` or ``<transport>: <url>``; never env values or headers (secrets)."""
        if self.transport == "stdio":
            return f"stdio: {shlex.join([str(self.command), *self.args])}"
        parts = urlsplit(str(self.url))
        host = parts.netloc.rpartition("@")[2]  # drop user:password@
        return f"{self.transport}: {urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))}"


def _url_transport(url: object) -> str:
    """The transport a config with only ``url`` gets: websocket for ws:// and wss://, else streamable_http."""
    scheme = urlsplit(url).scheme if isinstance(url, str) else ""
    return "websocket" if scheme in ("ws", "wss") else "streamable_http"


def _string_map(value: Any, what: str, where: str) -> dict[str, str]:
    if not isinstance(value, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise ConfigurationError(f"{where}: {what} must map strings to strings, got {value!r}")
    return dict(value)


def parse_servers(configs: Sequence[MCPServer | Mapping[str, Any]], *, where: str = "robot") -> tuple[MCPServer, ...]:
    """Validate a list of server configs; names must be unique.

    >>> [s.name for s in parse_servers([{"name": "a", "command": "srv-a"}, {"name": "b", "url": "http://h/mcp"}])]
    ['a', 'b']
    """
    if isinstance(configs, Mapping | str | MCPServer) or not isinstance(configs, Sequence):
        raise ConfigurationError(f"{where}: mcp must be a list of MCP server configs, got {configs!r}")
    servers = tuple(MCPServer.from_config(c) for c in configs)
    seen: set[str] = set()
    for server in servers:
        if server.name in seen:
            raise ConfigurationError(f"{where}: two MCP servers are named {server.name!r}; names must be unique")
        seen.add(server.name)
    return servers
