"""Module-level jobs the benchmark workers import (this module is not itself a benchmark)."""

from __future__ import annotations


def noop(x: object = None) -> object:
    """A trivial job: returns its argument."""
    return x


def burn(n: int) -> int:
    """Pure-Python CPU work: about 20 ms for the n the fan-out benchmark calibrates."""
    total = 0
    for i in range(n):
        total += i * i % 7
    return total
