"""HookContext and one context class per hook family.

Fields marked rw in robot_lab's docs are plain attributes; the others are
read-only properties.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

from robotlab.hooks.state import DotState, ExtensionState

__all__ = [
    "CompactionHookContext",
    "DoomLoopHookContext",
    "HitlHookContext",
    "HookContext",
    "LearnHookContext",
    "LlmGenerationHookContext",
    "NetworkRunHookContext",
    "RunHookContext",
    "TaskHookContext",
    "ToolCallHookContext",
]


_LAZY_LOCK = threading.Lock()


def _readonly(name: str) -> property:
    return property(lambda self: self._fields[name], doc=f"{name} (read-only)")


class HookContext:
    """Base context: ``event``, ``metadata``, ``ext(name)``, ``local``, ``with_namespace(ns)``.

    >>> ctx = HookContext("run")
    >>> with ctx.with_namespace("timer"):
    ...     ctx.local.start = 1
    >>> ctx.ext("timer").start
    1
    """

    _readonly_fields: tuple[str, ...] = ()
    _rw_fields: tuple[str, ...] = ()
    _event = "hook"

    def __init__(self, event: str | None = None, metadata: ExtensionState | None = None, **fields: Any) -> None:
        readonly, rw = self._readonly_fields, self._rw_fields
        unknown = [name for name in fields if name not in readonly and name not in rw]  # no sets: a few names
        if unknown:
            raise TypeError(f"{type(self).__name__} got unexpected field(s): {', '.join(sorted(unknown))}")
        self._fields = {name: fields.get(name) for name in self._readonly_fields}
        for name in self._rw_fields:
            setattr(self, name, fields.get(name))
        self._event_name = str(event) if event is not None else self._event
        self._metadata = metadata  # made on first use: most contexts never meet a handler
        self._ns_local: threading.local | None = None  # made when a handler first runs: most contexts see none

    @property
    def event(self) -> str:
        return self._event_name

    @property
    def metadata(self) -> ExtensionState:
        if self._metadata is None:
            with _LAZY_LOCK:  # once, whichever threads race to it
                if self._metadata is None:
                    self._metadata = ExtensionState()
        return self._metadata

    def ext(self, name: object) -> DotState:
        """Another handler's namespaced state, e.g. ``ctx.ext("timer").start``."""
        return self.metadata.ext(name)

    @property
    def local(self) -> DotState:
        """This handler's private state; only inside a hook call (``with_namespace``)."""
        ns = None if self._ns_local is None else getattr(self._ns_local, "name", None)
        if ns is None:
            raise ValueError("No hook namespace active")
        return self.metadata.ext(ns)

    @property
    def _ns(self) -> threading.local:
        """The active namespace, per thread (created on first use, once, whichever threads race)."""
        if self._ns_local is None:
            with _LAZY_LOCK:
                if self._ns_local is None:
                    self._ns_local = threading.local()
        return self._ns_local

    @contextlib.contextmanager
    def with_namespace(self, namespace: object) -> Iterator[HookContext]:
        ns = self._ns
        previous = getattr(ns, "name", None)
        ns.name = str(namespace)
        try:
            yield self
        finally:
            ns.name = previous

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"event": self.event}
        for name in (*self._readonly_fields, *self._derived_fields(), *self._rw_fields):
            out[name] = getattr(self, name)
        out["metadata"] = self.metadata.to_dict()
        return out

    def _derived_fields(self) -> tuple[str, ...]:
        return ()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(event={self.event!r})"


class RunHookContext(HookContext):
    """``run`` family: robot, network, task, memory, config; rw request, response, error."""

    _event = "run"
    _readonly_fields = ("robot", "network", "task", "memory", "config")
    _rw_fields = ("request", "response", "error")
    robot = _readonly("robot")
    network = _readonly("network")
    task = _readonly("task")
    memory = _readonly("memory")
    config = _readonly("config")


class LlmGenerationHookContext(RunHookContext):
    """``llm_generation`` family (its ``event`` is ``"run"``, as in robot_lab): adds iteration, and
    cache_hit (the reply comes from ``memory.cache``: the model is not called)."""

    _readonly_fields = (*RunHookContext._readonly_fields, "iteration", "cache_hit")
    _rw_fields = (*RunHookContext._rw_fields, "generation_response")
    iteration = _readonly("iteration")
    cache_hit = _readonly("cache_hit")

    def __init__(self, event: str | None = None, metadata: ExtensionState | None = None, **fields: Any) -> None:
        fields.setdefault("iteration", 0)
        fields["cache_hit"] = bool(fields.get("cache_hit"))
        super().__init__(event, metadata, **fields)
        if self._fields["iteration"] is None:
            self._fields["iteration"] = 0


class ToolCallHookContext(HookContext):
    """``tool_call`` family: tool, tool_name, tool_args, robot; rw tool_result, tool_error."""

    _event = "tool_call"
    _readonly_fields = ("tool", "tool_args", "robot")
    _rw_fields = ("tool_result", "tool_error")
    tool = _readonly("tool")
    tool_args = _readonly("tool_args")
    robot = _readonly("robot")

    @property
    def tool_name(self) -> str:
        tool = self._fields["tool"]
        return getattr(tool, "name", None) or type(tool).__name__

    def _derived_fields(self) -> tuple[str, ...]:
        return ("tool_name",)


class NetworkRunHookContext(HookContext):
    """``network_run`` family: network, memory, config; rw context, result, error."""

    _event = "network_run"
    _readonly_fields = ("network", "memory", "config")
    _rw_fields = ("context", "result", "error")
    network = _readonly("network")
    memory = _readonly("memory")
    config = _readonly("config")


class TaskHookContext(HookContext):
    """``task`` family: network, task, task_name, robot (falls back to task.robot), memory, config."""

    _event = "task"
    _readonly_fields = ("network", "task", "memory", "config", "robot")
    _rw_fields = ("result", "error")
    network = _readonly("network")
    task = _readonly("task")
    memory = _readonly("memory")
    config = _readonly("config")

    @property
    def robot(self) -> Any:
        return self._fields["robot"] or getattr(self._fields["task"], "robot", None)

    @property
    def task_name(self) -> str | None:
        return getattr(self._fields["task"], "name", None)

    def _derived_fields(self) -> tuple[str, ...]:
        return ("task_name",)


class DoomLoopHookContext(HookContext):
    """``on_doom_loop`` (a ``tool_call``-family hook): robot, tool_name, pattern, sequence; rw warning.

    ``warning`` is the text appended to the tool result; a handler may rewrite it, or set it to "" to add none.
    """

    _event = "tool_call"
    _readonly_fields = ("robot", "tool_name", "pattern", "sequence")
    _rw_fields = ("warning",)
    robot = _readonly("robot")
    tool_name = _readonly("tool_name")
    pattern = _readonly("pattern")
    sequence = _readonly("sequence")


class LearnHookContext(HookContext):
    """``learn`` family: robot, text, learnings_before; rw stored, error."""

    _event = "learn"
    _readonly_fields = ("robot", "text", "learnings_before")
    _rw_fields = ("stored", "error")
    robot = _readonly("robot")
    text = _readonly("text")
    learnings_before = _readonly("learnings_before")

    def __init__(self, event: str | None = None, metadata: ExtensionState | None = None, **fields: Any) -> None:
        super().__init__(event, metadata, **fields)
        self.stored = bool(self.stored)


class CompactionHookContext(HookContext):
    """``compaction`` family: robot, messages_before, config, strategy; rw compacted_messages, error."""

    _event = "compaction"
    _readonly_fields = ("robot", "messages_before", "config", "strategy")
    _rw_fields = ("compacted_messages", "error")
    robot = _readonly("robot")
    messages_before = _readonly("messages_before")
    config = _readonly("config")
    strategy = _readonly("strategy")

    @property
    def handled(self) -> bool:
        """True once ``on_compaction`` set ``compacted_messages``: core then skips its own algorithm."""
        return self.compacted_messages is not None

    def _derived_fields(self) -> tuple[str, ...]:
        return ("handled",)


class HitlHookContext(HookContext):
    """``hitl`` family (``ask_user``): robot, question, choices, default; rw answer, source, error.

    A ``before_hitl`` handler that sets ``answer`` answers the question itself
    (``source`` becomes ``"hook"``): nobody is asked.
    """

    _event = "hitl"
    _readonly_fields = ("robot", "question", "choices", "default")
    _rw_fields = ("answer", "source", "error")
    robot = _readonly("robot")
    question = _readonly("question")
    choices = _readonly("choices")
    default = _readonly("default")
