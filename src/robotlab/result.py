"""RobotResult: the value every ``robot.run()`` returns."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["RobotResult", "ToolCallRecord"]


@dataclass
class ToolCallRecord:
    """One tool call the robot made during a run.

    Attributes:
        where: the backend that ran the call: ``"thread"`` in the robot's own process (on its event loop
            or a helper thread), else the worker pool backend (``"process"``, ``"subinterpreter"``,
            ``"ray"``, or ``"thread"`` for a thread pool). A tool of a robot that runs in a worker (a
            network task with ``parallel_mode="process"``, say) ran in that worker: its backend.
        worker: the id of the worker that ran it (its process id, interpreter id or thread id), or None
            when it ran in the robot's own process outside any pool.
        duration: seconds from the call's start to its result, in all (``queued_s + run_s``).
        queued_s: the part of ``duration`` spent before and after running: waiting for a free worker and
            crossing to it and back (0 for a call run where the robot runs).
        run_s: the part spent running the tool (its ``tool_call`` hooks included).

    >>> ToolCallRecord(id="1", name="add", arguments={"a": 1}).where
    'thread'
    """

    id: str
    name: str
    arguments: dict[str, Any]
    result: Any = None
    error: str | None = None  # the exception text when the tool failed
    duration: float = 0.0  # seconds, queued_s + run_s
    where: str = "thread"
    hook_metadata: dict[str, Any] = field(default_factory=dict)  # what tool_call hooks put in ctx.metadata
    worker: int | None = None
    queued_s: float = 0.0
    run_s: float = 0.0


@dataclass
class RobotResult:
    """What a run produced.

    Attributes:
        robot_name: the robot that ran.
        last_text_content: the final text answer.
        messages: the whole conversation of this run, OpenAI chat format.
        tool_calls: every tool call made, in order.
        prompt_tokens, completion_tokens: token usage summed over the run's LLM calls.
        cost: dollars spent (litellm's response cost; 0 for unpriced models).
        duration: wall time in seconds.
        llm_calls: how many LLM calls the run made.
        cache_hits: how many replies came from ``memory.cache`` instead (no call, no tokens, no cost).
        hook_metadata: ``ctx.metadata`` written by hooks, by namespace (also from workers).
        output: with ``output_type=``, the validated answer, of that type (``last_text_content``
            stays the raw text); else None.

    >>> r = RobotResult(robot_name="r", last_text_content="hi")
    >>> r.to_dict()["last_text_content"]
    'hi'
    """

    robot_name: str
    last_text_content: str | None = None
    messages: list[dict[str, Any]] = field(default_factory=list)
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    duration: float = 0.0
    llm_calls: int = 0
    cache_hits: int = 0
    model: str = ""
    hook_metadata: dict[str, Any] = field(default_factory=dict)
    output: Any = None

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def usage(self) -> dict[str, int]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
        }

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict (non-JSON tool results become their ``repr``)."""
        data = asdict(self)
        data["total_tokens"] = self.total_tokens
        if self.output is not None:  # a model or dataclass as its JSON data
            from pydantic_core import to_jsonable_python

            data["output"] = to_jsonable_python(self.output, fallback=repr)
        return json.loads(json.dumps(data, default=repr))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RobotResult:
        data = {k: v for k, v in data.items() if k != "total_tokens"}
        data["tool_calls"] = [ToolCallRecord(**c) for c in data.get("tool_calls", [])]
        return cls(**data)

    def __str__(self) -> str:
        return self.last_text_content or ""
