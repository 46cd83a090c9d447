"""Async tools for the tests: importable, so they run in worker processes and subinterpreters too."""

from __future__ import annotations

import asyncio
import os

import robotlab
from robotlab import Tool


@robotlab.tool(parallel_safe=True)
async def async_echo(text: str) -> dict:
    """Echo *text* after awaiting, with where it ran."""
    await asyncio.sleep(0.01)
    return {"text": text, "pid": os.getpid(), "loop": asyncio.get_running_loop() is not None}


@robotlab.tool
async def io_wait(seconds: float) -> str:
    """Wait on (simulated) I/O."""
    await asyncio.sleep(seconds)
    return "waited"


@robotlab.tool
def sync_io_wait(seconds: float) -> str:
    """Wait on (simulated) blocking I/O."""
    import time

    time.sleep(seconds)
    return "waited"


class AsyncMemoryTool(Tool):
    """Read a memory key, waiting for it, from an async execute."""

    name = "read_key"
    description = "Read a key."
    parallel_safe = True

    async def execute(self, key: str) -> str:
        value = await self.memory.get_async(key, wait=5)
        return f"{key}={value}"


@robotlab.tool
async def async_fails(reason: str) -> str:
    """Raise."""
    await asyncio.sleep(0)
    raise ValueError(reason)


@robotlab.tool
def sync_fails(reason: str) -> str:
    """Raise."""
    raise ValueError(reason)


@robotlab.tool
async def async_times_out(seconds: float) -> str:
    """Time out waiting."""
    await asyncio.wait_for(asyncio.sleep(10), timeout=seconds)
    return "never"


@robotlab.tool
def sync_times_out(seconds: float) -> str:
    """Time out."""
    raise TimeoutError()


@robotlab.tool
async def async_cancels_itself() -> str:
    """A tool whose own awaited work gets cancelled."""
    inner = asyncio.ensure_future(asyncio.sleep(10))
    asyncio.get_running_loop().call_soon(inner.cancel)
    await inner
    return "never"


class HangAndTell(Tool):
    """Write this worker's pid to memory, then hang."""

    name = "hang_and_tell"
    description = "Hang."
    parallel_safe = True

    async def execute(self, key: str) -> str:
        self.memory.set(key, os.getpid())
        await asyncio.sleep(60)
        return "never"
