"""Reads that wait: ``get(key, wait=...)`` and ``get_async`` block until another writer sets the key.

A mixin of :class:`~robotlab.memory.Memory`. The timeout applies to each
missing key in turn, so ``get("a", "b", wait=30)`` can block up to 60 s, and
an expired wait raises ``AwaitTimeout`` naming the key. The in-process memory
waits on the ``threading.Condition`` its writes notify; a backend shared
between processes overrides ``_get_one`` with its own wake-ups.

Example:
    >>> import threading
    >>> from robotlab.memory import Memory
    >>> memory = Memory()
    >>> threading.Timer(0.05, memory.set, ("verdict", "approved")).start()
    >>> memory.get("verdict", wait=5)
    'approved'
    >>> memory.get("missing", wait=0)
    Traceback (most recent call last):
    ...
    robotlab.errors.AwaitTimeout: ...

Standard library only.
"""

from __future__ import annotations

import math
import threading
import time
from typing import Any

from robotlab.errors import AwaitTimeout

__all__ = ["WaitingReads"]


class WaitingReads:
    """``get`` (optionally waiting) and ``get_async``: a mixin of :class:`~robotlab.memory.Memory`.

    The memory provides ``_key`` (a checked key), ``__contains__``, and for
    the in-process ``_get_one`` the ``_values`` dict and the ``_changed``
    condition its writes notify.
    """

    _values: dict[str, Any]
    _changed: threading.Condition

    def get(self, key: object, *more: object, wait: bool | float | None = False, default: Any = None) -> Any:
        """One value for one key; a ``{key: value}`` dict (in the order asked) for several.

        ``wait=False`` (or ``None``): missing keys give *default*.
        ``wait=True``: block until each missing key is written, without limit.
        ``wait=seconds`` (int or float, ``0`` included): block up to that long
        **per missing key**, in order, then raise ``AwaitTimeout`` for the
        first key that did not arrive.
        """
        if wait is None:
            wait = False
        if not isinstance(wait, bool) and (not isinstance(wait, (int, float)) or math.isnan(wait) or wait < 0):
            raise ValueError(f"wait must be True, False or a number of seconds >= 0, got {wait!r}")
        keys = [self._key(k) for k in (key, *more)]
        if not more:
            return self._get_one(keys[0], wait, default)
        return {k: self._get_one(k, wait, default) for k in keys}

    async def get_async(self, key: object, *more: object, wait: bool | float | None = False,
                        default: Any = None) -> Any:
        """:meth:`get` for async code (tools, hooks): waiting for a key never blocks the event loop.

        >>> import asyncio
        >>> from robotlab.memory import Memory
        >>> memory = Memory()
        >>> memory.set("answer", 42)
        >>> asyncio.run(memory.get_async("answer", wait=1))
        42
        """
        from robotlab.sync_bridge import in_thread

        if not wait or all(self._key(k) in self for k in (key, *more)):
            return self.get(key, *more, wait=wait, default=default)
        return await in_thread(self.get, key, *more, wait=wait, default=default)

    def _get_one(self, key: str, wait: bool | float, default: Any) -> Any:
        with self._changed:
            if key in self._values:
                return self._values[key]
            if wait is False:
                return default
            if wait is True:
                self._changed.wait_for(lambda: key in self._values)
                return self._values[key]
            deadline = time.monotonic() + wait
            while key not in self._values:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AwaitTimeout.for_key(key, wait)
                self._changed.wait(left)
            return self._values[key]
