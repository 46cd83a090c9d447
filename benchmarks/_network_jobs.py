"""The tool of the network_fanout benchmark, importable by workers (this module is not itself a benchmark)."""

from __future__ import annotations

from benchmarks._jobs import burn
from robotlab.tools import tool


@tool
def crunch(n: int) -> int:
    """Pure-Python CPU work: ``burn(n)``, calibrated by the benchmark to about 100 ms.

    Not ``parallel_safe``: in thread mode it runs on its task's thread, so the
    benchmark compares where whole tasks run, not where single tools go.
    """
    return burn(n)
