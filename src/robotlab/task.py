"""Task: one robot's step in a Network, and what became of it in a run."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from robotlab.errors import ConfigurationError, Error

if TYPE_CHECKING:
    from robotlab.result import RobotResult
    from robotlab.robot import Robot

__all__ = ["Task", "TaskOutcome", "UpstreamFailed"]

TaskStatus = Literal["ok", "failed", "skipped"]


class UpstreamFailed(Error):
    """A task did not run because a task it depends on failed."""


@dataclass
class Task:
    """A named step: run ``robot`` once its dependencies are done.

    Attributes:
        depends_on: ``"none"`` (a root: starts at once), ``"optional"`` (runs only
            when activated during the run with ``network.activate(name)``), or the
            names of the tasks it waits for.
        tools: what the robot may use in this task (``"none"``, ``"inherit"``, or names).
        retries: extra attempts after an error that :func:`robotlab.retryable` accepts.
        message: ``callable(run_message, dependency_results) -> str`` to build the
            robot's prompt; by default the network message, followed by the
            dependencies' answers.
    """

    name: str
    robot: Robot
    depends_on: Literal["none", "optional"] | tuple[str, ...] = "none"
    tools: str | Sequence[str] = "none"
    retries: int = 0
    message: Callable[[str, dict[str, RobotResult]], str] | None = None
    options: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ConfigurationError(f"task name must be a non-empty string, got {self.name!r}")
        if isinstance(self.depends_on, str):
            if self.depends_on not in ("none", "optional"):
                raise ConfigurationError(
                    f"task {self.name!r}: depends_on must be 'none', 'optional' or a list of task names, "
                    f"got {self.depends_on!r}"
                )
        else:
            self.depends_on = tuple(self.depends_on)
            if self.name in self.depends_on:
                raise ConfigurationError(f"task {self.name!r} depends on itself")
        if not isinstance(self.retries, int) or isinstance(self.retries, bool) or self.retries < 0:
            raise ConfigurationError(f"task {self.name!r}: retries must be an integer >= 0, got {self.retries!r}")

    @property
    def dependencies(self) -> tuple[str, ...]:
        return self.depends_on if isinstance(self.depends_on, tuple) else ()

    @property
    def optional(self) -> bool:
        return self.depends_on == "optional"

    def prompt(self, message: str, results: dict[str, RobotResult]) -> str:
        if self.message is not None:
            return self.message(message, results)
        if not results:
            return message
        earlier = "\n".join(f"[{name}] {r.last_text_content or ''}" for name, r in results.items())
        return f"{message}\n\nResults from earlier tasks:\n{earlier}"


@dataclass
class TaskOutcome:
    """What happened to one task in one network run.

    ``result`` is the robot's result when the task succeeded. When its robot
    run failed, ``error`` is the error and ``partial_result`` what the last
    attempt did before failing (its conversation, tool calls, tokens and cost;
    also ``error.partial_result``); None for a task that never ran.
    """

    name: str
    status: TaskStatus
    result: RobotResult | None = None
    error: BaseException | None = None
    started: float | None = None  # seconds since the run started
    finished: float | None = None
    attempts: int = 0
    worker: str = "thread"  # where it ran: "thread", "process", ...
    partial_result: RobotResult | None = None

    @property
    def duration(self) -> float | None:
        if self.started is None or self.finished is None:
            return None
        return self.finished - self.started

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "status": self.status,
            "result": self.result.to_dict() if self.result is not None else None,
            "error": f"{type(self.error).__name__}: {self.error}" if self.error is not None else None,
            "started": self.started,
            "finished": self.finished,
            "duration": self.duration,
            "attempts": self.attempts,
            "worker": self.worker,
            "partial_result": self.partial_result.to_dict() if self.partial_result is not None else None,
        }
