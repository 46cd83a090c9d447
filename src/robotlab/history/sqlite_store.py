"""SQLiteHistoryStore: conversations in one SQLite file (the standard library's ``sqlite3``).

One table, ``robotlab_history``: a row per message, keyed by session id and
position, the message as JSON text. Every call opens its own connection
(``sqlite3`` connections belong to one thread), writes are ``BEGIN IMMEDIATE``
transactions, and the file is in WAL mode, so readers never wait for a
writer and several processes can share one file. Commits are durable when the
process crashes; with ``synchronous=NORMAL`` a power cut may lose the last
ones (never corrupting the file). A file that is not a SQLite
database, or a row that is not a message, raises ``HistoryError`` naming it;
robotlab never rewrites what it cannot read.

Example:
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "chat.db")
    >>> store = SQLiteHistoryStore(path)
    >>> store.append("s-1", [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}])
    >>> [m["content"] for m in store.load("s-1")], store.sessions()
    (['hi', 'hello'], ['s-1'])
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from robotlab.errors import HistoryError
from robotlab.history.store import HistoryStore, check_session_id, decode_message, encode_messages

__all__ = ["SQLiteHistoryStore"]

# One lock per file for this process's writers: they queue here instead of in SQLite's busy handler,
# which sleeps in steps of up to 100 ms. Other processes are serialised by SQLite's own file lock.
_WRITERS: dict[str, threading.Lock] = {}
_WRITERS_LOCK = threading.Lock()


def _writer_lock(path: Path) -> threading.Lock:
    key = os.path.realpath(path)
    with _WRITERS_LOCK:
        return _WRITERS.setdefault(key, threading.Lock())


_SCHEMA = """
CREATE TABLE IF NOT EXISTS robotlab_history (
    session_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    message TEXT NOT NULL,
    stored_at REAL NOT NULL,
    PRIMARY KEY (session_id, position)
) WITHOUT ROWID
"""


class SQLiteHistoryStore(HistoryStore):
    """Conversations by session id in the SQLite file at *path* (created with its directory when missing).

    ``timeout`` is how long a writer waits for another process's write
    transaction before ``HistoryError``.
    """

    def __init__(self, path: str | os.PathLike[str], *, timeout: float = 30.0) -> None:
        self.path = Path(path)
        self.timeout = timeout
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._write_lock = _writer_lock(self.path)
        with self._connection() as db:
            self._run(db, "PRAGMA journal_mode=WAL")
            self._run(db, _SCHEMA)

    def __repr__(self) -> str:
        return f"SQLiteHistoryStore({str(self.path)!r})"

    @contextlib.contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        try:
            db = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None)
        except sqlite3.DatabaseError as exc:
            raise self._error(exc) from None
        try:
            self._run(db, "PRAGMA synchronous=NORMAL")  # in WAL mode: durable at checkpoints, never corrupt
            yield db
        finally:
            db.close()

    def _run(self, db: sqlite3.Connection, sql: str, args: Iterable[Any] = ()) -> sqlite3.Cursor:
        try:
            return db.execute(sql, tuple(args))
        except sqlite3.DatabaseError as exc:
            raise self._error(exc) from None

    def _error(self, exc: sqlite3.DatabaseError) -> HistoryError:
        if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
            return HistoryError(f"history file {str(self.path)!r} stayed locked by another writer for "
                                f"{self.timeout} s ({exc}); retry, or raise the store's timeout")
        return HistoryError(f"history file {str(self.path)!r} is not a usable SQLite history ({exc}); "
                            "move it aside or pass another path: robotlab did not change it")

    @contextlib.contextmanager
    def _writing(self) -> Iterator[sqlite3.Connection]:
        """A connection inside one ``BEGIN IMMEDIATE`` transaction: committed on success, else rolled back."""
        with self._write_lock, self._connection() as db:
            self._run(db, "BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.rollback()
                raise
            self._run(db, "COMMIT")

    def load(self, session_id: str) -> list[dict[str, Any]]:
        session_id = check_session_id(session_id)
        with self._connection() as db:
            rows = self._run(db, "SELECT position, message FROM robotlab_history WHERE session_id = ? "
                                 "ORDER BY position", (session_id,)).fetchall()
        return [decode_message(text, f"message {position} of session {session_id!r} in {str(self.path)!r}")
                for position, text in rows]

    def append(self, session_id: str, messages: Iterable[Mapping[str, Any]]) -> None:
        session_id = check_session_id(session_id)
        encoded = encode_messages(session_id, messages)
        if not encoded:
            return
        with self._writing() as db:
            (last,) = self._run(db, "SELECT COALESCE(MAX(position), -1) FROM robotlab_history "
                                    "WHERE session_id = ?", (session_id,)).fetchone()
            self._insert(db, session_id, encoded, last + 1)

    def replace(self, session_id: str, messages: Iterable[Mapping[str, Any]]) -> None:
        session_id = check_session_id(session_id)
        encoded = encode_messages(session_id, messages)
        with self._writing() as db:
            self._run(db, "DELETE FROM robotlab_history WHERE session_id = ?", (session_id,))
            self._insert(db, session_id, encoded, 0)

    def _insert(self, db: sqlite3.Connection, session_id: str, encoded: list[str], first: int) -> None:
        now = time.time()
        rows = [(session_id, first + n, text, now) for n, text in enumerate(encoded)]
        try:
            db.executemany("INSERT INTO robotlab_history (session_id, position, message, stored_at) "
                           "VALUES (?, ?, ?, ?)", rows)
        except sqlite3.DatabaseError as exc:
            raise self._error(exc) from None

    def delete(self, session_id: str) -> None:
        session_id = check_session_id(session_id)
        with self._writing() as db:
            self._run(db, "DELETE FROM robotlab_history WHERE session_id = ?", (session_id,))

    def sessions(self) -> list[str]:
        with self._connection() as db:
            rows = self._run(db, "SELECT DISTINCT session_id FROM robotlab_history ORDER BY session_id").fetchall()
        return [sid for (sid,) in rows]
