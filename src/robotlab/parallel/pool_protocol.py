"""What a WorkerPool and its workers say to each other: the frames, both ways.

To a worker: a job frame ``(id, kind, target, args, kwargs, endpoint ids,
hooks)``, a reply to one of its calls ``("reply", request id, ok, payload
frame)``, and :data:`STOP`. From a worker (see ``_worker.serve``):
``("ready", ident)``, ``("init_error", text)``, ``("log", record fields)``,
``("call", request id, endpoint id, op, args)`` and a job's reply
``("ok" | "err", job id, ...)``; replies come in job order, and job id None
answers a job frame the worker could not decode. A worker process that exits
with :data:`NO_MAIN_GUARD_EXIT` was importing a main script that creates a pool.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from typing import Any

from robotlab.errors import Error, JobFailed, WireError
from robotlab.parallel import wire

__all__ = ["NO_MAIN_GUARD_EXIT", "STOP", "RemoteTraceback", "call_reply", "job_frame", "log_here", "outcome_of",
           "undecodable_reply", "unguarded_main_reason"]

# The frame that tells a worker to stop. Pickled: a subinterpreter cannot load msgspec.
STOP = wire.encode(None, msgpack=False)
NO_MAIN_GUARD_EXIT = 87


class RemoteTraceback(Exception):
    """Set as ``__cause__`` of an exception re-raised from a worker: its text is the worker's traceback."""

    def __str__(self) -> str:
        return self.args[0]


def job_frame(job_id: int, kind: str, target: str, args: tuple, kwargs: dict, endpoint_ids: Any,
              hooks: Any, outbox: Any = None) -> bytes:
    """The frame of one job (its arguments already frozen); its large buffers go to *outbox*, if given."""
    return wire.encode((job_id, kind, target, args, kwargs, endpoint_ids, hooks), outbox=outbox)


def outcome_of(target: str, reply: tuple) -> Any:
    """The result, or the exception to raise, that a job's ``ok`` / ``err`` reply carries."""
    if reply[0] == "ok":
        return reply[2]
    return _rebuild_error(target, *reply[2:6])


def undecodable_reply(target: str, job_id: int, exc: WireError) -> tuple:
    """The ``err`` reply that stands for a reply of *target* the pool could not decode."""
    error = WireError(f"the reply of {target} cannot be decoded here: {exc}")
    return ("err", job_id, wire.encode(error, msgpack=False), "robotlab.errors.WireError", str(error), "", None, 0.0)


def call_reply(request_id: int, outcome: Any, outbox: Any = None) -> bytes:
    """The frame answering a job's call *request_id* with *outcome* (a value, or an exception it raised).

    The payload is a frame of its own: one the worker cannot decode fails that call, not its loop.
    Its large buffers go to *outbox*, the job's (freed when the job ends), if given.
    """
    if isinstance(outcome, BaseException):
        try:
            frame = wire.encode(outcome, msgpack=False)
        except WireError:
            frame = None
        ok, payload = False, (frame, type(outcome).__qualname__, str(outcome))
    else:
        ok, payload = True, outcome
    try:
        body = wire.encode(payload, msgpack=False, outbox=outbox)
    except WireError as exc:
        ok, body = False, wire.encode((None, "WireError", str(exc)), msgpack=False)
    return wire.encode(("reply", request_id, ok, body), msgpack=False)


def log_here(fields: dict) -> None:
    """Hand a worker's log record (its ``__dict__``, as sent) to this process's handlers of its logger."""
    record = logging.makeLogRecord(fields)
    target = logging.getLogger(record.name)
    if target.isEnabledFor(record.levelno):
        target.handle(record)


def unguarded_main_reason() -> str:
    """Why the pool is broken when a worker exited with :data:`NO_MAIN_GUARD_EXIT`."""
    main = getattr(sys.modules.get("__main__"), "__file__", "the main script")
    return (f"WorkerPool is broken: its worker processes start by importing {main}, and that creates a "
            "WorkerPool again. Put the code that creates the pool (and the rest of the script's work) under "
            "`if __name__ == \"__main__\":`, as for ProcessPoolExecutor")


def _rebuild_error(target: str, frame: bytes | None, type_name: str, message: str, tb_text: str) -> BaseException:
    """The worker's exception as its own type when it unpickles here, else a robotlab ``Error``.

    A ``BaseException`` that is not an ``Exception`` (``SystemExit``, ``KeyboardInterrupt``)
    becomes ``JobFailed``: re-raised as it is, it would end the caller's program.
    """
    error: BaseException | None = None
    if frame is not None:
        with contextlib.suppress(WireError):
            error = wire.decode(frame)
    if not isinstance(error, BaseException):
        error = Error(f"{type_name}: {message}" if message else type_name)
    elif not isinstance(error, Exception):
        raised = type_name.removeprefix("builtins.") + (f": {message}" if message else "")
        error = JobFailed(f"{target} raised {raised} in the worker (reported as JobFailed: a job cannot end "
                          "this program)", type_name=type_name)
    error.remote_traceback = tb_text  # type: ignore[attr-defined]
    error.__cause__ = RemoteTraceback(f'\n"""\n{tb_text}"""')
    return error
