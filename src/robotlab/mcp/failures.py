"""Turning what the MCP SDK and its transports raise into one ``MCPError`` that names the server.

A failure is *transient* (``retryable=True``) when trying again later may work:
connection refused or reset, timeouts, a connection closed under us, HTTP 429
and 5xx. A missing executable, a refused permission, HTTP 4xx or a protocol
error will fail the same way again, so they are not retryable.

Example:
    >>> from robotlab.mcp.config import MCPServer
    >>> server = MCPServer.http("search", "http://127.0.0.1:9/mcp")
    >>> err = transport_error(server, "connecting", ConnectionRefusedError(111, "Connection refused"))
    >>> str(err)  # doctest: +ELLIPSIS
    "MCP server 'search' (streamable_http: http://127.0.0.1:9/mcp): connecting failed: ConnectionRefusedError: ..."
    >>> err.retryable
    True
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Iterator

from robotlab.errors import MCPError
from robotlab.mcp import sdk
from robotlab.mcp.config import MCPServer

__all__ = ["is_transient", "leaf_errors", "server_label", "transport_error"]

# httpx / httpx2 and websockets exception classes, matched by name so none has to be imported here.
_TRANSIENT_HTTP_CLASSES = frozenset({"TransportError", "TimeoutException", "NetworkError", "ConnectionClosed"})


def server_label(server: MCPServer) -> str:
    """``MCP server 'time' (stdio: mcp-server-time)`` — how every message names the server."""
    return f"MCP server {server.name!r} ({server.describe()})"


def leaf_errors(exc: BaseException) -> Iterator[BaseException]:
    """The real errors inside (possibly nested) exception groups, cancellations skipped."""
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from leaf_errors(inner)
    elif not isinstance(exc, asyncio.CancelledError | concurrent.futures.CancelledError):
        yield exc


def is_transient(exc: BaseException) -> bool:
    """Whether *exc* is a transport failure that may not happen on another attempt."""
    code = sdk.jsonrpc_error_code(exc)
    if code is not None:
        return code in (sdk.CONNECTION_CLOSED, sdk.REQUEST_TIMEOUT)
    if isinstance(exc, FileNotFoundError | PermissionError | NotADirectoryError | IsADirectoryError):
        return False  # the command or its cwd is wrong: it will be wrong next time too
    if isinstance(exc, ConnectionError | TimeoutError | EOFError | OSError):
        return True
    names = {cls.__name__ for cls in type(exc).__mro__}
    if names & _TRANSIENT_HTTP_CLASSES:
        return True
    status = getattr(getattr(exc, "response", None), "status_code", None)
    return isinstance(status, int) and (status == 429 or status >= 500)


def _describe(exc: BaseException, server: MCPServer) -> str:
    if isinstance(exc, FileNotFoundError) and server.transport == "stdio":
        return f"command not found: {server.command!r} (is it installed and on PATH?)"
    code = sdk.jsonrpc_error_code(exc)
    if code == sdk.CONNECTION_CLOSED:
        return f"the connection closed ({exc}); the server exited or dropped the connection"
    if code is not None:
        return f"the server answered with error {code}: {exc}"
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def transport_error(server: MCPServer, action: str, exc: BaseException) -> MCPError:
    """An ``MCPError`` saying which server, what robotlab was doing, and what failed.

    *exc* may be an exception group (anyio task groups raise them): its first
    real error names the failure, which is retryable when any of them is transient.
    """
    if isinstance(exc, MCPError):
        return exc
    leaves = list(leaf_errors(exc)) or [exc]
    first = leaves[0]
    return MCPError(
        f"{server_label(server)}: {action} failed: {_describe(first, server)}",
        retryable=any(is_transient(leaf) for leaf in leaves),
    )
