"""Module-level jobs for the large-payload tests (tests/test_pool_payloads.py), importable by every worker."""

from __future__ import annotations

import array
import os
import sys
import time

BIG = 300_000  # bytes: above the shared-memory threshold (160 KiB)


def echo(value: object) -> object:
    return value


def describe(value: object) -> tuple:
    """What the worker received: its type name, and whether it is read-only (None for types that cannot say)."""
    if isinstance(value, memoryview):
        return type(value).__name__, value.readonly
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(value, numpy.ndarray):
        return type(value).__name__, not value.flags.writeable
    return type(value).__name__, None


def write_into(value: object) -> str:
    """Try to change the received buffer in place; the exception's name, or 'changed'."""
    try:
        value[0] = 7  # type: ignore[index]
    except (TypeError, ValueError) as exc:
        return type(exc).__name__
    return "changed"


def made_here(with_numpy: bool) -> dict:
    """Large values built in the worker, to come back to the parent."""
    made = {"bytes": b"b" * BIG, "bytearray": bytearray(b"a" * BIG),
            "memoryview": memoryview(bytearray(b"m" * BIG)), "array": array.array("i", range(BIG // 4)),
            "nested": [(b"n" * BIG, {"deep": bytearray(b"d" * BIG)})], "small": b"s"}
    if with_numpy:
        import numpy

        made["numpy"] = numpy.arange(BIG, dtype=numpy.float32).reshape(100, -1)
    return made


def fail_holding(value: bytes) -> None:
    raise ValueError(f"failed holding {len(value)} bytes")


def sleep_holding(value: bytes, seconds: float) -> int:
    time.sleep(seconds)
    return len(value)


def crash_holding(value: bytes) -> None:
    os._exit(3)


def sleep_then_big(seconds: float) -> bytes:
    time.sleep(seconds)
    return b"r" * BIG


def leave_result_file_and_crash() -> None:
    """Die as a worker does that wrote a result file the parent never took (named as shared_buffers names them)."""
    with open(f"/dev/shm/robotlab-{os.getpid()}-999", "wb") as file:
        file.write(b"x" * BIG)
    os._exit(4)


def through_memory(key: str) -> tuple:
    """Write a large value into the parent's Memory, read a large one back (both through shared memory)."""
    from robotlab.parallel import memory

    proxy = memory()
    proxy.set(key, b"w" * BIG)
    back = proxy.get("from parent")
    return type(back).__name__, len(back), bytes(back[:1])


def digest_later(value: memoryview, seconds: float, path: str) -> None:
    """Sleep, then write the SHA-256 of *value* to *path*: a job that reads its argument after it was abandoned."""
    import hashlib

    time.sleep(seconds)
    with open(path, "w") as file:
        file.write(hashlib.sha256(value).hexdigest())
