"""Open spans, as the tracing hook keeps them: where each one goes, its parent, its open children.

Two sinks take spans. In the parent, :class:`robotlab.tracing.otel.OtelSink`
makes OpenTelemetry spans. In a worker job, :class:`RecordSink` keeps plain
records (name, start and end in ns, attributes, error, parent) and sends them,
once the job's top span ends, to the job's parent, which re-emits them through
its tracer under the span that submitted the job: workers never import
OpenTelemetry.

Example:
    >>> sent = []
    >>> class Parent:
    ...     def call(self, op, records): sent.append((op, records))
    >>> sink = RecordSink(Parent())
    >>> top = sink.start("invoke_agent r", None, {"gen_ai.agent.name": "r"})
    >>> sink.end(sink.start("chat m", top, {}), {}, None)
    >>> sink.end(top, {}, None)
    >>> [(name, parent) for _, parent, name, *_ in sent[0][1]]
    [('invoke_agent r', None), ('chat m', 0)]

Standard library only: this module loads in workers.
"""

from __future__ import annotations

import contextvars
import logging
import time
from typing import Any

__all__ = ["OpenSpan", "RecordSink", "current_span", "reset_current", "set_current"]

logger = logging.getLogger("robotlab.tracing")


class OpenSpan:
    """A span that has started and not ended: its sink, parent, open children, and the sink's own handle."""

    __slots__ = ("children", "handle", "parent", "sink")

    def __init__(self, sink: Any, parent: OpenSpan | None, handle: Any) -> None:
        self.sink = sink
        self.parent = parent
        self.handle = handle
        self.children: dict[int, OpenSpan] = {}


_current: contextvars.ContextVar[OpenSpan | None] = contextvars.ContextVar("robotlab_span", default=None)


def current_span() -> OpenSpan | None:
    """The span of the network run, task or robot run in progress in this context, else None."""
    return _current.get()


def set_current(span: OpenSpan) -> contextvars.Token:
    """Make *span* the parent of the spans started in this context from now on."""
    return _current.set(span)


def reset_current(token: contextvars.Token, span: OpenSpan) -> None:
    """Undo :func:`set_current` (from another context, make *span*'s parent current instead)."""
    try:
        _current.reset(token)
    except ValueError:  # ended in a context other than the one it started in
        _current.set(span.parent)


class RecordSink:
    """A worker job's spans as plain records, sent to *parent* (``call("spans", records)``) when the top one ends.

    A record is ``(id, parent_id, name, start_ns, end_ns, attributes, error)``; the top
    span's ``parent_id`` is None (its parent is the parent process's span that submitted the job).
    """

    def __init__(self, parent: Any) -> None:
        self._parent = parent
        self._records: list[list[Any]] = []

    def start(self, name: str, parent: Any, attributes: dict[str, Any]) -> int:
        """Open a record; returns its id (the handle)."""
        record_id = len(self._records)
        self._records.append([record_id, parent, name, time.time_ns(), 0, attributes, None])
        return record_id

    def end(self, handle: int, attributes: dict[str, Any], error: BaseException | str | None) -> None:
        """Close record *handle*; when it is the top one, send every record to the parent."""
        record = self._records[handle]
        record[4] = time.time_ns()
        record[5].update(attributes)
        if error is not None:
            record[6] = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
            record[5]["error.type"] = error.split(":", 1)[0] if isinstance(error, str) else type(error).__qualname__
        if record[1] is None:
            records, self._records = tuple(tuple(r) for r in self._records), []
            try:
                self._parent.call("spans", records)
            except Exception as exc:  # tracing never fails the work it traces
                logger.warning("%d spans of this job could not be sent to the parent: %s", len(records), exc)
