"""The public surface: each package's ``__all__`` is pinned, and every docstring example runs."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import robotlab

# A change here is a change of the public API: deliberate, and in the docs.
PUBLIC = {
    "robotlab": [
        "AgentSkill", "AgentSkillCatalog", "AskUser", "AskUserError", "AwaitTimeout", "BoundaryError",
        "BudgetExceeded", "Bus", "BusError", "Capabilities", "CompactionHookContext", "Config", "ConfigurationError",
        "Convergence", "DelegationFuture", "DelegationTimeout", "DependencyError", "DoomLoopHookContext", "DotState",
        "Error", "ExtensionState", "HistoryCompressor", "HistoryError", "HitlHookContext", "Hook", "HookContext",
        "HookRegistry", "Hooks", "InferenceError", "JobFailed", "JobTimeout", "KnowledgeError", "KnowledgeStore",
        "LearnHookContext", "LlmGenerationHookContext", "MCPClient", "MCPError", "MCPServer", "Memory", "Narrator",
        "Network", "NetworkResult", "NetworkRunHookContext", "OutputValidationError", "RactorBoundaryError",
        "RecallKnowledge", "RecordKnowledge", "RedisMemory", "Registration", "Robot", "RobotMessage", "RobotResult",
        "RouterArgs", "RouterError", "RouterLoopError", "RunConfig", "RunHookContext", "ScriptTool", "StateProxy",
        "Task", "TaskHookContext", "TimeoutExecutor", "Tool", "ToolCallHookContext", "ToolError", "ToolLoopError",
        "ToolManifest", "ToolNotFoundError", "WireError", "WorkerCrashed", "__version__", "build", "clear_hooks",
        "config", "configure", "create_memory", "create_network", "current_hook_scope", "extension",
        "extension_loaded", "global_hooks", "loaded_extensions", "on", "param", "register_extension", "reload_config",
        "retryable", "retryable_classes", "shutdown_pool", "tool", "with_hook_scope",
    ],
    "robotlab.history": [
        "Convergence", "HistoryCompressor", "HistoryResult", "HistoryStore", "RedisHistoryStore", "SQLiteHistoryStore",
        "compress_history", "open_history_store", "search_history", "tf_cosine_similarity",
    ],
    "robotlab.hooks": [
        "CompactionHookContext", "DoomLoopHookContext", "DotState", "ERROR_FAMILIES", "ExtensionState", "FAMILIES",
        "HitlHookContext", "Hook", "HookContext", "HookRegistry", "HookScope", "Hooks", "LearnHookContext",
        "LlmGenerationHookContext",
        "Narrator", "NetworkRunHookContext", "Registration", "RunHookContext", "ScopedThreadPoolExecutor",
        "TaskHookContext", "ToolCallHookContext", "clear_hooks", "current_hook_scope", "global_hooks", "on",
        "run_in_scope", "with_hook_scope",
    ],
    "robotlab.llm": [
        "EchoModel", "LiteLLMModel", "LlmReply", "LlmRequest", "Model", "ScriptedModel", "ToolCall", "Usage",
        "assistant_message", "call", "count_tokens", "resolve_model", "tool_message",
    ],
    "robotlab.mcp": [
        "MCPClient", "MCPConnections", "MCPServer", "MCPTool", "MCPToolInfo", "MCPToolResult", "TRANSPORTS",
        "connect_servers", "discover_servers", "load_servers", "mcp_tool_class", "mcp_tools", "offered_tools",
        "parse_servers", "relevant_servers", "select_servers",
    ],
    "robotlab.parallel": [
        "FrozenDict", "JobFailed", "JobTimeout", "RactorBoundaryError", "RemoteTraceback", "WireError", "WorkerCrashed",
        "WorkerPool", "default_pool", "freeze_deep", "import_path", "is_shareable", "memory", "resolve",
        "shutdown_pool",
    ],
    "robotlab.redis_memory": [
        "RedisMemory", "SERIALIZERS",
    ],
    "robotlab.semantic_cache": [
        "BACKENDS", "CacheHit", "CacheLookup", "EXTENSION", "SemanticCache", "install", "installed", "uninstall",
    ],
    "robotlab.tracing": [
        "TracingHook", "set_tracer_provider",
    ],
    "robotlab.skills": [
        "AgentSkill", "AgentSkillCatalog", "Capabilities", "ScriptExecutor", "ScriptTool", "TimeoutExecutor",
        "resolve_skills",
    ],
}

# Tested by their own suites (with a Redis server, with temporary skill folders).
_DOCTESTED_ELSEWHERE = ("robotlab.redis_memory", "robotlab.skills")


@pytest.mark.parametrize("package", sorted(PUBLIC))
def test_all_is_pinned_and_importable(package):
    module = importlib.import_module(package)
    assert sorted(module.__all__) == PUBLIC[package]
    assert len(set(module.__all__)) == len(module.__all__)
    for name in module.__all__:
        assert getattr(module, name) is not None, f"{package}.{name}"


def _modules() -> list[str]:
    names = [m.name for m in pkgutil.walk_packages(robotlab.__path__, "robotlab.")]
    return [n for n in names if not n.endswith("__main__") and not n.startswith(_DOCTESTED_ELSEWHERE)]


@pytest.mark.parametrize("name", _modules())
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    failures, _ = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert failures == 0
