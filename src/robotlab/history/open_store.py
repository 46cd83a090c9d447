"""open_history_store: the history store ``build(history=...)`` names.

Example:
    >>> open_history_store(42)
    Traceback (most recent call last):
    ...
    robotlab.errors.ConfigurationError: history must be a HistoryStore, a SQLite file path or a redis:// URL, got 42
"""

from __future__ import annotations

import os

from robotlab.errors import ConfigurationError
from robotlab.history.store import HistoryStore

__all__ = ["open_history_store"]

_REDIS_SCHEMES = ("redis://", "rediss://", "unix://")


def open_history_store(history: HistoryStore | str | os.PathLike[str]) -> HistoryStore:
    """A store from what ``build(history=...)`` takes: a store, a ``redis://`` URL or a SQLite file path."""
    if isinstance(history, HistoryStore):
        return history
    if isinstance(history, str) and history.startswith(_REDIS_SCHEMES):
        from robotlab.history.redis_store import RedisHistoryStore

        return RedisHistoryStore(history)
    if isinstance(history, str | os.PathLike):
        from robotlab.history.sqlite_store import SQLiteHistoryStore

        return SQLiteHistoryStore(history)
    raise ConfigurationError(
        f"history must be a HistoryStore, a SQLite file path or a redis:// URL, got {history!r}"
    )
