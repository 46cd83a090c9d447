"""The reserved keys of a Redis memory: ``data``, ``results``, ``messages`` and ``session_id`` in Redis.

A mixin placed before :class:`~robotlab.memory.Memory` in
:class:`~robotlab.redis_memory.RedisMemory`: the same accessors, over the
Redis structures the memory opened (``_proxy``, ``_results_list``,
``_messages_list``) and its ``_link``, so every process on the namespace
shares them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from robotlab.memory import data_contents
from robotlab.redis_memory.link import RedisLink
from robotlab.redis_memory.structures import RedisList, RedisStateProxy

__all__ = ["RedisReservedKeys"]


class RedisReservedKeys:
    """``memory.data``, ``results``, ``messages`` and ``session_id``, stored under the memory's namespace."""

    _link: RedisLink
    _proxy: RedisStateProxy
    _results_list: RedisList
    _messages_list: RedisList

    @property
    def data(self) -> RedisStateProxy:
        """Free-form run state with item and attribute access, shared through Redis."""
        return self._proxy

    @data.setter
    def data(self, values: Mapping[str, Any]) -> None:
        self._proxy._data.replace(data_contents(values))

    @property
    def results(self) -> RedisList:
        """Robot results shared through Redis (``append`` is atomic across processes)."""
        return self._results_list

    @results.setter
    def results(self, values: Iterable[Any]) -> None:
        self._results_list.replace(list(values))

    @property
    def messages(self) -> RedisList:
        """Conversation history shared through Redis."""
        return self._messages_list

    @messages.setter
    def messages(self, values: Iterable[Any]) -> None:
        self._messages_list.replace(list(values))

    @property
    def session_id(self) -> str | None:
        raw = self._link.client.get(self._link.keys.session_id)
        return None if raw is None else raw.decode()

    @session_id.setter
    def session_id(self, value: str | None) -> None:
        if value is not None and not isinstance(value, str):
            raise TypeError(f"session_id must be a str or None, got {type(value).__name__}")
        if value is None:
            self._link.client.delete(self._link.keys.session_id)
        else:
            self._link.client.set(self._link.keys.session_id, value)
