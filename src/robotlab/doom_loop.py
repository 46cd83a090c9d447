"""Doom-loop detection, as robot_lab's ``DoomLoopDetector``: a robot calling the same tools round and round.

A run tracks the name of every tool it calls, in order. When the last
``threshold`` calls are one tool (A, A, A), or the last ``threshold``
repetitions of a pattern of 2 to 10 calls are identical (A, B, A, B, A, B),
robot_lab's warning is appended to the tool result that completed the
pattern, so the model sees it and can change course. ``doom_loop_threshold``
in ``RunConfig`` sets the threshold (default 3; 0 turns detection off); the
``doom_loop`` hook family and the ``doom_loop.detected`` event report it.

Example:
    >>> detector = DoomLoopDetector(threshold=3)
    >>> for name in ["search", "search", "search"]:
    ...     detector.track(name)
    >>> detector.doom_loop()
    True
    >>> detector.warning_message()[:57]
    "Tool 'search' has been called 3+ times consecutively with"
"""

from __future__ import annotations

__all__ = ["DEFAULT_THRESHOLD", "MAX_PERIOD", "DoomLoopDetector"]

DEFAULT_THRESHOLD = 3
MAX_PERIOD = 10
_ADVICE = "You appear to be stuck in a loop. Try a fundamentally different approach, use a different tool, " \
          "or ask for clarification."


class DoomLoopDetector:
    """The tool names one run called, and whether their tail repeats ``threshold`` times."""

    def __init__(self, threshold: int = DEFAULT_THRESHOLD) -> None:
        self.threshold = threshold
        self.sequence: list[str] = []

    def track(self, tool_name: str) -> None:
        self.sequence.append(str(tool_name))

    def period(self) -> int | None:
        """The length of the repeating tail pattern (1 for A, A, A), or None when there is none."""
        seq, n = self.sequence, self.threshold
        if n < 1 or len(seq) < n:
            return None
        if len(set(seq[-n:])) == 1:
            return 1
        for period in range(2, min(MAX_PERIOD, len(seq) // n) + 1):
            chunk = seq[-n * period:]
            if chunk == chunk[:period] * n:
                return period
        return None

    def doom_loop(self) -> bool:
        return self.period() is not None

    def pattern(self) -> list[str]:
        """The repeating tool names (empty when there is no loop)."""
        period = self.period()
        return [] if period is None else self.sequence[-period:]

    def warning_message(self) -> str:
        """robot_lab's warning text for the current loop ("" when there is none)."""
        pattern = self.pattern()
        if not pattern:
            return ""
        if len(pattern) == 1:
            return f"Tool '{pattern[0]}' has been called {self.threshold}+ times consecutively with no progress. " \
                   + _ADVICE
        return f"Tool call pattern [{' → '.join(pattern)}] has repeated {self.threshold}+ times. " + _ADVICE
