"""A message bus for robots: named mailboxes, delivered in order per receiver.

Example:
    >>> import robotlab
    >>> from robotlab.llm import EchoModel
    >>> bus = robotlab.Bus("team")
    >>> alice = robotlab.build(name="alice", model=EchoModel(), bus=bus)
    >>> bob = robotlab.build(name="bob", model=EchoModel(), bus=bus)
    >>> _ = alice.send_message(to="bob", content="hi")
    >>> [(m.sender, m.content) for m in bob.inbox()]
    [('alice', 'hi')]

Choices, in plain Python terms (robot_lab's ``TypedBus`` + ``BusPoller``):

- A robot gets a bus with ``build(..., bus=bus)``. Without one, a robot
  running inside a network run uses ``network.bus``, on which every task's
  robot is registered by name. An explicit ``bus=`` wins.
- Messages are frozen :class:`RobotMessage` envelopes with a bus-wide,
  increasing ``id``; the content is passed by reference (send immutable values).
- Each receiver's mailbox keeps messages in the order the bus accepted them,
  however many threads send at once. A robot reads its mailbox by pulling
  (``robot.inbox()`` drains it, ``robot.receive(timeout=)`` waits for one), or
  the bus pushes them to a handler set with :meth:`Bus.subscribe`: deliveries
  to one receiver run one at a time, in order, on a bus thread that carries
  the sender's context (hook scope included); other receivers are not held up.
- A send to a name the bus does not know, or a robot with no bus, raises
  ``BusError``; nothing is queued, so the bus is as it was.
- The bus lives in one process. In a network with a ``parallel_mode`` other
  than ``"thread"``, robots run in workers without it, and messaging raises
  ``BusError``.
"""

from __future__ import annotations

import contextvars
import itertools
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from robotlab.errors import BusError

__all__ = ["Bus", "RobotMessage"]

logger = logging.getLogger("robotlab.bus")

Handler = Callable[["RobotMessage"], Any]


@dataclass(frozen=True)
class RobotMessage:
    """One message between robots: an immutable envelope.

    ``id`` increases in the order the bus accepted messages; ``in_reply_to``
    is the ``id`` of the message this one answers, if any.

    >>> RobotMessage(id=1, sender="alice", to="bob", content="hi", sent_at=0.0).to
    'bob'
    """

    id: int
    sender: str
    to: str
    content: Any
    sent_at: float
    in_reply_to: int | None = None


@dataclass
class _Mailbox:
    owner: Any  # the registered robot (or None for a bare name): a different robot may not take the name
    ambiguous: bool = False
    queue: deque[tuple[RobotMessage, contextvars.Context | None]] = field(default_factory=deque)
    handler: Handler | None = None
    delivering: bool = False


class Bus:
    """Named mailboxes for robots; thread-safe.

    >>> bus = Bus("team")
    >>> bus.register("bob")
    >>> bus.send("alice", "bob", {"n": 1}).content
    {'n': 1}
    >>> bus.receive("bob", timeout=0).sender
    'alice'
    """

    def __init__(self, name: str = "bus") -> None:
        self.name = name
        self._mailboxes: dict[str, _Mailbox] = {}
        self._ids = itertools.count(1)
        self._changed = threading.Condition()

    def __repr__(self) -> str:
        return f"Bus(name={self.name!r}, members={list(self.members)!r})"

    @property
    def members(self) -> tuple[str, ...]:
        """The names that can receive messages, in registration order."""
        with self._changed:
            return tuple(n for n, box in self._mailboxes.items() if not box.ambiguous)

    def register(self, member: Any, *, duplicate: Literal["raise", "ambiguous"] = "raise") -> None:
        """Give *member* (a robot, or a bare name) a mailbox; registering it again is a no-op.

        A different robot with a name already taken raises ``BusError``, or with
        ``duplicate="ambiguous"`` (what networks use, where several robots may be
        called ``"robot"``) makes that name unusable until the robots are renamed.
        """
        name, owner = (member, None) if isinstance(member, str) else (_name_of(member), member)
        with self._changed:
            box = self._mailboxes.get(name)
            if box is None:
                self._mailboxes[name] = _Mailbox(owner)
            elif box.owner is not owner:
                if duplicate == "ambiguous":
                    box.ambiguous = True
                else:
                    raise BusError(
                        f"bus {self.name!r} already has a different robot named {name!r}; "
                        "give robots on one bus distinct names"
                    )

    def send(self, sender: str, to: str, content: Any, *, in_reply_to: int | None = None) -> RobotMessage:
        """Put a message in *to*'s mailbox (or hand it to its handler) and return it."""
        with self._changed:
            box = self._mailbox(to, f"robot {sender!r} cannot send to it")
            message = RobotMessage(next(self._ids), sender, to, content, time.time(), in_reply_to)
            box.queue.append((message, contextvars.copy_context() if box.handler else None))
            start = box.handler is not None and not box.delivering
            if start:
                box.delivering = True
            self._changed.notify_all()
        if start:
            threading.Thread(target=self._deliver, args=(box,), name=f"bus-{self.name}-{to}", daemon=True).start()
        return message

    def receive(self, name: str, timeout: float | None = None) -> RobotMessage | None:
        """The oldest message for *name*, waiting up to *timeout* seconds (``None``: forever).

        Returns ``None`` when none arrived in time.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._changed:
            box = self._mailbox(name, "it has no mailbox to read")
            self._refuse_pull(box, name)
            while not box.queue:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return None
                self._changed.wait(remaining)
            return box.queue.popleft()[0]

    def inbox(self, name: str) -> list[RobotMessage]:
        """Every message waiting for *name*, oldest first; the mailbox is emptied."""
        with self._changed:
            box = self._mailbox(name, "it has no mailbox to read")
            self._refuse_pull(box, name)
            messages = [m for m, _ in box.queue]
            box.queue.clear()
            return messages

    def subscribe(self, name: str, handler: Handler) -> None:
        """Deliver *name*'s messages to ``handler(message)``, one at a time and in order.

        Messages already waiting are delivered first. A handler that raises is
        logged (logger ``robotlab.bus``) and the next message is still delivered.
        """
        with self._changed:
            box = self._mailbox(name, "cannot subscribe to it")
            box.handler = handler
            start = bool(box.queue) and not box.delivering
            if start:
                box.delivering = True
        if start:
            threading.Thread(target=self._deliver, args=(box,), name=f"bus-{self.name}-{name}", daemon=True).start()

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until every handler has finished its deliveries; ``False`` if *timeout* passed first."""
        with self._changed:
            return self._changed.wait_for(
                lambda: not any(b.delivering for b in self._mailboxes.values()), timeout
            )

    def _mailbox(self, name: str, consequence: str) -> _Mailbox:
        box = self._mailboxes.get(name)
        if box is None:
            known = ", ".join(repr(n) for n, b in self._mailboxes.items() if not b.ambiguous) or "none"
            raise BusError(
                f"bus {self.name!r} has no robot named {name!r}, so {consequence} (known: {known}); "
                "register it with bus.register(robot) or build it with bus=..."
            )
        if box.ambiguous:
            raise BusError(
                f"bus {self.name!r} has several different robots named {name!r}, so {consequence}; "
                "give the robots distinct names"
            )
        return box

    def _refuse_pull(self, box: _Mailbox, name: str) -> None:
        if box.handler is not None:
            raise BusError(f"{name!r} on bus {self.name!r} has a handler (bus.subscribe): its messages go there")

    def _deliver(self, box: _Mailbox) -> None:
        """Drain one mailbox into its handler; only one such thread per mailbox runs at a time."""
        while True:
            with self._changed:
                if not box.queue:
                    box.delivering = False
                    self._changed.notify_all()
                    return
                message, context = box.queue.popleft()
                handler = box.handler
            try:
                (context or contextvars.Context()).run(handler, message)
            except Exception:
                logger.exception("bus %r: handler of %r failed on message %d from %r",
                                 self.name, message.to, message.id, message.sender)


def _name_of(member: Any) -> str:
    name = getattr(member, "name", None)
    if not isinstance(name, str) or not name:
        raise BusError(f"a bus member must be a robot with a name or a non-empty string, got {member!r}")
    return name
