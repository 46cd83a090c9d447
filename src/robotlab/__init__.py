"""robotlab: LLM robots, DAG networks of them, and a real parallel layer.

Example:
    >>> import robotlab
    >>> from robotlab.llm import ScriptedModel
    >>> robot = robotlab.build(name="greeter", model=ScriptedModel(["Hello!"]))
    >>> robot.run("Say hello").last_text_content
    'Hello!'

The public surface is listed in ``__all__``. Names are imported on first use,
so ``import robotlab`` stays light: it never imports litellm.

Two functions share a name with a concept, so their modules are named apart:
``robotlab.config()`` lives in ``robotlab.configuration`` and the ``@robotlab.tool``
decorator in ``robotlab.tools``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from robotlab.errors import (
    AskUserError,
    AwaitTimeout,
    BoundaryError,
    BudgetExceeded,
    BusError,
    ConfigurationError,
    DelegationTimeout,
    DependencyError,
    Error,
    HistoryError,
    InferenceError,
    JobFailed,
    JobTimeout,
    KnowledgeError,
    MCPError,
    OutputValidationError,
    RactorBoundaryError,
    RouterError,
    RouterLoopError,
    ToolError,
    ToolLoopError,
    ToolNotFoundError,
    WireError,
    WorkerCrashed,
    retryable,
    retryable_classes,
)
from robotlab.extensions import extension, extension_loaded, loaded_extensions, register_extension

__version__ = "0.1.0"

# public name -> module that defines it; resolved lazily by __getattr__.
_LAZY: dict[str, str] = {
    # hooks
    "Hook": "robotlab.hooks",
    "HookRegistry": "robotlab.hooks",
    "Registration": "robotlab.hooks",
    "Hooks": "robotlab.hooks",
    "HookContext": "robotlab.hooks",
    "RunHookContext": "robotlab.hooks",
    "LlmGenerationHookContext": "robotlab.hooks",
    "ToolCallHookContext": "robotlab.hooks",
    "NetworkRunHookContext": "robotlab.hooks",
    "TaskHookContext": "robotlab.hooks",
    "LearnHookContext": "robotlab.hooks",
    "CompactionHookContext": "robotlab.hooks",
    "DoomLoopHookContext": "robotlab.hooks",
    "ExtensionState": "robotlab.hooks",
    "DotState": "robotlab.hooks",
    "Narrator": "robotlab.hooks",
    "global_hooks": "robotlab.hooks",
    "on": "robotlab.hooks",
    "clear_hooks": "robotlab.hooks",
    "with_hook_scope": "robotlab.hooks",
    "current_hook_scope": "robotlab.hooks",
    # config
    "RunConfig": "robotlab.configuration",
    "Config": "robotlab.configuration",
    "config": "robotlab.configuration",
    "configure": "robotlab.configuration",
    "reload_config": "robotlab.configuration",
    # core runtime
    "Tool": "robotlab.tools",
    "tool": "robotlab.tools",
    "param": "robotlab.tools",
    "ToolManifest": "robotlab.tools",
    "Robot": "robotlab.robot",
    "build": "robotlab.robot",
    "RobotResult": "robotlab.result",
    "Memory": "robotlab.memory",
    "StateProxy": "robotlab.memory",
    "create_memory": "robotlab.memory",
    "RedisMemory": "robotlab.redis_memory",  # importing it does not import redis; opening one does
    "Network": "robotlab.network",
    "NetworkResult": "robotlab.network_result",
    "Task": "robotlab.task",
    "create_network": "robotlab.network",
    "RouterArgs": "robotlab.network_router",
    # asking the user (human in the loop)
    "AskUser": "robotlab.human_input",
    "HitlHookContext": "robotlab.hooks",
    # robot messaging and delegation
    "Bus": "robotlab.bus",
    "RobotMessage": "robotlab.bus",
    "DelegationFuture": "robotlab.delegation",
    "shutdown_pool": "robotlab.parallel",
    # agent skills (SKILL.md bundles)
    "AgentSkill": "robotlab.skills",
    "AgentSkillCatalog": "robotlab.skills",
    "Capabilities": "robotlab.skills",
    "ScriptTool": "robotlab.skills",
    "TimeoutExecutor": "robotlab.skills",
    # MCP servers as tool sources (the mcp SDK is imported only on connect)
    "MCPServer": "robotlab.mcp",
    "MCPClient": "robotlab.mcp",
    # conversation history and durable knowledge
    "Convergence": "robotlab.history",
    "HistoryCompressor": "robotlab.history",
    "KnowledgeStore": "robotlab.knowledge",
    "RecallKnowledge": "robotlab.knowledge_tools",
    "RecordKnowledge": "robotlab.knowledge_tools",
}

__all__ = [
    "AskUserError",
    "AwaitTimeout",
    "BoundaryError",
    "BudgetExceeded",
    "BusError",
    "ConfigurationError",
    "DelegationTimeout",
    "DependencyError",
    "Error",
    "HistoryError",
    "InferenceError",
    "JobFailed",
    "JobTimeout",
    "KnowledgeError",
    "MCPError",
    "OutputValidationError",
    "RactorBoundaryError",
    "RouterError",
    "RouterLoopError",
    "ToolError",
    "ToolLoopError",
    "ToolNotFoundError",
    "WireError",
    "WorkerCrashed",
    "__version__",
    "extension",
    "extension_loaded",
    "loaded_extensions",
    "register_extension",
    "retryable",
    "retryable_classes",
    *_LAZY,
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'robotlab' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from robotlab.bus import Bus, RobotMessage
    from robotlab.configuration import Config, RunConfig, config, configure, reload_config
    from robotlab.delegation import DelegationFuture
    from robotlab.history import Convergence, HistoryCompressor
    from robotlab.hooks import (
        CompactionHookContext,
        DotState,
        ExtensionState,
        HitlHookContext,
        Hook,
        HookContext,
        HookRegistry,
        Hooks,
        LearnHookContext,
        LlmGenerationHookContext,
        Narrator,
        NetworkRunHookContext,
        Registration,
        RunHookContext,
        TaskHookContext,
        ToolCallHookContext,
        clear_hooks,
        current_hook_scope,
        global_hooks,
        on,
        with_hook_scope,
    )
    from robotlab.human_input import AskUser
    from robotlab.knowledge import KnowledgeStore
    from robotlab.knowledge_tools import RecallKnowledge, RecordKnowledge
    from robotlab.mcp import MCPClient, MCPServer
    from robotlab.memory import Memory, StateProxy, create_memory
    from robotlab.network import Network, create_network
    from robotlab.network_result import NetworkResult
    from robotlab.network_router import RouterArgs
    from robotlab.parallel import shutdown_pool
    from robotlab.redis_memory import RedisMemory
    from robotlab.result import RobotResult
    from robotlab.robot import Robot, build
    from robotlab.skills import AgentSkill, AgentSkillCatalog, Capabilities, ScriptTool, TimeoutExecutor
    from robotlab.task import Task
    from robotlab.tools import Tool, ToolManifest, param, tool
