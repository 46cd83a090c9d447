"""Calling a model from the async run loop, whatever the model implements.

A model has ``complete(request)``; it may also have
``async acomplete(request, on_delta=None)``, which streams when *on_delta* is
given: ``on_delta("text", {"text": ...})`` for each text chunk and
``on_delta("tool_call", {"index", "id", "name", "arguments"})`` for each
fragment of a tool call's JSON arguments. A model with only ``complete`` runs
on a helper thread (never blocking the event loop) and its reply text arrives
as one delta.

Example:
    >>> import asyncio
    >>> from robotlab.llm import LlmRequest, ScriptedModel
    >>> seen = []
    >>> reply = asyncio.run(complete_async(ScriptedModel(["hello there"]), LlmRequest(messages=[]),
    ...                                    lambda kind, data: seen.append(data["text"])))
    >>> reply.text, seen
    ('hello there', ['hello ', 'there'])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from robotlab.llm.types import LlmReply, LlmRequest, Model
from robotlab.sync_bridge import in_thread

__all__ = ["DeltaSink", "complete_async"]

DeltaSink = Callable[[str, dict[str, Any]], None]


async def complete_async(model: Model, request: LlmRequest, on_delta: DeltaSink | None = None) -> LlmReply:
    """The model's reply to *request*, streaming deltas to *on_delta* when it is given."""
    acomplete = getattr(model, "acomplete", None)
    if acomplete is not None:
        return await acomplete(request, on_delta=on_delta)
    reply = await in_thread(model.complete, request)
    if on_delta is not None and reply.text:
        on_delta("text", {"text": reply.text})
    return reply
