"""The shared pools that robots run ``parallel_safe`` tools on: ``default_pool()`` and ``shutdown_pool()``.

Example:
    >>> import robotlab
    >>> from robotlab.parallel import default_pool
    >>> pool = default_pool()                      # doctest: +SKIP
    >>> pool.backend, pool.size                    # doctest: +SKIP
    ('process', 2)
    >>> robotlab.shutdown_pool()                   # doctest: +SKIP

A pool is created on first use, one per (backend, size), from the RunConfig
fields ``pool_backend`` (default ``"process"``) and ``pool_size`` (default
``"auto"``: one worker per core), and lives until ``shutdown_pool()`` or the
end of the interpreter.
"""

from __future__ import annotations

import os
import threading

from robotlab.configuration import config
from robotlab.errors import ConfigurationError
from robotlab.parallel.pool import WorkerPool

__all__ = ["default_pool", "shutdown_pool"]

_pools: dict[tuple[str, int], WorkerPool] = {}
_lock = threading.Lock()


def default_pool(backend: str | None = None, size: int | str | None = None) -> WorkerPool:
    """The shared pool for *backend* and *size* (unset: the global RunConfig's, else process and auto).

    ``"thread"`` is not a pool backend here: with ``pool_backend="thread"``
    robots run ``parallel_safe`` tools in-process like any other tool.
    """
    settings = config().run_config
    backend = backend or settings.pool_backend or "process"
    size = size or settings.pool_size or "auto"
    if size == "auto":
        size = os.cpu_count() or 1
    if backend == "thread":
        raise ConfigurationError("pool_backend='thread' runs tools in-process: there is no default pool for it")
    key = (backend, size)
    with _lock:
        pool = _pools.get(key)
        if pool is None or pool.is_shutdown:
            pool = _pools[key] = WorkerPool(size=size, backend=backend)
        return pool


def shutdown_pool(wait: bool = True) -> None:
    """Shut down every default pool (running tool calls finish first when *wait*); the next use starts afresh.

    >>> import robotlab
    >>> robotlab.shutdown_pool()
    """
    with _lock:
        pools = list(_pools.values())
        _pools.clear()
    for pool in pools:
        pool.shutdown(wait=wait)
