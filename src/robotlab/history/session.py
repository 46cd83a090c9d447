"""Resuming and persisting a robot's conversation by session id (``robot.run(msg, session_id=...)``).

Before the run, the robot's conversation becomes the one stored for the
session (empty for a new one); after a successful run, what the run added is
appended, or the whole conversation replaces the stored one when the run
rewrote it (compaction). A failed run stores nothing, and leaves the robot's
conversation as it was after resuming.

Example:
    >>> import os, tempfile, robotlab
    >>> from robotlab.llm import ScriptedModel
    >>> path = os.path.join(tempfile.mkdtemp(), "chat.db")
    >>> robot = robotlab.build(name="r", model=ScriptedModel(["Noted: Ada.", "Your name is Ada."]), history=path)
    >>> _ = robot.run("My name is Ada.", session_id="s-1")
    >>> robot.clear_messages()                       # or a new process: the session is in the file
    >>> robot.run("What is my name?", session_id="s-1").last_text_content
    'Your name is Ada.'
    >>> len(robot.messages)
    4
"""

from __future__ import annotations

from typing import Any

from robotlab.errors import ConfigurationError
from robotlab.history.store import HistoryStore, check_session_id
from robotlab.sync_bridge import in_thread

__all__ = ["SessionBinding", "resume_session"]


class SessionBinding:
    """One run's tie between a robot's conversation and a stored session."""

    def __init__(self, robot: Any, store: HistoryStore, session_id: str) -> None:
        self.robot, self.store, self.session_id = robot, store, session_id
        self.loaded: list[dict[str, Any]] = []

    async def resume(self) -> None:
        """Replace the robot's conversation by the stored one."""
        self.loaded = await in_thread(self.store.load, self.session_id)
        self.robot._messages = [dict(m) for m in self.loaded]

    async def persist(self) -> None:
        """Store what the run changed: append the new messages, or replace a rewritten conversation."""
        now = [dict(m) for m in self.robot._messages]
        if now[:len(self.loaded)] == self.loaded:
            await in_thread(self.store.append, self.session_id, now[len(self.loaded):])
        else:
            await in_thread(self.store.replace, self.session_id, now)
        self.loaded = now


async def resume_session(robot: Any, session_id: str | None) -> SessionBinding | None:
    """Resume *robot*'s conversation of *session_id* from its history store (``None`` without a session)."""
    if session_id is None:
        return None
    session_id = check_session_id(session_id)
    if robot.history is None:
        raise ConfigurationError(
            f"robot {robot.name!r} has no history store to resume session {session_id!r} from: "
            "pass history='chat.db' (a SQLite file), a redis:// URL or a HistoryStore to build()"
        )
    binding = SessionBinding(robot, robot.history, session_id)
    await binding.resume()
    return binding
