"""Streaming events: what a robot run (or a network of them) reports while it runs.

The catalogue follows robot_lab's ``Streaming::Events``. Every event carries
the robot's name, the task's name inside a network, and a sequence number that
counts the events of its run from 0, so a consumer can order and de-duplicate
what arrives from several tasks (worker tasks included).

Example:
    >>> import robotlab
    >>> from robotlab.llm import ScriptedModel
    >>> robot = robotlab.build(name="poet", model=ScriptedModel(["roses are red"]))
    >>> [(e.type, e.seq) for e in robot.stream("a poem")][:2]
    [('run.started', 0), ('text.delta', 1)]

Standard library only: events are built in workers too.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["EVENT_TYPES", "Event", "EventEmitter", "stream_events"]

EVENT_TYPES = (
    "run.started",
    "text.delta",
    "tool_call.arguments.delta",
    "tool_call.started",
    "tool_call.completed",
    "usage.updated",
    "doom_loop.detected",
    "output.invalid",
    "hitl.requested",
    "hitl.resolved",
    "run.completed",
    "run.failed",
    "task.started",
    "task.completed",
    "task.failed",
    "stream.ended",
)


@dataclass(frozen=True)
class Event:
    """One streaming event.

    ``data`` depends on ``type``: ``text.delta`` → ``{"text"}``;
    ``tool_call.arguments.delta`` → ``{"index", "id", "name", "arguments"}``
    (a fragment of the JSON arguments); ``tool_call.started`` → ``{"id", "name",
    "arguments"}``; ``tool_call.completed`` → ``{"id", "name", "result", "error"}``;
    ``usage.updated`` → ``{"prompt_tokens", "completion_tokens", "cost"}``
    (the run's totals so far); ``run.failed`` / ``task.failed`` → ``{"error"}``;
    ``hitl.requested`` → ``{"question", "choices", "default"}`` and
    ``hitl.resolved`` → ``{"question", "answer", "source"}`` (``ask_user``).
    ``result`` is the final :class:`~robotlab.RobotResult` on ``run.completed``
    and ``stream.ended`` of a robot stream (a ``NetworkResult`` on a network's).
    """

    type: str
    seq: int
    robot: str | None = None
    task: str | None = None
    data: dict[str, Any] = field(default_factory=dict)
    result: Any = None
    time: float = field(default_factory=time.time)


class EventEmitter:
    """Numbers the events of one run and hands them to *sink* (a plain callable, thread-safe numbering)."""

    def __init__(self, sink: Callable[[Event], None], *, robot: str | None = None, task: str | None = None) -> None:
        self.sink = sink
        self._seq = itertools.count()
        self.robot = robot
        self.task = task

    def event(self, type_: str, result: Any = None, **data: Any) -> Event:
        """The next event of this run (numbered, not sent)."""
        return Event(type_, next(self._seq), self.robot, self.task, data, result)

    def emit(self, type_: str, result: Any = None, **data: Any) -> None:
        """Number an event and send it to the sink."""
        self.sink(self.event(type_, result, **data))

    def delta(self, kind: str, data: dict[str, Any]) -> None:
        """A model's streamed delta (``kind`` "text" or "tool_call", as models report them) as an event."""
        self.emit("text.delta" if kind == "text" else "tool_call.arguments.delta", **data)


_END = object()


async def stream_events(
    run: Callable[[EventEmitter], Awaitable[Any]], *, robot: str | None = None, task: str | None = None
) -> AsyncIterator[Event]:
    """Start ``run(emitter)`` and yield the events it emits, from any thread, in order.

    Ends with a ``stream.ended`` event whose ``result`` is what *run* returned; when
    *run* raised, ``stream.ended`` carries ``{"error"}`` and the error is raised
    after it. Closing the iterator early cancels *run*.
    """
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[Any] = asyncio.Queue()

    def sink(event: Any) -> None:
        # Always through the loop's queue of callbacks, so events from threads and from the
        # loop itself keep the order in which they were emitted.
        loop.call_soon_threadsafe(queue.put_nowait, event)

    emitter = EventEmitter(sink, robot=robot, task=task)

    async def drive() -> Any:
        try:
            return await run(emitter)
        finally:
            sink(_END)

    job = asyncio.ensure_future(drive())
    try:
        while (event := await queue.get()) is not _END:
            yield event
        error = None if job.cancelled() else job.exception()
        if error is None:
            yield emitter.event("stream.ended", result=job.result())
        else:
            yield emitter.event("stream.ended", error=f"{type(error).__name__}: {error}")
            raise error
    finally:
        if not job.done():
            job.cancel()
            await asyncio.wait({job})  # the run's own end (cancelled or failed) is not news to a closed stream
            if not job.cancelled():
                job.exception()
