"""History search: the messages of a conversation most relevant to a query (robot_lab ``search_history``).

Each message with at least 20 characters of text is scored by the cosine
similarity of its term-frequency vector with the query's; messages scoring
0.0 are left out; the best *limit* come back, best first (ties in
conversation order).

Example:
    >>> messages = [
    ...     {"role": "user", "content": "What was our quarterly revenue in Europe?"},
    ...     {"role": "assistant", "content": "Quarterly revenue in Europe was 4.2 million."},
    ...     {"role": "user", "content": "And how many support tickets did we close?"},
    ... ]
    >>> [(r.index, r.role) for r in search_history(messages, "quarterly revenue", limit=2)]
    [(0, 'user'), (1, 'assistant')]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from robotlab.history.term_vectors import cosine_similarity, text_vector

__all__ = ["MIN_SCORE_LENGTH", "HistoryResult", "message_text", "search_history", "search_messages"]

MIN_SCORE_LENGTH = 20  # characters of text a message needs to be scored


@dataclass(frozen=True)
class HistoryResult:
    """One search hit: the message's text and role, its score in (0.0, 1.0], its index in the conversation.

    ``session_id`` is set by a history store's ``search`` across sessions.
    """

    text: str
    role: str
    score: float
    index: int
    session_id: str | None = None


def message_text(message: Mapping[str, Any]) -> str | None:
    """The plain text of a chat message: its string content, or its content parts' ``text`` joined by spaces."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list | tuple):
        return " ".join(str(p["text"]) for p in content if isinstance(p, Mapping) and p.get("text"))
    return None


def search_messages(messages: Iterable[Mapping[str, Any]], query: str, *, limit: int = 5,
                    session_id: str | None = None) -> list[HistoryResult]:
    """The *limit* messages most similar to *query*, best first (see the module docstring)."""
    query_vector = text_vector(str(query))
    if not query_vector or limit <= 0:
        return []
    results = []
    for index, message in enumerate(messages):
        text = message_text(message)
        if text is None or len(text.strip()) < MIN_SCORE_LENGTH:
            continue
        score = cosine_similarity(query_vector, text_vector(text))
        if score > 0.0:
            results.append(HistoryResult(text, str(message.get("role", "")), score, index, session_id))
    results.sort(key=lambda r: -r.score)
    return results[:limit]


def search_history(conversation: Any, query: str, *, limit: int = 5) -> list[HistoryResult]:
    """Search a robot's conversation (a ``Robot``, or a list of chat messages) for *query*."""
    messages = getattr(conversation, "messages", conversation)
    return search_messages(messages, query, limit=limit)
