"""HookRegistry, Registration, and the global registry."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from robotlab.hooks.hook import Hook

__all__ = ["HookRegistry", "Registration", "clear_hooks", "global_hooks", "on"]


@dataclass(frozen=True)
class Registration:
    """A handler class paired with its optional ``context`` defaults."""

    handler_class: type[Hook]
    context: dict[str, Any] | None = None

    @property
    def namespace(self) -> str | None:
        return self.handler_class.namespace


class HookRegistry:
    """The store behind ``robotlab.global_hooks()``, ``network.hooks`` and ``robot.hooks``.

    >>> class Audit(Hook):
    ...     @classmethod
    ...     def before_run(cls, ctx): ...
    >>> registry = HookRegistry()
    >>> _ = registry.on(Audit)
    >>> [r.handler_class.__name__ for r in registry.registrations_for("before_run")]
    ['Audit']
    """

    def __init__(self) -> None:
        self._registrations: list[Registration] = []
        self._lock = threading.Lock()
        # hook name -> the registrations that implement it, filled on first use, emptied on every change
        self._by_name: dict[str, tuple[Registration, ...]] = {}

    def on(self, handler_class: type[Hook], context: dict[str, Any] | None = None) -> Registration:
        """Register *handler_class*; ``context`` becomes defaults of its ``ctx.local``."""
        if not (isinstance(handler_class, type) and issubclass(handler_class, Hook)):
            raise TypeError(f"{handler_class!r} is not a robotlab Hook subclass")
        if handler_class.namespace is None:
            raise ValueError(f"{handler_class.__name__} has no namespace and cannot be registered")
        if context is not None and not isinstance(context, dict):
            raise TypeError(f"context must be a dict or None, got {type(context).__name__}")
        registration = Registration(handler_class, dict(context) if context else None)
        with self._lock:
            self._registrations.append(registration)
            self._by_name = {}
        return registration

    def off(self, registration: Registration) -> bool:
        """Remove *registration* (what :meth:`on` returned); False when it is not registered here."""
        with self._lock:
            for i, registered in enumerate(self._registrations):
                if registered is registration:
                    del self._registrations[i]
                    self._by_name = {}
                    return True
        return False

    def registrations_for(self, hook_name: str) -> Sequence[Registration]:
        """Only the registrations whose handler implements *hook_name* (a snapshot: later changes make a new one)."""
        if not self._registrations:  # most registries are empty: skip the lock on the hot path
            return ()
        found = self._by_name.get(hook_name)
        if found is None:
            with self._lock:
                found = self._by_name[hook_name] = tuple(
                    r for r in self._registrations if r.handler_class.implements(hook_name))
        return found

    def is_empty(self) -> bool:
        """Whether nothing is registered here (read without the lock: a racing ``on`` may not show yet)."""
        return not self._registrations

    def registrations(self) -> list[Registration]:
        """Every registration (a copy)."""
        with self._lock:
            return list(self._registrations)

    def clear(self) -> list[Registration]:
        """Remove every registration in place; returns the (now empty) internal list."""
        with self._lock:
            self._registrations.clear()
            self._by_name = {}
            return self._registrations


_global_lock = threading.Lock()
_global: HookRegistry | None = None


def global_hooks() -> HookRegistry:
    """The global HookRegistry (created on first use)."""
    global _global
    with _global_lock:
        if _global is None:
            _global = HookRegistry()
        return _global


def on(handler_class: type[Hook], context: dict[str, Any] | None = None) -> Registration:
    """Register a handler globally: ``robotlab.on(Tracer)``."""
    return global_hooks().on(handler_class, context)


def clear_hooks() -> HookRegistry:
    """Replace the global registry with a new, empty one (earlier Registrations are orphaned)."""
    global _global
    with _global_lock:
        _global = HookRegistry()
        return _global
