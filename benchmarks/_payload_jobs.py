"""Module-level jobs of the payload benchmark (this module is not itself a benchmark)."""

from __future__ import annotations


def echo(data: object) -> object:
    """Send the payload back: it crosses the boundary twice."""
    return data


def size(data: bytes) -> int:
    """Send only: the payload crosses once, a number comes back."""
    return memoryview(data).nbytes
