"""HistoryStore: where robots' conversations are kept by session id.

A store keeps one conversation (a list of OpenAI-format chat messages) per
session id. Two stores ship: :class:`~robotlab.history.SQLiteHistoryStore`
(a file, the standard library's ``sqlite3``: the embedded default) and
:class:`~robotlab.history.RedisHistoryStore` (a Redis server, the
``robotlab[redis]`` extra). Messages are stored as JSON: each must be a dict
with a string ``role`` and JSON-ready values.

Example:
    >>> encode_messages("s-1", [{"role": "user", "content": "hi"}])
    ['{"role": "user", "content": "hi"}']
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from robotlab.errors import ConfigurationError, HistoryError
from robotlab.history.search import HistoryResult, search_messages

__all__ = ["HistoryStore", "check_session_id", "decode_message", "encode_messages"]


def check_session_id(session_id: object) -> str:
    """*session_id* if it is a non-empty string, else ``ConfigurationError``."""
    if not isinstance(session_id, str) or not session_id.strip():
        raise ConfigurationError(f"session_id must be a non-empty string, got {session_id!r}")
    return session_id


def encode_messages(session_id: str, messages: Iterable[Mapping[str, Any]]) -> list[str]:
    """Each message as JSON text; ``HistoryError`` naming the first that cannot be stored (nothing is written)."""
    out = []
    for n, message in enumerate(messages):
        if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
            raise HistoryError(f"cannot store message {n} of session {session_id!r}: a message is a dict "
                               f"with a string 'role', got {message!r}")
        try:
            out.append(json.dumps(dict(message), ensure_ascii=False, allow_nan=False))
        except (TypeError, ValueError) as exc:
            raise HistoryError(f"cannot store message {n} of session {session_id!r} as JSON: {exc}; "
                               "store plain data (str, numbers, lists, dicts)") from None
    return out


def decode_message(text: str | bytes, where: str) -> dict[str, Any]:
    """A stored message back as a dict; ``HistoryError`` saying *where* it is when it is not one."""
    try:
        message = json.loads(text)
    except (TypeError, ValueError) as exc:
        raise HistoryError(f"{where} is not valid JSON ({exc}); delete that session "
                           "(store.delete(session_id)) or repair the entry") from None
    if not isinstance(message, dict) or not isinstance(message.get("role"), str):
        raise HistoryError(f"{where} is not a chat message (a dict with a string 'role'); delete that session "
                           "(store.delete(session_id)) or repair the entry")
    return message


class HistoryStore:
    """Conversations by session id. Subclasses implement the five storage methods; ``search`` is shared.

    Every method is safe from several threads and processes at once; ``append``
    and ``replace`` are atomic (readers see all of the new messages or none).
    """

    def load(self, session_id: str) -> list[dict[str, Any]]:
        """The conversation of *session_id* (``[]`` for a new session)."""
        raise NotImplementedError

    def append(self, session_id: str, messages: Iterable[Mapping[str, Any]]) -> None:
        """Add *messages* at the end of the conversation."""
        raise NotImplementedError

    def replace(self, session_id: str, messages: Iterable[Mapping[str, Any]]) -> None:
        """Make *messages* the whole conversation (after compaction, for instance)."""
        raise NotImplementedError

    def delete(self, session_id: str) -> None:
        """Forget the session (no error when there is none)."""
        raise NotImplementedError

    def sessions(self) -> list[str]:
        """Every stored session id, sorted."""
        raise NotImplementedError

    def close(self) -> None:
        """Release connections (the stored history stays)."""

    def __enter__(self) -> HistoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def search(self, query: str, *, session_id: str | None = None, limit: int = 5) -> list[HistoryResult]:
        """The stored messages most relevant to *query* (one session, or all), best first.

        Scored as :func:`robotlab.history.search_history` scores a conversation;
        each result carries its ``session_id`` and its ``index`` in that session.
        """
        ids = [check_session_id(session_id)] if session_id is not None else self.sessions()
        results = [r for sid in ids for r in search_messages(self.load(sid), query, limit=limit, session_id=sid)]
        results.sort(key=lambda r: -r.score)
        return results[:limit]
