"""Jobs of the memory_proxy benchmark that workers import (this module is not itself a benchmark)."""

from __future__ import annotations

import time


def timed_sets(n: int) -> int:
    """Write ``perf_counter()`` to key ``t`` *n* times through the parent's Memory."""
    from robotlab.parallel import memory

    proxy = memory()
    for _ in range(n):
        proxy.set("t", time.perf_counter())
    return n


def proxy_writes(prefix: str, n: int) -> float:
    """Seconds this worker took for *n* writes through the memory proxy."""
    from robotlab.parallel import memory

    proxy = memory()
    started = time.perf_counter()
    for i in range(n):
        proxy.set(f"{prefix}.{i}", i)
    return time.perf_counter() - started


def manager_writes(shared: dict, prefix: str, n: int) -> float:
    """Seconds this worker took for *n* writes to a ``multiprocessing.Manager().dict()`` proxy."""
    started = time.perf_counter()
    for i in range(n):
        shared[f"{prefix}.{i}"] = i
    return time.perf_counter() - started
