"""Calls from a job in a worker to objects that stay in the parent (its Memory, a budget ledger, a model).

The pool exposes *endpoints* for a job (see ``robotlab.parallel.endpoints``);
the job reaches each one by name through a :class:`RemoteEndpoint`, and each
call is one request over the worker's channel, answered by the parent:

- worker → parent: ``("call", request_id, endpoint_id, op, args)``
- parent → worker: ``("reply", request_id, ok, payload_frame)``, the payload encoded on its own

Several threads of one job may wait on the parent at once (two tool calls
that meet through the memory, say): whichever waiting thread is reading the
channel hands each reply to the thread that asked. Job frames that the parent
sends meanwhile are kept in :attr:`ParentLink.inbox` for the worker loop.

Worker-side module: standard library and robotlab's worker-side modules only.
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
import threading
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from robotlab import worker_channel
from robotlab.errors import Error, WireError
from robotlab.parallel import shared_buffers, wire

__all__ = ["ParentLink", "RemoteEndpoint", "endpoint", "job_endpoints"]


class ParentLink:
    """The worker's end of the calls to the parent, shared by every thread of the running job."""

    def __init__(self, send: Callable[[bytes], None], receive: Callable[[], Any], outbox: Any = None) -> None:
        self._send = send  # thread-safe (the worker loop's send lock)
        self._outbox = outbox  # where large arguments of calls go (see shared_buffers), or None
        self._receive = receive
        self._ids = itertools.count()
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._reading = False  # one waiting thread reads the channel at a time
        self._replies: dict[int, tuple] = {}
        self._broken: str | None = None
        self.inbox: deque[Any] = deque()

    def request(self, endpoint_id: int, op: str, args: tuple, label: str) -> Any:
        """Send one call and wait for its reply; the parent's exception is raised here.

        *label* (``"memory.set"``) names the call in errors.
        """
        request_id = next(self._ids)
        with self._lock:
            self._check(label)
        frame_outbox = None if self._outbox is None else shared_buffers.FrameOutbox(self._outbox)
        frame = wire.encode(("call", request_id, endpoint_id, op, args), msgpack=False, outbox=frame_outbox)
        try:
            self._send(frame)
        except OSError as exc:
            if frame_outbox is not None:
                frame_outbox.discard()
            with self._lock:
                self._lost(exc)
                self._check(label)
        with self._lock:
            while request_id not in self._replies:
                self._check(label)
                if self._reading:
                    self._changed.wait()
                    continue
                self._reading = True
                self._lock.release()
                failure: BaseException | None = None
                try:
                    message = self._receive()
                except (EOFError, OSError) as exc:
                    failure = exc
                finally:
                    self._lock.acquire()
                    self._reading = False
                    self._changed.notify_all()
                if failure is not None:
                    self._lost(failure)
                    self._check(label)
                if type(message) is tuple and message and message[0] == "reply":
                    self._replies[message[1]] = message
                else:
                    self.inbox.append(message)  # a job frame (or the stop signal) for the worker loop
                self._changed.notify_all()
            _, _, ok, body = self._replies.pop(request_id)
        try:
            payload = wire.decode(body)
        except WireError as exc:
            raise WireError(f"{label}: the reply cannot be decoded in this worker: {exc}") from exc
        if ok:
            return payload
        raise _rebuild(*payload)

    def _lost(self, exc: BaseException) -> None:  # caller holds the lock
        self._broken = f"the pool closed the connection to this worker ({exc})"
        self._changed.notify_all()

    def _check(self, label: str) -> None:  # caller holds the lock
        if self._broken is not None:
            raise Error(f"{label}: {self._broken}")


def _rebuild(frame: bytes | None, type_name: str, text: str) -> BaseException:
    if frame is not None:
        with contextlib.suppress(Exception):
            error = wire.decode(frame)
            if isinstance(error, BaseException):
                return error
    return Error(f"{type_name}: {text}")


class RemoteEndpoint:
    """A parent-side object as a job sees it: ``call(op, *args)`` runs ``op`` there.

    It stops working when its job ends (a job's threads may outlive it).
    """

    def __init__(self, link: ParentLink, endpoint_id: int, name: str) -> None:
        self._link = link
        self._id = endpoint_id
        self.name = name
        self.open = True

    def call(self, op: str, *args: Any) -> Any:
        if not self.open:
            raise Error(f"{self.name}.{op}: the job this {self.name} belonged to has ended")
        return self._link.request(self._id, op, args, f"{self.name}.{op}")


# The running job's endpoints. A process or subinterpreter worker runs one job at a time in its
# interpreter, so they are global there and every thread the job starts reaches them. Thread workers
# share one interpreter (the parent's): each keeps its job's endpoints in its own context, which
# robotlab's thread hand-offs copy (as they do the hook scope) but a bare ``threading.Thread`` does not.
_current: dict[str, RemoteEndpoint] | None = None
_in_context: contextvars.ContextVar[dict[str, RemoteEndpoint] | None] = contextvars.ContextVar(
    "robotlab_job_endpoints", default=None)


@contextlib.contextmanager
def job_endpoints(link: ParentLink, endpoint_ids: Mapping[str, int] | None, *,
                  per_thread: bool = False) -> Iterator[dict[str, RemoteEndpoint]]:
    """Make the running job's endpoints what :func:`endpoint` returns, until the job ends.

    *per_thread*: only in this thread's context (a thread worker, see above), not interpreter-wide.
    """
    global _current
    endpoints = {name: RemoteEndpoint(link, id_, name) for name, id_ in (endpoint_ids or {}).items()}
    token = _in_context.set(endpoints) if per_thread else None
    if not per_thread:
        _current = endpoints
    try:
        yield endpoints
    finally:
        for remote in endpoints.values():
            remote.open = False
        if token is not None:
            _in_context.reset(token)
        else:
            _current = None


def endpoint(name: str) -> RemoteEndpoint | None:
    """The running job's endpoint *name*, or None when it has none.

    Raises ``robotlab.Error`` outside a job running on a WorkerPool.
    """
    endpoints = _in_context.get()
    if endpoints is None:
        endpoints = _current
    if endpoints is None:
        raise Error(f"the parent's {name} is only available inside a job running on a WorkerPool")
    return endpoints.get(name)


def _job_endpoints() -> dict[str, RemoteEndpoint] | None:
    """The running job's endpoints by name, None outside a job (for ``robotlab.worker_channel``)."""
    endpoints = _in_context.get()
    return _current if endpoints is None else endpoints


worker_channel.install(_job_endpoints)
