"""The worker side of WorkerPool: receive a job frame, run it, send back a result frame.

Runs inside worker processes, inside subinterpreters and on threads of the
parent's own interpreter, so it imports only the standard library and
robotlab's worker-side modules (no pydantic, msgspec or litellm; a job may
import them itself). Messages to the parent are tuples:

- ``("ready", ident)`` once, after the initializer ran;
- ``("init_error", traceback_text)`` if the initializer raised (then the worker ends);
- ``("ok", job_id, result, hook_metadata, seconds)`` /
  ``("err", job_id, exception_frame, type_name, message, traceback_text, hook_metadata, seconds)``,
  where *hook_metadata* is what ``tool_call`` hooks recorded in ``ctx.metadata`` (or None)
  and *seconds* how long the job ran (the pool schedules by it);
- ``("log", record_fields)`` for every log record at or above the parent's level;
- ``("call", request_id, endpoint_id, op, args)``: a call to an object in the parent
  (its Memory, a budget ledger, a model), answered with
  ``("reply", request_id, ok, payload_frame)`` (see ``parent_calls``);
- ``("err", None, ...)`` for a job frame this worker could not decode (a class it
  cannot import, say): the parent fails the job it sent next, as replies come in order.

A job frame is ``(job_id, kind, target, args, kwargs, endpoints, hooks)``:
*endpoints* is None or ``((name, endpoint_id), ...)``, the parent objects the
job may call; *hooks* is None or the ``tool_call`` hooks in effect in the
parent, as ``shipped_hooks.describe`` made them, registered again here.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import re
import select
import struct
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any, Protocol

from robotlab.errors import DependencyError, RactorBoundaryError, ToolError, WireError
from robotlab.parallel import shared_buffers, shipped_hooks, wire
from robotlab.parallel.boundary import resolve
from robotlab.parallel.memory_proxy import MemoryProxy
from robotlab.parallel.parent_calls import ParentLink, RemoteEndpoint, job_endpoints

_RECORD_FIELDS = ("name", "levelno", "levelname", "pathname", "filename", "module", "lineno", "funcName",
                  "created", "msecs", "thread", "threadName", "process", "processName")
_REFUSED = re.compile(r"module (\S+) does not support loading in subinterpreters")
# A process or subinterpreter worker waiting for a frame polls without sleeping for this long first (see _FdChannel).
_SPIN = 0.0002
_READ_SIZE, _MAX_READ = 1 << 16, 1 << 22  # bytes per read: at least the first, at most the second


class Channel(Protocol):
    def send_bytes(self, data: bytes) -> None: ...
    def recv_bytes(self) -> bytes: ...


class _FdChannel:
    """``multiprocessing.connection.Connection``'s framing over a raw socket fd: the worker end of every backend's pipe.

    multiprocessing.connection itself may not load in a subinterpreter; the
    parent reads and writes this fd's peer with a real Connection. The fd is
    non-blocking: a read takes whatever has arrived (often several frames at
    once) in one system call, and when nothing has, the worker polls for up to
    *spin* seconds before it sleeps in ``poll``. Waking a sleeping thread is
    most of a round trip's cost (tens of microseconds on a VM), and the next
    job usually arrives within that time when the parent waits on the last result.
    """

    def __init__(self, fd: int, spin: float = _SPIN) -> None:
        self._fd = fd
        self._spin = spin
        self._buffer = bytearray()
        os.set_blocking(fd, False)
        self._poller = select.poll()
        self._poller.register(fd, select.POLLIN)

    def _receive(self, wanted: int) -> None:
        """Append what has arrived (at least one byte) to the buffer, waiting as described above."""
        while True:
            try:
                chunk = os.read(self._fd, min(max(wanted, _READ_SIZE), _MAX_READ))
            except BlockingIOError:
                poll = self._poller.poll
                deadline = time.perf_counter() + self._spin
                while not poll(0):
                    if time.perf_counter() >= deadline:
                        poll()  # sleep until readable (or the parent hangs up)
                        break
                    os.sched_yield()  # on a busy machine, let the thread we wait for run
                continue
            if not chunk:
                raise EOFError("the pool closed the channel")
            self._buffer += chunk
            return

    def _take(self, size: int) -> bytes:
        while len(self._buffer) < size:
            self._receive(size - len(self._buffer))
        data = bytes(self._buffer[:size])
        del self._buffer[:size]
        return data

    def recv_bytes(self) -> bytes:
        (size,) = struct.unpack("!i", self._take(4))
        if size == -1:
            (size,) = struct.unpack("!Q", self._take(8))
        return self._take(size)

    def send_bytes(self, data: bytes) -> None:
        header = struct.pack("!i", len(data)) if len(data) <= 0x7FFFFFFF else struct.pack("!iQ", -1, len(data))
        view = memoryview(header + data)
        while view:
            try:
                view = view[os.write(self._fd, view):]
            except BlockingIOError:  # the socket buffer is full: wait until the parent reads
                writable = select.poll()
                writable.register(self._fd, select.POLLOUT)
                writable.poll()


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


def _run(kind: str, target: str, args: tuple, kwargs: dict, memory: RemoteEndpoint | None,
         hooks: shipped_hooks.Description | None, hook_metadata: dict) -> Any:
    fn = _resolved.get(target)
    if fn is None:
        fn = _resolved[target] = resolve(target)
    if kind == "call":
        return fn(*args, **kwargs)
    if kind == "batch":  # one map chunk: the arguments a partial or bound method fixes, then column slices
        fixed, fixed_kwargs, *columns = args
        if fixed or fixed_kwargs:
            fn = functools.partial(fn, *fixed, **fixed_kwargs)
        return list(map(fn, *columns))
    return _run_tool(fn, target, kwargs, memory, hooks, hook_metadata, text_errors=kind == "tool_text")


def _run_tool(cls: type, target: str, args: dict, memory: RemoteEndpoint | None,
              hooks: shipped_hooks.Description | None, hook_metadata: dict, *, text_errors: bool) -> Any:
    """A fresh instance per call, as in the parent, inside the parent's tool_call hooks."""
    from robotlab.hooks import ExtensionState, with_hook_scope

    registries, per_run = shipped_hooks.rebuild(hooks)
    tool = cls()
    if memory is not None and tool.memory is None:
        tool.memory = MemoryProxy(memory)
    metadata = ExtensionState()
    try:
        with with_hook_scope(registries, per_run):
            return tool.call(args, raise_on_error=not text_errors, metadata=metadata)
    except Exception as exc:
        raise ToolError(f"Tool {target!r} failed in worker: {exc}",
                        retryable=bool(getattr(exc, "retryable", False))) from exc
    finally:
        hook_metadata.update(metadata.to_dict())


def _refused_import(exc: BaseException) -> DependencyError | None:
    """A DependencyError naming the module if *exc* is a subinterpreter import refusal."""
    for error in (exc, exc.__cause__, exc.__context__):
        match = _REFUSED.search(str(error)) if isinstance(error, ImportError) else None
        if match:
            module = _full_module_name(error, match.group(1))
            return DependencyError(f"{module} cannot be imported in a subinterpreter (it does not support "
                                   "isolated interpreters); run this job with backend='process'")
    return None


def _full_module_name(error: ImportError, name: str) -> str:
    """*name* with its package: CPython names the extension by its own name only (``_core``, not ``msgspec._core``).

    The package is that of the innermost frame of the traceback (the one whose import was
    refused), when the extension's file sits next to that frame's file.
    """
    tb, frame = error.__traceback__, None
    while tb is not None:
        frame, tb = tb.tb_frame, tb.tb_next
    if "." in name or frame is None:
        return name
    package, folder = frame.f_globals.get("__package__"), os.path.dirname(frame.f_code.co_filename)
    try:
        beside = any(entry.startswith(f"{name}.") for entry in os.listdir(folder))
    except OSError:
        beside = False
    return f"{package}.{name}" if package and beside else name


def _error_reply(job_id: int | None, exc: BaseException, hook_metadata: dict | None, seconds: float,
                 outbox: Any = None) -> bytes:
    exc = _refused_import(exc) or exc
    try:
        frame = _encode(exc)
    except BaseException:  # its pickling may even call sys.exit: this worker must keep serving
        frame = None  # the parent rebuilds a robotlab Error from the name and message
    name = f"{type(exc).__module__}.{type(exc).__qualname__}"
    tb_text = "".join(traceback.format_exception(exc))
    return _encode(("err", job_id, frame, name, str(exc), tb_text, hook_metadata, seconds), outbox)


def _encode(message: Any, outbox: Any = None, received: dict | None = None) -> bytes:
    # Every message is a tuple, which pickle carries with its types; and msgspec,
    # which refuses subinterpreters, is never loaded here. Large buffers go to *outbox*, if any.
    return wire.encode(message, msgpack=False, outbox=outbox, received=received)


def _start(send_frame: Callable[[bytes], None], ident: int, log_level: int | None, initializer: str | None,
           initargs: tuple) -> bool:
    """Before the first job: send log records to the parent, run the initializer, report ready.

    False when the initializer raised: the parent got its traceback and this worker ends.
    """
    if log_level is not None:
        root = logging.getLogger()
        root.handlers[:] = [_ParentLogHandler(lambda message: send_frame(_encode(message)))]
        root.setLevel(log_level)
    if initializer is not None:
        try:
            resolve(initializer)(*initargs)
        except BaseException:
            send_frame(_encode(("init_error", traceback.format_exc())))
            return False
    send_frame(_encode(("ready", ident)))
    return True


def _receiver(channel: Channel, received: dict[int, dict]) -> Callable[[], Any]:
    """A function reading the next frame from *channel*; the large ``bytes`` a job frame brought go to *received*."""

    def receive() -> Any:
        frame = channel.recv_bytes()
        seen: dict = {}
        try:
            message = wire.decode(frame, received=seen)
        except WireError as exc:  # fail that job, keep serving
            return WireError(f"the job cannot be decoded in this worker: {exc}")
        if seen:
            received[message[0]] = seen
        return message

    return receive


def serve(channel: Channel, ident: int, log_level: int | None, initializer: str | None, initargs: tuple, *,
          per_thread: bool = False, outbox: Any = None) -> bool:
    """The worker loop: until the parent sends ``None`` (then True) or closes the channel (False).

    *log_level* None leaves logging alone, and *per_thread* keeps each job's endpoints to
    this thread: both for a thread worker, which shares the parent's interpreter (its log
    records already reach the parent's handlers, and other workers run jobs beside it).
    *outbox*: where the large buffers of results go (``shared_buffers``), None to keep them in the frame.
    """
    send_lock = threading.Lock()

    def send_frame(frame: bytes) -> None:
        with send_lock:  # log records may come from the job's own threads
            channel.send_bytes(frame)

    if not _start(send_frame, ident, log_level, initializer, initargs):
        return True

    received: dict[int, dict] = {}  # by job id: the large bytes its frame brought (see wire.encode)
    receive = _receiver(channel, received)

    link = ParentLink(send_frame, receive, outbox)
    while True:
        try:
            job = link.inbox.popleft() if link.inbox else receive()
        except (EOFError, OSError):
            return False  # the parent closed the channel
        if job is None:
            return True  # orderly stop
        if isinstance(job, WireError):
            send_frame(_error_reply(None, job, None, 0.0))
            continue
        job_id, kind, target, args, kwargs, endpoint_ids, hooks = job
        hook_metadata: dict = {}
        started, frame_outbox = time.perf_counter(), None if outbox is None else shared_buffers.FrameOutbox(outbox)
        try:
            with job_endpoints(link, None if endpoint_ids is None else dict(endpoint_ids),
                               per_thread=per_thread) as endpoints:
                result = _run(kind, target, args, kwargs, endpoints.get("memory"), hooks, hook_metadata)
            del args, kwargs, job  # the job's buffers: their mappings go as soon as the job lets go of them
            try:
                reply = _encode(("ok", job_id, result, hook_metadata or None, time.perf_counter() - started),
                                frame_outbox, received.pop(job_id, None))
            except (WireError, RactorBoundaryError) as exc:
                raise type(exc)(f"the result of {target} cannot be sent back to the parent: {exc}") from exc
            finally:
                del result
        except BaseException as exc:
            received.pop(job_id, None)
            reply = _error_reply(job_id, exc, hook_metadata or None, time.perf_counter() - started, frame_outbox)
        if not _send_reply(send_frame, reply, frame_outbox):
            return False  # the parent gave up on this worker (a timeout) or is gone


def _send_reply(send_frame: Callable[[bytes], None], reply: bytes, frame_outbox: Any) -> bool:
    """Send a job's reply; False if the parent is gone (then its shared-memory segments are freed here)."""
    try:
        send_frame(reply)
    except OSError:
        if frame_outbox is not None:
            frame_outbox.discard()
        return False
    return True


def _exit_with_parent(alive: Any, outbox: Any) -> None:
    """Only the parent holds the write end of *alive*: EOF means the parent is gone.

    Then the pool cannot end this worker's process group, so the worker does (see
    _end_own_group), here or, when the closed channel ends its loop first, in process_main.
    """
    from multiprocessing.connection import wait

    wait([alive])
    if outbox is not None:
        outbox.close()  # its result files: nobody will take them now
    _end_own_group()
    os._exit(0)


def _end_own_group() -> None:
    """SIGKILL this worker's process group, itself included, if it leads one (never the group it started in)."""
    import signal

    if hasattr(os, "killpg") and os.getpgrp() == os.getpid():
        os.killpg(os.getpid(), signal.SIGKILL)


def _lead_own_group() -> None:
    """Make this worker the leader of a new process group, so the pool can end the whole group.

    The subprocesses its jobs start join the group and the pool kills it when the worker
    stops (see ``ProcessWorker``). ``setpgrp``, not ``setsid``: the worker stays in the
    session (and so keeps the controlling terminal), but terminal signals (Ctrl-C, Ctrl-Z)
    go to the foreground group only, which the worker is no longer part of.
    """
    if hasattr(os, "setpgrp"):
        with contextlib.suppress(OSError):  # a session leader cannot: then the group is not ours to kill
            os.setpgrp()


def process_main(conn: Any, alive: Any, sys_path: list[str], log_level: int,
                 initializer: str | None, initargs: tuple) -> None:
    """Entry point of a worker process (the ``multiprocessing.Process`` target)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    _lead_own_group()  # before the first job: every process a job starts is in the group
    sys.path[:] = sys_path
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    outbox = shared_buffers.NamedOutbox() if shared_buffers.supported() else None
    threading.Thread(target=_exit_with_parent, args=(alive, outbox), daemon=True,
                     name="robotlab-parent-watch").start()
    # A process worker reads its pipe (a socketpair on POSIX) as a subinterpreter does: it spins
    # briefly before it sleeps, which halves the round trip of a short job (docs/performance.md).
    channel = _FdChannel(conn.fileno()) if os.name == "posix" else conn
    stopped = serve(channel, os.getpid(), log_level, initializer, initargs, outbox=outbox)
    if outbox is not None:
        outbox.close()
    if not stopped:
        # The channel closed without a stop: the parent died (its "alive" pipe may not show it
        # yet) or the pool gave up on this worker and kills it. Either way, end the group here.
        _end_own_group()


def interpreter_main(fd: int, ident: int, log_level: int, initializer: str | None, initargs_frame: bytes) -> None:
    """Entry point inside a subinterpreter; the socket *fd* is owned (and closed) by the parent."""
    serve(_FdChannel(fd), ident, log_level, initializer, wire.decode(initargs_frame), outbox=_transfer_outbox())


def thread_main(fd: int, ident: int, initializer: str | None, initargs: tuple) -> None:
    """Entry point of a thread worker (``backend="thread"``); the socket *fd* is owned (and closed) by its handle.

    No spinning while idle: the thread would contend for the GIL it shares with the parent.
    """
    serve(_FdChannel(fd, spin=0.0), ident, None, initializer, initargs, per_thread=True, outbox=_transfer_outbox())


def _transfer_outbox() -> shared_buffers.TransferOutbox | None:
    return shared_buffers.TransferOutbox() if shared_buffers.supported() else None
