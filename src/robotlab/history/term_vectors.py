"""Term-frequency vectors and their cosine similarity, as robot_lab's ``TextAnalysis`` computes them.

robot_lab scores text with the ``classifier`` gem's ``String#word_hash``: the
text without punctuation is split on whitespace, each word lower-cased, words
of two letters or fewer and the gem's stop words dropped, the rest
Porter-stemmed and counted; each run of punctuation (what is left when the
word characters are blanked out) counts as a term too. Vectors are
L2-normalised, and the cosine of two is their dot product, capped at 1.0.
No IDF: on a two-document corpus it would zero out exactly the shared terms
that show agreement. Pure Python (robot_lab needs the optional ``classifier``
gem; robotlab needs nothing).

One difference: word characters are Unicode letters, digits and ``_`` here,
where Ruby's ``\\w`` is ASCII only (so ``café`` stays one word).

Example:
    >>> word_hash("The cats are running, the cat ran!")
    Counter({'cat': 2, 'run': 1, 'ran': 1, ',': 1, '!': 1})
    >>> round(tf_cosine_similarity("refund the order", "the order needs a refund"), 3)
    0.816
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping

from robotlab.history.porter import stem

__all__ = ["SKIP_WORDS", "cosine_similarity", "l2_normalize", "text_vector", "tf_cosine_similarity", "word_hash"]

# The classifier gem's CORPUS_SKIP_WORDS, as it spells them ("sinc" and "th" included).
SKIP_WORDS = frozenset((
    "a", "again", "all", "along", "are", "also", "an", "and", "as", "at", "but", "by", "came", "can", "cant",
    "couldnt", "did", "didn", "didnt", "do", "doesnt", "dont", "ever", "first", "from", "have", "her", "here",
    "him", "how", "i", "if", "in", "into", "is", "isnt", "it", "itll", "just", "last", "least", "like", "most",
    "my", "new", "no", "not", "now", "of", "on", "or", "should", "sinc", "so", "some", "th", "than", "this",
    "that", "the", "their", "then", "those", "to", "told", "too", "true", "try", "until", "url", "us", "were",
    "when", "whether", "while", "with", "within", "yes", "you", "youll",
))

_PUNCTUATION = re.compile(r"[^\w\s]")
_WORD_CHARACTER = re.compile(r"\w")


def word_hash(text: str) -> Counter[str]:
    """Stemmed word counts plus punctuation-run counts of *text* (the gem's ``String#word_hash``)."""
    counts: Counter[str] = Counter()
    for word in _PUNCTUATION.sub("", text).lower().split():
        if len(word) > 2 and word not in SKIP_WORDS:
            counts[stem(word)] += 1
    for symbol in _WORD_CHARACTER.sub(" ", text).split():
        counts[symbol] += 1
    return counts


def l2_normalize(vector: Mapping[str, float]) -> dict[str, float]:
    """*vector* scaled to length 1 (``{}`` for a zero vector)."""
    magnitude = math.sqrt(sum(v * v for v in vector.values()))
    if magnitude == 0:
        return {}
    return {term: v / magnitude for term, v in vector.items()}


def text_vector(text: str) -> dict[str, float]:
    """The L2-normalised term-frequency vector of *text*."""
    return l2_normalize(word_hash(text))


def cosine_similarity(a: Mapping[str, float], b: Mapping[str, float]) -> float:
    """The dot product of two normalised vectors, in [0.0, 1.0] (0.0 when either is empty)."""
    if not a or not b:
        return 0.0
    if len(b) < len(a):
        a, b = b, a
    dot = sum(v * b[term] for term, v in a.items() if term in b)
    return min(max(dot, 0.0), 1.0)


def tf_cosine_similarity(text_a: str, text_b: str) -> float:
    """The cosine similarity of two texts' term-frequency vectors, in [0.0, 1.0]."""
    return cosine_similarity(text_vector(text_a), text_vector(text_b))
