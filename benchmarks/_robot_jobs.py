"""The tool of the robot_fanout benchmark, importable by workers (this module is not itself a benchmark)."""

from __future__ import annotations

from benchmarks._jobs import burn
from robotlab.tools import tool


@tool(parallel_safe=True)
def burn_cpu(n: int) -> int:
    """Pure-Python CPU work: ``burn(n)``, calibrated by the benchmark to about 50 ms."""
    return burn(n)
