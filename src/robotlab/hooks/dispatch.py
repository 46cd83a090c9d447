"""The Hooks dispatcher: before → around chain → set_result → after; on_error; re-raise."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

from robotlab.hooks.context import HookContext
from robotlab.hooks.hook import Hook
from robotlab.hooks.registry import HookRegistry, Registration
from robotlab.sync_bridge import in_thread

__all__ = ["ERROR_FAMILIES", "FAMILIES", "Hooks"]

FAMILIES = ("run", "llm_generation", "tool_call", "network_run", "task", "compaction", "learn", "hitl")
ERROR_FAMILIES = ("run", "network_run", "task")
_RESULT_FIELD = {
    "run": "response",
    "network_run": "result",
    "task": "result",
    "llm_generation": "generation_response",
    "hitl": "answer",
}

Registries = Sequence[HookRegistry | None]
PerRun = type[Hook] | Sequence[type[Hook]] | None


class Hooks:
    """Static dispatcher used by robots, tools and networks (and by extensions adding families).

    Order for every hook name: each registry in order (global → network → robot),
    then the per-run classes. The first registration is the outermost around.
    """

    @staticmethod
    def run(
        family: str,
        ctx: Any,
        registries: Registries,
        per_run_hooks: PerRun = None,
        body: Callable[[], Any] | None = None,
    ) -> Any:
        """Run *body* inside the full *family* of hooks and return its (or the around chain's) value.

        Any ``BaseException`` is put on ``ctx.error``, ``on_error`` fires (only
        for run / network_run / task) and the same exception is re-raised.
        """
        body = body or (lambda: None)
        try:
            Hooks.call(f"before_{family}", ctx, registries, per_run_hooks)
            result = Hooks.around(f"around_{family}", ctx, registries, per_run_hooks, body)
            Hooks.set_result(ctx, family, result)
            Hooks.call(f"after_{family}", ctx, registries, per_run_hooks)
            return result
        except BaseException as exc:
            if hasattr(ctx, "error"):
                ctx.error = exc
            Hooks.call_all(Hooks.error_registrations(family, registries, per_run_hooks), "on_error", ctx)
            raise

    @staticmethod
    async def arun(
        family: str,
        ctx: Any,
        registries: Registries,
        per_run_hooks: PerRun,
        body: Callable[[], Awaitable[Any]],
    ) -> Any:
        """:meth:`run` for an async *body*: the same order, contexts and error handling.

        ``before``/``after`` handlers are plain calls. An ``async def`` around
        handler is awaited and its ``block()`` returns an awaitable; a sync around
        handler runs on a helper thread, where its ``block()`` waits for the rest
        of the chain on this event loop.
        """
        try:
            if not per_run_hooks and _unregistered(registries):
                # No handler anywhere (the usual case): no before or around to look up, the body alone.
                result = await body()
            else:
                Hooks.call(f"before_{family}", ctx, registries, per_run_hooks)
                chain = Hooks.registrations(f"around_{family}", registries, per_run_hooks)
                result = await _around_async(chain, f"around_{family}", ctx, body)
            Hooks.set_result(ctx, family, result)
            if per_run_hooks or not _unregistered(registries):  # looked at again: the body may have registered
                Hooks.call(f"after_{family}", ctx, registries, per_run_hooks)
            return result
        except BaseException as exc:
            if hasattr(ctx, "error"):
                ctx.error = exc
            Hooks.call_all(Hooks.error_registrations(family, registries, per_run_hooks), "on_error", ctx)
            raise

    @staticmethod
    def call(hook_name: str, ctx: Any, registries: Registries, per_run_hooks: PerRun = None) -> None:
        """Fire one non-around hook across all matching registrations."""
        Hooks.call_all(Hooks.registrations(hook_name, registries, per_run_hooks), hook_name, ctx)

    @staticmethod
    def around(
        hook_name: str, ctx: Any, registries: Registries, per_run_hooks: PerRun, body: Callable[[], Any]
    ) -> Any:
        """Only the around chain for *hook_name*, without before/after."""
        return Hooks.call_around(Hooks.registrations(hook_name, registries, per_run_hooks), hook_name, ctx, body)

    @staticmethod
    def registrations(hook_name: str, registries: Registries, per_run_hooks: PerRun) -> list[Registration]:
        out: list[Registration] = []
        for registry in registries:
            if registry is not None:
                out.extend(registry.registrations_for(hook_name))
        if per_run_hooks:
            out.extend(Hooks.per_run_entries(hook_name, per_run_hooks))
        return out

    @staticmethod
    def error_registrations(family: str, registries: Registries, per_run_hooks: PerRun) -> list[Registration]:
        if family not in ERROR_FAMILIES:
            return []
        return Hooks.registrations("on_error", registries, per_run_hooks)

    @staticmethod
    def call_all(registrations: Iterable[Registration], hook_name: str, ctx: Any) -> None:
        for registration in registrations:
            Hooks.call_registration(registration, hook_name, ctx)

    @staticmethod
    def call_around(
        registrations: Sequence[Registration], hook_name: str, ctx: Any, body: Callable[[], Any]
    ) -> Any:
        chain = body
        for registration in reversed(registrations):  # first registration ends up outermost
            chain = _link(registration, hook_name, ctx, chain)
        return chain()

    @staticmethod
    def call_registration(
        registration: Registration, hook_name: str, ctx: Any, block: Callable[[], Any] | None = None
    ) -> Any:
        """Call one handler with its namespace active and its context defaults merged in."""
        namespace = registration.handler_class.namespace
        if registration.context:
            ctx.ext(namespace).merge_defaults(registration.context)
        if not isinstance(ctx, HookContext):  # another family's own context type
            with ctx.with_namespace(namespace):
                return registration.handler_class.call(hook_name, ctx, block)
        active = ctx._ns  # ctx.with_namespace(namespace), without a context manager's cost on this hot path
        previous = getattr(active, "name", None)
        active.name = str(namespace)
        try:
            return registration.handler_class.call(hook_name, ctx, block)
        finally:
            active.name = previous

    @staticmethod
    def per_run_entries(hook_name: str, hooks: PerRun) -> list[Registration]:
        if hooks is None:
            return []
        classes = [hooks] if isinstance(hooks, type) else list(hooks)
        for cls in classes:
            if not (isinstance(cls, type) and issubclass(cls, Hook)):
                raise TypeError(f"per-run hooks must be Hook subclasses, got {cls!r}")
        return [Registration(cls) for cls in classes if cls.implements(hook_name)]

    @staticmethod
    def set_result(ctx: Any, family: str, result: Any) -> None:
        name = _RESULT_FIELD.get(family)
        if name is not None and hasattr(ctx, name):
            setattr(ctx, name, result)


def _unregistered(registries: Registries) -> bool:
    """Whether no registry holds a registration (so no hook of any name can fire)."""
    for registry in registries:
        if registry is not None and (type(registry) is not HookRegistry or not registry.is_empty()):
            return False
    return True


def _link(registration: Registration, hook_name: str, ctx: Any, inner: Callable[[], Any]) -> Callable[[], Any]:
    return lambda: Hooks.call_registration(registration, hook_name, ctx, inner)


async def _around_async(
    chain: Sequence[Registration], hook_name: str, ctx: Any, body: Callable[[], Awaitable[Any]]
) -> Any:
    if not chain:
        return await body()
    registration, rest = chain[0], chain[1:]

    def inner() -> Awaitable[Any]:
        return _around_async(rest, hook_name, ctx, body)

    handler = getattr(registration.handler_class, hook_name, None)
    if not registration.handler_class.implements(hook_name):
        return await inner()
    if inspect.iscoroutinefunction(handler):
        namespace = registration.namespace
        if registration.context:
            ctx.ext(namespace).merge_defaults(registration.context)
        with ctx.with_namespace(namespace):
            return await handler(ctx, inner)
    import asyncio  # only async runs get here: keep it out of the worker-side import of hooks

    loop = asyncio.get_running_loop()

    def block() -> Any:  # on the helper thread: the rest of the chain runs on the loop
        return asyncio.run_coroutine_threadsafe(inner(), loop).result()

    return await in_thread(Hooks.call_registration, registration, hook_name, ctx, block)
