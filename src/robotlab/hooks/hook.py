"""Hook: the base class of hook handlers (hook methods are classmethods)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, ClassVar

__all__ = ["Hook", "snake_case"]

_ACRONYM = re.compile(r"([A-Z]+)([A-Z][a-z])")
_BOUNDARY = re.compile(r"([a-z0-9])([A-Z])")


def snake_case(name: str) -> str:
    """``TimerHook`` → ``timer_hook``, ``HTTPAudit`` → ``http_audit``, ``a.B.Tracer`` → ``tracer``.

    >>> snake_case("MyExt.HTTPAuditHook")
    'http_audit_hook'
    """
    last = name.rsplit(".", 1)[-1]
    return _BOUNDARY.sub(r"\1_\2", _ACRONYM.sub(r"\1_\2", last)).lower()


class Hook:
    """Base class of hook handlers.

    Subclass and define hook **classmethods**, e.g. ``before_run(cls, ctx)`` or
    ``around_tool_call(cls, ctx, block)`` (``block()`` continues the chain and
    returns its value). A hook a handler does not define is skipped.

    ``namespace`` (the key of the handler's ``ctx.local``) is the snake_case of
    the class name unless the class body sets one; it is never inherited: every
    subclass derives its own unless it sets one itself. ``Hook.namespace`` is
    ``None``, so the base class cannot be registered.

    >>> class TimerHook(Hook):
    ...     pass
    >>> class Tracer(Hook):
    ...     namespace = "trace"
    >>> class SubTracer(Tracer):
    ...     pass
    >>> TimerHook.namespace, Tracer.namespace, SubTracer.namespace, Hook.namespace
    ('timer_hook', 'trace', 'sub_tracer', None)
    """

    namespace: ClassVar[str | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # Every subclass gets its own ``namespace`` entry in its own __dict__, so
        # attribute lookup never reaches a parent's value (not inherited), and a
        # later ``Parent.namespace = "x"`` changes only the parent.
        if "namespace" in cls.__dict__:
            explicit = cls.__dict__["namespace"]
            cls.namespace = None if explicit is None else str(explicit)
        else:
            cls.namespace = snake_case(cls.__qualname__)

    @classmethod
    def implements(cls, hook_name: str) -> bool:
        """Whether this handler defines *hook_name*: a public callable that ``Hook`` itself lacks."""
        if not hook_name or hook_name.startswith("_") or hook_name in _BASE_NAMES:
            return False
        return callable(getattr(cls, hook_name, None))

    @classmethod
    def call(cls, hook_name: str, ctx: Any, block: Callable[[], Any] | None = None) -> Any:
        """Dispatch one hook to this handler.

        Defined → called with ``ctx`` (and ``block`` for around hooks);
        undefined with a block → ``block()`` (around passthrough, the chain never
        breaks); undefined without a block → ``None``.
        """
        if cls.implements(hook_name):
            method = getattr(cls, hook_name)
            return method(ctx) if block is None else method(ctx, block)
        return None if block is None else block()


_BASE_NAMES = frozenset(dir(Hook))
