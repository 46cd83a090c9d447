"""SemanticCache: LLM replies kept by request, reused for the same (or, optionally, a similar) request.

A robot run asks the cache before every LLM call (``memory.cache``, see
``robotlab.semantic_cache``): on a hit the model is not called, the reply comes
from the cache, costs no tokens and no dollars, and the run's ``RobotResult``
counts it in ``cache_hits`` (not in ``llm_calls``); the ``llm_generation`` hooks
still fire, with ``ctx.cache_hit`` true.

Two modes:

- **exact** (always on): a hit when model, normalised messages, tools and
  sampling settings are equal (see :mod:`robotlab.semantic_cache.keys`);
- **semantic** (with ``embedding=``): when the last message is the user's question
  and everything before it is equal, a cached answer to a question whose embedding
  has cosine similarity ≥ ``similarity_threshold`` is a hit too.

A cache that fails (Redis down, the embedding provider erroring) is a miss with a
warning on the ``robotlab.semantic_cache`` logger, never a failed run.

Example:
    >>> cache = SemanticCache()
    >>> cache.fetch("What is Ruby?", lambda: "A programming language.")
    'A programming language.'
    >>> cache.fetch("What is  Ruby? ", lambda: "never computed")  # the same question once normalised
    'A programming language.'
    >>> cache.stats
    {'hits': 1, 'misses': 1, 'stores': 1}
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from robotlab.errors import ConfigurationError
from robotlab.llm.types import LlmReply, LlmRequest, ToolCall, Usage
from robotlab.semantic_cache.embeddings import Embedding, cosine, embed
from robotlab.semantic_cache.keys import exact_key, question
from robotlab.semantic_cache.stores import MemoryStore, RedisStore
from robotlab.sync_bridge import in_thread, run_sync

__all__ = ["BACKENDS", "CacheHit", "CacheLookup", "SemanticCache"]

logger = logging.getLogger("robotlab.semantic_cache")

BACKENDS = ("memory", "redis")


@dataclass(frozen=True)
class CacheHit:
    """What a reply served from the cache carries as its ``raw``.

    Attributes:
        key: the cache entry's key.
        similarity: 1.0 for an exact hit, the cosine similarity for a semantic one.
        original_usage: the tokens the call that filled the entry spent.
    """

    key: str
    similarity: float
    original_usage: Usage


@dataclass
class CacheLookup:
    """One lookup: the hit (or ``None``), and what :meth:`SemanticCache.astore` needs after a miss."""

    reply: LlmReply | None
    model: str
    key: str
    context: str | None = None
    vector: list[float] | None = None


class SemanticCache:
    """A cache of LLM replies, in memory or in Redis (both litellm's cache backends).

    Args:
        backend: ``"memory"`` (this process) or ``"redis"`` (shared by every process using *redis_url*).
        redis_url: ``redis://host:port/db`` for the Redis backend.
        namespace: prefix of every Redis key this cache writes.
        ttl: seconds an entry lives.
        max_entries: entries kept in memory; questions kept per conversation context (both backends).
        embedding: a litellm embedding model name or a callable ``text -> vector``: turns on the semantic mode.
        similarity_threshold: minimum cosine similarity for a semantic hit, in (0, 1].
        embedding_options: extra ``litellm.embedding`` arguments (``api_base``, ``dimensions``, ...).

    >>> SemanticCache(backend="disk")
    Traceback (most recent call last):
    ...
    robotlab.errors.ConfigurationError: semantic cache backend must be one of memory, redis, got 'disk'
    """

    def __init__(
        self,
        *,
        backend: str = "memory",
        redis_url: str | None = None,
        namespace: str = "robotlab:llm-cache",
        ttl: float = 86400.0,
        max_entries: int = 1000,
        embedding: Embedding | None = None,
        similarity_threshold: float = 0.9,
        embedding_options: Mapping[str, Any] | None = None,
    ) -> None:
        _check_options(backend, redis_url, ttl, max_entries, embedding, similarity_threshold)
        self.backend = backend
        self.embedding = embedding
        self.similarity_threshold = float(similarity_threshold)
        self.embedding_options = dict(embedding_options or {})
        self._store: Any = (
            MemoryStore(max_entries=max_entries, ttl=ttl) if backend == "memory"
            else RedisStore(url=str(redis_url), namespace=namespace, max_entries=max_entries, ttl=ttl)
        )
        self._counts = {"hits": 0, "misses": 0, "stores": 0}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        mode = "semantic" if self.embedding is not None else "exact"
        return f"SemanticCache(backend={self.backend!r}, mode={mode!r})"

    @property
    def stats(self) -> dict[str, int]:
        """Hits, misses and stores since this cache was made (this process only)."""
        with self._lock:
            return dict(self._counts)

    def _count(self, what: str) -> None:
        with self._lock:
            self._counts[what] += 1

    async def _io(self, fn: Callable[..., Any], *args: Any) -> Any:
        """A store call: inline in memory, on a helper thread for Redis (never blocking the event loop)."""
        return fn(*args) if self.backend == "memory" else await in_thread(fn, *args)

    # -- the run loop's side ---------------------------------------------------------

    async def alookup(self, model: str, request: LlmRequest) -> CacheLookup:
        """The cached reply to *request* for *model*, if any (``lookup.reply``)."""
        lookup = CacheLookup(reply=None, model=model, key=exact_key(model, request))
        try:
            entry = await self._io(self._store.get, lookup.key)
            similarity = 1.0
            if entry is None and self.embedding is not None:
                entry, similarity = await self._similar(lookup, model, request)
        except ConfigurationError:
            raise
        except Exception as exc:
            logger.warning("semantic cache lookup failed, calling the model: %s: %s", type(exc).__name__, exc)
            return lookup
        if entry is None:
            self._count("misses")
            return lookup
        self._count("hits")
        lookup.reply = _reply_from(entry, CacheHit(lookup.key, similarity, Usage(**entry.get("usage", {}))))
        return lookup

    async def _similar(self, lookup: CacheLookup, model: str,
                       request: LlmRequest) -> tuple[dict[str, Any] | None, float]:
        asked = question(model, request)
        if asked is None or self.embedding is None:
            return None, 0.0
        lookup.context, text = asked
        lookup.vector = await embed(self.embedding, text, self.embedding_options)
        best_key, best = None, 0.0
        for record in await self._io(self._store.vectors, lookup.context):
            score = cosine(lookup.vector, record["vector"])
            if score > best:
                best_key, best = record["key"], score
        if best_key is None or best < self.similarity_threshold:
            return None, best
        return await self._io(self._store.get, best_key), best

    async def astore(self, lookup: CacheLookup, reply: LlmReply) -> None:
        """Keep *reply* as the answer to the request *lookup* missed."""
        entry = {
            "model": reply.model or lookup.model,
            "text": reply.text,
            "tool_calls": [{"name": c.name, "arguments": c.arguments} for c in reply.tool_calls],
            "usage": {"prompt_tokens": reply.usage.prompt_tokens, "completion_tokens": reply.usage.completion_tokens},
        }
        try:
            await self._io(self._store.set, lookup.key, entry)
            if lookup.context is not None and lookup.vector is not None:
                await self._io(self._store.add_vector, lookup.context, {"key": lookup.key, "vector": lookup.vector})
        except Exception as exc:
            logger.warning("semantic cache store failed: %s: %s", type(exc).__name__, exc)
            return
        self._count("stores")

    # -- direct use (robot_lab's memory.cache.fetch) -----------------------------------

    def fetch(self, query: str, compute: Callable[[], str], *, model: str = "") -> str:
        """The cached answer to *query*, or ``compute()``'s, which is then cached.

        With ``embedding=``, a similar enough earlier query's answer counts.
        """
        request = LlmRequest(messages=[{"role": "user", "content": str(query)}])

        async def fetched() -> str:
            lookup = await self.alookup(f"fetch:{model}", request)
            if lookup.reply is not None:
                return lookup.reply.text or ""
            answer = await in_thread(compute)
            await self.astore(lookup, LlmReply(text=str(answer)))
            return str(answer)

        return run_sync(fetched)

    def clear(self) -> None:
        """Forget every entry (for Redis: every key under this cache's namespace)."""
        self._store.clear()


def _reply_from(entry: dict[str, Any], hit: CacheHit) -> LlmReply:
    # New tool-call ids: a cached reply may be replayed twice in one conversation.
    calls = [ToolCall(id=f"call_{uuid.uuid4().hex[:24]}", name=c["name"], arguments=dict(c["arguments"]))
             for c in entry.get("tool_calls", ())]
    return LlmReply(text=entry.get("text"), tool_calls=calls, usage=Usage(), cost=0.0,
                    model=entry.get("model", ""), raw=hit)


def _check_options(backend: object, redis_url: object, ttl: object, max_entries: object,
                   embedding: object, threshold: object) -> None:
    if backend not in BACKENDS:
        raise ConfigurationError(f"semantic cache backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    if backend == "redis" and not (isinstance(redis_url, str) and redis_url.startswith(("redis://", "rediss://",
                                                                                        "unix://"))):
        raise ConfigurationError(
            f"the redis semantic cache needs redis_url='redis://host:port/db', got {redis_url!r}"
        )
    if isinstance(ttl, bool) or not isinstance(ttl, int | float) or ttl <= 0:
        raise ConfigurationError(f"semantic cache ttl must be a positive number of seconds, got {ttl!r}")
    if isinstance(max_entries, bool) or not isinstance(max_entries, int) or max_entries < 1:
        raise ConfigurationError(f"semantic cache max_entries must be a positive integer, got {max_entries!r}")
    if embedding is not None and not (isinstance(embedding, str) and embedding.strip()) and not callable(embedding):
        raise ConfigurationError(
            f"embedding must be a litellm embedding model name or a callable text -> vector, got {embedding!r}"
        )
    if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not 0 < threshold <= 1:
        raise ConfigurationError(f"similarity_threshold must be in (0, 1], got {threshold!r}")
