"""Where cached replies live: litellm's own cache backends, in memory or in Redis.

Entries (a reply as JSON) go through litellm's ``InMemoryCache`` (bounded, with a
TTL) or ``RedisCache`` (keys under a namespace, ``EX`` expiry; a Redis that is
down reads as a miss, never as a failed run). For the semantic mode each context
also keeps a list of ``{"key", "vector"}`` records of the questions asked in it:
a Python list in memory, a Redis list (``RPUSH`` / ``LRANGE``) in Redis, so
every process sharing that Redis shares the cache.

Example:
    >>> store = MemoryStore(max_entries=10, ttl=60)
    >>> store.set("k", {"text": "hi"})
    >>> store.get("k"), store.get("other")
    ({'text': 'hi'}, None)
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from typing import Any

from robotlab.errors import DependencyError

__all__ = ["MemoryStore", "RedisStore"]


class MemoryStore:
    """Entries in litellm's ``InMemoryCache``; question vectors in per-context lists (newest kept)."""

    def __init__(self, *, max_entries: int, ttl: float) -> None:
        from litellm.caching.in_memory_cache import InMemoryCache

        self.ttl = ttl
        self.max_entries = max_entries
        self._entries = InMemoryCache(max_size_in_memory=max_entries, default_ttl=int(ttl) or 1)
        self._vectors: dict[str, deque[dict[str, Any]]] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            value = self._entries.get_cache(key)
        return value if isinstance(value, dict) else None

    def set(self, key: str, value: dict[str, Any]) -> None:
        with self._lock:
            self._entries.set_cache(key, json.dumps(value), ttl=self.ttl)

    def add_vector(self, context: str, record: dict[str, Any]) -> None:
        with self._lock:
            records = self._vectors.setdefault(context, deque(maxlen=self.max_entries))
            records.append({**record, "expires": time.time() + self.ttl})

    def vectors(self, context: str) -> list[dict[str, Any]]:
        now = time.time()
        with self._lock:
            return [r for r in self._vectors.get(context, ()) if r["expires"] > now]

    def clear(self) -> None:
        with self._lock:
            self._entries.flush_cache()
            self._vectors.clear()


class RedisStore:
    """Entries through litellm's ``RedisCache`` under *namespace*; question vectors in Redis lists."""

    def __init__(self, *, url: str, namespace: str, max_entries: int, ttl: float) -> None:
        try:
            import redis  # noqa: F401  (litellm's RedisCache needs it)
            from litellm.caching.redis_cache import RedisCache
        except ImportError as exc:
            raise DependencyError.missing("the Redis semantic cache", "robotlab[cache]") from exc
        self.namespace = namespace
        self.max_entries = max_entries
        self.ttl = ttl
        self._entries = RedisCache(url=url, namespace=namespace)
        self._client = self._entries.redis_client

    def get(self, key: str) -> dict[str, Any] | None:
        value = self._entries.get_cache(key)  # None when missing, expired, or Redis is unreachable
        return value if isinstance(value, dict) else None

    def set(self, key: str, value: dict[str, Any]) -> None:
        self._entries.set_cache(key, json.dumps(value), ttl=int(self.ttl) or 1)

    def _vector_list(self, context: str) -> str:
        return f"{self.namespace}:questions:{context}"

    def add_vector(self, context: str, record: dict[str, Any]) -> None:
        name = self._vector_list(context)
        pipe = self._client.pipeline()
        pipe.rpush(name, json.dumps(record))
        pipe.ltrim(name, -self.max_entries, -1)
        pipe.expire(name, int(self.ttl) or 1)
        pipe.execute()

    def vectors(self, context: str) -> list[dict[str, Any]]:
        return [json.loads(raw) for raw in self._client.lrange(self._vector_list(context), 0, -1)]

    def clear(self) -> None:
        """Delete this cache's keys (only those under its namespace; the rest of the database stays)."""
        keys = list(self._client.scan_iter(match=f"{self.namespace}:*", count=500))
        if keys:
            self._client.delete(*keys)
