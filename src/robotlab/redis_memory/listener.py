"""The background side of a Redis memory: the change feed and the subscription dispatcher.

Two daemon threads per memory, both stopped by ``close()``:

* the **listener** reads the namespace's pub/sub channel. Each change frame
  bumps a generation counter (waking blocked ``get(wait=...)`` readers, which
  then re-read Redis) and, when the write came from another memory, is queued
  for the dispatcher. It never runs user code, so a slow or blocking
  subscription callback cannot delay the wake-ups.
* the **dispatcher** runs subscription callbacks for those changes, one frame
  at a time, in the order Redis applied the writes.

Pub/sub delivers at most once: a frame published while the connection is down
is lost. So after a reconnect the generation is bumped (readers re-check), and
readers re-check Redis at least every ``RECHECK_SECONDS`` anyway.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from robotlab.errors import ConfigurationError
from robotlab.redis_memory.scripts import parse_frame

__all__ = ["RECHECK_SECONDS", "ChangeListener", "Dispatcher"]

logger = logging.getLogger("robotlab.memory")

#: Longest a blocked reader sleeps without re-reading Redis (a safety net for lost frames).
RECHECK_SECONDS = 1.0
_POLL_SECONDS = 1.0  # how often the listener looks at its stop flag when nothing arrives
_STOP = b"stop"

Change = tuple[bytes, str, bytes, bytes]


class Dispatcher:
    """Runs ``deliver(changes)`` for each queued frame on one thread, in queue order."""

    def __init__(self, deliver: Callable[[list[Change]], None], name: str) -> None:
        self._deliver = deliver
        self._queue: queue.SimpleQueue[list[Change] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def put(self, changes: list[Change]) -> None:
        self._queue.put(changes)

    def _run(self) -> None:
        while (changes := self._queue.get()) is not None:
            try:
                self._deliver(changes)
            except Exception:  # _notify already isolates callbacks; this guards decoding bugs
                logger.exception("Redis memory: delivering a change failed")

    def stop(self, timeout: float) -> None:
        self._queue.put(None)
        if threading.current_thread() is not self._thread:  # close() called from a callback
            self._thread.join(timeout)


class ChangeListener:
    """Subscribes to *channel* (and the private *control* channel) and follows it on a thread."""

    def __init__(self, client: Any, channel: str, control: str, origin: str, dispatcher: Dispatcher,
                 *, name: str, connect_timeout: float = 10.0) -> None:
        self._client = client
        self._control = control.encode()
        self._origin = origin.encode()
        self._dispatcher = dispatcher
        self._changed = threading.Condition()
        self._generation = 0
        self._stopping = False
        self._pubsub = client.pubsub()
        self._pubsub.subscribe(channel, control)
        self._await_subscribed(connect_timeout)
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _await_subscribed(self, timeout: float) -> None:
        # A write made after the constructor returns must reach us: wait for both confirmations.
        deadline = time.monotonic() + timeout
        confirmed = 0
        while confirmed < 2:
            left = deadline - time.monotonic()
            message = self._pubsub.get_message(timeout=max(left, 0.0)) if left > 0 else None
            if message is None and left <= 0:
                self._pubsub.close()
                raise ConfigurationError(f"Redis did not confirm the memory's subscription within {timeout:g} s")
            if message is not None and message["type"] == "subscribe":
                confirmed += 1

    # -- readers --------------------------------------------------------------------------------

    @property
    def generation(self) -> int:
        with self._changed:
            return self._generation

    def bump(self) -> None:
        """Something may have changed: wake every blocked reader."""
        with self._changed:
            self._generation += 1
            self._changed.notify_all()

    def wait_changed(self, generation: int, timeout: float) -> None:
        """Sleep until the generation moves past *generation*, or *timeout* seconds."""
        with self._changed:
            self._changed.wait_for(lambda: self._generation != generation, timeout)

    # -- the thread ---------------------------------------------------------------------------------

    def _run(self) -> None:
        errors = _connection_errors()
        outage = False
        try:
            while not self._stopping:
                try:
                    message = self._pubsub.get_message(timeout=_POLL_SECONDS)
                except errors as exc:
                    if self._stopping:
                        break
                    if not outage:
                        logger.warning("Redis memory lost its change feed (%s); reconnecting", exc)
                        outage = True
                    self.bump()  # readers fall back to re-reading Redis
                    time.sleep(0.2)
                    continue
                if message is None:
                    continue
                if message["type"] == "subscribe":  # (re)subscribed: frames may have been missed
                    if outage:
                        logger.warning("Redis memory change feed restored")
                        outage = False
                    self.bump()
                elif message["type"] == "message":
                    if message["channel"] == self._control:
                        if message["data"] == _STOP:
                            break
                        continue
                    self._on_frame(message["data"])
        except Exception:  # never die silently: readers still re-check Redis every RECHECK_SECONDS
            logger.exception("Redis memory change listener stopped unexpectedly")
        finally:
            with contextlib.suppress(Exception):
                self._pubsub.close()

    def _on_frame(self, frame: bytes) -> None:
        try:
            origin, changes = parse_frame(frame)
        except (ValueError, IndexError):
            logger.error("Redis memory: ignored a malformed change frame (%d bytes)", len(frame))
            return
        self.bump()
        if origin != self._origin and changes:  # our own writes already fired on the writer's thread
            self._dispatcher.put(changes)

    def stop(self, timeout: float) -> None:
        """Stop the thread (it closes the pub/sub connection on its way out)."""
        self._stopping = True
        with contextlib.suppress(Exception):  # the server may be gone; then the poll timeout ends it
            self._client.publish(self._control.decode(), _STOP)
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout)
        self.bump()


def _connection_errors() -> tuple[type[BaseException], ...]:
    import redis

    return (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError)
