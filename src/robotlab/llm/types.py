"""The model contract: requests, replies, tool calls, usage, and the Model protocol."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = ["LlmReply", "LlmRequest", "Model", "ToolCall", "Usage", "assistant_message", "tool_message"]


@dataclass
class ToolCall:
    """One tool call the model asked for (``arguments`` already JSON-decoded)."""

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass
class LlmReply:
    """A model's answer: final text, or tool calls to make first."""

    text: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    cost: float = 0.0
    model: str = ""
    raw: Any = None
    cost_known: bool = True  # False: no price for this model, so ``cost`` is 0.0 whatever the call cost


@dataclass
class LlmRequest:
    """What a robot sends: OpenAI-format messages and tool schemas, plus sampling settings."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] = field(default_factory=list)
    temperature: float | None = None
    max_tokens: int | None = None
    options: dict[str, Any] = field(default_factory=dict)
    response_format: dict[str, Any] | None = None  # a json_schema the reply text must match (output_type)


@runtime_checkable
class Model(Protocol):
    """Anything with a ``name`` and ``complete(request) -> LlmReply`` is a model."""

    name: str

    def complete(self, request: LlmRequest) -> LlmReply: ...


def assistant_message(reply: LlmReply) -> dict[str, Any]:
    """The OpenAI-format assistant message for *reply*."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.text}
    if reply.tool_calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
            for c in reply.tool_calls
        ]
    return message


def tool_message(call_id: str, content: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content}
