"""Jobs and tools that use the parent's Memory from a worker (importable by workers)."""

from __future__ import annotations

import os
import threading
import time

from robotlab.parallel import memory
from robotlab.tools import Tool


def write_many(prefix: str, n: int) -> int:
    proxy = memory()
    for i in range(n):
        proxy.set(f"{prefix}.{i}", i)
    return n


def write_then_exit(prefix: str, n: int) -> None:
    write_many(prefix, n)
    os._exit(3)


def write_then_hang(prefix: str, n: int) -> None:
    write_many(prefix, n)
    threading.Event().wait()


def wait_for(key: str, wait: float | bool) -> object:
    return memory().get(key, wait=wait)


def wait_for_two(first: str, second: str, wait: float) -> object:
    return memory().get(first, second, wait=wait)


def set_later(key: str, value: object, delay: float) -> None:
    time.sleep(delay)
    memory().set(key, value)


def round_trip(key: str, value: object) -> dict:
    proxy = memory()
    proxy.update({key: value})
    seen = {"get": proxy.get(key), "item": proxy[key], "in": key in proxy, "keys": proxy.keys()}
    seen["deleted"] = proxy.delete(key)
    seen["after"] = proxy.get(key, default="gone")
    seen["data"] = proxy.data
    return seen


def set_reserved() -> None:
    memory().set("data", 1)


def get_missing_item(key: str) -> object:
    return memory()[key]


def get_value(key: str) -> object:
    return memory().get(key)


def ask_for_memory() -> object:
    return memory()


def keep_proxy_after_the_job() -> None:
    global _kept
    _kept = memory()


def use_kept_proxy() -> object:
    return _kept.keys()


_kept = None


class Remember(Tool):
    """Store a value in the robot's memory and list the keys."""

    parallel_safe = True

    def execute(self, key: str, value: str) -> list:
        self.memory.set(key, value)
        return self.memory.keys()


# -- atomic read-modify-write ---------------------------------------------------------------------------------


def increment_many(key: str, n: int, by: int | float = 1) -> int:
    proxy = memory()
    for _ in range(n):
        proxy.increment(key, by)
    return n


def add_with_compare_and_set(key: str, n: int) -> int:
    """*n* increments as compare-and-set loops; returns how many attempts lost a race."""
    proxy = memory()
    retries = 0
    for _ in range(n):
        while True:
            old = proxy.get(key)
            if proxy.compare_and_set(key, old, (old or 0) + 1):
                break
            retries += 1
    return retries


def get_then_set_many(key: str, n: int) -> int:
    proxy = memory()
    for _ in range(n):
        proxy.set(key, (proxy.get(key) or 0) + 1)
    return n


def increment_once(key: str, by: object = 1) -> object:
    return memory().increment(key, by)


def compare_and_set(key: str, expected: object, new: object) -> bool:
    return memory().compare_and_set(key, expected, new)


def redis_increments(url: str, namespace: str, key: str, n: int) -> int:
    """*n* increments through a Redis memory of this worker's own (its own connection to the server)."""
    from robotlab import create_memory

    with create_memory(backend="redis", url=url, namespace=namespace) as own:
        for _ in range(n):
            own.increment(key)
    return n


def redis_compare_and_set_adds(url: str, namespace: str, key: str, n: int) -> int:
    from robotlab import create_memory

    retries = 0
    with create_memory(backend="redis", url=url, namespace=namespace) as own:
        for _ in range(n):
            while True:
                old = own.get(key)
                if own.compare_and_set(key, old, {"n": (old or {"n": 0})["n"] + 1}):
                    break
                retries += 1
    return retries
