"""The parent's half of tracing: OpenTelemetry spans, and the spans that worker jobs send back.

Only the OpenTelemetry API is used (``pip install 'robotlab[otel]'``); the
application picks the SDK, its exporters and the TracerProvider (OpenTelemetry's
global one, or the one given to :func:`set_tracer_provider`).

Example:
    >>> from opentelemetry.sdk.trace import TracerProvider
    >>> set_tracer_provider(TracerProvider())
    >>> set_tracer_provider(None)   # back to OpenTelemetry's global provider
"""

from __future__ import annotations

from typing import Any

from robotlab.errors import DependencyError

try:
    from opentelemetry import context as otel_context
    from opentelemetry import trace
except ImportError as exc:
    raise DependencyError("tracing needs the OpenTelemetry API: pip install 'robotlab[otel]'") from exc

__all__ = ["OtelSink", "SpanIngest", "set_tracer_provider"]

_provider: Any = None
_tracer: Any = None


def set_tracer_provider(provider: Any) -> None:
    """Send robotlab's spans to *provider* (an OpenTelemetry ``TracerProvider``); None: the global one."""
    global _provider, _tracer
    _provider, _tracer = provider, None


def _get_tracer() -> Any:
    global _tracer
    if _tracer is None:
        from robotlab import __version__

        _tracer = trace.get_tracer("robotlab", __version__, tracer_provider=_provider)
    return _tracer


def _status(span: Any, error: BaseException | str) -> None:
    if isinstance(error, BaseException):
        span.record_exception(error)
        span.set_attribute("error.type", type(error).__qualname__)
        error = f"{type(error).__name__}: {error}"
    span.set_status(trace.Status(trace.StatusCode.ERROR, error))


class OtelSink:
    """Spans of this process: an OpenTelemetry span per handle."""

    def start(self, name: str, parent: Any, attributes: dict[str, Any]) -> Any:
        # No parent of ours: the application's current span (if any) is the parent.
        context = None if parent is None else trace.set_span_in_context(parent)
        return _get_tracer().start_span(name, context=context, attributes=attributes)

    def end(self, handle: Any, attributes: dict[str, Any], error: BaseException | str | None) -> None:
        if attributes:
            handle.set_attributes(attributes)
        if error is not None:
            _status(handle, error)
        handle.end()


SINK = OtelSink()


class SpanIngest:
    """A job endpoint: the spans a worker job recorded, re-emitted here under the span that submitted the job.

    *parent* is that span (an OpenTelemetry span), or None: then the context current at submit time.
    """

    def __init__(self, parent: Any) -> None:
        self._context = otel_context.get_current() if parent is None else trace.set_span_in_context(parent)

    def blocks(self, op: str, args: tuple) -> bool:
        return False

    def handle(self, op: str, args: tuple, still_waiting: Any) -> None:
        if op != "spans":
            raise ValueError(f"unknown operation {op!r}")
        tracer = _get_tracer()
        made: dict[int, Any] = {}
        for record_id, parent_id, name, start_ns, end_ns, attributes, error in args[0]:
            parent = made.get(parent_id)
            context = self._context if parent is None else trace.set_span_in_context(parent)
            span = made[record_id] = tracer.start_span(name, context=context, attributes=dict(attributes),
                                                       start_time=start_ns)
            if error is not None:
                span.set_status(trace.Status(trace.StatusCode.ERROR, error))
            span.end(end_time=end_ns)

    def close(self) -> None:
        pass
