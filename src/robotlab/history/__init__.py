"""Conversation history: persistence by session id, search, compression and convergence.

- **Persistence**: ``build(history=...)`` gives a robot a :class:`HistoryStore`
  (a SQLite file path: :class:`SQLiteHistoryStore`, the embedded default; a
  ``redis://`` URL: :class:`RedisHistoryStore`), and
  ``robot.run(message, session_id="...")`` resumes that session's
  conversation before the run and saves the run's turns after it.
- **Search**: :func:`search_history` ranks a conversation's messages against a
  query (robot_lab ``search_history``); ``store.search(query)`` does it over
  stored sessions.
- **Compression**: :class:`HistoryCompressor` keeps recent turns and drops or
  summarises older ones that no longer relate to them (robot_lab's; also an
  ``auto_compact`` strategy); :func:`compress_history` applies it to a robot.
- **Convergence**: :class:`Convergence` ``similarity`` / ``detected`` of two texts.

All scoring is term-frequency cosine similarity in pure Python
(:mod:`robotlab.history.term_vectors`). See ``docs/history.md``.

Example:
    >>> round(Convergence.similarity("The refund was approved for order 42 today.",
    ...                              "Order 42: the refund was approved today."), 2)
    0.86
"""

from __future__ import annotations

from robotlab.history.compressor import HistoryCompressor, compress_history
from robotlab.history.convergence import Convergence
from robotlab.history.open_store import open_history_store
from robotlab.history.redis_store import RedisHistoryStore
from robotlab.history.search import HistoryResult, search_history
from robotlab.history.sqlite_store import SQLiteHistoryStore
from robotlab.history.store import HistoryStore
from robotlab.history.term_vectors import tf_cosine_similarity

__all__ = [
    "Convergence",
    "HistoryCompressor",
    "HistoryResult",
    "HistoryStore",
    "RedisHistoryStore",
    "SQLiteHistoryStore",
    "compress_history",
    "open_history_store",
    "search_history",
    "tf_cosine_similarity",
]
