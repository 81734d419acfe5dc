"""Raw BM25 postings (term -> rows and term frequencies), and Lucene BM25 scored from them.

bm25s bakes each posting's score into its index with that index's own N, document frequencies
and average length, so two bm25s indexes can't be searched as one. These postings keep raw term
frequencies instead; ``Scorer`` takes N, df and avgdl across the live rows of every segment at
query time, so a segmented index scores exactly as one index over the same rows. The formulas are
bm25s's Lucene variant with its defaults (``bm25s.scoring``; Kamphuis et al. 2020), and the tests
hold the two equal.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

K1, B = 1.5, 0.75  # bm25s defaults (BM25(k1=1.5, b=0.75)), Lucene variant


@dataclass(frozen=True, eq=False)
class Postings:
    """One field's postings in compressed-column form: term ``t``'s rows are
    ``rows[indptr[t]:indptr[t+1]]`` (ascending), with how often it occurs there in ``tf``."""

    terms: list[str]  # term id -> term
    indptr: np.ndarray  # int64, len(terms) + 1
    rows: np.ndarray  # int32
    tf: np.ndarray  # float32
    lengths: np.ndarray  # int32, tokens per row

    @cached_property
    def vocab(self) -> dict[str, int]:
        return {t: i for i, t in enumerate(self.terms)}

    @property
    def n_rows(self) -> int:
        return len(self.lengths)

    def column(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        """(rows, term frequencies) of ``term``; empty when absent."""
        tid = self.vocab.get(term)
        if tid is None:
            return _EMPTY_ROWS, _EMPTY_TF
        lo, hi = self.indptr[tid], self.indptr[tid + 1]
        return self.rows[lo:hi], self.tf[lo:hi]

    @cached_property
    def term_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Per term, the largest tf and the shortest row among its postings: BM25's term score
        grows with tf and falls with the row's length, so no row scores above these two taken
        together, whatever N, df and the average length (``Scorer.bound``)."""
        n = len(self.terms)
        max_tf, min_len = np.zeros(n, np.float32), np.zeros(n, np.int64)
        held = np.diff(self.indptr) > 0
        starts = self.indptr[:-1][held]
        if len(starts):
            max_tf[held] = np.maximum.reduceat(self.tf, starts)
            min_len[held] = np.minimum.reduceat(self.lengths[self.rows], starts)
        return max_tf, min_len

    def term_of_posting(self) -> np.ndarray:
        return np.repeat(np.arange(len(self.terms), dtype=np.int64), np.diff(self.indptr))

    def live_terms(self, live: np.ndarray | None) -> list[str]:
        """Terms with a posting in a live row (all of them when ``live`` is None)."""
        if live is None:
            return self.terms
        counts = np.bincount(self.term_of_posting()[live[self.rows]], minlength=len(self.terms))
        return [t for t, n in zip(self.terms, counts, strict=True) if n]

    @classmethod
    def from_tokens(cls, token_lists: Iterable[list[str]]) -> Postings:
        vocab: dict[str, int] = {}
        cols: list[int] = []
        rows: list[int] = []
        tfs: list[int] = []
        lengths: list[int] = []
        for row, tokens in enumerate(token_lists):
            lengths.append(len(tokens))
            for term, count in Counter(tokens).items():
                cols.append(vocab.setdefault(term, len(vocab)))
                rows.append(row)
                tfs.append(count)
        return cls.from_triples(list(vocab), np.array(cols), np.array(rows), np.array(tfs), np.array(lengths))

    @classmethod
    def from_triples(
        cls, terms: list[str], cols: np.ndarray, rows: np.ndarray, tf: np.ndarray, lengths: np.ndarray
    ) -> Postings:
        """From (term id, row, tf) triples, any order; repeated (term, row) pairs add up."""
        cols, rows = cols.astype(np.int64), rows.astype(np.int64)
        order = np.lexsort((rows, cols))
        cols, rows, tf = cols[order], rows[order], tf[order].astype(np.float32)
        if len(cols):
            first = np.flatnonzero(np.r_[True, (cols[1:] != cols[:-1]) | (rows[1:] != rows[:-1])])
            tf = np.add.reduceat(tf, first)
            cols, rows = cols[first], rows[first]
        indptr = np.zeros(len(terms) + 1, dtype=np.int64)
        np.cumsum(np.bincount(cols, minlength=len(terms)), out=indptr[1:])
        return cls(terms, indptr, rows.astype(np.int32), tf, lengths.astype(np.int32))

    def grouped(self, group_of_row: np.ndarray, n_groups: int) -> Postings:
        """Postings of groups of rows (a document's chunks together): tfs and lengths add up."""
        lengths = np.bincount(group_of_row, weights=self.lengths, minlength=n_groups)
        return Postings.from_triples(
            self.terms, self.term_of_posting(), group_of_row[self.rows], self.tf, lengths.astype(np.int64)
        )

    @staticmethod
    def merged(parts: Sequence[tuple[Postings, np.ndarray]]) -> Postings:
        """The kept rows (boolean masks) of several postings, one after the other, in one vocabulary."""
        vocab: dict[str, int] = {}
        cols, rows, tfs, lengths = [], [], [], []
        offset = 0
        for postings, keep in parts:
            row_map = np.cumsum(keep) - 1 + offset
            sel = keep[postings.rows]
            local = postings.term_of_posting()[sel]
            used = np.unique(local)
            term_map = np.full(len(postings.terms), -1, dtype=np.int64)
            term_map[used] = [vocab.setdefault(postings.terms[t], len(vocab)) for t in used]
            cols.append(term_map[local])
            rows.append(row_map[postings.rows[sel]])
            tfs.append(postings.tf[sel])
            lengths.append(postings.lengths[keep])
            offset += int(keep.sum())
        cat = np.concatenate
        return Postings.from_triples(list(vocab), cat(cols), cat(rows), cat(tfs), cat(lengths))

    def arrays(self, prefix: str) -> dict[str, np.ndarray]:
        return {f"{prefix}_{k}": getattr(self, k) for k in ("indptr", "rows", "tf", "lengths")}

    @classmethod
    def from_arrays(cls, terms: list[str], arrays, prefix: str) -> Postings:
        got = {k: arrays[f"{prefix}_{k}"] for k in ("indptr", "rows", "tf", "lengths")}
        if len(got["indptr"]) != len(terms) + 1:
            raise ValueError(f"{prefix} postings hold {len(got['indptr']) - 1} terms, the vocabulary {len(terms)}")
        return cls(terms, **got)


_EMPTY_ROWS = np.zeros(0, dtype=np.int32)
_EMPTY_TF = np.zeros(0, dtype=np.float32)


class Scorer:
    """Lucene BM25 over one field of several segments' postings, taken together: rows are numbered
    segment after segment, and N, df and the average length count only the live rows."""

    def __init__(self, parts: Sequence[Postings], live: Sequence[np.ndarray | None]) -> None:
        self.parts = list(parts)
        self.live_parts = list(live)  # None: every row of that part is live
        sizes = [p.n_rows for p in parts]
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        masks = [np.ones(n, bool) if m is None else m for n, m in zip(sizes, live, strict=True)]
        self.live = np.concatenate(masks) if masks else np.zeros(0, bool)
        lengths = np.concatenate([p.lengths for p in parts]).astype(np.int64) if parts else np.zeros(0, np.int64)
        self.n = int(self.live.sum())
        # an exact integer sum: the same average (to the bit) whatever the segments' order
        self.avgdl = int(lengths[self.live].sum()) / self.n if self.n else 1.0
        self.norm = K1 * (1 - B + B * lengths / (self.avgdl or 1.0))
        self._dead = [None if m is None else np.flatnonzero(~m).astype(np.int32) for m in self.live_parts]
        self._df: dict[str, int] = {}  # immutable once built: a term's live df is counted once

    @property
    def n_rows(self) -> int:
        return len(self.live)

    def postings(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        """(global rows, tf) of ``term`` in live rows."""
        rows, tfs = [], []
        for part, live, offset in zip(self.parts, self.live_parts, self.offsets, strict=False):
            r, tf = part.column(term)
            if len(r) and live is not None:
                keep = live[r]
                r, tf = r[keep], tf[keep]
            if len(r):
                rows.append(r.astype(np.int64) + offset)
                tfs.append(tf)
        if not rows:
            return _EMPTY_ROWS.astype(np.int64), _EMPTY_TF
        return (rows[0], tfs[0]) if len(rows) == 1 else (np.concatenate(rows), np.concatenate(tfs))

    def df(self, term: str) -> int:
        """Live rows holding ``term``: a part's postings less its masked rows among them."""
        got = self._df.get(term)
        if got is None:
            got = 0
            for part, live, dead in zip(self.parts, self.live_parts, self._dead, strict=True):
                rows, _ = part.column(term)
                if dead is None or not len(rows):
                    got += len(rows)
                elif len(dead) < len(rows):
                    got += len(rows) - len(_common(rows, dead)[0])
                else:
                    got += int(live[rows].sum())
            self._df[term] = got
        return got

    def knows(self, term: str) -> bool:
        """Whether ``term`` occurs in a live row."""
        return self.df(term) > 0

    def idf(self, df: int) -> float:
        return math.log(1 + (self.n - df + 0.5) / (df + 0.5))

    def scores(self, terms: Iterable[str]) -> np.ndarray:
        """Every row's BM25 score for the query tokens ``terms`` (a repeated token counts again)."""
        # one bincount over every term's postings, in term order: each row's parts are added in
        # the same order as term after term (0 + a + b ...), so the sums are the same to the bit
        rows_of, parts = [], []
        for term, count in Counter(terms).items():
            rows, tf = self.postings(term)
            if len(rows):
                tf = tf.astype(np.float64)
                rows_of.append(rows)
                parts.append(count * self.idf(len(rows)) * tf / (tf + self.norm[rows]))
        if not rows_of:
            return np.zeros(self.n_rows, dtype=np.float64)
        return np.bincount(np.concatenate(rows_of), weights=np.concatenate(parts), minlength=self.n_rows)

    def scores_at(
        self, terms: Iterable[str], rows: np.ndarray, columns: dict[str, tuple[np.ndarray, np.ndarray]] | None = None
    ) -> np.ndarray:
        """``scores(terms)[rows]`` for live ``rows`` (ascending, distinct), without touching the
        other rows: each term's postings are looked up at ``rows`` only (in ``columns``, a term's
        ``postings`` already read, or else in each part). The same terms in the same order add
        the same values, so each score equals ``scores``' to the bit."""
        rows = np.asarray(rows, dtype=np.int64)
        out = np.zeros(len(rows), dtype=np.float64)
        if not len(rows):
            return out
        cuts = np.searchsorted(rows, self.offsets)
        local = [
            (rows[lo:hi] - off).astype(np.int32) for lo, hi, off in zip(cuts, cuts[1:], self.offsets, strict=False)
        ]
        for term, count in Counter(terms).items():
            df = self.df(term)
            if not df:
                continue
            weight = count * self.idf(df)
            if columns is not None and term in columns:
                found = [(0, *_common(rows, columns[term][0]), columns[term][1])]
            else:
                found = []
                for p, part in enumerate(self.parts):
                    if len(local[p]) and (tid := part.vocab.get(term)) is not None:
                        lo, hi = part.indptr[tid], part.indptr[tid + 1]
                        at, pos = _common(local[p], part.rows[lo:hi])
                        found.append((cuts[p], at, pos + lo, part.tf))
            for start, at, pos, tfs in found:
                if len(at):
                    at = at + start
                    tf = tfs[pos].astype(np.float64)
                    out[at] += weight * tf / (tf + self.norm[rows[at]])
        return out

    def bound(self, term: str, count: int = 1) -> float:
        """No live row's score for ``term`` (``count`` times in the query) is above this: the
        largest tf over the shortest row, of each part (``Postings.term_bounds``), in ``scores``'
        own operations, so that rounding can't put a row above it."""
        df = self.df(term)
        if not df:
            return 0.0
        weight, best = count * self.idf(df), 0.0
        for part in self.parts:
            tid = part.vocab.get(term)
            if tid is not None:
                max_tf, min_len = part.term_bounds
                tf, norm = float(max_tf[tid]), K1 * (1 - B + B * int(min_len[tid]) / (self.avgdl or 1.0))
                best = max(best, weight * tf / (tf + norm))
        return best


def _common(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions in ``a`` and in ``b`` (both ascending, distinct) of the values they share; the
    shorter is looked up in the longer."""
    if len(a) > len(b):
        in_b, in_a = _common(b, a)
        return in_a, in_b
    pos = np.searchsorted(b, a)
    np.minimum(pos, len(b) - 1, out=pos)
    hit = b[pos] == a
    return np.flatnonzero(hit), pos[hit]
