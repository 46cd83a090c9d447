"""The parent's Memory as a job in a worker sees it: ``robotlab.parallel.memory()`` and ``tool.memory``.

Example (inside a function run by ``WorkerPool(memory=memory).submit``)::

    from robotlab.parallel import memory

    def count_words(text: str) -> int:
        n = len(text.split())
        memory().set(f"words.{text[:10]}", n)   # the parent's subscriptions fire now
        memory().increment("texts")              # atomic: no other worker's count is lost
        return n

Every call is one synchronous request to the parent (see ``parent_calls``),
which applies it to its ``Memory`` before answering: writes land in the order the worker made them,
parent-side subscriptions fire and blocked parent readers wake, and a write
that returned is applied even if the worker dies right after. Values cross
through ``freeze_deep``: what a job reads is deeply immutable.

Worker-side module: standard library and robotlab's worker-side modules only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from robotlab.errors import Error
from robotlab.parallel.boundary import freeze_deep
from robotlab.parallel.parent_calls import RemoteEndpoint, endpoint

__all__ = ["MemoryProxy", "memory"]


class MemoryProxy:
    """The job's view of the parent ``Memory``: the same key/value methods, each a request to the parent.

    ``get(key, wait=...)`` blocks in the worker until the key is written in
    the parent (by the parent or by any other worker) or the wait expires
    (``AwaitTimeout``). Errors keep their type (``ConfigurationError`` for a
    reserved key, ``RactorBoundaryError`` for a value that cannot cross).
    """

    def __init__(self, remote: RemoteEndpoint) -> None:
        self._remote = remote

    def get(self, key: object, *more: object, wait: bool | float | None = False, default: Any = None) -> Any:
        """As ``Memory.get``: one value, or ``{key: value}`` for several keys."""
        keys = tuple(str(k) for k in (key, *more))
        return self._remote.call("get", keys, wait, freeze_deep(default, root="default"))

    async def get_async(self, key: object, *more: object, wait: bool | float | None = False,
                        default: Any = None) -> Any:
        """As ``Memory.get_async``: the parent's answer is awaited on a helper thread."""
        from robotlab.sync_bridge import in_thread

        return await in_thread(self.get, key, *more, wait=wait, default=default)

    def set(self, key: object, value: Any) -> None:
        """Write *key* in the parent Memory; returns once it is applied there."""
        self._remote.call("set", str(key), freeze_deep(value, root=f"memory[{str(key)!r}]"))

    def update(self, values: Mapping[str, Any] | None = None, /, **kwargs: Any) -> None:
        """Write several keys at once (atomically in the parent)."""
        items = dict(values or {}, **kwargs)
        self._remote.call("update", freeze_deep({str(k): v for k, v in items.items()}, root="memory"))

    def increment(self, key: object, by: int | float = 1) -> int | float:
        """As ``Memory.increment``: one atomic step in the parent, so no worker's increment is lost."""
        if not isinstance(by, (int, float)) or isinstance(by, bool):
            raise TypeError(f"increment by= must be an int or a float, got {type(by).__name__}")
        return self._remote.call("increment", str(key), by)

    def compare_and_set(self, key: object, expected: Any, new: Any) -> bool:
        """As ``Memory.compare_and_set``, atomic in the parent.

        *expected* is compared with the stored value as this worker would read
        it (frozen), so a value just read with ``get`` matches.
        """
        return self._remote.call("compare_and_set", str(key), freeze_deep(expected, root="expected"),
                                 freeze_deep(new, root=f"memory[{str(key)!r}]"))

    def delete(self, key: object) -> Any:
        """Remove *key*; returns its old value (``None`` when absent)."""
        return self._remote.call("delete", str(key))

    def keys(self) -> list[str]:
        """The parent Memory's user keys, in first-write order."""
        return list(self._remote.call("keys"))

    @property
    def data(self) -> Any:
        """A frozen snapshot of the parent's ``memory.data`` (a ``FrozenDict``)."""
        return self._remote.call("data")

    def __getitem__(self, key: object) -> Any:
        return self._remote.call("getitem", str(key))

    def __setitem__(self, key: object, value: Any) -> None:
        self.set(key, value)

    def __delitem__(self, key: object) -> None:
        self._remote.call("delitem", str(key))

    def __contains__(self, key: object) -> bool:
        return str(key) in self.keys()

    def __repr__(self) -> str:
        return "<MemoryProxy of the parent's Memory>"


def memory() -> MemoryProxy:
    """The parent's Memory, from inside a job running on a ``WorkerPool(memory=...)``.

    Raises ``robotlab.Error`` outside a job, or when the job has no memory.
    """
    remote = endpoint("memory")
    if remote is None:
        raise Error("this job has no memory: create the pool with WorkerPool(..., memory=memory) "
                    "(or pass memory= to submit_tool)")
    return MemoryProxy(remote)
