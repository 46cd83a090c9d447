"""Robots talking to robots: messages over a bus, and delegation of work.

A mixin of :class:`robotlab.Robot` (as robot_lab keeps ``robot/bus_messaging.rb``
apart from its Robot): the methods here use only the robot's ``name``,
``bus`` and ``run``/``run_async``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from robotlab.active_run import active_run
from robotlab.delegation import DelegationFuture
from robotlab.errors import BusError, ConfigurationError
from robotlab.hooks import current_hook_scope

if TYPE_CHECKING:
    from robotlab.bus import Bus, RobotMessage
    from robotlab.result import RobotResult

__all__ = ["RobotMessaging"]


class RobotMessaging:
    """Bus messaging (``send_message``, ``inbox``, ``receive``) and ``delegate`` for robots."""

    name: str
    bus: Bus | None


    def send_message(self, to: str, content: Any, *, in_reply_to: int | None = None) -> RobotMessage:
        """Send *content* to the robot named *to* on this robot's bus; returns the message.

        The bus is ``build(bus=...)``'s, else (inside a network run) the network's.
        No bus, or no robot named *to* on it, raises ``BusError``.

        >>> import robotlab
        >>> from robotlab.llm import EchoModel
        >>> bus = robotlab.Bus()
        >>> a = robotlab.build(name="a", model=EchoModel(), bus=bus)
        >>> b = robotlab.build(name="b", model=EchoModel(), bus=bus)
        >>> a.send_message(to="b", content="hi").sender
        'a'
        """
        return self._bus(f"send a message to {to!r}").send(self.name, to, content, in_reply_to=in_reply_to)

    def inbox(self) -> list[RobotMessage]:
        """The messages waiting for this robot, oldest first; reading empties the mailbox."""
        return self._bus("read its inbox").inbox(self.name)

    def receive(self, timeout: float | None = None) -> RobotMessage | None:
        """The oldest waiting message, waiting up to *timeout* seconds for one (``None`` when none came)."""
        return self._bus("receive a message").receive(self.name, timeout)

    def _bus(self, action: str) -> Bus:
        if self.bus is not None:
            return self.bus
        frame = active_run()
        network = frame.network if frame is not None else None
        bus = getattr(network, "bus", None)
        if bus is None and network is not None:  # a worker's stand-in for the network: the bus stayed in the parent
            raise BusError(
                f"robot {self.name!r} cannot {action}: it runs in a worker of network {network.name!r} "
                f"(parallel_mode={getattr(network, 'parallel_mode', '?')!r}) and the bus lives in the parent "
                "process; use parallel_mode='thread' for robots that message each other"
            )
        if bus is None:
            raise BusError(
                f"robot {self.name!r} cannot {action}: no bus configured. Build the robots that talk "
                "with bus=robotlab.Bus() (the same bus for all), or message from inside a network run "
                "with parallel_mode='thread', where the network's robots share network.bus"
            )
        return bus

    def delegate(
        self, other: RobotMessaging, message: str, async_: bool = False, **run_options: Any
    ) -> RobotResult | DelegationFuture:
        """Have *other* run *message*: its ``RobotResult``, or with ``async_=True`` a :class:`DelegationFuture`.

        Called during this robot's run (from a tool or hook), the delegate's run
        is part of it: the same network (its hooks and config), the per-run hooks
        and the shared budget ledger; ``run_options`` (``tools="inherit"``, ...)
        go to ``other.run``. The async delegate runs on its own thread in a copy
        of this context, so all of that reaches it too.

        >>> import robotlab
        >>> from robotlab.llm import ScriptedModel
        >>> boss = robotlab.build(name="boss", model=ScriptedModel(["ok"]))
        >>> boss.delegate(robotlab.build(name="helper", model=ScriptedModel(["done"])), "go").last_text_content
        'done'
        """
        if not isinstance(other, RobotMessaging):
            raise ConfigurationError(f"robot {self.name!r} can only delegate to a Robot, got {type(other).__name__}")
        frame = active_run()
        if other is self or (frame is not None and other in frame.chain):
            path = " -> ".join(r.name for r in (*(frame.chain if frame else ()), other))
            raise ConfigurationError(
                f"robot {self.name!r} cannot delegate to robot {other.name!r}: it is already running "
                f"({path}) and a robot runs one task at a time; delegate to another robot"
            )
        if frame is not None:
            extra = run_options.pop("hooks", None)
            extra = () if extra is None else (extra,) if isinstance(extra, type) else tuple(extra)
            run_options = {"network": frame.network, "budget_ledger": frame.budget_ledger,
                           "hooks": (*current_hook_scope().per_run_hooks, *extra) or None, **run_options}

        def run() -> RobotResult:
            return other.run(message, **run_options)

        return DelegationFuture(self.name, other.name, run) if async_ else run()
