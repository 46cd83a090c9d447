"""The worker side of WorkerPool: receive a job frame, run it, send back a result frame.

Runs inside worker processes and inside subinterpreters, so it imports only the
standard library and robotlab's worker-side modules (no pydantic, msgspec or
litellm; a job may import them itself). Messages to the parent are tuples:

- ``("ready", ident)`` once, after the initializer ran;
- ``("init_error", traceback_text)`` if the initializer raised (then the worker ends);
- ``("ok", job_id, result, hook_metadata, seconds)`` /
  ``("err", job_id, exception_frame, type_name, message, traceback_text, hook_metadata, seconds)``,
  where *hook_metadata* is what ``tool_call`` hooks recorded in ``ctx.metadata`` (or None)
  and *seconds* how long the job ran (the pool schedules by it);
- ``("log", record_fields)`` for every log record at or above the parent's level;
- ``("memory", memory_id, op, args)``: a request to the parent's Memory, answered
  with ``("memory", ok, payload)`` (see ``memory_proxy``).

A job frame is ``(job_id, kind, target, args, kwargs, memory_id, hooks)``; *hooks* is
None or ``(levels, per_run)``: the ``tool_call`` hook classes in effect in the
parent as import paths (``levels``: one tuple of ``(path, context)`` per
registry, global first), registered again here.
"""

from __future__ import annotations

import logging
import os
import re
import struct
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any, Protocol

from robotlab.errors import DependencyError, ToolError, WireError
from robotlab.parallel import wire
from robotlab.parallel.boundary import resolve
from robotlab.parallel.memory_proxy import MemoryLink, MemoryProxy, job_memory

_RECORD_FIELDS = ("name", "levelno", "levelname", "pathname", "filename", "module", "lineno", "funcName",
                  "created", "msecs", "thread", "threadName", "process", "processName")
_REFUSED = re.compile(r"module (\S+) does not support loading in subinterpreters")


class Channel(Protocol):
    def send_bytes(self, data: bytes) -> None: ...
    def recv_bytes(self) -> bytes: ...


class _FdChannel:
    """``multiprocessing.connection.Connection``'s framing over a raw socket fd.

    multiprocessing.connection itself may not load in a subinterpreter; the
    parent reads and writes this fd's peer with a real Connection.
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def _read(self, size: int) -> bytes:
        chunks, left = [], size
        while left:
            chunk = os.read(self._fd, left)
            if not chunk:
                raise EOFError("the pool closed the channel")
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def recv_bytes(self) -> bytes:
        (size,) = struct.unpack("!i", self._read(4))
        if size == -1:
            (size,) = struct.unpack("!Q", self._read(8))
        return self._read(size)

    def send_bytes(self, data: bytes) -> None:
        header = struct.pack("!i", len(data)) if len(data) <= 0x7FFFFFFF else struct.pack("!iQ", -1, len(data))
        view = memoryview(header + data)
        while view:
            view = view[os.write(self._fd, view):]


class _ParentLogHandler(logging.Handler):
    """Ship log records to the parent, which hands them to its own handlers."""

    def __init__(self, send: Callable[[Any], None]) -> None:
        super().__init__()
        self._send = send

    def emit(self, record: logging.LogRecord) -> None:
        try:
            fields = {name: getattr(record, name) for name in _RECORD_FIELDS}
            fields["msg"] = record.getMessage()  # args are formatted here: they may not cross
            if record.exc_info:
                fields["exc_text"] = logging.Formatter().formatException(record.exc_info)
            self._send(("log", fields))
        except Exception:
            self.handleError(record)


_resolved: dict[str, Any] = {}
_scopes: dict[tuple, tuple[list[Any], tuple[type, ...]]] = {}


def _run(kind: str, target: str, args: tuple, kwargs: dict, memory: MemoryProxy | None,
         hooks: tuple | None, hook_metadata: dict) -> Any:
    fn = _resolved.get(target)
    if fn is None:
        fn = _resolved[target] = resolve(target)
    if kind == "call":
        return fn(*args, **kwargs)
    if kind == "batch":  # one map chunk: args are slices of the argument columns
        return list(map(fn, *args))
    return _run_tool(fn, target, kwargs, memory, hooks, hook_metadata, text_errors=kind == "tool_text")


def _run_tool(cls: type, target: str, args: dict, memory: MemoryProxy | None, hooks: tuple | None,
              hook_metadata: dict, *, text_errors: bool) -> Any:
    """A fresh instance per call, as in the parent, inside the parent's tool_call hooks."""
    from robotlab.hooks import ExtensionState, with_hook_scope

    registries, per_run = _hook_scope(hooks)
    tool = cls()
    if memory is not None and tool.memory is None:
        tool.memory = memory
    metadata = ExtensionState()
    try:
        with with_hook_scope(registries, per_run):
            return tool.call(args, raise_on_error=not text_errors, metadata=metadata)
    except Exception as exc:
        raise ToolError(f"Tool {target!r} failed in worker: {exc}",
                        retryable=bool(getattr(exc, "retryable", False))) from exc
    finally:
        hook_metadata.update(metadata.to_dict())


def _hook_scope(hooks: tuple | None) -> tuple[list[Any], tuple[type, ...]]:
    """The registries and per-run classes described by a job's *hooks* (built once per description)."""
    if hooks is None:
        return [], ()
    scope = _scopes.get(hooks)
    if scope is None:
        from robotlab.hooks import HookRegistry

        levels, per_run = hooks
        registries = []
        for level in levels:
            registry = HookRegistry()
            for path, context in level:
                registry.on(resolve(path), None if context is None else dict(context))
            registries.append(registry)
        scope = _scopes[hooks] = (registries, tuple(resolve(path) for path in per_run))
    return scope


def _refused_import(exc: BaseException) -> DependencyError | None:
    """A DependencyError naming the module if *exc* is a subinterpreter import refusal."""
    for error in (exc, exc.__cause__, exc.__context__):
        match = _REFUSED.search(str(error)) if isinstance(error, ImportError) else None
        if match:
            return DependencyError(f"{match.group(1)} cannot be imported in a subinterpreter (it does not support "
                                   "isolated interpreters); run this job with backend='process'")
    return None


def _error_reply(job_id: int, exc: BaseException, hook_metadata: dict | None, seconds: float) -> bytes:
    exc = _refused_import(exc) or exc
    try:
        frame = _encode(exc)
    except Exception:
        frame = None  # the parent rebuilds a robotlab Error from the name and message
    name = f"{type(exc).__module__}.{type(exc).__qualname__}"
    return _encode(("err", job_id, frame, name, str(exc), traceback.format_exc(), hook_metadata, seconds))


def _encode(message: Any) -> bytes:
    # Every message is a tuple, which pickle carries with its types; and msgspec,
    # which refuses subinterpreters, is never loaded here.
    return wire.encode(message, msgpack=False)


def serve(channel: Channel, ident: int, log_level: int, initializer: str | None, initargs: tuple) -> None:
    """The worker loop: until the parent sends ``None`` or closes the channel."""
    send_lock = threading.Lock()

    def send_frame(frame: bytes) -> None:
        with send_lock:  # log records may come from the job's own threads
            channel.send_bytes(frame)

    root = logging.getLogger()
    root.handlers[:] = [_ParentLogHandler(lambda message: send_frame(_encode(message)))]
    root.setLevel(log_level)
    if initializer is not None:
        try:
            resolve(initializer)(*initargs)
        except BaseException:
            send_frame(_encode(("init_error", traceback.format_exc())))
            return
    send_frame(_encode(("ready", ident)))
    link = MemoryLink(send_frame, lambda: wire.decode(channel.recv_bytes()))
    while True:
        try:
            job = link.inbox.popleft() if link.inbox else wire.decode(channel.recv_bytes())
        except (EOFError, OSError):
            return  # the parent closed the channel
        if job is None:
            return  # orderly stop
        job_id, kind, target, args, kwargs, memory_id, hooks = job
        hook_metadata: dict = {}
        started = time.perf_counter()
        try:
            with job_memory(link, memory_id) as memory:
                result = _run(kind, target, args, kwargs, memory, hooks, hook_metadata)
            try:
                reply = _encode(("ok", job_id, result, hook_metadata or None, time.perf_counter() - started))
            except WireError as exc:
                raise WireError(f"the result of {target} cannot be sent back to the parent: {exc}") from exc
        except BaseException as exc:
            reply = _error_reply(job_id, exc, hook_metadata or None, time.perf_counter() - started)
        try:
            send_frame(reply)
        except OSError:
            return  # the parent gave up on this worker (a timeout) or is gone


def _exit_with_parent(alive: Any) -> None:
    """Only the parent holds the write end of *alive*: EOF means the parent is gone."""
    from multiprocessing.connection import wait

    wait([alive])
    os._exit(0)


def process_main(conn: Any, alive: Any, sys_path: list[str], log_level: int,
                 initializer: str | None, initargs: tuple) -> None:
    """Entry point of a worker process (the ``multiprocessing.Process`` target)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    sys.path[:] = sys_path
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    threading.Thread(target=_exit_with_parent, args=(alive,), daemon=True, name="robotlab-parent-watch").start()
    serve(conn, os.getpid(), log_level, initializer, initargs)


def interpreter_main(fd: int, ident: int, log_level: int, initializer: str | None, initargs_frame: bytes) -> None:
    """Entry point inside a subinterpreter; the socket *fd* is owned (and closed) by the parent."""
    serve(_FdChannel(fd), ident, log_level, initializer, wire.decode(initargs_frame))
