"""HistoryCompressor: drop or summarise the old turns of a conversation that no longer matter (robot_lab's).

The last ``recent_turns`` user/assistant pairs are kept verbatim and form the
reference: the mean of their normalised term-frequency vectors. Every older
message with at least 20 characters of text is scored against it by cosine
similarity:

- score ``>= keep_threshold``: kept verbatim;
- ``drop_threshold <= score < keep_threshold``: replaced by ``summarizer(text)``
  (same role), or dropped without a summarizer (or when the summary is blank);
- score ``< drop_threshold``: dropped.

System messages, tool results and assistant messages that call tools (or have
no text) are never scored nor removed, so a tool call is never parted from its
result; shorter messages are kept too. When there is no recent text to score
against, the conversation comes back unchanged.

A compressor is a callable ``messages -> messages``, so it plugs into a
robot's compaction: ``build(..., auto_compact=HistoryCompressor())``.

Example:
    >>> old = [{"role": "user", "content": "Tell me about the weather in Lisbon this week."},
    ...        {"role": "assistant", "content": "Sunny all week in Lisbon, around 24 degrees."}]
    >>> recent = [{"role": "user", "content": "Which invoice is overdue for the refund?"},
    ...           {"role": "assistant", "content": "Invoice 42 is overdue; the refund waits on it."}]
    >>> kept = HistoryCompressor(recent_turns=1)([{"role": "system", "content": "Be brief."}, *old, *recent])
    >>> [m["content"][:12] for m in kept]
    ['Be brief.', 'Which invoic', 'Invoice 42 i']
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from robotlab.errors import ConfigurationError
from robotlab.history.search import MIN_SCORE_LENGTH, message_text
from robotlab.history.term_vectors import cosine_similarity, text_vector

__all__ = ["HistoryCompressor", "compress_history", "is_pinned"]

_KEEP, _DROP = object(), object()  # actions besides a summary text


def is_pinned(message: Mapping[str, Any]) -> bool:
    """Whether a compressor must keep *message*: system, tool results, tool-calling or text-less assistant turns."""
    role = message.get("role")
    if role in ("system", "tool", "tool_result", "function", "developer"):
        return True
    if role == "assistant":
        text = message_text(message)
        return bool(message.get("tool_calls")) or text is None or not text.strip()
    return False


class HistoryCompressor:
    """Keep recent turns, score older ones against them, keep / summarise / drop by thresholds.

    Args:
        recent_turns: user/assistant pairs at the end kept verbatim (>= 1; default 3).
        keep_threshold: score at or above which an older message is kept (default 0.6).
        drop_threshold: score below which it is dropped (default 0.2); must be below *keep_threshold*.
        summarizer: ``summarizer(text) -> str`` for the middle tier; ``None`` drops it instead.
    """

    def __init__(self, *, recent_turns: int = 3, keep_threshold: float = 0.6, drop_threshold: float = 0.2,
                 summarizer: Callable[[str], Any] | None = None) -> None:
        if isinstance(recent_turns, bool) or not isinstance(recent_turns, int) or recent_turns < 1:
            raise ConfigurationError(f"recent_turns must be an integer >= 1, got {recent_turns!r}")
        for name, value in (("keep_threshold", keep_threshold), ("drop_threshold", drop_threshold)):
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ConfigurationError(f"{name} must be a number, got {value!r}")
        if keep_threshold <= drop_threshold:
            raise ConfigurationError(
                f"keep_threshold ({keep_threshold}) must be greater than drop_threshold ({drop_threshold})"
            )
        if summarizer is not None and not callable(summarizer):
            raise ConfigurationError(f"summarizer must be a callable text -> str or None, got {summarizer!r}")
        self.recent_turns = recent_turns
        self.keep_threshold = float(keep_threshold)
        self.drop_threshold = float(drop_threshold)
        self.summarizer = summarizer

    def __repr__(self) -> str:
        return (f"HistoryCompressor(recent_turns={self.recent_turns}, keep_threshold={self.keep_threshold}, "
                f"drop_threshold={self.drop_threshold})")

    def __call__(self, messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        return self.compress(messages)

    def compress(self, messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """The compressed conversation, in the original order (a new list; *messages* is not changed)."""
        messages = [dict(m) for m in messages]
        scorable = [i for i, m in enumerate(messages) if not is_pinned(m)]
        recent_count = self.recent_turns * 2
        if len(scorable) <= recent_count:
            return messages
        compressible, recent = scorable[:-recent_count], scorable[-recent_count:]
        vectors = [text_vector(t) for t in (message_text(messages[i]) for i in recent)
                   if t is not None and len(t.strip()) >= MIN_SCORE_LENGTH]
        vectors = [v for v in vectors if v]
        if not vectors:
            return messages
        reference = _mean(vectors)
        actions = {i: self._action(reference, messages[i]) for i in compressible}
        out = []
        for i, message in enumerate(messages):
            action = actions.get(i, _KEEP)
            if action is _KEEP:
                out.append(message)
            elif action is not _DROP:
                out.append({"role": message["role"], "content": action})
        return out

    def _action(self, reference: dict[str, float], message: Mapping[str, Any]) -> object:
        """``_KEEP``, ``_DROP`` or the summary text that replaces the message."""
        text = message_text(message)
        if text is None or len(text.strip()) < MIN_SCORE_LENGTH:
            return _KEEP
        score = cosine_similarity(text_vector(text), reference)
        if score >= self.keep_threshold:
            return _KEEP
        if score < self.drop_threshold or self.summarizer is None:
            return _DROP
        summary = str(self.summarizer(text) or "").strip()
        return summary or _DROP


def _mean(vectors: list[dict[str, float]]) -> dict[str, float]:
    total: dict[str, float] = {}
    for vector in vectors:
        for term, value in vector.items():
            total[term] = total.get(term, 0.0) + value
    return {term: value / len(vectors) for term, value in total.items()}


def compress_history(robot: Any, *, recent_turns: int = 3, keep_threshold: float = 0.6,
                     drop_threshold: float = 0.2, summarizer: Callable[[str], Any] | None = None) -> Any:
    """Compress *robot*'s conversation in place, between runs (robot_lab's ``robot.compress_history``); returns it."""
    compressor = HistoryCompressor(recent_turns=recent_turns, keep_threshold=keep_threshold,
                                   drop_threshold=drop_threshold, summarizer=summarizer)
    robot._messages = compressor.compress(robot._messages)
    return robot
