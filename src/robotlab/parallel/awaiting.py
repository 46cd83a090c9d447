"""Awaiting WorkerPool futures from asyncio code, with cancellation that reaches the job.

``asyncio.wrap_future`` cancels a pool future only while it is queued (as
``Future.cancel()`` does); :func:`awaited` also stops a running job
(``WorkerPool.stop``), so a cancelled robot run or tool call leaves no job behind.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import Future
from typing import Any

__all__ = ["awaited"]


async def awaited(pool: Any, future: Future) -> Any:
    """The result of *future*, a job of *pool*; cancelling the awaiting task stops the job, queued or running."""
    try:
        return await asyncio.wrap_future(future)
    except asyncio.CancelledError:
        pool.stop(future)
        raise
