"""The parent's Memory as a job in a worker sees it: ``robotlab.parallel.memory()`` and ``tool.memory``.

Example (inside a function run by ``WorkerPool(memory=memory).submit``)::

    from robotlab.parallel import memory

    def count_words(text: str) -> int:
        n = len(text.split())
        memory().set(f"words.{text[:10]}", n)   # the parent's subscriptions fire now
        return n

Every call is one synchronous request to the parent, which applies it to its
``Memory`` before answering: writes land in the order the worker made them,
parent-side subscriptions fire and blocked parent readers wake, and a write
that returned is applied even if the worker dies right after. Values cross
through ``freeze_deep``: what a job reads is deeply immutable.

Worker-side module: standard library and robotlab's worker-side modules only.
"""

from __future__ import annotations

import collections
import contextlib
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from robotlab.errors import Error
from robotlab.parallel import wire
from robotlab.parallel.boundary import freeze_deep

__all__ = ["MemoryProxy", "memory"]


class MemoryLink:
    """The worker's end of the memory requests: one outstanding request at a time.

    Job frames (and the stop signal) that the parent sends while a request
    waits for its answer are kept in :attr:`inbox` for the worker loop.
    """

    def __init__(self, send: Callable[[bytes], None], receive: Callable[[], Any]) -> None:
        self._send = send
        self._receive = receive
        self._lock = threading.Lock()  # a job's own threads may share the proxy
        self.inbox: collections.deque[Any] = collections.deque()

    def request(self, memory_id: int, op: str, args: tuple) -> Any:
        frame = wire.encode(("memory", memory_id, op, args), msgpack=False)
        with self._lock:
            try:
                self._send(frame)
                while True:
                    message = self._receive()
                    if type(message) is tuple and message and message[0] == "memory":
                        break
                    self.inbox.append(message)
            except (EOFError, OSError) as exc:
                raise Error(f"memory.{op}: the pool closed the connection to this worker ({exc})") from None
        _, ok, payload = message
        if ok:
            return payload
        raise _rebuild(*payload)


def _rebuild(frame: bytes | None, type_name: str, text: str) -> BaseException:
    if frame is not None:
        with contextlib.suppress(Exception):
            error = wire.decode(frame)
            if isinstance(error, BaseException):
                return error
    return Error(f"{type_name}: {text}")


class MemoryProxy:
    """The job's view of the parent ``Memory``: the same key/value methods, each a request to the parent.

    ``get(key, wait=...)`` blocks in the worker until the key is written in
    the parent (by the parent or by any other worker) or the wait expires
    (``AwaitTimeout``). Errors keep their type (``ConfigurationError`` for a
    reserved key, ``RactorBoundaryError`` for a value that cannot cross).
    """

    def __init__(self, link: MemoryLink, memory_id: int) -> None:
        self._link = link
        self._id = memory_id
        self._open = True

    def _call(self, op: str, *args: Any) -> Any:
        if not self._open:
            raise Error(f"memory.{op}: the job this memory belonged to has ended")
        return self._link.request(self._id, op, args)

    def get(self, key: object, *more: object, wait: bool | float | None = False, default: Any = None) -> Any:
        """As ``Memory.get``: one value, or ``{key: value}`` for several keys."""
        keys = tuple(str(k) for k in (key, *more))
        return self._call("get", keys, wait, freeze_deep(default, root="default"))

    def set(self, key: object, value: Any) -> None:
        """Write *key* in the parent Memory; returns once it is applied there."""
        self._call("set", str(key), freeze_deep(value, root=f"memory[{str(key)!r}]"))

    def update(self, values: Mapping[str, Any] | None = None, /, **kwargs: Any) -> None:
        """Write several keys at once (atomically in the parent)."""
        items = dict(values or {}, **kwargs)
        self._call("update", freeze_deep({str(k): v for k, v in items.items()}, root="memory"))

    def delete(self, key: object) -> Any:
        """Remove *key*; returns its old value (``None`` when absent)."""
        return self._call("delete", str(key))

    def keys(self) -> list[str]:
        """The parent Memory's user keys, in first-write order."""
        return list(self._call("keys"))

    @property
    def data(self) -> Any:
        """A frozen snapshot of the parent's ``memory.data`` (a ``FrozenDict``)."""
        return self._call("data")

    def __getitem__(self, key: object) -> Any:
        return self._call("getitem", str(key))

    def __setitem__(self, key: object, value: Any) -> None:
        self.set(key, value)

    def __delitem__(self, key: object) -> None:
        self._call("delitem", str(key))

    def __contains__(self, key: object) -> bool:
        return str(key) in self.keys()

    def __repr__(self) -> str:
        return f"<MemoryProxy of the parent's Memory #{self._id}>"


_current: MemoryProxy | None = None
_in_job = False


@contextlib.contextmanager
def job_memory(link: MemoryLink, memory_id: int | None) -> Iterator[MemoryProxy | None]:
    """Make the job's memory (or none) what :func:`memory` returns while the job runs."""
    global _current, _in_job
    proxy = None if memory_id is None else MemoryProxy(link, memory_id)
    _current, _in_job = proxy, True
    try:
        yield proxy
    finally:
        if proxy is not None:
            proxy._open = False
        _current, _in_job = None, False


def memory() -> MemoryProxy:
    """The parent's Memory, from inside a job running on a ``WorkerPool(memory=...)``.

    Raises ``robotlab.Error`` outside a job, or when the pool has no memory.
    """
    if _current is not None:
        return _current
    if _in_job:
        raise Error("this job has no memory: create the pool with WorkerPool(..., memory=memory) "
                    "(or pass memory= to submit_tool)")
    raise Error("robotlab.parallel.memory() is only available inside a job running on a WorkerPool")
