"""Narrator: the one Hook shipped in core, a readable trace of every family."""

from __future__ import annotations

import logging
import time
from typing import Any, TextIO

from robotlab import worker_channel
from robotlab.hooks.hook import Hook
from robotlab.hooks.registry import HookRegistry, Registration, global_hooks

__all__ = ["Narrator"]


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _name(obj: Any) -> str:
    return getattr(obj, "name", None) or type(obj).__name__


class Narrator(Hook):
    """Logs one line per hook event to ``logging.getLogger("robotlab.narrator")`` or a stream.

    Events in worker processes, subinterpreters and Ray workers (a network's
    tasks in a parallel mode, ``parallel_safe`` tools on a pool) are written
    here too, each job's lines in the order they happened.

    >>> import io
    >>> stream = io.StringIO()
    >>> _ = Narrator.enable(stream=stream, registry=HookRegistry())
    """

    namespace = "narrator"
    stream: TextIO | None = None
    logger = logging.getLogger("robotlab.narrator")

    @classmethod
    def enable(
        cls, stream: TextIO | None = None, logger: logging.Logger | None = None, registry: HookRegistry | None = None
    ) -> Registration:
        """Register the narrator (globally unless *registry* is given); returns the Registration."""
        cls.stream = stream
        if logger is not None:
            cls.logger = logger
        return (registry or global_hooks()).on(cls)

    @classmethod
    def parent_endpoint(cls) -> _Narration:
        """Where the lines of a worker job's narrator go: to this process's stream or logger, in order."""
        return _Narration(cls)

    @classmethod
    def _say(cls, text: str) -> None:
        parent = worker_channel.parent_half(str(cls.namespace))
        if parent is not None:  # in a worker job: the parent writes the line, where it writes its own
            parent.call("say", text)
        else:
            cls._write(text)

    @classmethod
    def _write(cls, text: str) -> None:
        if cls.stream is not None:
            cls.stream.write(text + "\n")
        else:
            cls.logger.info(text)

    @classmethod
    def _start(cls, ctx: Any) -> None:
        ctx.local.started = time.perf_counter()

    @classmethod
    def _elapsed(cls, ctx: Any) -> str:
        started = ctx.local.started
        return f" ({(time.perf_counter() - started) * 1000:.1f} ms)" if started else ""

    @classmethod
    def before_run(cls, ctx):
        cls._start(ctx)
        cls._say(f"[run] robot={_name(ctx.robot)} request={_short(ctx.request)}")

    @classmethod
    def after_run(cls, ctx):
        text = getattr(ctx.response, "last_text_content", ctx.response)
        cls._say(f"[run] robot={_name(ctx.robot)} -> {_short(text)}{cls._elapsed(ctx)}")

    @classmethod
    def before_llm_generation(cls, ctx):
        cls._say(f"[llm_generation] robot={_name(ctx.robot)} iteration={ctx.iteration}")

    @classmethod
    def after_llm_generation(cls, ctx):
        reply = ctx.generation_response
        calls = [c.name for c in getattr(reply, "tool_calls", None) or ()]
        what = f"tool calls {calls}" if calls else _short(getattr(reply, "text", reply))
        cls._say(f"[llm_generation] robot={_name(ctx.robot)} -> {what}")

    @classmethod
    def before_tool_call(cls, ctx):
        cls._start(ctx)

    @classmethod
    def after_tool_call(cls, ctx):
        cls._say(f"[tool_call] {ctx.tool_name} args={_short(ctx.tool_args)} -> {_short(ctx.tool_result)}"
                 f"{cls._elapsed(ctx)}")

    @classmethod
    def before_network_run(cls, ctx):
        cls._start(ctx)
        cls._say(f"[network_run] network={_name(ctx.network)} starting")

    @classmethod
    def after_network_run(cls, ctx):
        cls._say(f"[network_run] network={_name(ctx.network)} done{cls._elapsed(ctx)}")

    @classmethod
    def before_task(cls, ctx):
        cls._start(ctx)
        cls._say(f"[task] {ctx.task_name} starting (robot={_name(ctx.robot)})")

    @classmethod
    def after_task(cls, ctx):
        cls._say(f"[task] {ctx.task_name} done{cls._elapsed(ctx)}")

    @classmethod
    def after_compaction(cls, ctx):
        after = len(ctx.compacted_messages or ())
        cls._say(f"[compaction] robot={_name(ctx.robot)} {len(ctx.messages_before)} -> {after} messages "
                 f"({ctx.strategy})")

    @classmethod
    def after_learn(cls, ctx):
        cls._say(f"[learn] robot={_name(ctx.robot)} {_short(ctx.text)} stored={ctx.stored}")

    @classmethod
    def on_error(cls, ctx):
        cls._say(f"[{ctx.event}] error: {type(ctx.error).__name__}: {ctx.error}")


class _Narration:
    """The parent's end of a worker job's narrator (a job endpoint): each ``say`` is written here."""

    def __init__(self, narrator: type[Narrator]) -> None:
        self._narrator = narrator

    def blocks(self, op: str, args: tuple) -> bool:
        return False

    def handle(self, op: str, args: tuple, still_waiting: Any) -> None:
        if op != "say":
            raise ValueError(f"unknown operation {op!r}")
        self._narrator._write(str(args[0]))

    def close(self) -> None:
        pass
