"""RedisMemory: the Memory API over a Redis server, shared by every process that opens the same namespace.

Example (needs a running Redis server)::

    from robotlab import create_memory

    with create_memory(backend="redis", url="redis://localhost:6379/0", session_id="ticket-42") as memory:
        memory.set("sentiment", "positive")   # any process on that namespace sees it
        memory.get("verdict", wait=30)        # woken by a write from any process
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
import weakref
from collections.abc import Mapping
from typing import Any

from robotlab.errors import AwaitTimeout, ConfigurationError
from robotlab.memory import Memory, MemoryChange
from robotlab.memory_values import number_at, number_step
from robotlab.redis_memory.codec import ValueCodec
from robotlab.redis_memory.link import NamespaceKeys, RedisLink, import_redis, safe_url
from robotlab.redis_memory.listener import RECHECK_SECONDS, Change, ChangeListener, Dispatcher
from robotlab.redis_memory.reserved_keys import RedisReservedKeys
from robotlab.redis_memory.scripts import parse_frame
from robotlab.redis_memory.structures import RedisHash, RedisList, RedisStateProxy

__all__ = ["RedisMemory"]

logger = logging.getLogger("robotlab.memory")

_STOP_TIMEOUT = 10.0  # seconds close() waits for each background thread
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1  # what HINCRBY adds exactly


class RedisMemory(RedisReservedKeys, Memory):
    """A :class:`~robotlab.memory.Memory` whose state lives in Redis under one namespace.

    Every memory opened on the same ``url`` and namespace shares the user keys,
    ``data``, ``results``, ``messages`` and ``session_id``: a write in one
    process wakes blocked ``get(wait=...)`` readers and fires matching
    subscriptions in all the others. Prefer ``create_memory(backend="redis", ...)``.

    Args:
        url: a redis-py URL (``redis://[[user]:password@]host[:port][/db]``,
            ``rediss://`` for TLS, ``unix:///path.sock``); query options such as
            ``?socket_timeout=5`` go to redis-py.
        data: fields written into the shared ``memory.data`` (others are kept).
        namespace: prefix of every Redis key and channel used. Default:
            ``"robotlab:<session_id>"``, or a fresh random one without a session id.
        session_id: stored as the shared ``memory.session_id`` (when given).
        enable_cache: as for :class:`Memory` (the cache stays in this process).
        serializer: ``"json"`` (default: plain data only; never unpickles) or
            ``"pickle"`` (any picklable value; only for servers whose every
            writer you trust).

    Use it as a context manager, or call :meth:`close`, to stop its two
    background threads and close its connections.
    """

    def __init__(
        self,
        url: str,
        data: Mapping[str, Any] | None = None,
        *,
        namespace: str | None = None,
        session_id: str | None = None,
        enable_cache: bool = True,
        serializer: str = "json",
    ) -> None:
        redis = import_redis("RedisMemory")
        if not isinstance(url, str) or not url:
            raise ConfigurationError(f"url must be a Redis URL such as 'redis://localhost:6379/0', got {url!r}")
        if namespace is not None and (not isinstance(namespace, str) or not namespace):
            raise ConfigurationError(f"namespace must be a non-empty str, got {namespace!r}")
        if session_id is not None and not isinstance(session_id, str):
            raise TypeError(f"session_id must be a str or None, got {type(session_id).__name__}")
        if data is not None and not isinstance(data, Mapping):
            raise TypeError(f"memory.data must be a mapping, got {type(data).__name__}")
        codec = ValueCodec(serializer)
        if namespace is None:
            namespace = f"robotlab:{session_id}" if session_id else f"robotlab:{uuid.uuid4().hex}"
        self._setup(enable_cache)
        self._values = self._data = None  # the state lives in Redis; base-class code must not find a local copy
        self._url = url
        origin = uuid.uuid4().hex  # tells this memory's change frames from everyone else's
        keys = NamespaceKeys(namespace)
        client = _connect(redis, url, client_name=f"robotlab-memory:{origin}")
        self._link = RedisLink(client, keys, origin, codec)
        dispatcher = Dispatcher(_deliverer(weakref.ref(self)), name=f"robotlab-memory-dispatch:{namespace}")
        try:
            self._listener = ChangeListener(client, keys.channel, keys.control(origin), origin, dispatcher,
                                            name=f"robotlab-memory-listen:{namespace}")
        except BaseException:
            dispatcher.stop(_STOP_TIMEOUT)
            client.close()
            raise
        # Runs on close() or when the memory is garbage-collected; holds no reference to self.
        self._finalizer = weakref.finalize(self, _release, self._listener, dispatcher, self._link)
        self._proxy = RedisStateProxy(RedisHash(self._link, keys.data, keys.data_order, "memory.data"),
                                      threading.RLock())
        self._results_list = RedisList(self._link, keys.results, "memory.results")
        self._messages_list = RedisList(self._link, keys.messages, "memory.messages")
        try:
            if data:
                self._proxy.update(data)
            if session_id is not None:
                self.session_id = session_id
        except BaseException:
            self.close()
            raise

    # -- lifetime ---------------------------------------------------------------------------------

    @property
    def namespace(self) -> str:
        """The prefix of every Redis key and channel this memory uses."""
        return self._link.keys.namespace

    @property
    def serializer(self) -> str:
        return self._link.codec.name

    @property
    def closed(self) -> bool:
        return not self._finalizer.alive

    def close(self) -> None:
        """Stop the background threads and close the connections. Idempotent; the data stays in Redis."""
        self._finalizer()

    def __enter__(self) -> RedisMemory:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def destroy(self) -> None:
        """Delete everything stored under this namespace, for every process sharing it.

        No subscription fires. The memory stays open (and empty).
        """
        self._link.client.delete(*self._link.keys.all_keys())
        self._listener.bump()

    # -- key/value ----------------------------------------------------------------------------------

    def _encode(self, key: str, value: Any) -> bytes:
        return self._link.codec.encode(value, f"memory[{key!r}]")

    def _decode(self, key: str, raw: bytes) -> Any:
        return self._link.codec.decode(raw, f"memory[{key!r}]")

    def set(self, key: object, value: Any) -> None:
        """Write *key* (atomically with its change notification); fires this process's subscriptions here."""
        key = self._key(key)
        self._write([(key, self._encode(key, value))])

    def update(self, values: Mapping[str, Any] | None = None, /, **kwargs: Any) -> None:
        """Write several keys in one atomic step (one Lua script); callbacks fire per key in order.

        Keys and values are all checked before anything is written.
        """
        items = [(self._key(k), v) for k, v in dict(values or {}, **kwargs).items()]
        self._write([(key, self._encode(key, value)) for key, value in items])

    def _write(self, items: list[tuple[str, bytes]]) -> None:
        if not items:
            return
        keys = self._link.keys
        frame = self._link.write(keys.values, keys.order, items, publish=True)
        self._listener.bump()
        self._deliver(parse_frame(frame)[1])

    def increment(self, key: object, by: int | float = 1) -> int | float:
        """Add *by* to the number at *key* atomically across every process sharing the namespace.

        An integer added to a JSON integer is one Lua script (``HINCRBY``);
        anything else (floats, the pickle serializer, integers beyond 64 bits)
        is an optimistic compare-and-set on the stored bytes, retried when
        another writer got there first. Errors as ``Memory.increment``.
        """
        key = self._key(key)
        by = number_step(by)
        keys = self._link.keys
        if self.serializer == "json" and isinstance(by, int) and _INT64_MIN <= by <= _INT64_MAX:
            frame = self._link.increment_integer(keys.values, keys.order, key, int(by), publish=True)
            if frame is not None:
                return self._wrote(frame)[1]
        while True:
            raw = self._link.client.hget(keys.values, key)
            value = (0 if raw is None else number_at(key, self._decode(key, raw))) + by
            frame = self._link.compare_and_write(keys.values, keys.order, key, raw, self._encode(key, value),
                                                 publish=True)
            if frame is not None:
                self._wrote(frame)
                return value

    def _compare_and_set(self, key: object, matches: Any, new: Any) -> bool:
        """Read, test and write back only if the stored bytes did not change meanwhile (else read again)."""
        key = self._key(key)
        encoded = self._encode(key, new)
        keys = self._link.keys
        while True:
            raw = self._link.client.hget(keys.values, key)
            if not matches(None if raw is None else self._decode(key, raw)):
                return False
            frame = self._link.compare_and_write(keys.values, keys.order, key, raw, encoded, publish=True)
            if frame is not None:
                self._wrote(frame)
                return True

    def _wrote(self, frame: bytes) -> tuple[str, Any]:
        """Wake readers and fire subscriptions for a one-key write; ``(key, new value)``."""
        self._listener.bump()
        (change,) = parse_frame(frame)[1]
        self._deliver([change])
        return change[1], self._decode(change[1], change[3])

    def _delete(self, key: str, *, missing_ok: bool) -> Any:
        keys = self._link.keys
        frame = self._link.delete(keys.values, keys.order, key, publish=True)
        if frame is None:
            if missing_ok:
                return None
            raise KeyError(key)
        self._listener.bump()
        (change,) = parse_frame(frame)[1]
        self._deliver([change])
        return self._decode(key, change[2])

    def _load(self, key: str) -> tuple[bool, Any]:
        raw = self._link.client.hget(self._link.keys.values, key)
        return (False, None) if raw is None else (True, self._decode(key, raw))

    def _get_one(self, key: str, wait: bool | float, default: Any) -> Any:
        # Read the generation *before* Redis: a write landing after the read bumps it, so no wake-up is lost.
        deadline = None if isinstance(wait, bool) else time.monotonic() + wait
        while True:
            generation = self._listener.generation
            try:
                found, value = self._load(key)
            except Exception:
                if self._link.closed:  # close() ran while this reader was blocked or mid-read
                    raise self._link.closed_error() from None
                raise
            if found:
                return value
            if wait is False:
                return default
            timeout = RECHECK_SECONDS
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AwaitTimeout.for_key(key, wait)
                timeout = min(left, RECHECK_SECONDS)
            self._listener.wait_changed(generation, timeout)

    def keys(self) -> list[str]:
        """User keys in first-write order, across every process sharing the namespace."""
        return [key.decode() for key in self._link.client.zrange(self._link.keys.order, 0, -1)]

    def __contains__(self, key: object) -> bool:
        return bool(self._link.client.hexists(self._link.keys.values, str(key)))

    def __getitem__(self, key: object) -> Any:
        key = self._key(key)
        found, value = self._load(key)
        if not found:
            raise KeyError(key)
        return value

    def snapshot(self) -> dict[str, Any]:
        """A consistent copy of the user keys (one transaction)."""
        keys = self._link.keys
        with self._link.client.pipeline(transaction=True) as pipe:
            order, raw = pipe.zrange(keys.order, 0, -1).hgetall(keys.values).execute()
        return {k.decode(): self._decode(k.decode(), raw[k]) for k in order if k in raw}

    # -- subscriptions --------------------------------------------------------------------------------

    def _deliver(self, changes: list[Change]) -> None:
        """Fire the matching subscriptions for *changes* (values decoded as ``get`` would return them)."""
        for kind, key, previous_raw, value_raw in changes:
            with self._lock:
                subscribers = self._matching(key)
            if not subscribers:
                continue
            try:
                previous = None if kind == b"c" else self._decode(key, previous_raw)
                value = None if kind == b"d" else self._decode(key, value_raw)
            except Exception:
                logger.exception("memory subscriptions skipped a change of %r they cannot decode", key)
                continue
            change = MemoryChange(key, value, previous, deleted=kind == b"d", created=kind == b"c", memory=self)
            self._notify(subscribers, change)

    # -- persistence -----------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The same shape as ``Memory.to_dict()``, read in one transaction."""
        keys = self._link.keys
        with self._link.client.pipeline(transaction=True) as pipe:
            pipe.zrange(keys.data_order, 0, -1).hgetall(keys.data)
            pipe.lrange(keys.results, 0, -1).lrange(keys.messages, 0, -1).get(keys.session_id)
            pipe.zrange(keys.order, 0, -1).hgetall(keys.values)
            data_order, data, results, messages, session_id, order, values = pipe.execute()
        decode = self._link.codec.decode
        return {
            "data": {k.decode(): decode(data[k], f"memory.data[{k.decode()!r}]") for k in data_order if k in data},
            "results": [decode(raw, f"memory.results[{i}]") for i, raw in enumerate(results)],
            "messages": [decode(raw, f"memory.messages[{i}]") for i, raw in enumerate(messages)],
            "session_id": None if session_id is None else session_id.decode(),
            "values": {k.decode(): self._decode(k.decode(), values[k]) for k in order if k in values},
        }

    @classmethod
    def from_dict(  # type: ignore[override]  # a Redis memory also needs to know where to write
        cls,
        state: Mapping[str, Any],
        *,
        url: str,
        namespace: str | None = None,
        enable_cache: bool = True,
        serializer: str = "json",
    ) -> RedisMemory:
        """Write :meth:`to_dict` output into a namespace (user keys are set, so subscribers see them)."""
        memory = cls(url, state.get("data"), namespace=namespace, session_id=state.get("session_id"),
                     enable_cache=enable_cache, serializer=serializer)
        try:
            memory.results = state.get("results") or ()
            memory.messages = state.get("messages") or ()
            memory.update(state.get("values") or {})
        except BaseException:
            memory.close()
            raise
        return memory

    def __getstate__(self) -> dict[str, Any]:
        # A pickled Redis memory is a handle: the copy re-attaches to the same server and namespace.
        return {"url": self._url, "namespace": self.namespace, "serializer": self.serializer,
                "enable_cache": self._enable_cache}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["url"], namespace=state["namespace"], serializer=state["serializer"],
                      enable_cache=state["enable_cache"])

    def __repr__(self) -> str:
        closed = ", closed" if self.closed else ""
        return f"RedisMemory(namespace={self.namespace!r}, serializer={self.serializer!r}{closed})"


def _connect(redis: Any, url: str, *, client_name: str) -> Any:
    """A redis-py client for *url* that has answered PING, or ``ConfigurationError``."""
    try:
        # Defaults only: options in the URL's query string win.
        client = redis.Redis.from_url(url, socket_connect_timeout=10, health_check_interval=30, client_name=client_name)
    except ValueError as exc:
        raise ConfigurationError(f"invalid Redis url {safe_url(url)!r}: {exc}") from None
    try:
        client.ping()
    except redis.exceptions.RedisError as exc:
        client.close()
        raise ConfigurationError(f"cannot reach Redis at {safe_url(url)}: {exc}") from None
    return client


def _deliverer(memory_ref: weakref.ref[RedisMemory]) -> Any:
    """The dispatcher's callback; a weak reference, so the threads never keep the memory alive."""

    def deliver(changes: list[Change]) -> None:
        memory = memory_ref()
        if memory is not None:
            memory._deliver(changes)

    return deliver


def _release(listener: ChangeListener, dispatcher: Dispatcher, link: RedisLink) -> None:
    link.mark_closed()  # from now on every call raises the "closed" error; readers woken below see it
    listener.stop(_STOP_TIMEOUT)
    dispatcher.stop(_STOP_TIMEOUT)
    link.disconnect()
