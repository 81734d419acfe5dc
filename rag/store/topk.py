"""The exact BM25 top k without scoring every row: MaxScore (Turtle & Flood 1995) over the live
segments, with a chunk's document part taken into the bounds.

Each query term has a bound: no live row scores above it for that term (``Scorer.bound``; with
documents weighing in, that term's document bound is added). A threshold comes first from scoring,
exactly, the rows of the rarest query terms: the k-th best of those is at most the k-th best of all
rows. Terms taken from the smallest bound up, while their bounds add up to less than the
threshold, are non-essential: a chunk holding none of the other (essential) terms, in a document
holding none of them either, scores below the threshold and can't be in the top k. The chunks
holding an essential term, and those of documents holding one, keep a bound of their exact
essential part plus the other terms' bounds; only those whose bound reaches the threshold are
scored, exactly, by ``Scorer.scores_at``: the same
values added in the same order as scoring every row, so the same scores to the bit and the same
ties (broken by chunk id). When the threshold leaves too many candidates, ``top_k`` answers None
and the caller scores every row (``BM25Index.search(prune=False)``, the reference).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from rag.store.postings import Scorer, _common

MARGIN = 1e-9  # a bound and a score add the same parts in another order: slack for rounding
POOL = 256  # rows of the rarest terms scored first, for the threshold
DENSE_SHARE = 1 / 32  # more candidate rows than this share of all rows: scoring every row is cheaper
MIN_ROWS = 0  # fewer rows than this: scoring every row is cheaper


@dataclass(frozen=True)
class Fields:
    """What a BM25 query reads: chunk and document postings, and how their rows map."""

    chunks: Scorer
    docs: Scorer
    chunk_doc: np.ndarray  # chunk row -> document row
    doc_chunks: Callable[[np.ndarray], np.ndarray]  # document rows -> their chunk rows (ascending)
    ids: Sequence[str]  # chunk row -> chunk id (ties are broken in id order)


class DocChunks:
    """Document rows -> their chunk rows, across segments (each segment's ``doc_chunk_rows``)."""

    def __init__(self, segments: Sequence, chunk_offsets: np.ndarray) -> None:
        self.segments, self.chunk_offsets = segments, chunk_offsets

    @cached_property
    def _rows(self) -> tuple[np.ndarray, np.ndarray]:
        indptrs, rows = [np.zeros(1, np.int64)], [np.zeros(0, np.int64)]
        for seg, chunk_off in zip(self.segments, self.chunk_offsets, strict=False):
            indptr, local = seg.doc_chunk_rows
            indptrs.append(indptr[1:] + chunk_off)
            rows.append(local + chunk_off)
        return np.concatenate(indptrs), np.concatenate(rows)

    def __call__(self, doc_rows: np.ndarray) -> np.ndarray:
        """The chunk rows of ``doc_rows``, ascending."""
        indptr, rows = self._rows
        starts = indptr[doc_rows]
        lengths = indptr[doc_rows + 1] - starts
        if not lengths.sum():
            return np.zeros(0, np.int64)
        at = np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(lengths.sum())
        return np.sort(rows[at])


Columns = dict[str, tuple[np.ndarray, np.ndarray]]


@dataclass
class Query:
    """One query's tokens against ``fields``; the live postings of the terms read whole (the
    rarest and the essential ones) kept for the query's later passes."""

    fields: Fields
    q: list[str]
    doc_weight: float
    chunk_cols: Columns = field(default_factory=dict)
    doc_cols: Columns = field(default_factory=dict)

    @property
    def terms(self) -> list[str]:
        """The distinct query terms some live chunk holds."""
        return [t for t in dict.fromkeys(self.q) if self.fields.chunks.knows(t)]

    @property
    def weight(self) -> float:
        """The document part's weight in effect (0 when documents don't weigh in)."""
        return self.doc_weight if self.doc_weight and self.fields.docs.n else 0.0

    def chunk_rows(self, term: str) -> np.ndarray:
        if term not in self.chunk_cols:
            self.chunk_cols[term] = self.fields.chunks.postings(term)
        return self.chunk_cols[term][0]

    def doc_rows(self, term: str) -> np.ndarray:
        if term not in self.doc_cols:
            self.doc_cols[term] = self.fields.docs.postings(term)
        return self.doc_cols[term][0]

    def totals(self, rows: np.ndarray) -> np.ndarray:
        """The score of each of ``rows`` (ascending, live): ``BM25Index._scores`` at those rows."""
        f = self.fields
        scores = f.chunks.scores_at(self.q, rows, self.chunk_cols)
        if self.weight:
            docs, back = distinct(f.chunk_doc[rows], inverse=True)
            doc_scores = f.docs.scores_at(self.q, docs, self.doc_cols)[back]
            scores = np.where(scores > 0, scores + self.doc_weight * doc_scores, 0.0)
        return scores


@dataclass(frozen=True)
class Ranked:
    rows: np.ndarray  # chunk rows, best first
    scores: np.ndarray


def best(fields: Fields, rows: np.ndarray, scores: np.ndarray, k: int) -> Ranked:
    """The ``k`` best of ``rows`` with a positive score, equal scores in chunk id order."""
    pos = np.flatnonzero(scores > 0)
    if len(pos) > k:
        cut = np.partition(scores[pos], len(pos) - k)[len(pos) - k]
        pos = pos[scores[pos] >= cut]
    ids = fields.ids
    top = sorted(pos.tolist(), key=lambda i: (-scores[i], ids[rows[i]]))[:k]
    return Ranked(rows[top], scores[top])


def top_k(fields: Fields, q: list[str], k: int, doc_weight: float, scope: np.ndarray | None) -> Ranked | None:
    """The ``k`` best chunks for the tokens ``q`` (only ``scope``'s rows, ascending, when given),
    as ``best`` over every row would find them; None when pruning can't beat scoring every row."""
    n_rows = fields.chunks.n_rows
    if n_rows < MIN_ROWS:
        return None
    limit = max(POOL, int(n_rows * DENSE_SHARE))
    query = Query(fields, q, doc_weight)
    if scope is not None and len(scope) <= limit:
        return best(fields, scope, query.totals(scope), k)
    in_scope = None
    if scope is not None:
        in_scope = np.zeros(n_rows, dtype=bool)
        in_scope[scope] = True
    pool = _pool(query, in_scope, limit)
    if pool is None:
        return None
    rows = _candidates(query, _kth(query.totals(pool), k), limit)
    if rows is None:
        return None
    if in_scope is not None:
        rows = rows[in_scope[rows]]
    return best(fields, rows, query.totals(rows), k)


def _pool(query: Query, in_scope: np.ndarray | None, limit: int) -> np.ndarray | None:
    """The live rows (in scope) of the rarest query terms, at least ``POOL`` of them when there are."""
    parts, size = [], 0
    for term in sorted(query.terms, key=query.fields.chunks.df):
        rows = query.chunk_rows(term)
        if in_scope is not None:
            rows = rows[in_scope[rows]]
        parts.append(rows)
        size += len(rows)
        if size >= POOL:
            break
    if size > limit:
        return None
    return _union(parts)


def _kth(scores: np.ndarray, k: int) -> float:
    """The ``k``-th best positive score; 0 when fewer are positive (nothing can be pruned then)."""
    positive = scores[scores > 0]
    return float(np.partition(positive, len(positive) - k)[len(positive) - k]) if len(positive) >= k else 0.0


def _candidates(query: Query, theta: float, limit: int) -> np.ndarray | None:
    """The live chunk rows that could score ``theta`` or more (ascending); None past ``limit``.

    A row's upper bound is its exact score for the essential terms (chunk and document part)
    plus the non-essential terms' bounds; rows whose bound is below ``theta`` are dropped."""
    f, weight = query.fields, query.weight
    counts = Counter(t for t in query.q if f.chunks.knows(t))
    chunk_bound = {t: f.chunks.bound(t, c) for t, c in counts.items()}
    doc_bound = {t: f.docs.bound(t, c) if weight else 0.0 for t, c in counts.items()}
    spent, essential = 0.0, {}
    for term in sorted(counts, key=lambda t: chunk_bound[t] + weight * doc_bound[t]):
        if not essential and (spent + chunk_bound[term] + weight * doc_bound[term]) * (1 + MARGIN) < theta:
            spent += chunk_bound[term] + weight * doc_bound[term]
        else:
            essential[term] = counts[term]
    if max(f.chunks.df(t) for t in essential) > limit:
        return None  # their union alone is past the limit
    held = _union([query.chunk_rows(t) for t in essential])
    if not spent:
        return held if len(held) <= limit else None
    upper = _partial(f.chunks, essential, held, query.chunk_cols) + spent
    lifted = np.zeros(0, np.int64)
    if weight:
        docs = _union([query.doc_rows(t) for t in essential])
        doc_part = weight * _partial(f.docs, essential, docs, query.doc_cols)
        upper += doc_part[np.searchsorted(docs, f.chunk_doc[held])]
        # chunks lacking every essential term, in documents holding one: their document part decides
        lifted = f.doc_chunks(docs[(doc_part + spent) * (1 + MARGIN) >= theta])
    rows = _union([held[upper * (1 + MARGIN) >= theta], lifted])
    return rows if len(rows) <= limit else None


def _partial(scorer: Scorer, counts: dict[str, int], rows: np.ndarray, cols: Columns) -> np.ndarray:
    """Each of ``rows``' score for the terms ``counts`` (read whole in ``cols``), in any order."""
    out = np.zeros(len(rows), dtype=np.float64)
    for term, count in counts.items():
        col, col_tf = cols[term]
        at, pos = _common(rows, col)
        tf = col_tf[pos].astype(np.float64)
        out[at] += count * scorer.idf(len(col)) * tf / (tf + scorer.norm[rows[at]])
    return out


def _union(parts: list[np.ndarray]) -> np.ndarray:
    parts = [p for p in parts if len(p)]
    if not parts:
        return np.zeros(0, np.int64)
    return parts[0] if len(parts) == 1 else distinct(np.concatenate(parts))


def distinct(values: np.ndarray, inverse: bool = False):
    """``np.unique`` by sorting (numpy 2's hashing ``unique`` is many times slower on row ids);
    with ``inverse``, also where each value went."""
    order = np.argsort(values, kind="stable") if inverse else None
    ordered = values[order] if inverse else np.sort(values)
    first = np.ones(len(ordered), dtype=bool)
    first[1:] = ordered[1:] != ordered[:-1]
    out = ordered[first]
    if not inverse:
        return out
    back = np.empty(len(values), dtype=np.int64)
    back[order] = np.cumsum(first) - 1
    return out, back
