"""The run loop's one question to ``memory.cache``: is there a reply already, and keep this one if not.

A run's memory has a cache when the ``semantic_cache`` extension was installed
before the memory was made (and ``enable_cache`` was left on); worker-side memory
proxies have none, so runs in worker processes always call the model.

Example:
    >>> import asyncio, robotlab
    >>> from robotlab.llm import LlmRequest, ScriptedModel
    >>> asyncio.run(cache_lookup(robotlab.Memory(enable_cache=False), ScriptedModel(["x"]), LlmRequest([]))) is None
    True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from robotlab.llm.types import LlmReply, LlmRequest
from robotlab.semantic_cache.cache import CacheLookup

__all__ = ["RunLookup", "cache_lookup"]


@dataclass
class RunLookup:
    """A lookup made for a run: its hit (``reply``), and :meth:`store` for the model's reply after a miss."""

    cache: Any
    lookup: CacheLookup

    @property
    def reply(self) -> LlmReply | None:
        return self.lookup.reply

    async def store(self, reply: LlmReply) -> None:
        await self.cache.astore(self.lookup, reply)


async def cache_lookup(memory: Any, model: Any, request: LlmRequest) -> RunLookup | None:
    """Ask *memory*'s cache about *request* to *model*; ``None`` when the memory has no cache."""
    cache = getattr(memory, "cache", None)
    if cache is None or not hasattr(cache, "alookup"):
        return None
    name = str(getattr(model, "name", "") or type(model).__name__)
    return RunLookup(cache, await cache.alookup(name, request))
