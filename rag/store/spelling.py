"""Close spellings of a word among an index's words: ``difflib.get_close_matches``, with the
candidates narrowed first by the bound difflib itself applies, computed for all words at once.

difflib compares a word with every candidate in Python; over the 240,000 English words of a
million-chunk index that is 15-220 ms a word. Its ``quick_ratio`` (twice the characters the two
words share, counted with repeats, over their summed length) bounds the ratio from above, and
``get_close_matches`` drops every candidate whose ``quick_ratio`` is under the cutoff before it
computes a ratio. Here that count is summed for every word of a possible length at once, from
each character's list of the words that hold it. Only the words that pass go to
``get_close_matches``, so its answer is the same as over all of them.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Iterable

import numpy as np


class Spellings:
    """Words, with their lengths and, per character, the words holding it and how often (sorted
    by length, so the words of a length range are a slice), for ``close`` lookups."""

    def __init__(self, words: Iterable[str]) -> None:
        self.words = sorted(set(words), key=lambda w: (len(w), w))
        self.lengths = np.array([len(w) for w in self.words], dtype=np.int64)
        self.columns: dict[str, int] = {}
        cols, holders, times = [], [], []
        for i, w in enumerate(self.words):
            for c, k in Counter(w).items():
                cols.append(self.columns.setdefault(c, len(self.columns)))
                holders.append(i)
                times.append(k)
        col = np.array(cols, dtype=np.int64)
        order = np.argsort(col, kind="stable")  # by character; each one's words stay ascending
        self.indptr = np.zeros(len(self.columns) + 1, dtype=np.int64)
        np.cumsum(np.bincount(col, minlength=len(self.columns)), out=self.indptr[1:])
        self.holders = np.array(holders, dtype=np.int32)[order]
        self.times = np.array(times, dtype=np.int64)[order]

    def __len__(self) -> int:
        return len(self.words)

    def close(self, word: str, n: int, cutoff: float) -> list[str]:
        """``difflib.get_close_matches(word, <all the words>, n, cutoff)``."""
        size = len(word)
        # a ratio >= cutoff needs 2 * min(len) / (len + len) >= cutoff: the lengths that can reach it
        lo, hi = (int(x) for x in np.searchsorted(self.lengths, [_shortest(size, cutoff), _longest(size, cutoff) + 1]))
        if lo >= hi:
            return []
        shared = np.zeros(hi - lo, dtype=np.int64)
        for char, times in Counter(word).items():
            col = self.columns.get(char)
            if col is None:
                continue
            holders = self.holders[self.indptr[col] : self.indptr[col + 1]]
            a, b = np.searchsorted(holders, [lo, hi])
            shared[holders[a:b] - lo] += np.minimum(self.times[self.indptr[col] + a : self.indptr[col] + b], times)
        # difflib's own arithmetic (_calculate_ratio), so a candidate on the cutoff falls as it does there
        quick = 2.0 * shared / (size + self.lengths[lo:hi])
        pool = [self.words[lo + i] for i in np.flatnonzero(quick >= cutoff)]
        return difflib.get_close_matches(word, pool, n=n, cutoff=cutoff)


def _shortest(size: int, cutoff: float) -> int:
    """The shortest length whose ratio with a ``size``-long word can reach ``cutoff``."""
    k = 0
    while k + size and 2.0 * k / (k + size) < cutoff:
        k += 1
    return k


def _longest(size: int, cutoff: float) -> int:
    """The longest such length (``size`` shared characters at most)."""
    if not size or cutoff <= 0:
        return 1 << 30
    k = size
    while 2.0 * size / (k + 1 + size) >= cutoff:
        k += 1
    return k
