"""DelegationFuture: the pending result of ``robot.delegate(other, message, async_=True)``.

Example:
    >>> import robotlab
    >>> from robotlab.llm import ScriptedModel
    >>> boss = robotlab.build(name="boss", model=ScriptedModel(["ok"]))
    >>> helper = robotlab.build(name="helper", model=ScriptedModel(["42"]))
    >>> future = boss.delegate(helper, "What is six times seven?", async_=True)
    >>> future.result(timeout=10).last_text_content
    '42'

The delegate runs on its own thread, in a copy of the caller's context, so the
hook scope and the run in progress travel with it (robot_lab's thread-local
scope does not reach an ``async: true`` delegate; robotlab's does).
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from concurrent.futures import Future, wait
from typing import TYPE_CHECKING

from robotlab.errors import DelegationTimeout

if TYPE_CHECKING:
    from robotlab.result import RobotResult

__all__ = ["DelegationFuture"]


class DelegationFuture:
    """The delegate's run, in progress on another thread.

    ``result(timeout=)`` returns its ``RobotResult``, re-raises its exception,
    or raises ``DelegationTimeout`` when *timeout* seconds pass first (the
    delegate keeps running; ask again with a longer timeout).
    """

    def __init__(self, delegator: str, delegate: str, run: Callable[[], RobotResult]) -> None:
        self.delegator = delegator
        self.delegate = delegate
        self._future: Future[RobotResult] = Future()
        context = contextvars.copy_context()  # taken here, in the caller's thread: it holds the hook scope
        threading.Thread(
            target=context.run, args=(self._run, run), name=f"delegate-{delegator}-to-{delegate}", daemon=True
        ).start()

    def __repr__(self) -> str:
        state = "done" if self.done() else "running"
        return f"DelegationFuture({self.delegator!r} -> {self.delegate!r}, {state})"

    def _run(self, run: Callable[[], RobotResult]) -> None:
        self._future.set_running_or_notify_cancel()
        try:
            self._future.set_result(run())
        except BaseException as exc:  # handed to whoever calls result(), never lost
            self._future.set_exception(exc)

    def done(self) -> bool:
        """Whether the delegate finished (successfully or not)."""
        return self._future.done()

    def result(self, timeout: float | None = None) -> RobotResult:
        """The delegate's ``RobotResult``, waiting up to *timeout* seconds (``None``: forever)."""
        # wait() first: a TimeoutError raised by the delegate itself must not pass for ours.
        if not wait([self._future], timeout).done:
            raise DelegationTimeout(
                f"robot {self.delegate!r} did not finish the task delegated by robot {self.delegator!r} "
                f"within {timeout}s; it is still running: call result() again with a longer timeout"
            )
        return self._future.result()
