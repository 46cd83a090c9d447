"""How a hook that fires in a worker job reaches its own half in the parent.

A hook class may define ``parent_endpoint(cls)``: called in the parent when a
job that ships the hook is submitted, it returns the object (an ``Endpoint``:
``handle(op, args, still_waiting)``, ``blocks(op, args)``, ``close()``) that
the job may call. In the worker, :func:`parent_half` returns the job's remote
end of it, or None outside a job (the hook then runs in the parent itself).

``robotlab.parallel.parent_calls`` installs the lookup when a worker loads it,
so this module (and ``robotlab.hooks``, which uses it) imports nothing.

Example:
    >>> parent_half("narrator") is None    # not in a worker job here
    True

Standard library only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["endpoint_name", "install", "parent_half"]

_lookup: Callable[[str], Any] | None = None


def endpoint_name(namespace: str) -> str:
    """The name a hook's parent endpoint has among a job's endpoints."""
    return f"hook:{namespace}"


def install(lookup: Callable[[str], Any]) -> None:
    """Set how the running job's endpoints are found (``lookup(name)``: the endpoint, or None)."""
    global _lookup
    _lookup = lookup


def parent_half(namespace: str) -> Any:
    """The running job's remote end of the hook *namespace*'s parent endpoint (``.call(op, *args)``), else None."""
    lookup = _lookup
    return None if lookup is None else lookup(endpoint_name(namespace))
