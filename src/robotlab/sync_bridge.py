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

import atexit
import concurrent.futures
import contextlib
import contextvars
import functools
import queue
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import asyncio

__all__ = ["in_thread", "iterate_sync", "run_sync"]

T = TypeVar("T")


class _ThreadRunner(threading.local):
    """This thread's runner; closing it when the thread's locals are freed closes its loop."""

    def __init__(self) -> None:
        self.runner: asyncio.Runner | None = None

    def get(self) -> asyncio.Runner:
        if self.runner is None:
            import asyncio

            self.runner = asyncio.Runner()
            if threading.current_thread() is threading.main_thread():
                # The main thread's locals outlive the interpreter's modules: close its loop (and
                # what libraries left running on it) at exit, while asyncio still works.
                atexit.register(self.runner.close)
        return self.runner

    def __del__(self) -> None:
        if self.runner is not None:
            self.runner.close()


_local = _ThreadRunner()

# Sync tools, sync hooks and models without ``acomplete`` run here during async runs: a
# network of a thousand I/O-bound robots would queue behind asyncio's default executor
# (min(32, cores + 4) threads). Threads start only when needed and end when idle.
_BLOCKING_THREADS = 256
_blocking: concurrent.futures.ThreadPoolExecutor | None = None
_blocking_lock = threading.Lock()


async def in_thread(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """Await ``fn(*args, **kwargs)`` run on a helper thread in a copy of this context (as ``asyncio.to_thread``).

    The helper threads are robotlab's own (up to 256), so blocking calls of many
    concurrent runs do not wait for each other.
    """
    import asyncio

    global _blocking
    if _blocking is None:
        with _blocking_lock:
            if _blocking is None:
                _blocking = concurrent.futures.ThreadPoolExecutor(_BLOCKING_THREADS, thread_name_prefix="robotlab")
    context = contextvars.copy_context()
    call = functools.partial(context.run, fn, *args, **kwargs)
    return await asyncio.get_running_loop().run_in_executor(_blocking, call)


def run_sync(factory: Callable[[], Awaitable[T]]) -> T:
    """Await ``factory()`` on this thread's loop (in a copy of the caller's context) and return its value.

    Takes a factory, not a coroutine, so that no coroutine is created (and left
    un-awaited) when the call has to move to a helper thread.
    """
    import asyncio  # here: this module is imported by workers, which rarely need an event loop

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _local.get().run(_awaited(factory), context=contextvars.copy_context()).value
    return _on_helper_thread(factory, contextvars.copy_context())


class _Returned:
    """What the coroutine returned, in a box whose ``repr`` does not show it.

    On the main thread ``asyncio.Runner`` checks the SIGINT handler after the run,
    and ``signal.getsignal`` formats the repr of that handler, which holds the
    finished task, and with it the task's result: a network's result with every
    task's conversation took tens of milliseconds to format, for nothing.
    """

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


async def _awaited(factory: Callable[[], Awaitable[T]]) -> _Returned:
    return _Returned(await factory())


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


def iterate_sync(factory: Callable[[], AsyncIterator[T]]) -> Iterator[T]:
    """Iterate ``factory()`` from synchronous code: it runs on a helper thread's loop, items arrive as they come.

    Closing the iterator early (``break``) cancels the async iterator and waits for it to finish.

    >>> async def count():
    ...     for i in range(3):
    ...         yield i
    >>> list(iterate_sync(count))
    [0, 1, 2]
    """
    import asyncio

    items: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
    started = threading.Event()
    handle: dict[str, Any] = {}

    async def pump() -> None:
        handle["loop"], handle["task"] = asyncio.get_running_loop(), asyncio.current_task()
        started.set()
        try:
            async for item in factory():
                items.put(("item", item))
        except BaseException as exc:  # handed to the consumer, who re-raises it
            items.put(("error", exc))
        else:
            items.put(("end", None))

    context = contextvars.copy_context()
    thread = threading.Thread(target=context.run, args=(asyncio.run, pump()), name="robotlab-stream", daemon=True)
    thread.start()
    try:
        while True:
            kind, value = items.get()
            if kind == "item":
                yield value
            elif kind == "end":
                return
            else:
                raise value
    finally:
        started.wait()
        if thread.is_alive():
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: the iterator has finished
                handle["loop"].call_soon_threadsafe(handle["task"].cancel)
        thread.join()
