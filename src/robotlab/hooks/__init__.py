"""The hook system: handler classes, registries, the dispatcher, contexts and scope.

Example:
    >>> from robotlab.hooks import Hook, HookRegistry, Hooks, RunHookContext
    >>> class Shout(Hook):
    ...     @classmethod
    ...     def around_run(cls, ctx, block):
    ...         return block().upper()
    >>> registry = HookRegistry()
    >>> _ = registry.on(Shout)
    >>> Hooks.run("run", RunHookContext(request="hi"), [registry], None, lambda: "hello")
    'HELLO'

Standard library only: this package loads inside subinterpreters.
"""

from robotlab.hooks.context import (
    CompactionHookContext,
    DoomLoopHookContext,
    HitlHookContext,
    HookContext,
    LearnHookContext,
    LlmGenerationHookContext,
    NetworkRunHookContext,
    RunHookContext,
    TaskHookContext,
    ToolCallHookContext,
)
from robotlab.hooks.dispatch import ERROR_FAMILIES, FAMILIES, Hooks
from robotlab.hooks.hook import Hook
from robotlab.hooks.narrator import Narrator
from robotlab.hooks.registry import HookRegistry, Registration, clear_hooks, global_hooks, on
from robotlab.hooks.scope import (
    HookScope,
    ScopedThreadPoolExecutor,
    current_hook_scope,
    run_in_scope,
    with_hook_scope,
)
from robotlab.hooks.state import DotState, ExtensionState

__all__ = [
    "ERROR_FAMILIES",
    "FAMILIES",
    "CompactionHookContext",
    "DoomLoopHookContext",
    "DotState",
    "ExtensionState",
    "HitlHookContext",
    "Hook",
    "HookContext",
    "HookRegistry",
    "HookScope",
    "Hooks",
    "LearnHookContext",
    "LlmGenerationHookContext",
    "Narrator",
    "NetworkRunHookContext",
    "Registration",
    "RunHookContext",
    "ScopedThreadPoolExecutor",
    "TaskHookContext",
    "ToolCallHookContext",
    "clear_hooks",
    "current_hook_scope",
    "global_hooks",
    "on",
    "run_in_scope",
    "with_hook_scope",
]
