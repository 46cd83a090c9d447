"""A ``parallel_safe`` tool call as a WorkerPool job (robot-aware, on top of the engine).

The robot's run loop sends such calls here; the pool is the default pool of
the run's ``pool_backend``. The worker runs a fresh instance of the tool inside
the run's ``tool_call`` hooks, so the robot sees what it would see in-process.
"""

from __future__ import annotations

from robotlab.configuration import RunConfig
from robotlab.errors import JobTimeout, WorkerCrashed
from robotlab.llm import ToolCall
from robotlab.parallel.awaiting import awaited
from robotlab.parallel.shared_pools import default_pool
from robotlab.result import ToolCallRecord
from robotlab.tools import Tool

__all__ = ["call_on_pool"]


async def call_on_pool(tool: Tool, call: ToolCall, cfg: RunConfig, record: ToolCallRecord) -> None:
    """Run *call* of *tool* on the default pool; fill *record*'s result, hook metadata and where it ran.

    ``record.run_s`` is the worker's run time (the caller derives ``queued_s`` from it).
    A worker that dies or times out fails the call like a tool error (re-raised
    with ``raise_on_error``). Cancelling the awaiting run cancels the job.
    """
    pool = default_pool(cfg.pool_backend, cfg.pool_size)
    future = pool.submit_tool(type(tool), call.arguments, memory=tool.memory,
                              errors="raise" if tool.raise_on_error else "text")
    try:
        record.result = await awaited(pool, future)
    except (WorkerCrashed, JobTimeout) as exc:
        if tool.raise_on_error:
            raise
        record.result = tool.format_error(exc)
    record.hook_metadata = future.hook_metadata or {}
    record.where, record.worker, record.run_s = pool.backend, future.worker_id, future.run_seconds or 0.0
