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
    >>> memory.get("order.42", "order.43")
    {'order.42': 'shipped', 'order.43': None}

A blocking ``get(key, wait=seconds)`` returns as soon as another thread writes
the key and raises ``AwaitTimeout`` when it expires; the timeout applies to
each missing key in turn, so ``get("a", "b", wait=30)`` can block up to 60 s.

Decisions (see ``docs/memory.md``):

* ``get(key)`` returns the value; ``get(k1, k2, ...)`` returns ``{key: value}``
  in the order asked.
* Subscription callbacks take one argument, a :class:`MemoryChange`. They run
  after the write, outside the lock, on the writer's thread, in subscription
  order; an exception in one is logged on ``robotlab.memory`` and swallowed.
* ``set``, ``update``, ``delete``, ``increment`` and ``compare_and_set`` are
  each one atomic step; ``set(k, get(k) + 1)`` is not (another writer can
  land between the two calls): use ``increment`` or a ``compare_and_set`` loop.
* Keys are normalised with ``str()``. The reserved keys (``data``,
  ``results``, ``messages``, ``session_id``, ``cache``) are not part of the
  key space: ``set``/``get``/``delete``/``update`` on them raise
  ``ConfigurationError`` naming the accessor to use, and ``keys()`` never
  lists them.

Here: :class:`Memory` (key/value writes, reserved keys, persistence),
:class:`StateProxy` and :func:`create_memory`. Memory's other concerns have
modules of their own: ``memory_values`` (key and value rules every backend
shares), ``memory_subscriptions``, ``memory_waiting`` (``get(wait=...)``),
``memory_documents`` and ``memory_backends`` (what ``create_memory(backend=...)``
opens).

Standard library only: a worker-side proxy forwards to this class.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from robotlab.extensions import extension, extension_loaded
from robotlab.memory_backends import memory_backends, open_memory
from robotlab.memory_documents import DocumentStorage
from robotlab.memory_subscriptions import MemoryChange, MemorySubscriptions, Subscription
from robotlab.memory_values import RESERVED_KEYS, number_at, number_step, plain, reserved_key_error
from robotlab.memory_waiting import WaitingReads

__all__ = [
    "RESERVED_KEYS",
    "Memory",
    "MemoryChange",
    "StateProxy",
    "Subscription",
    "create_memory",
]

logger = logging.getLogger("robotlab.memory")


class StateProxy:
    """``memory.data``: item and attribute access to one dict (``data["x"]`` / ``data.x``).

    Reading a missing key as an attribute gives ``None`` (as in robot_lab and
    ``DotState``); ``data["missing"]`` raises ``KeyError``; ``data.get(k, d)``
    gives *d*. Writes through either style land in the same dict, under the
    memory's lock. ``memory.data`` is plain state: writes to it do not fire
    subscriptions (use ``memory.set`` for reactive keys).
    """

    __slots__ = ("_data", "_lock")

    def __init__(self, data: dict[str, Any] | None = None, lock: threading.RLock | None = None) -> None:
        object.__setattr__(self, "_data", data if data is not None else {})
        object.__setattr__(self, "_lock", lock if lock is not None else threading.RLock())

    def __getitem__(self, key: object) -> Any:
        with self._lock:
            return self._data[str(key)]

    def __setitem__(self, key: object, value: Any) -> None:
        with self._lock:
            self._data[str(key)] = value

    def __delitem__(self, key: object) -> None:
        with self._lock:
            del self._data[str(key)]

    def __getattr__(self, key: str) -> Any:
        if key.startswith("_"):  # dunders and private names are never data (keeps pickle/copy sane)
            raise AttributeError(key)
        with self._lock:
            return self._data.get(key)

    def __setattr__(self, key: str, value: Any) -> None:
        if key.startswith("_"):
            raise AttributeError(f"cannot set private attribute {key!r} on StateProxy; use data[{key!r}] = ...")
        self[key] = value

    def __delattr__(self, key: str) -> None:
        try:
            del self[key]
        except KeyError:
            raise AttributeError(key) from None

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return str(key) in self._data

    def __iter__(self):
        return iter(self.keys())

    def __len__(self) -> int:
        with self._lock:
            return len(self._data)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, StateProxy):
            return self.to_dict() == other.to_dict()
        if isinstance(other, Mapping):
            return self.to_dict() == dict(other)
        return NotImplemented

    __hash__ = None  # mutable

    def get(self, key: object, default: Any = None) -> Any:
        with self._lock:
            return self._data.get(str(key), default)

    def keys(self) -> list[str]:
        with self._lock:
            return list(self._data)

    def items(self) -> list[tuple[str, Any]]:
        with self._lock:
            return list(self._data.items())

    def update(self, values: Mapping[str, Any] | None = None, /, **kwargs: Any) -> None:
        with self._lock:
            self._data.update({str(k): v for k, v in dict(values or {}, **kwargs).items()})

    def to_dict(self) -> dict[str, Any]:
        """A shallow copy of the data."""
        with self._lock:
            return dict(self._data)

    def __reduce__(self):
        return (StateProxy, (self.to_dict(),))

    def __repr__(self) -> str:
        return f"StateProxy({self.to_dict()!r})"


def data_contents(values: Mapping[str, Any] | StateProxy) -> dict[str, Any]:
    """What ``memory.data = values`` stores, for every backend: a copy with ``str`` keys.

    (Not a StateProxy method: its attributes are the data's keys.) ``TypeError`` if not a mapping.
    """
    if not isinstance(values, (Mapping, StateProxy)):
        raise TypeError(f"memory.data must be a mapping, got {type(values).__name__}")
    return {str(k): v for k, v in (values.to_dict() if isinstance(values, StateProxy) else values).items()}


class Memory(MemorySubscriptions, WaitingReads, DocumentStorage):
    """Reactive key/value store. Keys are strings (others are converted with ``str()``).

    Args:
        data: initial contents of ``memory.data``.
        enable_cache: look up the optional ``semantic_cache`` extension for
            ``memory.cache`` (``None`` when false or when it is not installed).
        session_id: ``memory.session_id``.
    """

    def __init__(
        self,
        data: Mapping[str, Any] | None = None,
        *,
        enable_cache: bool = True,
        session_id: str | None = None,
    ) -> None:
        self._setup(enable_cache)
        self._data.update({str(k): v for k, v in (data or {}).items()})
        self.session_id = session_id

    def _setup(self, enable_cache: bool) -> None:
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)
        self._values: dict[str, Any] = {}
        self._subscriptions: list[Subscription] = []
        self._data: dict[str, Any] = {}
        self._proxy = StateProxy(self._data, self._lock)
        self._results: list[Any] = []
        self._messages: list[Any] = []
        self._session_id: str | None = None
        self._enable_cache = bool(enable_cache)
        self._cache = extension("semantic_cache") if enable_cache and extension_loaded("semantic_cache") else None

    # -- reserved keys --------------------------------------------------------------

    @property
    def data(self) -> StateProxy:
        """Free-form run state with item and attribute access."""
        return self._proxy

    @data.setter
    def data(self, values: Mapping[str, Any]) -> None:
        new = data_contents(values)
        with self._lock:
            self._data.clear()
            self._data.update(new)

    @property
    def results(self) -> list[Any]:
        """Robot results accumulated by networks (a live list; ``append`` is safe from threads)."""
        return self._results

    @results.setter
    def results(self, values: Iterable[Any]) -> None:
        self._results = list(values)

    @property
    def messages(self) -> list[Any]:
        """Conversation history (a live list)."""
        return self._messages

    @messages.setter
    def messages(self, values: Iterable[Any]) -> None:
        self._messages = list(values)

    @property
    def session_id(self) -> str | None:
        return self._session_id

    @session_id.setter
    def session_id(self, value: str | None) -> None:
        if value is not None and not isinstance(value, str):
            raise TypeError(f"session_id must be a str or None, got {type(value).__name__}")
        self._session_id = value

    @property
    def cache(self) -> Any:
        """The semantic cache, or ``None`` (disabled, or the extension is not installed). Read-only."""
        return self._cache

    @property
    def enable_cache(self) -> bool:
        return self._enable_cache

    # -- key/value --------------------------------------------------------------------

    @staticmethod
    def _key(key: object) -> str:
        key = str(key)
        if key in RESERVED_KEYS:
            raise reserved_key_error(key)
        return key

    def set(self, key: object, value: Any) -> None:
        """Write *key*: wakes blocked readers, then runs matching subscriptions on this thread."""
        key = self._key(key)
        with self._changed:
            created = key not in self._values
            previous = self._values.get(key)
            self._values[key] = value
            subscribers = self._matching(key)
            self._changed.notify_all()
        self._notify(subscribers, MemoryChange(key, value, previous, created=created, memory=self))

    def update(self, values: Mapping[str, Any] | None = None, /, **kwargs: Any) -> None:
        """Write several keys at once (atomically: readers see all or none of them).

        Keys are validated before anything is written; then callbacks run per
        key, in the mapping's order.
        """
        items = [(self._key(k), v) for k, v in dict(values or {}, **kwargs).items()]
        changes: list[tuple[list[Subscription], MemoryChange]] = []
        with self._changed:
            for key, value in items:
                created = key not in self._values
                previous = self._values.get(key)
                self._values[key] = value
                changes.append((self._matching(key), MemoryChange(key, value, previous, created=created, memory=self)))
            self._changed.notify_all()
        for subscribers, change in changes:
            self._notify(subscribers, change)

    def increment(self, key: object, by: int | float = 1) -> int | float:
        """Add *by* to the number at *key* in one atomic step and return the new value.

        A missing key starts at ``0``. Concurrent increments from threads,
        workers (through ``robotlab.parallel.memory()``) or other processes
        sharing one memory through a backend are never lost, unlike ``set(key, get(key) + 1)``.
        The write wakes blocked readers and fires subscriptions like ``set``.
        A value that is not an ``int`` or ``float`` (``bool`` included) raises
        ``ConfigurationError`` and stays as it was; a *by* that is not a number
        raises ``TypeError``.

        >>> memory = Memory()
        >>> memory.increment("visits")
        1
        >>> memory.increment("visits", by=2.5)
        3.5
        """
        key = self._key(key)
        by = number_step(by)
        with self._changed:
            created = key not in self._values
            previous = self._values.get(key)
            value = (0 if created else number_at(key, previous)) + by
            self._values[key] = value
            subscribers = self._matching(key)
            self._changed.notify_all()
        self._notify(subscribers, MemoryChange(key, value, previous, created=created, memory=self))
        return value

    def compare_and_set(self, key: object, expected: Any, new: Any) -> bool:
        """Write *new* at *key* only if it still holds *expected*, in one atomic step; returns whether it did.

        The comparison is ``==`` against what ``get(key)`` would return, so a
        missing key compares as ``None`` (``compare_and_set(k, None, v)``
        creates *k*). A successful write wakes readers and fires subscriptions
        like ``set``; a failed one changes nothing. Loop on it to apply any
        function *f* atomically (a retry means another writer got there first)::

            while True:
                old = memory.get(key)
                if memory.compare_and_set(key, old, f(old)):
                    break

        >>> memory = Memory()
        >>> memory.compare_and_set("owner", None, "ada")
        True
        >>> memory.compare_and_set("owner", None, "bob")
        False
        >>> memory.get("owner")
        'ada'
        """
        return self._compare_and_set(key, lambda current: current is expected or current == expected, new)

    def _compare_and_set(self, key: object, matches: Callable[[Any], Any], new: Any) -> bool:
        """``compare_and_set`` with the test given as ``matches(current)`` (``None`` for a missing key)."""
        key = self._key(key)
        with self._changed:
            created = key not in self._values
            previous = self._values.get(key)
            if not matches(previous):
                return False
            self._values[key] = new
            subscribers = self._matching(key)
            self._changed.notify_all()
        self._notify(subscribers, MemoryChange(key, new, previous, created=created, memory=self))
        return True

    def delete(self, key: object) -> Any:
        """Remove *key*; returns its old value (``None`` when absent, and then nothing fires)."""
        return self._delete(self._key(key), missing_ok=True)

    def _delete(self, key: str, *, missing_ok: bool) -> Any:
        with self._changed:
            if key not in self._values:
                if missing_ok:
                    return None
                raise KeyError(key)
            previous = self._values.pop(key)
            subscribers = self._matching(key)
        self._notify(subscribers, MemoryChange(key, None, previous, deleted=True, memory=self))
        return previous

    def keys(self) -> list[str]:
        """User keys in first-write order (a deleted then re-set key moves to the end).

        Reserved keys are never listed.
        """
        with self._lock:
            return list(self._values)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return str(key) in self._values

    def __getitem__(self, key: object) -> Any:
        key = self._key(key)
        with self._lock:
            try:
                return self._values[key]
            except KeyError:
                raise KeyError(key) from None

    def __setitem__(self, key: object, value: Any) -> None:
        self.set(key, value)

    def __delitem__(self, key: object) -> None:
        self._delete(self._key(key), missing_ok=False)

    def snapshot(self) -> dict[str, Any]:
        """A plain shallow copy of the user keys."""
        with self._lock:
            return dict(self._values)

    def clear(self) -> None:
        """Delete every user key (subscribers see one delete per key). Reserved state is kept."""
        for key in self.keys():
            self.delete(key)

    # -- persistence -------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """Plain data: ``data``, ``results``, ``messages``, ``session_id`` and user ``values``.

        Results and messages with a ``to_dict()`` method are converted through
        it. Subscriptions and the cache are not included.
        """
        with self._lock:
            return {
                "data": dict(self._data),
                "results": [plain(r) for r in self._results],
                "messages": [plain(m) for m in self._messages],
                "session_id": self._session_id,
                "values": dict(self._values),
            }

    @classmethod
    def from_dict(cls, state: Mapping[str, Any], *, enable_cache: bool = True) -> Memory:
        """Rebuild a memory from :meth:`to_dict` output (unknown top-level keys are ignored)."""
        memory = cls(state.get("data"), enable_cache=enable_cache, session_id=state.get("session_id"))
        memory.results = state.get("results") or ()
        memory.messages = state.get("messages") or ()
        memory._values.update({memory._key(k): v for k, v in (state.get("values") or {}).items()})
        return memory

    def __getstate__(self) -> dict[str, Any]:
        # Locks, subscriptions (callbacks belong to this process) and the cache do not travel.
        with self._lock:
            return {
                "data": dict(self._data),
                "results": list(self._results),
                "messages": list(self._messages),
                "session_id": self._session_id,
                "values": dict(self._values),
                "enable_cache": self._enable_cache,
            }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._setup(state.get("enable_cache", True))
        self._data.update(state["data"])
        self._results = list(state["results"])
        self._messages = list(state["messages"])
        self._session_id = state["session_id"]
        self._values.update(state["values"])

    def __repr__(self) -> str:
        with self._lock:
            return f"Memory(keys={list(self._values)!r}, data={dict(self._data)!r}, session_id={self._session_id!r})"


def create_memory(data: Mapping[str, Any] | None = None, enable_cache: bool = True, **options: Any) -> Memory:
    """A new :class:`Memory` from a registered backend: this process's, or one shared by many processes.

    Options:

    * ``session_id=``: ``memory.session_id``.
    * ``backend=``: ``None`` or ``"memory"`` (this process), or the name of
      another registered backend (:mod:`robotlab.memory_backends` lists the
      built-ins and how to add one; see ``docs/memory.md``).
    * the options that backend takes (listed where it is registered).

    Anything else raises ``ConfigurationError``.

    Example:
        >>> memory = create_memory(data={"category": "billing"}, session_id="s-1")
        >>> memory.data.category, memory.session_id
        ('billing', 's-1')
    """
    backend = options.pop("backend", None)
    session_id = options.pop("session_id", None)
    return open_memory(backend, data, enable_cache=enable_cache, session_id=session_id, options=options)


def __getattr__(name: str) -> Any:
    if name == "BACKENDS":  # the old constant, now the registry's live list
        return tuple(memory_backends())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
