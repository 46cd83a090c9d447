"""The robot run in progress in this context: what a delegate inherits and where a robot finds its network.

A ``contextvars.ContextVar``, so it follows a run onto its tasks and threads
(robotlab's own hand-offs copy the context) and never leaks between runs.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["RunFrame", "active_run", "enter_run", "exit_run", "running"]


@dataclass(frozen=True)
class RunFrame:
    network: Any
    budget_ledger: Any
    chain: tuple[Any, ...]  # the robots running, outermost first: a delegation may not loop back into one
    events: Any = None  # the run's EventEmitter when it is streamed (tools such as ask_user emit there)


_active_run: contextvars.ContextVar[RunFrame | None] = contextvars.ContextVar("robotlab_active_run", default=None)


def active_run() -> RunFrame | None:
    """The frame of the innermost robot run in this context, else ``None``."""
    return _active_run.get()


@contextlib.contextmanager
def running(robot: Any, network: Any, ledger: Any) -> Iterator[RunFrame]:
    """Mark *robot* as running (inside whatever run is active) for the duration of the block."""
    token = enter_run(robot, network, ledger)
    try:
        yield token.var.get()
    finally:
        _active_run.reset(token)


def enter_run(robot: Any, network: Any, ledger: Any, events: Any = None) -> contextvars.Token:
    """:func:`running` without the block: mark *robot* as running; ``exit_run(token)`` ends it."""
    parent = _active_run.get()
    chain = (*parent.chain, robot) if parent is not None else (robot,)
    return _active_run.set(RunFrame(network, ledger, chain, events))


def exit_run(token: contextvars.Token) -> None:
    """End what :func:`enter_run` marked."""
    _active_run.reset(token)
