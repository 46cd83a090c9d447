"""The extension registry: a named answer to "is optional feature X loaded?".

An optional package announces itself once, after everything it provides is
defined; core asks :func:`extension_loaded` instead of probing imports.

Example:
    >>> import robotlab
    >>> robotlab.register_extension("audit", "audit-sentinel")
    >>> robotlab.extension_loaded("audit")
    True
    >>> robotlab.extension("audit")
    'audit-sentinel'

Standard library only: this module loads inside subinterpreters.
"""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["extension", "extension_loaded", "loaded_extensions", "register_extension", "unregister_extension"]

_extensions: dict[str, Any] = {}
_lock = threading.Lock()


def register_extension(name: object, value: Any) -> None:
    """Register *value* (a module, class, or plain sentinel) under *name*.

    Names are normalised with ``str()``; registering a name again replaces it.
    """
    with _lock:
        _extensions[str(name)] = value


def unregister_extension(name: object) -> None:
    """Forget *name*; unknown names are ignored (useful in test teardown)."""
    with _lock:
        _extensions.pop(str(name), None)


def extension_loaded(name: object) -> bool:
    """Whether an extension called *name* has registered itself."""
    return str(name) in _extensions


def extension(name: object) -> Any:
    """The value registered under *name*, or ``None`` when it is not loaded."""
    return _extensions.get(str(name))


def loaded_extensions() -> list[str]:
    """Names of every registered extension, in registration order."""
    with _lock:
        return list(_extensions)
