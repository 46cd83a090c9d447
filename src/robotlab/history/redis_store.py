"""RedisHistoryStore: conversations in a Redis server (the ``robotlab[redis]`` extra).

Each session is a Redis list of JSON messages at ``<namespace>:history:<session id>``;
the set ``<namespace>:history-sessions`` names the sessions. ``append`` and
``replace`` are ``MULTI`` transactions, so readers in any process see all of
a write or none of it. Give it the URL of the server your Redis memories use
(``create_memory(backend="redis", url=...)``), or :meth:`RedisHistoryStore.for_memory`.

Example (needs a running Redis server)::

    store = RedisHistoryStore("redis://localhost:6379/0")
    store.append("ticket-42", [{"role": "user", "content": "Where is my order?"}])
    store.load("ticket-42")
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from robotlab.errors import ConfigurationError
from robotlab.history.store import HistoryStore, check_session_id, decode_message, encode_messages
from robotlab.redis_memory.link import import_redis, safe_url

__all__ = ["RedisHistoryStore"]


class RedisHistoryStore(HistoryStore):
    """Conversations by session id in Redis at *url* (default: the ``REDIS_URL`` environment variable).

    *namespace* prefixes every key (default ``"robotlab"``). Raises
    ``ConfigurationError`` when the server cannot be reached.
    """

    def __init__(self, url: str | None = None, *, namespace: str = "robotlab") -> None:
        redis = import_redis("RedisHistoryStore")
        url = url or os.environ.get("REDIS_URL")
        if not url:
            raise ConfigurationError("RedisHistoryStore needs a url (or the REDIS_URL environment variable)")
        if not isinstance(namespace, str) or not namespace:
            raise ConfigurationError(f"namespace must be a non-empty string, got {namespace!r}")
        self.url, self.namespace = url, namespace
        self._client = redis.Redis.from_url(url)
        try:
            self._client.ping()
        except redis.exceptions.RedisError as exc:
            self._client.close()
            raise ConfigurationError(f"cannot reach Redis at {safe_url(url)}: {exc}") from None

    @classmethod
    def for_memory(cls, memory: Any) -> RedisHistoryStore:
        """A store on the server and namespace of a Redis memory (``create_memory(backend="redis", ...)``)."""
        url = getattr(memory, "_url", None)  # a RedisMemory keeps the URL it was opened with
        if not url:
            raise ConfigurationError(f"RedisHistoryStore.for_memory needs a Redis memory, got {memory!r}")
        return cls(url, namespace=memory.namespace)

    def __repr__(self) -> str:
        return f"RedisHistoryStore({safe_url(self.url)!r}, namespace={self.namespace!r})"

    def _key(self, session_id: str) -> str:
        return f"{self.namespace}:history:{session_id}"

    @property
    def _sessions_key(self) -> str:
        return f"{self.namespace}:history-sessions"

    def load(self, session_id: str) -> list[dict[str, Any]]:
        session_id = check_session_id(session_id)
        raw = self._client.lrange(self._key(session_id), 0, -1)
        return [decode_message(text, f"message {n} of session {session_id!r} in Redis key {self._key(session_id)!r}")
                for n, text in enumerate(raw)]

    def append(self, session_id: str, messages: Iterable[Mapping[str, Any]]) -> None:
        session_id = check_session_id(session_id)
        encoded = encode_messages(session_id, messages)
        if not encoded:
            return
        with self._client.pipeline(transaction=True) as pipe:
            pipe.rpush(self._key(session_id), *encoded)
            pipe.sadd(self._sessions_key, session_id)
            pipe.execute()

    def replace(self, session_id: str, messages: Iterable[Mapping[str, Any]]) -> None:
        session_id = check_session_id(session_id)
        encoded = encode_messages(session_id, messages)
        with self._client.pipeline(transaction=True) as pipe:
            pipe.delete(self._key(session_id))
            if encoded:
                pipe.rpush(self._key(session_id), *encoded)
                pipe.sadd(self._sessions_key, session_id)
            else:
                pipe.srem(self._sessions_key, session_id)
            pipe.execute()

    def delete(self, session_id: str) -> None:
        session_id = check_session_id(session_id)
        with self._client.pipeline(transaction=True) as pipe:
            pipe.delete(self._key(session_id))
            pipe.srem(self._sessions_key, session_id)
            pipe.execute()

    def sessions(self) -> list[str]:
        return sorted(s.decode() if isinstance(s, bytes) else s for s in self._client.smembers(self._sessions_key))

    def close(self) -> None:
        self._client.close()
