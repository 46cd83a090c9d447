"""Tools and hooks that robots ship to worker pools (importable by workers) for tests/test_parallel_tools.py."""

from __future__ import annotations

import os
import signal
import threading

from robotlab.hooks import Hook
from robotlab.tools import Tool, tool


class WhereAmI(Tool):
    """Returns the pid it runs in."""

    parallel_safe = True

    def execute(self, tag: str) -> dict:
        return {"tag": tag, "pid": os.getpid()}


class Rendezvous(Tool):
    """Writes its arrival to the memory and waits for its partner's: both must run at the same time."""

    parallel_safe = True

    def execute(self, me: str, partner: str) -> int:
        self.memory.set(f"at.{me}", os.getpid())
        return self.memory.get(f"at.{partner}", wait=30)


class Explode(Tool):
    parallel_safe = True

    def execute(self, reason: str) -> str:
        raise ValueError(reason)


class ExplodeInProcess(Explode):
    parallel_safe = False


class DieHard(Tool):
    parallel_safe = True

    def execute(self, how: str) -> str:
        os.kill(os.getpid(), signal.SIGKILL)
        return how


class Unshippable(Tool):
    parallel_safe = True

    def execute(self, n: int) -> object:
        return threading.Lock()


class NeedsMsgspec(Tool):
    """msgspec refuses to load in isolated subinterpreters."""

    parallel_safe = True

    def execute(self, text: str) -> int:
        import msgspec

        return len(msgspec.json.encode(text))


@tool(parallel_safe=True)
def word_count(text: str) -> int:
    """Count the words of a text."""
    return len(text.split())


@tool
def word_count_in_process(text: str) -> int:
    """Not parallel_safe."""
    return len(text.split())


class PidStamp(Hook):
    """A tool_call hook that records where the call ran, and what it returned."""

    @classmethod
    def before_tool_call(cls, ctx):
        ctx.local.pid = os.getpid()

    @classmethod
    def after_tool_call(cls, ctx):
        ctx.local.result = ctx.tool_result


class Suffix(Hook):
    """An around hook that changes the tool's result: proves hooks wrap the call in the worker."""

    @classmethod
    def around_tool_call(cls, ctx, block):
        block()
        ctx.tool_result = f"{ctx.tool_result}{ctx.local.text or '!'}"  # text: from the registration's context


@tool(parallel_safe=True)
def nap(seconds: float) -> int:
    """Sleep on the pool, then say which process ran it."""
    import time

    time.sleep(seconds)
    return os.getpid()
