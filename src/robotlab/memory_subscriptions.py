"""Subscriptions of a memory: who is told about a write, and what they are told.

:class:`MemoryChange` is what a callback receives, :class:`Subscription` is one
registered callback, and :class:`MemorySubscriptions` (a mixin of
:class:`~robotlab.memory.Memory`) keeps the list and fires the matching ones
after each write: outside the lock, on the writer's thread, in subscription
order; an exception in one is logged on ``robotlab.memory`` and swallowed.

Example:
    >>> from robotlab.memory import Memory
    >>> memory = Memory()
    >>> sub = memory.subscribe("order.*", lambda change: print(change.key, change.value, change.created))
    >>> memory.set("order.42", "shipped")
    order.42 shipped True
    >>> sub.cancel()
    True

Standard library only.
"""

from __future__ import annotations

import fnmatch
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from robotlab.memory_values import RESERVED_KEYS, reserved_key_error

if TYPE_CHECKING:
    from robotlab.memory import Memory

__all__ = ["MemoryChange", "MemorySubscriptions", "Subscription"]

logger = logging.getLogger("robotlab.memory")


@dataclass(frozen=True)
class MemoryChange:
    """What a subscription callback receives after a write or a delete.

    ``previous`` is ``None`` when the key did not exist before (check
    ``created`` to tell that apart from a stored ``None``). For a delete,
    ``value`` is ``None`` and ``deleted`` is true.
    """

    key: str
    value: Any
    previous: Any
    deleted: bool = False
    created: bool = False
    memory: Memory | None = field(default=None, repr=False, compare=False)


@dataclass(eq=False)
class Subscription:
    """A registered callback; ``cancel()`` (or ``memory.unsubscribe(sub)``) stops it."""

    pattern: str
    callback: Callable[[MemoryChange], Any]
    memory: Memory | None = field(default=None, repr=False)
    active: bool = True

    @property
    def is_glob(self) -> bool:
        return any(c in self.pattern for c in "*?[")

    def matches(self, key: str) -> bool:
        """Exact match, or an ``fnmatch`` glob (``"user.*"``, case-sensitive)."""
        return key == self.pattern or (self.is_glob and fnmatch.fnmatchcase(key, self.pattern))

    def cancel(self) -> bool:
        """Stop receiving changes. Returns whether it was still subscribed."""
        return self.memory.unsubscribe(self) if self.memory is not None else False


class MemorySubscriptions:
    """``subscribe``, ``unsubscribe``, ``subscriptions`` and firing them after a write.

    A mixin of :class:`~robotlab.memory.Memory`: the memory's ``_setup`` makes
    ``_lock`` (which guards the list) and ``_subscriptions``.
    """

    _lock: threading.RLock
    _subscriptions: list[Subscription]

    def subscribe(self, key_or_pattern: object, callback: Callable[[MemoryChange], Any]) -> Subscription:
        """Call ``callback(change)`` after every write or delete of a matching key.

        *key_or_pattern* is an exact key or an ``fnmatch`` glob (``"user.*"``).
        """
        if not callable(callback):
            raise TypeError("callback must be callable")
        pattern = str(key_or_pattern)
        if pattern in RESERVED_KEYS:
            raise reserved_key_error(pattern)
        subscription = Subscription(pattern, callback, self)
        with self._lock:
            self._subscriptions.append(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> bool:
        """Remove *subscription*; returns whether it was subscribed here."""
        with self._lock:
            subscription.active = False
            if subscription in self._subscriptions:
                self._subscriptions.remove(subscription)
                return True
            return False

    def subscriptions(self) -> list[Subscription]:
        with self._lock:
            return list(self._subscriptions)

    @staticmethod
    def _notify(subscribers: list[Subscription], change: MemoryChange) -> None:
        for subscription in subscribers:
            if not subscription.active:  # cancelled by an earlier callback of this same write
                continue
            try:
                subscription.callback(change)
            except Exception:  # one bad subscriber must not break the write or the others
                logger.exception("memory subscription %r failed on key %r", subscription.pattern, change.key)

    def _matching(self, key: str) -> list[Subscription]:
        return [s for s in self._subscriptions if s.matches(key)]
