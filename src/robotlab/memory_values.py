"""What a memory key and value may be: the rules every memory backend applies alike.

The in-process :class:`~robotlab.memory.Memory` and the backends built on it
(``robotlab.redis_memory``) share these, so a reserved key, a bad increment or
a result with ``to_dict()`` behaves the same whichever backend holds it.

Example:
    >>> from robotlab.memory_values import number_at, plain
    >>> number_at("visits", 3)
    3
    >>> number_at("name", "ada")
    Traceback (most recent call last):
    ...
    robotlab.errors.ConfigurationError: cannot increment memory['name']: it holds a str, not a number ...
    >>> plain({"role": "user"})
    {'role': 'user'}

Standard library only.
"""

from __future__ import annotations

from typing import Any

from robotlab.errors import ConfigurationError

__all__ = ["RESERVED_KEYS", "is_number", "number_at", "number_step", "plain", "reserved_key_error"]

#: Keys with dedicated accessors; never stored in, or listed by, the key space.
RESERVED_KEYS = ("data", "results", "messages", "session_id", "cache")

_ACCESSOR_HINT = {
    "data": "memory.data (memory.data['name'] or memory.data.name)",
    "results": "memory.results",
    "messages": "memory.messages",
    "session_id": "memory.session_id",
    "cache": "memory.cache (read-only)",
}


def reserved_key_error(key: str) -> ConfigurationError:
    """The error for using reserved *key* as a user key; it names the accessor to use instead."""
    return ConfigurationError(f"{key!r} is a reserved memory key; use {_ACCESSOR_HINT[key]} instead")


def is_number(value: Any) -> bool:
    """Whether ``increment`` may add *value*, or add to it: an ``int`` or ``float``, never a ``bool``."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def number_step(by: Any) -> int | float:
    """*by* for ``increment``, or ``TypeError``."""
    if not is_number(by):
        raise TypeError(f"increment by= must be an int or a float, got {type(by).__name__}")
    return by


def number_at(key: str, value: Any) -> int | float:
    """The stored *value* when ``increment`` may add to it, else ``ConfigurationError`` (the value stays)."""
    if not is_number(value):
        raise ConfigurationError(
            f"cannot increment memory[{key!r}]: it holds a {type(value).__name__}, not a number "
            "(only int and float values can be incremented)"
        )
    return value


def plain(value: Any) -> Any:
    """``value.to_dict()`` when it has one, else the value itself (results and messages in ``to_dict``)."""
    to_dict = getattr(value, "to_dict", None)
    return to_dict() if callable(to_dict) else value
