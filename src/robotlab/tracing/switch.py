"""Turning tracing on and off: the one :class:`~robotlab.tracing.hook.TracingHook` registration.

``robotlab.configuration`` calls :func:`apply` whenever the global
configuration is (re)loaded, with its ``tracing`` setting.

Example:
    >>> from robotlab.hooks import HookRegistry
    >>> registry = HookRegistry()
    >>> apply(True, registry); apply(True, registry)
    >>> [r.handler_class.__name__ for r in registry.registrations()]
    ['TracingHook']
    >>> apply(False, registry); registry.registrations()
    []
"""

from __future__ import annotations

from robotlab.hooks import HookRegistry, global_hooks
from robotlab.tracing.hook import TracingHook

__all__ = ["apply"]


def apply(on: bool, registry: HookRegistry | None = None) -> None:
    """Register the tracing hook in *registry* (the global one) when *on*, else remove it; idempotent.

    Turning it on without the OpenTelemetry API installed raises ``DependencyError`` (nothing registered).
    """
    if on:
        import robotlab.tracing.otel  # noqa: F401  (raises DependencyError naming the extra)
    registry = registry or global_hooks()
    mine = [r for r in registry.registrations() if r.handler_class is TracingHook]
    if on and not mine:
        registry.on(TracingHook)
    elif not on:
        for registration in mine:
            registry.off(registration)
