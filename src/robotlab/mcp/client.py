"""MCPClient: a synchronous connection to one MCP server, safe to use from any thread.

The MCP SDK is asyncio-based; robots are synchronous and run tools on worker
threads. So each client owns a private event loop on a dedicated thread. One
task on that loop holds the transport and the ``ClientSession`` open (anyio
requires them to be entered and exited by the same task); requests from any
thread are submitted to the loop and awaited with a timeout.

Lifetime is explicit: ``connect()`` … ``close()``, or a ``with`` block. ``close()``
ends the session, stops the server subprocess (stdio) or ends the HTTP session,
and joins the thread. Clients still open at interpreter exit are closed then.

Example:
    >>> import sys
    >>> from robotlab.mcp import MCPClient, MCPServer
    >>> server = MCPServer.stdio("time", sys.executable, ["-m", "mcp_server_time", "--local-timezone", "UTC"])
    >>> with MCPClient(server) as client:  # doctest: +SKIP
    ...     [t.name for t in client.list_tools()]
    ...     client.call_tool("get_current_time", {"timezone": "UTC"}).text
    ['get_current_time', 'convert_time']
    '{"timezone": "UTC", ...}'
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import logging
import os
import sys
import threading
import weakref
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import IO, Any, TypeVar

from robotlab.errors import MCPError
from robotlab.mcp import sdk
from robotlab.mcp.config import MCPServer
from robotlab.mcp.failures import leaf_errors, server_label, transport_error

__all__ = ["MCPClient", "MCPToolInfo", "MCPToolResult"]

logger = logging.getLogger("robotlab.mcp")

_T = TypeVar("_T")
# The SDK's stdio shutdown waits up to ~6 s (close stdin, SIGTERM, SIGKILL) before giving up on a server.
_CLOSE_TIMEOUT = 15.0
_MAX_TOOL_PAGES = 100  # a server whose tools/list cursor never ends cannot hang a run

_open_clients: weakref.WeakSet[MCPClient] = weakref.WeakSet()


@dataclass(frozen=True)
class MCPToolInfo:
    """A tool as an MCP server lists it.

    Attributes:
        name, description: what the model sees.
        input_schema: the JSON schema of the arguments, as the server sent it.
        server: the name of the server that offers it.
    """

    name: str
    description: str
    input_schema: dict[str, Any]
    server: str


@dataclass(frozen=True)
class MCPToolResult:
    """What a tool call returned.

    Attributes:
        text: the text content blocks joined by newlines (non-text blocks are summarised).
        is_error: the server reported that the tool failed (``text`` says why).
        structured: the ``structuredContent`` object, when the tool returns one.
    """

    text: str
    is_error: bool = False
    structured: dict[str, Any] | None = field(default=None)


class MCPClient:
    """A connection to one MCP server, usable from any thread.

    >>> client = MCPClient({"name": "time", "command": "mcp-server-time"})
    >>> client.connected
    False
    """

    def __init__(self, server: MCPServer | Mapping[str, Any]) -> None:
        self.server = MCPServer.from_config(server)
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._holder: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._session: Any = None
        self._lost: BaseException | None = None  # why the held session ended on its own

    def __repr__(self) -> str:
        state = "connected" if self.connected else "closed"
        return f"MCPClient({self.server.name!r}, {self.server.describe()!r}, {state})"

    def __enter__(self) -> MCPClient:
        return self.connect()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def connected(self) -> bool:
        """Whether the session is open. ``False`` after ``close()`` and after a request found the
        connection closed (the server died); ``connect()`` then starts a new session."""
        return self._session is not None

    # -- lifetime ----------------------------------------------------------------

    def connect(self) -> MCPClient:
        """Start or reach the server and complete the MCP handshake; returns ``self``.

        Raises ``DependencyError`` without the ``mcp`` package, and ``MCPError``
        (naming the server) when the server cannot be started or reached in
        ``connect_timeout`` seconds. Connecting a connected client does nothing.
        """
        with self._lock:
            if self._session is not None:
                return self
            sdk.load(self.server.transport)
            self._shutdown(graceful=True)  # the remains of a connection that ended on its own
            loop = asyncio.new_event_loop()
            ready: concurrent.futures.Future[Any] = concurrent.futures.Future()
            self._stop = asyncio.Event()
            self._lost = None
            # Created before the loop runs, so _shutdown() can always cancel it, even mid-handshake.
            self._holder = loop.create_task(self._hold_session(ready, self._stop))
            self._loop = loop
            self._thread = threading.Thread(
                target=self._run_loop, args=(loop, self._holder), name=f"robotlab-mcp-{self.server.name}", daemon=True
            )
            self._thread.start()
            try:
                self._session = ready.result(timeout=self.server.connect_timeout)
            except BaseException as exc:
                failure = ready.exception() if ready.done() else None
                self._shutdown(graceful=False)
                if failure is not None:
                    raise transport_error(self.server, "connecting", failure) from failure
                if isinstance(exc, TimeoutError):
                    raise MCPError(
                        f"{server_label(self.server)}: connecting timed out after "
                        f"{self.server.connect_timeout:g} s (raise connect_timeout if the server starts slowly)",
                        retryable=True,
                    ) from None
                raise
            _open_clients.add(self)
        return self

    def close(self) -> None:
        """End the session and release everything: subprocess, HTTP session, thread. Idempotent."""
        with self._lock:
            self._shutdown(graceful=True)
            _open_clients.discard(self)

    def _shutdown(self, *, graceful: bool) -> None:
        loop, thread, holder, stop = self._loop, self._thread, self._holder, self._stop
        self._session = None
        self._loop = self._thread = self._holder = self._stop = None
        if loop is None or thread is None or holder is None or stop is None:
            return
        # Graceful: the holder task unwinds the transport properly (stdin closed, HTTP session deleted).
        # Mid-handshake there is nothing to end gracefully, so the task is cancelled.
        for attempt in (stop.set if graceful else holder.cancel, holder.cancel):
            if not thread.is_alive():
                break
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(attempt)
            thread.join(_CLOSE_TIMEOUT)
        if thread.is_alive():
            logger.warning("%s: its event-loop thread did not stop; abandoning it", server_label(self.server))

    @staticmethod
    def _run_loop(loop: asyncio.AbstractEventLoop, holder: asyncio.Task[None]) -> None:
        asyncio.set_event_loop(loop)
        try:
            with contextlib.suppress(BaseException):
                loop.run_until_complete(holder)
            # Requests still in flight when the session ended: cancel them so their callers wake up.
            pending = asyncio.all_tasks(loop)
            for task in pending:
                task.cancel()
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()

    async def _hold_session(self, ready: concurrent.futures.Future[Any], stop: asyncio.Event) -> None:
        """The one task that opens the transport and session, waits for close(), and unwinds them."""
        session = None
        try:
            async with contextlib.AsyncExitStack() as stack:
                errlog = _errlog(stack) if self.server.transport == "stdio" else sys.stderr
                read, write = await sdk.open_transport(stack, self.server, errlog)
                from mcp import ClientSession

                session = await stack.enter_async_context(ClientSession(read, write))
                await session.initialize()
                ready.set_result(session)
                await stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            elif not isinstance(exc, asyncio.CancelledError):
                self._lost = exc
                logger.warning("%s", transport_error(self.server, "keeping the session open", exc))
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            if session is not None and self._session is session:  # not a newer connection's session
                self._session = None

    # -- requests ----------------------------------------------------------------

    def list_tools(self) -> list[MCPToolInfo]:
        """Every tool the server offers (all pages of ``tools/list``)."""

        async def list_all(session: Any) -> list[Any]:
            tools: list[Any] = []
            cursor = None
            for _ in range(_MAX_TOOL_PAGES):
                page = await sdk.list_tools_page(session, cursor)
                tools.extend(page.tools)
                cursor = sdk.model_field(page, "next_cursor", "nextCursor")
                if not cursor:
                    break
            return tools

        raw = self._request(list_all, "listing tools", self.server.connect_timeout)
        return [
            MCPToolInfo(
                name=tool.name,
                description=tool.description or "",
                input_schema=dict(sdk.model_field(tool, "input_schema", "inputSchema") or {}),
                server=self.server.name,
            )
            for tool in raw
        ]

    def call_tool(self, name: str, arguments: Mapping[str, Any] | None = None, *,
                  timeout: float | None = None) -> MCPToolResult:
        """Call tool *name*; waits at most *timeout* seconds (default: the server's ``call_timeout``).

        A failure the server reports (the tool raised, an unknown tool, invalid
        arguments) comes back as ``MCPToolResult(is_error=True)``. A transport
        failure or timeout raises ``MCPError`` (``retryable=True`` when transient).
        """
        args = dict(arguments or {})
        try:
            raw = self._request(lambda s: s.call_tool(name, args), f"calling tool {name!r}",
                                self.server.call_timeout if timeout is None else timeout, server_errors=True)
        except _ServerError as refused:
            return MCPToolResult(text=refused.message, is_error=True)
        return _tool_result(raw)

    def _request(self, make: Callable[[Any], Awaitable[_T]], action: str, timeout: float, *,
                 server_errors: bool = False) -> _T:
        session, loop = self._session, self._loop
        if session is None or loop is None:
            raise self._not_connected(action)
        try:
            future = asyncio.run_coroutine_threadsafe(make(session), loop)
        except RuntimeError:  # the loop closed between the check and the submit
            raise self._not_connected(action) from None
        try:
            return future.result(timeout)
        except TimeoutError:
            if future.done() and future.exception() is not None:
                failure: BaseException = future.exception()  # type: ignore[assignment]
            else:
                future.cancel()
                raise MCPError(
                    f"{server_label(self.server)}: {action} timed out after {timeout:g} s", retryable=True
                ) from None
        except concurrent.futures.CancelledError:
            raise self._not_connected(action) from None
        except Exception as exc:
            failure = exc
        except BaseException:  # KeyboardInterrupt and friends: stop waiting, leave the request to be cancelled
            future.cancel()
            raise
        code = next((sdk.jsonrpc_error_code(e) for e in leaf_errors(failure)), None)
        if server_errors and code is not None and code not in (sdk.CONNECTION_CLOSED, sdk.REQUEST_TIMEOUT):
            raise _ServerError(str(failure)) from failure
        if code == sdk.CONNECTION_CLOSED and self._session is session:
            # The session is dead: say so (connected is False) and let connect() start a new one.
            self._lost, self._session = failure, None
        raise transport_error(self.server, action, failure) from failure

    def _not_connected(self, action: str) -> MCPError:
        if self._lost is not None:
            error = transport_error(self.server, action, self._lost)
            return MCPError(f"{error} (the connection was lost earlier)", retryable=error.retryable)
        return MCPError(f"{server_label(self.server)}: {action} failed: not connected; call connect() first "
                        "or use the client in a with block")


class _ServerError(Exception):
    """The server answered a tools/call with a JSON-RPC error (not a transport failure)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _tool_result(raw: Any) -> MCPToolResult:
    parts = [_content_text(block) for block in (getattr(raw, "content", None) or ())]
    structured = sdk.model_field(raw, "structured_content", "structuredContent")
    return MCPToolResult(
        text="\n".join(p for p in parts if p),
        is_error=bool(sdk.model_field(raw, "is_error", "isError", False)),
        structured=dict(structured) if isinstance(structured, Mapping) else None,
    )


def _content_text(block: Any) -> str:
    """Text for one content block; images, audio and binary resources are summarised, not inlined."""
    kind = getattr(block, "type", "")
    if kind == "text":
        return str(block.text)
    if kind in ("image", "audio"):
        mime = sdk.model_field(block, "mime_type", "mimeType", "")
        return f"[{kind} content: {mime}, {len(getattr(block, 'data', '') or '')} base64 characters]"
    if kind == "resource":
        resource = block.resource
        text = getattr(resource, "text", None)
        return str(text) if text is not None else f"[binary resource: {resource.uri}]"
    if kind == "resource_link":
        return f"[resource link: {block.uri}]"
    return f"[{kind or type(block).__name__} content]"


def _errlog(stack: contextlib.AsyncExitStack) -> IO[str]:
    """Where a stdio server's stderr goes: ours, or /dev/null when ours is not a real file (notebooks)."""
    try:
        sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        devnull = open(os.devnull, "w")  # noqa: SIM115 - closed with the session
        stack.callback(devnull.close)
        return devnull
    return sys.stderr


@atexit.register
def _close_open_clients() -> None:
    """At interpreter exit, close clients nobody closed, so no server subprocess outlives us."""
    for client in list(_open_clients):
        with contextlib.suppress(Exception):
            client.close()
