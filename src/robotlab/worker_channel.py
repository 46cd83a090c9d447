"""How a hook that fires in a worker job reaches its own half in the parent.

A hook class may define ``parent_endpoint(cls)``: called in the parent when a
job that ships the hook is submitted, it returns the object (an ``Endpoint``:
``handle(op, args, still_waiting)``, ``blocks(op, args)``, ``close()``) that
the job may call. In the worker, :func:`parent_half` returns the job's remote
end of it, or None outside a job (the hook then runs in the parent itself).

``robotlab.parallel.parent_calls`` installs the lookup when a worker loads it,
so this module (and ``robotlab.hooks``, which uses it) imports nothing.

Example:
    >>> in_job(), parent_half("narrator")    # not in a worker job here
    (False, None)

Standard library only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["endpoint_name", "in_job", "install", "parent_half"]

_job_endpoints: Callable[[], Mapping[str, Any] | None] | None = None


def endpoint_name(namespace: str) -> str:
    """The name a hook's parent endpoint has among a job's endpoints."""
    return f"hook:{namespace}"


def install(job_endpoints: Callable[[], Mapping[str, Any] | None]) -> None:
    """Set how the running job's endpoints are found (by name; None outside a job)."""
    global _job_endpoints
    _job_endpoints = job_endpoints


def in_job() -> bool:
    """Whether this code runs inside a job on a WorkerPool (in a worker, or on a thread worker here)."""
    find = _job_endpoints
    return find is not None and find() is not None


def parent_half(namespace: str) -> Any:
    """The running job's remote end of the hook *namespace*'s parent endpoint (``.call(op, *args)``), else None."""
    find = _job_endpoints
    endpoints = None if find is None else find()
    return None if endpoints is None else endpoints.get(endpoint_name(namespace))
