"""Offline models for tests and demos: ScriptedModel and EchoModel (no network, no API key)."""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import threading
from collections.abc import Callable, Sequence
from typing import Any

from robotlab.errors import ConfigurationError
from robotlab.llm.types import LlmReply, LlmRequest, ToolCall, Usage

__all__ = ["EchoModel", "ScriptedModel", "call", "count_tokens"]

Reply = str | LlmReply | ToolCall | Sequence[ToolCall]
_ids = itertools.count(1)
_WORDS = re.compile(r"\S+\s*|\s+")


def call(name: str, **arguments: Any) -> ToolCall:
    """A scripted tool call: ``call("lookup", order_id="42")``."""
    return ToolCall(id=f"call_{next(_ids)}", name=name, arguments=arguments)


def count_tokens(text: str) -> int:
    """The offline models' deterministic token count: about 4 characters per token."""
    return max(1, len(text) // 4) if text else 0


def _prompt_tokens(request: LlmRequest) -> int:
    chars = sum(len(str(m.get("content") or "")) for m in request.messages)
    chars += sum(len(json.dumps(m.get("tool_calls"))) for m in request.messages if m.get("tool_calls"))
    chars += len(json.dumps(request.tools)) if request.tools else 0
    return max(1, chars // 4)


class ScriptedModel:
    """Replies given in advance, or computed by a function ``(messages, tools) -> reply``.

    A reply is a ``str`` (final text), a ``ToolCall`` or list of them, or an
    ``LlmReply``. Usage is reported (about 4 characters per token) so budgets
    work; ``prices=(input_per_token, output_per_token)`` gives a cost (without
    them a reply costs 0.0 with ``cost_known=False``, as an unpriced real model).
    ``response_schema`` is what it answers to ``supports_response_schema()``:
    with ``output_type=`` and ``output_mode="auto"``, True (the default) means
    its text replies are the JSON answers; False, that it answers by calling
    the ``final_result`` tool.

    >>> model = ScriptedModel(["first", "second"])
    >>> model.complete(LlmRequest(messages=[{"role": "user", "content": "hi"}])).text
    'first'
    """

    def __init__(
        self,
        replies: Sequence[Reply] | Callable[[list[dict[str, Any]], list[dict[str, Any]]], Reply],
        *,
        name: str = "scripted",
        prices: tuple[float, float] | None = None,
        response_schema: bool = True,
    ) -> None:
        self.name = name
        self.prices = prices
        self.response_schema = response_schema
        self._fn = replies if callable(replies) else None
        self._replies = None if callable(replies) else list(replies)
        self._lock = threading.Lock()
        self.calls: list[LlmRequest] = []

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def supports_response_schema(self) -> bool:
        return self.response_schema

    def complete(self, request: LlmRequest) -> LlmReply:
        with self._lock:
            self.calls.append(request)
            if self._fn is None:
                if not self._replies:
                    raise ConfigurationError(
                        f"ScriptedModel {self.name!r} ran out of replies after {len(self.calls) - 1} calls; "
                        "script one reply per LLM call the robot makes"
                    )
                raw = self._replies.pop(0)
        if self._fn is not None:
            raw = self._fn(request.messages, request.tools)
        reply = self._to_reply(raw)
        if reply.usage.total_tokens == 0:
            completion = count_tokens(reply.text or "") + sum(
                count_tokens(json.dumps(c.arguments)) + 1 for c in reply.tool_calls
            )
            reply.usage = Usage(_prompt_tokens(request), max(1, completion))
        prices = request.options.get("prices") or self.prices
        if prices and not reply.cost:
            reply.cost = reply.usage.prompt_tokens * prices[0] + reply.usage.completion_tokens * prices[1]
        elif not reply.cost:
            reply.cost_known = False  # no prices and no scripted cost: as a real model litellm has no price for
        reply.model = reply.model or self.name
        return reply

    async def acomplete(self, request: LlmRequest, on_delta: Any = None) -> LlmReply:
        """:meth:`complete` for async runs; with *on_delta* the reply streams in chunks.

        Text streams word by word and each tool call's JSON arguments in pieces of
        about 8 characters, yielding to the event loop between chunks as a real
        stream would.
        """
        reply = self.complete(request)
        if on_delta is None:
            return reply
        for chunk in _WORDS.findall(reply.text or ""):
            on_delta("text", {"text": chunk})
            await asyncio.sleep(0)
        for index, tool_call in enumerate(reply.tool_calls):
            arguments = json.dumps(tool_call.arguments)
            for start in range(0, len(arguments), 8):
                name = tool_call.name if start == 0 else None
                on_delta("tool_call", {"index": index, "id": tool_call.id if start == 0 else None, "name": name,
                                       "arguments": arguments[start:start + 8]})
                await asyncio.sleep(0)
        return reply

    def _to_reply(self, raw: Reply) -> LlmReply:
        if isinstance(raw, LlmReply):
            return LlmReply(raw.text, list(raw.tool_calls), Usage(raw.usage.prompt_tokens,
                            raw.usage.completion_tokens), raw.cost, raw.model, raw.raw)
        if isinstance(raw, str):
            return LlmReply(text=raw)
        if isinstance(raw, ToolCall):
            return LlmReply(tool_calls=[raw])
        if isinstance(raw, Sequence) and raw and all(isinstance(c, ToolCall) for c in raw):
            return LlmReply(tool_calls=list(raw))
        raise ConfigurationError(
            f"ScriptedModel {self.name!r}: a reply must be a str, ToolCall, list of ToolCall or LlmReply, "
            f"got {type(raw).__name__}"
        )

    def __repr__(self) -> str:
        return f"ScriptedModel(name={self.name!r})"


class EchoModel(ScriptedModel):
    """Replies with the last user message."""

    def __init__(self, *, name: str = "echo") -> None:
        super().__init__(self._echo, name=name)

    @staticmethod
    def _echo(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> str:
        return next((str(m["content"]) for m in reversed(messages) if m["role"] == "user"), "")
