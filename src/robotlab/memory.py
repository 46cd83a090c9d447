"""Memory: a reactive, thread-safe key/value store shared by robots.

Example:
    >>> from robotlab import create_memory
    >>> memory = create_memory(data={"category": "billing"})
    >>> memory.data.category
    'billing'
    >>> seen = []
    >>> sub = memory.subscribe("order.*", lambda change: seen.append((change.key, change.value)))
    >>> memory.set("order.42", "shipped")
    >>> seen
    [('order.42', 'shipped')]

A blocking ``get(key, wait=seconds)`` returns as soon as another thread writes
the key and raises ``AwaitTimeout`` when it expires (per missing key).
"""

from __future__ import annotations

import fnmatch
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from robotlab.errors import AwaitTimeout, ConfigurationError, DependencyError
from robotlab.extensions import extension, extension_loaded

__all__ = ["RESERVED_KEYS", "Memory", "MemoryChange", "StateProxy", "Subscription", "create_memory"]

logger = logging.getLogger("robotlab.memory")

RESERVED_KEYS = ("data", "results", "messages", "session_id", "cache")
_MISSING = object()


@dataclass(frozen=True)
class MemoryChange:
    """What a subscription callback receives."""

    key: str
    value: Any
    previous: Any
    deleted: bool


@dataclass(eq=False)
class Subscription:
    pattern: str
    callback: Callable[[MemoryChange], Any]
    memory: Memory | None = None

    def matches(self, key: str) -> bool:
        return key == self.pattern or fnmatch.fnmatchcase(key, self.pattern)

    def cancel(self) -> None:
        if self.memory is not None:
            self.memory.unsubscribe(self)


class StateProxy:
    """``memory.data``: item and attribute access to the same dict (``data["x"]`` / ``data.x``)."""

    __slots__ = ("_data", "_lock")

    def __init__(self, data: dict[str, Any], lock: threading.RLock) -> None:
        object.__setattr__(self, "_data", data)
        object.__setattr__(self, "_lock", lock)

    def __getitem__(self, key: str) -> Any:
        with self._lock:
            return self._data[key]

    def __setitem__(self, key: str, value: Any) -> None:
        with self._lock:
            self._data[str(key)] = value

    def __getattr__(self, key: str) -> Any:
        if key.startswith("__"):
            raise AttributeError(key)
        with self._lock:
            return self._data.get(key)

    def __setattr__(self, key: str, value: Any) -> None:
        self[key] = value

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._data

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def get(self, key: str, default: Any = None) -> Any:
        with self._lock:
            return self._data.get(key, default)

    def keys(self) -> list[str]:
        with self._lock:
            return list(self._data)

    def update(self, values: Mapping[str, Any]) -> None:
        with self._lock:
            self._data.update({str(k): v for k, v in values.items()})

    def to_dict(self) -> dict[str, Any]:
        with self._lock:
            return dict(self._data)

    def __repr__(self) -> str:
        return f"StateProxy({self.to_dict()!r})"


class Memory:
    """Reactive key/value store. Keys are strings (others are converted with ``str()``)."""

    def __init__(
        self, data: Mapping[str, Any] | None = None, *, enable_cache: bool = True, session_id: str | None = None
    ) -> None:
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)
        self._values: dict[str, Any] = {}
        self._subscriptions: list[Subscription] = []
        self._data: dict[str, Any] = dict(data or {})
        self._proxy = StateProxy(self._data, self._lock)
        self.results: list[Any] = []
        self.messages: list[dict[str, Any]] = []
        self.session_id = session_id
        self._cache = extension("semantic_cache") if enable_cache and extension_loaded("semantic_cache") else None

    # -- reserved keys ----------------------------------------------------------

    @property
    def data(self) -> StateProxy:
        return self._proxy

    @property
    def cache(self) -> Any:
        """The semantic cache, or ``None`` (disabled, or the extension is not installed)."""
        return self._cache

    # -- key/value ----------------------------------------------------------------

    @staticmethod
    def _key(key: object) -> str:
        key = str(key)
        if key in RESERVED_KEYS:
            raise ConfigurationError(f"{key!r} is a reserved memory key; use memory.{key} instead")
        return key

    def set(self, key: str, value: Any) -> None:
        """Write *key*; wakes blocked readers, then runs matching subscriptions on this thread."""
        key = self._key(key)
        with self._changed:
            previous = self._values.get(key)
            self._values[key] = value
            subscribers = [s for s in self._subscriptions if s.matches(key)]
            self._changed.notify_all()
        self._notify(subscribers, MemoryChange(key, value, previous, deleted=False))

    def update(self, values: Mapping[str, Any]) -> None:
        for key, value in values.items():
            self.set(key, value)

    def delete(self, key: str) -> Any:
        """Remove *key*; returns its old value (``None`` when absent)."""
        key = self._key(key)
        with self._changed:
            if key not in self._values:
                return None
            previous = self._values.pop(key)
            subscribers = [s for s in self._subscriptions if s.matches(key)]
        self._notify(subscribers, MemoryChange(key, None, previous, deleted=True))
        return previous

    def get(self, key: str, *more: str, wait: bool | float = False, default: Any = None) -> Any:
        """One value for one key; a ``{key: value}`` dict for several.

        ``wait=False``: missing keys give *default*. ``wait=True``: block until
        written. ``wait=seconds``: block up to that long **per missing key**,
        then raise ``AwaitTimeout``.
        """
        keys = [self._key(k) for k in (key, *more)]
        values = {k: self._get_one(k, wait, default) for k in keys}
        return values[keys[0]] if not more else values

    def _get_one(self, key: str, wait: bool | float, default: Any) -> Any:
        with self._changed:
            if key in self._values or wait is False:
                return self._values.get(key, default)
            if wait is True:
                self._changed.wait_for(lambda: key in self._values)
                return self._values[key]
            seconds = float(wait)
            deadline = time.monotonic() + seconds
            while key not in self._values:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AwaitTimeout.for_key(key, wait)
                self._changed.wait(left)
            return self._values[key]

    def keys(self) -> list[str]:
        """User keys in insertion order (reserved keys are never listed)."""
        with self._lock:
            return list(self._values)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return str(key) in self._values

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return dict(self._values)

    # -- subscriptions ---------------------------------------------------------------

    def subscribe(self, key_or_pattern: str, callback: Callable[[MemoryChange], Any]) -> Subscription:
        """Call ``callback(change)`` after every write to a matching key (exact or glob)."""
        if not callable(callback):
            raise TypeError("callback must be callable")
        subscription = Subscription(str(key_or_pattern), callback, self)
        with self._lock:
            self._subscriptions.append(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> bool:
        with self._lock:
            if subscription in self._subscriptions:
                self._subscriptions.remove(subscription)
                return True
            return False

    @staticmethod
    def _notify(subscribers: list[Subscription], change: MemoryChange) -> None:
        for subscription in subscribers:
            try:
                subscription.callback(change)
            except Exception:  # one bad subscriber must not break the write or the others
                logger.exception("memory subscription %r failed on key %r", subscription.pattern, change.key)

    # -- persistence and documents ---------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        with self._lock:
            return {
                "data": dict(self._data),
                "results": [r.to_dict() if hasattr(r, "to_dict") else r for r in self.results],
                "messages": list(self.messages),
                "session_id": self.session_id,
                "values": dict(self._values),
            }

    @classmethod
    def from_dict(cls, state: Mapping[str, Any]) -> Memory:
        memory = cls(state.get("data"), session_id=state.get("session_id"))
        memory.results = list(state.get("results", ()))
        memory.messages = list(state.get("messages", ()))
        memory._values.update(state.get("values", {}))
        return memory

    def _document_store(self) -> Any:
        if not extension_loaded("document_store"):
            raise DependencyError(
                "document storage requires the robotlab[documents] extra (it registers the 'document_store' "
                "extension). Install it with `pip install 'robotlab[documents]'`."
            )
        return extension("document_store")

    def store_document(self, key: str, text: str, **metadata: Any) -> Any:
        return self._document_store().store_document(self, key, text, **metadata)

    def search_documents(self, query: str, limit: int = 5) -> Any:
        return self._document_store().search_documents(self, query, limit)

    def document_keys(self) -> Any:
        return self._document_store().document_keys(self)

    def delete_document(self, key: str) -> Any:
        return self._document_store().delete_document(self, key)


def create_memory(
    data: Mapping[str, Any] | None = None, enable_cache: bool = True, *, backend: str | None = None, **options: Any
) -> Memory:
    """A new :class:`Memory`. ``backend="redis"`` needs the ``robotlab[redis]`` extra (not in this version)."""
    if backend in (None, "memory"):
        if options:
            raise ConfigurationError(f"unknown create_memory option(s): {', '.join(sorted(options))}")
        return Memory(data, enable_cache=enable_cache)
    if backend == "redis":
        raise DependencyError.missing("create_memory(backend='redis')", "robotlab[redis]")
    raise ConfigurationError(f"unknown memory backend {backend!r}; valid backends: 'memory', 'redis'")
