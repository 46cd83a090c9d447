"""Run a coroutine to completion from synchronous code: how the sync API wraps the async core.

Each thread keeps one event loop for its synchronous calls (creating a loop per
call costs about three times as much), closed when the thread ends. Called
where an event loop is already running on this thread (a sync ``robot.run``
inside ``async def`` code, or inside a tool of an async run), the coroutine
runs on a helper thread instead, so it never deadlocks that loop or raises
"asyncio.run() cannot be called from a running event loop".

Example:
    >>> import asyncio
    >>> async def answer():
    ...     await asyncio.sleep(0)
    ...     return 42
    >>> run_sync(answer)
    42

Standard library only: tools use it in workers to run ``async def`` tools.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

__all__ = ["run_sync"]

T = TypeVar("T")


class _ThreadRunner(threading.local):
    """This thread's runner; closing it when the thread's locals are freed closes its loop."""

    def __init__(self) -> None:
        self.runner: asyncio.Runner | None = None

    def get(self) -> asyncio.Runner:
        if self.runner is None:
            self.runner = asyncio.Runner()
        return self.runner

    def __del__(self) -> None:
        if self.runner is not None:
            self.runner.close()


_local = _ThreadRunner()


def run_sync(factory: Callable[[], Awaitable[T]]) -> T:
    """Await ``factory()`` on this thread's loop (in a copy of the caller's context) and return its value.

    Takes a factory, not a coroutine, so that no coroutine is created (and left
    un-awaited) when the call has to move to a helper thread.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _local.get().run(_awaited(factory), context=contextvars.copy_context())
    return _on_helper_thread(factory, contextvars.copy_context())


async def _awaited(factory: Callable[[], Awaitable[T]]) -> T:
    return await factory()


def _on_helper_thread(factory: Callable[[], Awaitable[T]], context: contextvars.Context) -> T:
    # A thread per call, not a bounded pool: nested sync calls (a tool that runs a robot
    # that runs a tool ...) would otherwise exhaust the pool and wait on each other forever.
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = context.run(run_sync, factory)
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=target, name="robotlab-sync", daemon=True)
    thread.start()
    thread.join()
    if "error" in box:
        raise box.pop("error")
    return box["value"]
