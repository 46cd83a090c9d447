"""One run at a time per robot, from threads and coroutines alike.

A robot's conversation is one list, so its runs are serialised. The callers may
be coroutines on one event loop (``await robot.run_async(...)`` twice with
``asyncio.gather``), threads each running their own loop (the sync ``run``), or
both; a ``threading.Lock`` would block an event loop and an ``asyncio.Lock``
belongs to one loop. :class:`RunGate` hands the robot from one run to the next
in arrival order, waking each waiter on its own loop.

Example:
    >>> import asyncio
    >>> gate, order = RunGate(), []
    >>> async def run(name):
    ...     async with gate:
    ...         order.append(name)
    ...         await asyncio.sleep(0)
    ...         order.append(name)
    >>> async def main():
    ...     await asyncio.gather(run("a"), run("b"))
    >>> asyncio.run(main()); order
    ['a', 'a', 'b', 'b']
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from typing import Any

__all__ = ["RunGate"]


class RunGate:
    """An async mutex usable from any number of event loops and threads (first come, first served)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # guards the two fields below; held for a few instructions only
        self._busy = False
        self._waiters: deque[asyncio.Future[None]] = deque()

    @property
    def busy(self) -> bool:
        """Whether a run holds the gate."""
        return self._busy

    async def acquire(self) -> None:
        with self._lock:
            if not self._busy:
                self._busy = True
                return
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            with self._lock:
                queued = waiter in self._waiters
                if queued:
                    self._waiters.remove(waiter)
            if not queued and waiter.done() and not waiter.cancelled():
                self.release()  # the gate was handed to us just as we were cancelled: pass it on
            raise

    def release(self) -> None:
        with self._lock:
            if not self._waiters:
                self._busy = False
                return
            waiter = self._waiters.popleft()
        # Ownership passes to *waiter* directly (the gate stays busy), on the waiter's own loop.
        try:
            waiter.get_loop().call_soon_threadsafe(self._hand_over, waiter)
        except RuntimeError:  # that loop is closed: its waiter is gone; try the next one
            self.release()

    def _hand_over(self, waiter: asyncio.Future[None]) -> None:
        if waiter.cancelled():
            self.release()
        else:
            waiter.set_result(None)

    async def __aenter__(self) -> RunGate:
        await self.acquire()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.release()
