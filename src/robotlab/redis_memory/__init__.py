"""Memory persisted in, and shared through, a Redis server (the ``robotlab[redis]`` extra).

Example (needs a running Redis server)::

    import robotlab

    memory = robotlab.create_memory(backend="redis", url="redis://localhost:6379/0", session_id="ticket-42")
    memory.set("sentiment", "positive")   # every process on this namespace sees it
    memory.close()

See ``docs/persistence.md``.

Modules: ``store`` (RedisMemory), ``codec`` (JSON / opt-in pickle values),
``scripts`` (the atomic Lua writes and their change frames), ``listener``
(the change feed and subscription threads), ``structures`` (``data``,
``results``, ``messages`` in Redis), ``reserved_keys`` (RedisMemory's
accessors for them), ``link`` (connection and key names),
``backend`` (``create_memory(backend="redis")``, registered by import path in
``robotlab.memory_backends``). Importing this package does not import
``redis``; opening a memory does.
"""

from __future__ import annotations

from robotlab.redis_memory.codec import SERIALIZERS
from robotlab.redis_memory.store import RedisMemory

__all__ = ["SERIALIZERS", "RedisMemory"]
