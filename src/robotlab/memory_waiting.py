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

import threading
from typing import Any

__all__ = ["WaitingReads"]


class WaitingReads:
    """``get`` (optionally waiting) and ``get_async``: a mixin of :class:`~robotlab.memory.Memory`.

    The memory provides ``_key`` (a checked key), ``__contains__``, and for
    the in-process ``_get_one`` the ``_values`` dict and the ``_changed``
    condition its writes notify.
    """

    _values: dict[str, Any]
    _changed: threading.Condition


