"""Hook: the base class of hook handlers (hook methods are classmethods)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

__all__ = ["Hook", "snake_case"]


def snake_case(name: str) -> str:
    name = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower()


class _HookMeta(type):
    """Gives each class its own ``namespace``: set in the body, else derived, never inherited."""

    def __new__(mcs, name: str, bases: tuple[type, ...], ns: dict[str, Any]):
        cls = super().__new__(mcs, name, bases, ns)
        explicit = ns.get("namespace")
        cls._namespace = None if not bases else (str(explicit) if explicit else snake_case(name.rsplit(".", 1)[-1]))
        return cls

    @property
    def namespace(cls) -> str | None:
        return cls._namespace

    @namespace.setter
    def namespace(cls, value: str | None) -> None:
        cls._namespace = None if value is None else str(value)


class Hook(metaclass=_HookMeta):
    """Subclass and define hook classmethods, e.g. ``before_run(cls, ctx)`` or
    ``around_tool_call(cls, ctx, block)``; undefined hooks are skipped.

    >>> class TimerHook(Hook):
    ...     pass
    >>> TimerHook.namespace, Hook.namespace
    ('timer_hook', None)
    """

    @classmethod
    def implements(cls, hook_name: str) -> bool:
        """Whether this handler defines *hook_name* (public, not inherited from Hook itself)."""
        if hook_name.startswith("_") or hook_name in _BASE_NAMES:
            return False
        return callable(getattr(cls, hook_name, None))

    @classmethod
    def call(cls, hook_name: str, ctx: Any, block: Callable[[], Any] | None = None) -> Any:
        """Dispatch one hook: defined → called; undefined with a block → the block (passthrough)."""
        if cls.implements(hook_name):
            method = getattr(cls, hook_name)
            return method(ctx, block) if block is not None else method(ctx)
        return block() if block is not None else None


_BASE_NAMES = frozenset(dir(Hook))
