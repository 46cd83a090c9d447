"""``memory.data``, ``memory.results`` and ``memory.messages`` of a Redis memory, living in Redis.

``RedisHash`` is an ordered mapping over a hash (plus a sorted set that keeps
first-write order); :class:`RedisStateProxy` is the ``StateProxy`` over it.
``RedisList`` is a list view over a Redis list: ``append``/``extend``/``pop``
and item reads and writes are single atomic commands; other edits (``insert``,
slices, ``remove``, ``reverse``, ``sort``) are optimistic read-modify-write
transactions (``WATCH``/``MULTI``), retried when another writer got there first.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping, MutableSequence
from typing import Any

from robotlab.memory import StateProxy
from robotlab.memory_values import plain
from robotlab.redis_memory.link import RedisLink

__all__ = ["RedisHash", "RedisList", "RedisStateProxy"]

# Replaces an item just before it is removed by value (LREM); never a stored item:
# JSON text cannot contain a raw NUL and pickles start with 0x80.
_TOMBSTONE = b"\x00robotlab:deleted\x00"


class RedisHash(MutableMapping):
    """An ordered ``str``-keyed mapping stored in one Redis hash (``memory.data``)."""

    def __init__(self, link: RedisLink, hash_key: str, order_key: str, label: str) -> None:
        self._link = link
        self._hash = hash_key
        self._order = order_key
        self._label = label

    def _decode(self, key: str, raw: bytes) -> Any:
        return self._link.codec.decode(raw, f"{self._label}[{key!r}]")

    def __getitem__(self, key: str) -> Any:
        raw = self._link.client.hget(self._hash, key)
        if raw is None:
            raise KeyError(key)
        return self._decode(key, raw)

    def __setitem__(self, key: str, value: Any) -> None:
        self.update({key: value})

    def __delitem__(self, key: str) -> None:
        if self._link.delete(self._hash, self._order, key, publish=False) is None:
            raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter([key.decode() for key in self._link.client.zrange(self._order, 0, -1)])

    def __len__(self) -> int:
        return self._link.client.hlen(self._hash)

    def __contains__(self, key: object) -> bool:
        return bool(self._link.client.hexists(self._hash, str(key)))

    def update(self, values: Mapping[str, Any] | Iterable[tuple[str, Any]] = (), /, **kwargs: Any) -> None:
        """Write every pair in one atomic step (values are all encoded before anything is written)."""
        self._link.write(self._hash, self._order, self._encode(dict(values, **kwargs)), publish=False)

    def replace(self, values: Mapping[str, Any]) -> None:
        """Make the contents exactly *values*, atomically."""
        self._link.write(self._hash, self._order, self._encode(values), publish=False, replace=True)

    def clear(self) -> None:
        self._link.client.delete(self._hash, self._order)

    def snapshot(self) -> dict[str, Any]:
        """A consistent copy, in first-write order (one ``MULTI`` transaction)."""
        with self._link.client.pipeline(transaction=True) as pipe:
            order, raw = pipe.zrange(self._order, 0, -1).hgetall(self._hash).execute()
        keys = [key.decode() for key in order]
        return {key: self._decode(key, raw[key.encode()]) for key in keys if key.encode() in raw}

    def items(self) -> list[tuple[str, Any]]:  # type: ignore[override]  # a consistent list, not a live view
        return list(self.snapshot().items())

    def _encode(self, values: Mapping[str, Any]) -> list[tuple[str, bytes]]:
        codec = self._link.codec
        return [(str(k), codec.encode(v, f"{self._label}[{str(k)!r}]")) for k, v in values.items()]


class RedisStateProxy(StateProxy):
    """``memory.data`` of a Redis memory: a ``StateProxy`` whose dict is a :class:`RedisHash`."""

    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        """A consistent copy of the data (one transaction, not one read per key)."""
        return self._data.snapshot()

    def items(self) -> list[tuple[str, Any]]:
        return list(self.to_dict().items())


class RedisList(MutableSequence):
    """A list stored in Redis (``memory.results`` / ``memory.messages``); compares equal to a ``list``.

    With the JSON serializer, items that have a ``to_dict()`` method (such as
    ``RobotResult``) are stored as that dict, as ``Memory.to_dict()`` does.
    """

    def __init__(self, link: RedisLink, key: str, label: str) -> None:
        self._link = link
        self._key = key
        self._label = label

    # -- encoding ---------------------------------------------------------------------------

    def _encode(self, value: Any, index: object = "+") -> bytes:
        codec = self._link.codec
        return codec.encode(plain(value) if codec.name == "json" else value, f"{self._label}[{index}]")

    def _decode(self, raw: bytes, index: object) -> Any:
        return self._link.codec.decode(raw, f"{self._label}[{index}]")

    def _all(self, raws: list[bytes] | None = None) -> list[Any]:
        if raws is None:
            raws = self._link.client.lrange(self._key, 0, -1)
        return [self._decode(raw, i) for i, raw in enumerate(raws)]

    # -- reads --------------------------------------------------------------------------------

    def __len__(self) -> int:
        return self._link.client.llen(self._key)

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return self._all()[index]
        index = operator.index(index)
        raw = self._link.client.lindex(self._key, index)
        if raw is None:
            raise IndexError("list index out of range")
        return self._decode(raw, index)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._all())  # a snapshot: safe while others append

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (list, RedisList)):
            return self._all() == list(other)
        return NotImplemented

    __hash__ = None  # mutable

    def copy(self) -> list[Any]:
        """The items, as a plain list."""
        return self._all()

    def __repr__(self) -> str:
        return f"RedisList({self._all()!r})"

    # -- atomic writes ------------------------------------------------------------------------

    def append(self, value: Any) -> None:
        self._link.client.rpush(self._key, self._encode(value))

    def extend(self, values: Iterable[Any]) -> None:
        encoded = [self._encode(value) for value in values]  # all encoded before anything is written
        if encoded:
            self._link.client.rpush(self._key, *encoded)

    def __iadd__(self, values: Iterable[Any]) -> RedisList:
        self.extend(values)
        return self

    def __setitem__(self, index: int | slice, value: Any) -> None:
        if isinstance(index, slice):
            items = list(value)
            self._modify(lambda current: current.__setitem__(index, items))
            return
        index = operator.index(index)
        encoded = self._encode(value, index)
        try:
            self._link.client.lset(self._key, index, encoded)
        except self._link.errors.ResponseError as exc:
            if "out of range" in str(exc) or "no such key" in str(exc):
                raise IndexError("list assignment index out of range") from None
            raise

    def pop(self, index: int = -1) -> Any:
        index = operator.index(index)
        try:
            raw = self._link.list_delete_index(keys=[self._key], args=[index, _TOMBSTONE], client=self._link.client)
        except self._link.errors.ResponseError as exc:
            if "out of range" in str(exc):
                raise IndexError("pop index out of range") from None
            raise
        return self._decode(raw, index)

    def __delitem__(self, index: int | slice) -> None:
        if isinstance(index, slice):
            self._modify(lambda current: current.__delitem__(index))
            return
        try:
            self.pop(index)
        except IndexError:
            raise IndexError("list assignment index out of range") from None

    def clear(self) -> None:
        self._link.client.delete(self._key)

    def replace(self, values: Iterable[Any]) -> None:
        """Make the contents exactly *values*, atomically."""
        encoded = [self._encode(value, i) for i, value in enumerate(values)]
        self._link.list_replace(keys=[self._key], args=encoded, client=self._link.client)

    # -- read-modify-write --------------------------------------------------------------------

    def insert(self, index: int, value: Any) -> None:
        self._encode(value, index)  # refuse a bad value before any round trip
        self._modify(lambda current: current.insert(index, value))

    def remove(self, value: Any) -> None:
        self._modify(lambda current: current.remove(value))

    def reverse(self) -> None:
        self._modify(lambda current: current.reverse())

    def sort(self, *, key: Callable[[Any], Any] | None = None, reverse: bool = False) -> None:
        self._modify(lambda current: current.sort(key=key, reverse=reverse))

    def _modify(self, edit: Callable[[list[Any]], Any]) -> None:
        """Apply *edit* to the current items and store the result, unless someone wrote meanwhile (then retry)."""
        with self._link.client.pipeline() as pipe:
            while True:
                try:
                    pipe.watch(self._key)
                    items = self._all(pipe.lrange(self._key, 0, -1))
                    edit(items)  # raises (IndexError, ValueError ...) before anything is written
                    encoded = [self._encode(item, i) for i, item in enumerate(items)]
                    pipe.multi()
                    pipe.delete(self._key)
                    if encoded:
                        pipe.rpush(self._key, *encoded)
                    pipe.execute()
                    return
                except self._link.errors.WatchError:
                    continue
