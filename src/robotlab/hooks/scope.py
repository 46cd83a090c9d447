"""The hook scope of the active run, in a ContextVar, and a thread pool that carries it.

robot_lab keeps the scope thread-local, so tools on other threads lose the
network's and per-run hooks. robotlab's own thread pools copy the context at
submit time, so the scope reaches every tool call.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

__all__ = ["HookScope", "ScopedThreadPoolExecutor", "current_hook_scope", "run_in_scope", "with_hook_scope"]


@dataclass(frozen=True)
class HookScope:
    registries: tuple[Any, ...]
    per_run_hooks: tuple[type, ...]


_scope: contextvars.ContextVar[HookScope | None] = contextvars.ContextVar("robotlab_hook_scope", default=None)


@contextlib.contextmanager
def with_hook_scope(registries: Sequence[Any], per_run_hooks: Any = None) -> Iterator[HookScope]:
    """Publish the active run's registries and per-run hooks for the duration of the block."""
    token = enter_hook_scope(registries, per_run_hooks)
    try:
        yield token.var.get()
    finally:
        _scope.reset(token)


def enter_hook_scope(registries: Sequence[Any], per_run_hooks: Any = None) -> contextvars.Token:
    """:func:`with_hook_scope` without the block: publish the scope; ``exit_hook_scope(token)`` ends it."""
    if per_run_hooks is None:
        per_run: tuple[type, ...] = ()
    elif isinstance(per_run_hooks, type):
        per_run = (per_run_hooks,)
    else:
        per_run = tuple(per_run_hooks)
    return _scope.set(HookScope(tuple(registries), per_run))


def exit_hook_scope(token: contextvars.Token) -> None:
    """End the scope :func:`enter_hook_scope` published."""
    _scope.reset(token)


def current_hook_scope() -> HookScope | None:
    """The scope of the run in progress on this thread (or task), else ``None``."""
    return _scope.get()


def run_in_scope(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Bind *fn* to a copy of the current context (hook scope included)."""
    context = contextvars.copy_context()
    return lambda *args, **kwargs: context.run(fn, *args, **kwargs)


class ScopedThreadPoolExecutor(ThreadPoolExecutor):
    """A ThreadPoolExecutor whose jobs run in the submitter's context (hook scope included)."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        return super().submit(contextvars.copy_context().run, fn, *args, **kwargs)
