"""Conversation compaction: keeping a robot's transcript inside its model's context window.

``auto_compact="context_window"`` drops the oldest turns once the transcript
passes 80% of the window (keeping system messages and a note of what was
dropped); a callable ``auto_compact(messages) -> messages`` replaces the
strategy. Both run inside the ``compaction`` hook family.

Example:
    >>> estimate_tokens([{"role": "user", "content": "x" * 40}])
    10
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from robotlab.configuration import RunConfig
from robotlab.hooks import CompactionHookContext, Hooks
from robotlab.llm import Model

__all__ = ["compact", "context_window_of", "estimate_tokens"]

logger = logging.getLogger("robotlab.robot")


def estimate_tokens(messages: Iterable[dict[str, Any]]) -> int:
    """A cheap, deterministic token estimate (about 4 characters per token)."""
    chars = 0
    for m in messages:
        chars += len(str(m.get("content") or ""))
        for tc in m.get("tool_calls") or ():
            chars += len(str(tc.get("function", {}).get("arguments", "")))
    return max(1, chars // 4)


def context_window_of(model: Model) -> int | None:
    """The model's context window in tokens, when it says (``context_window`` attribute or method)."""
    window = getattr(model, "context_window", None)
    return window() if callable(window) else window


def compact(robot: Any, cfg: RunConfig, model: Model, registries: list, per_run: Any) -> None:
    """Compact *robot*'s conversation in place when its ``auto_compact`` strategy says so."""
    if robot.auto_compact is None:
        return
    if callable(robot.auto_compact):
        strategy = "custom"
    else:
        strategy = "context_window"
        window = cfg.context_window or context_window_of(model)
        if window is None:
            logger.warning(
                "auto_compact='context_window' skipped for robot %r: the model's context window is unknown; "
                "set context_window in its RunConfig",
                robot.name,
            )
            return
        if estimate_tokens(robot._messages) <= int(window * 0.8):
            return
    ctx = CompactionHookContext(
        robot=robot, messages_before=tuple(dict(m) for m in robot._messages), config=cfg, strategy=strategy
    )

    def body() -> list[dict[str, Any]]:
        Hooks.call("on_compaction", ctx, registries, per_run)
        if not ctx.handled:
            if callable(robot.auto_compact):
                ctx.compacted_messages = list(robot.auto_compact(robot.messages))
            else:
                ctx.compacted_messages = _compact_to_window(robot._messages, window)
        return ctx.compacted_messages

    robot._messages = [dict(m) for m in Hooks.run("compaction", ctx, registries, per_run, body)]


def _compact_to_window(messages: list[dict[str, Any]], window: int) -> list[dict[str, Any]]:
    """Keep system messages and the newest turns that fit half the window; note what was dropped.

    Cuts only at a user message, so an assistant tool call is never split from its results.
    """
    system = [m for m in messages if m["role"] == "system"]
    rest = [m for m in messages if m["role"] != "system"]
    keep_from = len(rest)
    for i in range(len(rest) - 1, -1, -1):
        if rest[i]["role"] == "user":
            if estimate_tokens(rest[i:]) > window // 2 and keep_from < len(rest):
                break
            keep_from = i
    dropped = rest[:keep_from]
    if not dropped:
        return list(messages)
    summary = " | ".join(str(m.get("content") or "")[:80] for m in dropped if m.get("content"))
    note = {"role": "system", "content": f"[{len(dropped)} earlier messages compacted] {summary}"[:2000]}
    return [*system, note, *rest[keep_from:]]
