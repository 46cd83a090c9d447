"""The Porter stemmer: ``stem("relational") == "relat"``.

Martin Porter's 1980 suffix-stripping algorithm as his own ANSI C version
implements it (the one the Ruby ``fast-stemmer`` gem wraps, which robot_lab's
text analysis uses through the ``classifier`` gem): steps 1ab, 1c, 2, 3, 4
and 5, with that version's two departures from the paper (``-bli`` becomes
``-ble`` and ``-logi`` becomes ``-log`` in step 2) and words of one or two
letters left alone. Pure Python, standard library only.

Example:
    >>> [stem(w) for w in ("caresses", "ponies", "hopping", "happiness", "generalization")]
    ['caress', 'poni', 'hop', 'happi', 'gener']
"""

from __future__ import annotations

import functools

__all__ = ["stem"]

_STEP2 = {
    "a": (("ational", "ate"), ("tional", "tion")),
    "c": (("enci", "ence"), ("anci", "ance")),
    "e": (("izer", "ize"),),
    "l": (("bli", "ble"), ("alli", "al"), ("entli", "ent"), ("eli", "e"), ("ousli", "ous")),
    "o": (("ization", "ize"), ("ation", "ate"), ("ator", "ate")),
    "s": (("alism", "al"), ("iveness", "ive"), ("fulness", "ful"), ("ousness", "ous")),
    "t": (("aliti", "al"), ("iviti", "ive"), ("biliti", "ble")),
    "g": (("logi", "log"),),
}
_STEP3 = {
    "e": (("icate", "ic"), ("ative", ""), ("alize", "al")),
    "i": (("iciti", "ic"),),
    "l": (("ical", "ic"), ("ful", "")),
    "s": (("ness", ""),),
}
_STEP4 = {
    "a": ("al",), "c": ("ance", "ence"), "e": ("er",), "i": ("ic",), "l": ("able", "ible"),
    "n": ("ant", "ement", "ment", "ent"), "o": ("ion", "ou"), "s": ("ism",), "t": ("ate", "iti"),
    "u": ("ous",), "v": ("ive",), "z": ("ize",),
}


class _Word:
    """The word being stemmed: ``b[0..k]`` is its current form, ``j`` the end of the stem before a suffix."""

    def __init__(self, word: str) -> None:
        self.b = list(word)
        self.k = len(word) - 1
        self.j = 0

    def cons(self, i: int) -> bool:
        ch = self.b[i]
        if ch in "aeiou":
            return False
        if ch == "y":
            return i == 0 or not self.cons(i - 1)
        return True

    def m(self) -> int:
        """The number of vowel-consonant sequences in ``b[0..j]``."""
        n, i, j = 0, 0, self.j
        while i <= j and self.cons(i):
            i += 1
        while True:
            while i <= j and not self.cons(i):
                i += 1
            if i > j:
                return n
            while i <= j and self.cons(i):
                i += 1
            n += 1
            if i > j:
                return n

    def vowel_in_stem(self) -> bool:
        return any(not self.cons(i) for i in range(self.j + 1))

    def double_consonant(self, i: int) -> bool:
        return i >= 1 and self.b[i] == self.b[i - 1] and self.cons(i)

    def cvc(self, i: int) -> bool:
        """Consonant-vowel-consonant ending at *i*, the last not w, x or y (``hop``, not ``bow``)."""
        if i < 2 or not self.cons(i) or self.cons(i - 1) or not self.cons(i - 2):
            return False
        return self.b[i] not in "wxy"

    def ends(self, suffix: str) -> bool:
        n = len(suffix)
        if n > self.k + 1 or "".join(self.b[self.k - n + 1:self.k + 1]) != suffix:
            return False
        self.j = self.k - n
        return True

    def set_to(self, text: str) -> None:
        self.b[self.j + 1:self.k + 1] = list(text)
        self.k = self.j + len(text)

    def replace_if_measured(self, text: str) -> None:
        if self.m() > 0:
            self.set_to(text)

    def text(self) -> str:
        return "".join(self.b[:self.k + 1])


def _step1ab(w: _Word) -> None:
    """Plurals and -ed / -ing: ``caresses`` → ``caress``, ``ponies`` → ``poni``, ``hopping`` → ``hop``."""
    if w.b[w.k] == "s":
        if w.ends("sses"):
            w.k -= 2
        elif w.ends("ies"):
            w.set_to("i")
        elif w.b[w.k - 1] != "s":
            w.k -= 1
    if w.ends("eed"):
        if w.m() > 0:
            w.k -= 1
    elif (w.ends("ed") or w.ends("ing")) and w.vowel_in_stem():
        w.k = w.j
        if w.ends("at"):
            w.set_to("ate")
        elif w.ends("bl"):
            w.set_to("ble")
        elif w.ends("iz"):
            w.set_to("ize")
        elif w.double_consonant(w.k):
            w.k -= 1
            if w.b[w.k] in "lsz":
                w.k += 1
        elif w.m() == 1 and w.cvc(w.k):
            w.set_to("e")


def _step1c(w: _Word) -> None:
    if w.ends("y") and w.vowel_in_stem():
        w.b[w.k] = "i"


def _replace_suffix(w: _Word, table: dict[str, tuple[tuple[str, str], ...]], key: str) -> None:
    for suffix, replacement in table.get(key, ()):
        if w.ends(suffix):
            w.replace_if_measured(replacement)
            return


def _step4(w: _Word) -> None:
    """Drop -ant, -ence, -ment, ... when the stem has more than one vowel-consonant sequence."""
    for suffix in _STEP4.get(w.b[w.k - 1], ()):
        if w.ends(suffix):
            if suffix == "ion" and (w.j < 0 or w.b[w.j] not in "st"):
                continue
            break
    else:
        return
    if w.m() > 1:
        w.k = w.j


def _step5(w: _Word) -> None:
    w.j = w.k
    if w.b[w.k] == "e":
        a = w.m()
        if a > 1 or (a == 1 and not w.cvc(w.k - 1)):
            w.k -= 1
    if w.b[w.k] == "l" and w.double_consonant(w.k) and w.m() > 1:
        w.k -= 1


@functools.lru_cache(maxsize=8192)
def stem(word: str) -> str:
    """The Porter stem of a lower-case *word* (words of one or two characters are returned as they are)."""
    if len(word) <= 2:
        return word
    w = _Word(word)
    _step1ab(w)
    if w.k > 0:
        _step1c(w)
        _replace_suffix(w, _STEP2, w.b[w.k - 1])
        _replace_suffix(w, _STEP3, w.b[w.k])
        _step4(w)
        _step5(w)
    return w.text()
