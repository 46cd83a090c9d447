"""One Redis memory's connection: the client, its namespace's key names and the write scripts.

Every Redis call of a :class:`~robotlab.redis_memory.RedisMemory` goes through
``link.client``, which raises ``robotlab.Error`` once the memory is closed.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from robotlab.errors import DependencyError, Error
from robotlab.redis_memory.codec import ValueCodec
from robotlab.redis_memory.scripts import (
    COMPARE_AND_WRITE,
    DELETE,
    INCREMENT_INTEGER,
    LIST_DELETE_INDEX,
    LIST_REPLACE,
    WRITE,
)

__all__ = ["NamespaceKeys", "RedisLink", "import_redis", "safe_url"]


def import_redis(feature: str) -> ModuleType:
    """The ``redis`` package, or ``DependencyError`` naming ``pip install 'robotlab[redis]'``."""
    try:
        import redis
    except ImportError:
        raise DependencyError.missing(feature, "robotlab[redis]") from None
    return redis


def safe_url(url: str) -> str:
    """*url* with its password masked, for messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


@dataclass(frozen=True)
class NamespaceKeys:
    """The Redis keys and channel one namespace uses (all start with ``"<namespace>:"``)."""

    namespace: str

    @property
    def values(self) -> str:
        return f"{self.namespace}:values"  # hash: key -> encoded value

    @property
    def order(self) -> str:
        return f"{self.namespace}:order"  # zset: key -> first-write sequence number

    @property
    def sequence(self) -> str:
        return f"{self.namespace}:seq"  # counter feeding both orders

    @property
    def data(self) -> str:
        return f"{self.namespace}:data"  # hash: memory.data

    @property
    def data_order(self) -> str:
        return f"{self.namespace}:data-order"

    @property
    def results(self) -> str:
        return f"{self.namespace}:results"  # list

    @property
    def messages(self) -> str:
        return f"{self.namespace}:messages"  # list

    @property
    def session_id(self) -> str:
        return f"{self.namespace}:session-id"  # string

    @property
    def channel(self) -> str:
        return f"{self.namespace}:changes"  # pub/sub: change frames of memory.set/update/delete

    def control(self, origin: str) -> str:
        """One memory's private channel (``close()`` stops its listener through it)."""
        return f"{self.namespace}:control:{origin}"

    def all_keys(self) -> tuple[str, ...]:
        return (self.values, self.order, self.sequence, self.data, self.data_order, self.results,
                self.messages, self.session_id)


class RedisLink:
    """The client, key names, codec and scripts of one memory; refuses use after close."""

    def __init__(self, client: Any, keys: NamespaceKeys, origin: str, codec: ValueCodec) -> None:
        self._client = client
        self.errors = import_redis("RedisMemory").exceptions
        self.keys = keys
        self.origin = origin
        self.codec = codec
        self.closed = False
        self._write = client.register_script(WRITE)
        self._delete = client.register_script(DELETE)
        self._compare_and_write = client.register_script(COMPARE_AND_WRITE)
        self._increment_integer = client.register_script(INCREMENT_INTEGER)
        self.list_replace = client.register_script(LIST_REPLACE)
        self.list_delete_index = client.register_script(LIST_DELETE_INDEX)

    @property
    def client(self) -> Any:
        if self.closed:
            raise self.closed_error()
        return self._client

    def closed_error(self) -> Error:
        return Error(f"this Redis memory (namespace {self.keys.namespace!r}) is closed; "
                     "create a new one with create_memory(backend='redis', url=...)")

    def write(self, hash_key: str, order_key: str, items: list[tuple[str, bytes]], *, publish: bool,
              replace: bool = False) -> bytes:
        """Store encoded *items* in one atomic step; returns the change frame."""
        args: list[Any] = [self.keys.channel if publish else "", self.origin, "1" if replace else "0"]
        for key, raw in items:
            args += (key, raw)
        return self._write(keys=[hash_key, order_key, self.keys.sequence], args=args, client=self.client)

    def compare_and_write(self, hash_key: str, order_key: str, key: str, expected: bytes | None, raw: bytes,
                          *, publish: bool) -> bytes | None:
        """Store *raw* at *key* only if it still holds the bytes *expected* (``None``: only if absent).

        Returns the change frame, or ``None`` when the key held something else (nothing is written).
        """
        args = [self.keys.channel if publish else "", self.origin, key, "0" if expected is None else "1",
                b"" if expected is None else expected, raw]
        return self._compare_and_write(keys=[hash_key, order_key, self.keys.sequence], args=args,
                                       client=self.client)

    def increment_integer(self, hash_key: str, order_key: str, key: str, by: int, *, publish: bool) -> bytes | None:
        """Add the integer *by* to the JSON integer at *key* (missing: 0) atomically; the change frame.

        ``None`` when the stored value is not a 64-bit integer or the sum would overflow (nothing is written).
        """
        args = [self.keys.channel if publish else "", self.origin, key, str(by)]
        return self._increment_integer(keys=[hash_key, order_key, self.keys.sequence], args=args,
                                       client=self.client)

    def delete(self, hash_key: str, order_key: str, key: str, *, publish: bool) -> bytes | None:
        """Remove *key* atomically; the change frame, or ``None`` when it was absent."""
        args = [self.keys.channel if publish else "", self.origin, key]
        return self._delete(keys=[hash_key, order_key], args=args, client=self.client)

    def mark_closed(self) -> None:
        """Refuse every further call (first step of closing, so that racing calls fail cleanly)."""
        self.closed = True

    def disconnect(self) -> None:
        """Close every connection (last step of closing)."""
        self.closed = True
        self._client.close()
