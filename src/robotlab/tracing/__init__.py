"""OpenTelemetry tracing of networks, tasks, robot runs, LLM calls and tool calls.

Tracing is on while the global configuration says ``tracing=True``:
``robotlab.configure(tracing=True)``, ``ROBOTLAB_TRACING=1`` in the environment,
or ``tracing = true`` in ``robotlab.toml``. Spans then go to OpenTelemetry's
global TracerProvider (or the one given to :func:`set_tracer_provider`); with
tracing off nothing is registered and OpenTelemetry is never imported.
Needs ``pip install 'robotlab[otel]'`` (the API only; the application brings the SDK).

Example:
    >>> from robotlab.tracing import TracingHook
    >>> TracingHook.namespace
    'tracing'

Only :mod:`robotlab.tracing.hook` and :mod:`robotlab.tracing.spans` load in workers.
"""

from __future__ import annotations

from typing import Any

from robotlab.tracing.hook import TracingHook

__all__ = ["TracingHook", "set_tracer_provider"]


def set_tracer_provider(provider: Any) -> None:
    """Send robotlab's spans to *provider* (a ``TracerProvider``) instead of OpenTelemetry's global one; None: back.

    >>> set_tracer_provider(None)
    """
    from robotlab.tracing import otel

    otel.set_tracer_provider(provider)
