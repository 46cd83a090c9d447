"""Convergence: have two texts reached the same conclusion? (robot_lab ``Convergence``.)

Term-frequency cosine similarity (see :mod:`robotlab.history.term_vectors`):
two verifiers that agree, a debate that has settled, a reconciler call you
can skip.

Example:
    >>> a = "The invoice total is wrong: the discount was applied twice."
    >>> b = "The discount was applied twice, so the invoice total is wrong."
    >>> Convergence.detected(a, b)
    True
    >>> Convergence.similarity("too short", "too short")
    0.0
"""

from __future__ import annotations

from robotlab.errors import ConfigurationError
from robotlab.history.term_vectors import tf_cosine_similarity

__all__ = ["Convergence"]


class Convergence:
    """``similarity(a, b)`` in [0.0, 1.0] and ``detected(a, b, threshold=0.85)``, as robot_lab's module functions."""

    DEFAULT_THRESHOLD = 0.85
    # Texts shorter than this (after stripping) score 0.0: too little to compare.
    MIN_TEXT_LENGTH = 30

    @staticmethod
    def similarity(text_a: object, text_b: object) -> float:
        """Cosine similarity of the two texts' term-frequency vectors; 0.0 when either is under 30 characters."""
        a, b = str(text_a or "").strip(), str(text_b or "").strip()
        if len(a) < Convergence.MIN_TEXT_LENGTH or len(b) < Convergence.MIN_TEXT_LENGTH:
            return 0.0
        return tf_cosine_similarity(a, b)

    @staticmethod
    def detected(text_a: object, text_b: object, *, threshold: float = DEFAULT_THRESHOLD) -> bool:
        """Whether :meth:`similarity` reaches *threshold* (in [0.0, 1.0], else ``ConfigurationError``)."""
        if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not 0.0 <= threshold <= 1.0:
            raise ConfigurationError(f"threshold must be in [0.0, 1.0], got {threshold!r}")
        return Convergence.similarity(text_a, text_b) >= threshold
