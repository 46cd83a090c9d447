"""The ``"redis"`` memory backend: what ``create_memory(backend="redis", ...)`` calls.

:mod:`robotlab.memory_backends` registers :func:`create_redis_memory` by its
import path, so ``robotlab.memory`` never imports this package: it is loaded
when the first Redis memory is asked for (and ``redis`` itself only then too).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from robotlab.errors import ConfigurationError
from robotlab.redis_memory.link import import_redis
from robotlab.redis_memory.store import RedisMemory

__all__ = ["create_redis_memory"]


def create_redis_memory(
    data: Mapping[str, Any] | None,
    *,
    enable_cache: bool,
    session_id: str | None,
    url: str | None = None,
    **options: Any,
) -> RedisMemory:
    """A :class:`RedisMemory` for ``create_memory``; *url* defaults to the ``REDIS_URL`` environment variable."""
    import_redis("create_memory(backend='redis')")
    url = url if url is not None else os.environ.get("REDIS_URL")
    if not url:
        raise ConfigurationError(
            "create_memory(backend='redis') needs url= (or the REDIS_URL environment variable), "
            "e.g. url='redis://localhost:6379/0'"
        )
    return RedisMemory(url, data, session_id=session_id, enable_cache=enable_cache, **options)
