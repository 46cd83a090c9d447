"""Tools and hooks of the network tests, importable by workers (robots run in them in the parallel modes)."""

from __future__ import annotations

import os
import signal
import time

from robotlab.hooks import Hook
from robotlab.tools import Tool, tool


@tool
def wait_io(seconds: float) -> str:
    """Sleep, standing in for an I/O-bound call."""
    time.sleep(seconds)
    return f"slept {seconds}"


@tool
def where() -> int:
    """The pid the tool runs in."""
    return os.getpid()


class Rendezvous(Tool):
    """Writes its arrival to the network memory and waits for its partner's: both tasks must run at once."""

    def execute(self, me: str, partner: str) -> str:
        self.memory.set(f"arrived.{me}", os.getpid())
        return f"{me} met {partner} from pid {self.memory.get(f'arrived.{partner}', wait=30)}"


class Publish(Tool):
    """Write a value to the network memory, a little later."""

    def execute(self, key: str, value: str) -> str:
        time.sleep(0.1)
        self.memory.set(key, value)
        return "published"


class CrashOnce(Tool):
    """Kills its own worker the first time it runs in a network (the memory remembers), then succeeds."""

    def execute(self) -> str:
        if self.memory.get("crashed") is None:
            self.memory.set("crashed", os.getpid())
            os.kill(os.getpid(), signal.SIGKILL)
        return "survived"


class Watch(Hook):
    """Records every on_error it sees in the memory of the run (robot-level errors fire where the robot runs)."""

    seen: list = []

    @classmethod
    def on_error(cls, ctx):
        cls.seen.append((ctx.event, getattr(ctx, "task_name", None), type(ctx.error).__name__))


class Escalate(Hook):
    """After the triage robot's run, activate the optional billing task (works from a worker too)."""

    @classmethod
    def after_run(cls, ctx):
        if ctx.robot.name == "triage":
            ctx.network.activate("billing")


class RunStamp(Hook):
    """Records where each run and tool call happened, in ctx.metadata (which comes back from workers)."""

    @classmethod
    def before_run(cls, ctx):
        ctx.local.run_pid = os.getpid()

    @classmethod
    def before_tool_call(cls, ctx):
        ctx.local.tool_pid = os.getpid()


@tool
def litellm_loaded() -> bool:
    """Whether litellm has been imported where this tool runs."""
    import sys

    return "litellm" in sys.modules
