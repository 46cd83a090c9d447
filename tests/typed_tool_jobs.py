"""A parallel_safe tool with pydantic-typed parameters, importable by process workers.

Kept out of tests/tool_jobs.py: subinterpreter workers import that module, and they cannot load pydantic.
"""

from __future__ import annotations

import os
from datetime import datetime

from pydantic import BaseModel

from robotlab.tools import tool


class Line(BaseModel):
    sku: str
    qty: int


class Receipt(BaseModel):
    lines: list[Line]
    at: datetime
    pid: int


@tool(parallel_safe=True)
def checkout(lines: list[Line], at: datetime) -> Receipt:
    """Check out the lines; says which process ran it."""
    assert all(isinstance(line, Line) for line in lines)
    return Receipt(lines=lines, at=at, pid=os.getpid())
