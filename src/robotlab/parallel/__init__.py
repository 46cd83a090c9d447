"""The parallel layer: what may cross to a worker, how it travels, and the pools.

Example:
    >>> from robotlab.parallel import WorkerPool, freeze_deep
    >>> freeze_deep({"ids": [1, 2]})
    FrozenDict({'ids': (1, 2)})
    >>> with WorkerPool(size=2) as pool:          # doctest: +SKIP
    ...     pool.submit("math:factorial", 20).result()
    2432902008176640000

Names are imported on first use so that worker processes and
subinterpreters load only what their jobs need.
"""

from __future__ import annotations

import importlib
from typing import Any

from robotlab.errors import JobFailed, JobTimeout, RactorBoundaryError, WireError, WorkerCrashed

_LAZY: dict[str, str] = {
    "FrozenDict": "robotlab.parallel.boundary",
    "freeze_deep": "robotlab.parallel.boundary",
    "is_shareable": "robotlab.parallel.boundary",
    "import_path": "robotlab.parallel.boundary",
    "resolve": "robotlab.parallel.boundary",
    "WorkerPool": "robotlab.parallel.pool",
    "RemoteTraceback": "robotlab.parallel.pool_protocol",
    "memory": "robotlab.parallel.memory_proxy",
    "default_pool": "robotlab.parallel.shared_pools",
    "shutdown_pool": "robotlab.parallel.shared_pools",
}

__all__ = ["JobFailed", "JobTimeout", "RactorBoundaryError", "WireError", "WorkerCrashed", *_LAZY]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'robotlab.parallel' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
