"""The worker side of the process pool: receive a job frame, run it, send back a result frame.

Imports only the standard library and robotlab's worker-side modules, so an
idle worker stays small; litellm, pydantic and the rest load only if a job
imports them. Messages to the parent are tuples:

- ``("ready", pid)`` once, after the initializer ran;
- ``("init_error", traceback_text)`` if the initializer raised (then exit);
- ``("ok", job_id, result)`` / ``("err", job_id, exception_frame, type_name, message, traceback_text)``;
- ``("log", record_dict)`` for every log record at or above the parent's level.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection, wait
from typing import Any

from robotlab.errors import ToolError, WireError
from robotlab.parallel import wire
from robotlab.parallel.boundary import resolve

_RECORD_FIELDS = ("name", "levelno", "levelname", "pathname", "filename", "module", "lineno", "funcName",
                  "created", "msecs", "thread", "threadName", "process", "processName")


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


def _exit_with_parent(alive: Connection) -> None:
    """Only the parent holds the write end of *alive*: EOF means the parent is gone."""
    wait([alive])
    os._exit(0)


_resolved: dict[str, Any] = {}


def _run(kind: str, target: str, args: tuple, kwargs: dict) -> Any:
    fn = _resolved.get(target)
    if fn is None:
        fn = _resolved[target] = resolve(target)
    if kind == "call":
        return fn(*args, **kwargs)
    if kind == "batch":  # one map chunk: fn applied to each argument tuple
        return [fn(*item) for item in args]
    try:  # "tool": a fresh instance per call, as in the parent
        return fn().execute(**kwargs)
    except Exception as exc:
        raise ToolError(f"Tool {target!r} failed in worker: {exc}",
                        retryable=bool(getattr(exc, "retryable", False))) from exc


def _error_message(job_id: int, exc: BaseException) -> tuple:
    try:
        frame = wire.encode(exc)
    except Exception:
        frame = None  # the parent rebuilds a robotlab Error from the name and message
    name = f"{type(exc).__module__}.{type(exc).__qualname__}"
    return ("err", job_id, frame, name, str(exc), traceback.format_exc())


def main(conn: Connection, alive: Connection, sys_path: list[str], log_level: int,
         initializer: str | None, initargs: tuple) -> None:
    """The worker process's entry point (the ``Process`` target)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    sys.path[:] = sys_path
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    threading.Thread(target=_exit_with_parent, args=(alive,), daemon=True, name="robotlab-parent-watch").start()
    send_lock = threading.Lock()

    def send_frame(frame: bytes) -> None:
        with send_lock:  # log records may come from the job's own threads
            conn.send_bytes(frame)

    def send(message: Any) -> None:
        send_frame(wire.encode(message))

    root = logging.getLogger()
    root.handlers[:] = [_ParentLogHandler(send)]
    root.setLevel(log_level)
    if initializer is not None:
        try:
            resolve(initializer)(*initargs)
        except BaseException:
            send(("init_error", traceback.format_exc()))
            sys.exit(1)
    send(("ready", os.getpid()))
    while True:
        try:
            job = wire.decode(conn.recv_bytes())
        except (EOFError, OSError):
            return  # the parent closed the pipe
        if job is None:
            return  # orderly stop
        job_id, kind, target, args, kwargs = job
        try:
            result = _run(kind, target, args, kwargs)
            try:
                reply = wire.encode(("ok", job_id, result))
            except WireError as exc:
                raise WireError(f"the result of {target} cannot be sent back to the parent: {exc}") from exc
        except BaseException as exc:
            reply = wire.encode(_error_message(job_id, exc))
        send_frame(reply)
