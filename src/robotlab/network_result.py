"""NetworkResult: the value every ``network.run()`` returns.

Its own module so that the scheduler that builds it (:mod:`robotlab.network_run`)
need not import the network that returns it (:mod:`robotlab.network`, which
imports the scheduler). ``robotlab.network.NetworkResult`` is this class.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from robotlab.memory import Memory
from robotlab.result import RobotResult
from robotlab.task import TaskOutcome, UpstreamFailed

__all__ = ["NetworkResult"]


@dataclass
class NetworkResult:
    """The outcome of ``network.run()``: per-task outcomes, timing and the memory.

    ``value`` is the final answer: the text of the last-defined task that has
    no dependants and succeeded (``final`` is its RobotResult).
    """

    network_name: str
    tasks: dict[str, TaskOutcome]
    memory: Memory
    duration: float
    sinks: tuple[str, ...] = field(default=())

    @property
    def results(self) -> dict[str, RobotResult]:
        return {n: o.result for n, o in self.tasks.items() if o.status == "ok" and o.result is not None}

    @property
    def errors(self) -> dict[str, BaseException]:
        return {n: o.error for n, o in self.tasks.items() if o.error is not None}

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def final(self) -> RobotResult | None:
        for name in reversed(self.sinks):
            outcome = self.tasks[name]
            if outcome.status == "ok":
                return outcome.result
        return None

    @property
    def value(self) -> str | None:
        final = self.final
        return final.last_text_content if final is not None else None

    def __getitem__(self, name: str) -> TaskOutcome:
        return self.tasks[name]

    def raise_for_errors(self) -> NetworkResult:
        """Raise the first task error (in definition order), if any; else return self."""
        for outcome in self.tasks.values():
            if outcome.error is not None and not isinstance(outcome.error, UpstreamFailed):
                raise outcome.error
        return self

    def to_dict(self) -> dict[str, Any]:
        return {
            "network": self.network_name,
            "ok": self.ok,
            "value": self.value,
            "duration": self.duration,
            "tasks": {n: o.to_dict() for n, o in self.tasks.items()},
        }
