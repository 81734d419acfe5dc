"""A BM25 index over one knowledge base's active chunks, in segments (see rag.store.segments).

The index is stamped with the catalog's ``index_version`` it stands for; ``rag.store.bm25_sync``
brings a stale one up to date by adding a segment for the revisions published since and masking
the ones replaced or deleted, so an upload costs what it adds, not what the index holds. Scores
are computed across all live segments together (``rag.store.postings.Scorer``): the same as one
index over the same chunks.

Beside the chunk rows it keeps one row per document (each document's chunk tokens together). A
chunk that matches the query scores ``chunk BM25 + doc_weight x document BM25``: passage evidence
plus document evidence (Callan 1994), so that a chunk of a document that is about the query as a
whole outranks an equally matching chunk of one that only mentions it. ``doc_weight``
(``RAG_BM25_DOC_WEIGHT``) was chosen on SciFact train; the figures are in docs/BENCHMARKS.md.
"""

from __future__ import annotations

import dataclasses
import fcntl
import logging
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from rag.records import TermStats
from rag.store.numerals import canonical, figure_spellings, is_figure, number_pattern, spelled_number
from rag.store.postings import Scorer
from rag.store.segments import Manifest, Segment, SegmentStore
from rag.store.spelling import Spellings
from rag.store.tokenize import tokenize
from rag.store.topk import DocChunks, Fields, Ranked, best, distinct, top_k
from rag.text.script import HAN_RE

log = logging.getLogger(__name__)


# rag.store.topk's pruned top k: exact, but on bench scale's corpora no faster than scoring
# every row up to 1M chunks (docs/BENCHMARKS.md, "Scale"), so not the default
PRUNE = False
NEAR_CUTOFF = 0.8  # difflib ratio above which an absent word is read as a misspelling of an indexed one
_CJK_TERM = HAN_RE


@dataclass(frozen=True)
class SparseHit:
    chunk_id: str
    score: float


@dataclass(frozen=True)
class SparseProbe:
    """One chunk's place in the full BM25 order of a query (not only the top k), with what each
    query term added to its score, so the Inspector can say why it ranked where it did."""

    chunk_id: str
    rank: int | None  # 1 + chunks in scope scoring higher; None when it matches no query term
    score: float
    scored: int  # chunks in scope with a positive score: the length of the full BM25 list
    terms: dict[str, float]  # query term -> its share of ``score`` (chunk + document part), when > 0
    missing: tuple[str, ...]  # query terms (BM25 tokens) the chunk's own text lacks


class BM25Index:
    """Immutable once built; ``search`` is thread-safe. Rows are numbered segment after segment,
    masked ones included (they score 0 and are never returned); ``ids`` lists the live ones."""

    def __init__(self, segments: Sequence[Segment], version: int, dead: frozenset[str] = frozenset()) -> None:
        self.segments = tuple(segments)
        self.version = version
        self.dead = frozenset(dead)
        lives = [s.live(self.dead) for s in self.segments]
        self._chunks = Scorer([s.chunks for s in self.segments], [chunks for chunks, _ in lives])
        self._docs = Scorer([s.docs for s in self.segments], [docs for _, docs in lives])
        shifted = [s.chunk_rev + off for s, off in zip(self.segments, self._docs.offsets, strict=False)]
        self._chunk_doc = np.concatenate(shifted) if shifted else np.zeros(0, np.int64)
        self._latin_vocab: Spellings | None = None  # live English words (``_near``), read on first use

    @classmethod
    def build(cls, items: Iterable[tuple[str, str]], version: int) -> BM25Index:
        """One segment over ``items`` (chunk id, indexed text)."""
        return cls([Segment.build("seg-000001", items)], version)

    @cached_property
    def _all_ids(self) -> list[str]:
        return [c for s in self.segments for c in s.ids]

    @cached_property
    def _fields(self) -> Fields:
        doc_chunks = DocChunks(self.segments, self._chunks.offsets)
        return Fields(self._chunks, self._docs, self._chunk_doc, doc_chunks, self._all_ids)

    @cached_property
    def _all_texts(self) -> list[str]:
        return [t for s in self.segments for t in s.texts]

    @cached_property
    def _order(self) -> list[int]:
        """Live rows in chunk id order."""
        ids = self._all_ids
        return sorted(np.flatnonzero(self._chunks.live).tolist(), key=ids.__getitem__)

    @property
    def ids(self) -> list[str]:
        """The live chunk ids, sorted."""
        return [self._all_ids[i] for i in self._order]

    @property
    def texts(self) -> list[str]:
        """The indexed text of each of ``ids``."""
        return [self._all_texts[i] for i in self._order]

    def __len__(self) -> int:
        return self._chunks.n

    def _row(self, chunk_id: str) -> int | None:
        for seg, offset in zip(self.segments, self._chunks.offsets, strict=False):
            row = seg.row_of.get(chunk_id)
            if row is not None and self._chunks.live[offset + row]:
                return int(offset + row)
        return None

    def _rows_of(self, doc_ids: set[str]) -> np.ndarray:
        """The live rows of ``doc_ids``' chunks."""
        parts = [
            rows + offset
            for seg, offset in zip(self.segments, self._chunks.offsets, strict=False)
            for d in doc_ids
            if (rows := seg.rows_by_doc.get(d)) is not None
        ]
        rows = np.concatenate(parts) if parts else np.zeros(0, np.int64)
        return rows[self._chunks.live[rows]]

    def search(
        self, query: str, k: int, doc_ids: set[str] | None = None, doc_weight: float = 0.0, prune: bool = PRUNE
    ) -> list[SparseHit]:
        """The ``k`` best chunks with a positive score, only from ``doc_ids`` when given; with
        ``doc_weight`` a matching chunk's score adds that share of its document's score. With
        ``prune``, found without scoring every row where the query allows (``rag.store.topk``):
        the same hits and scores either way."""
        q = self._query(query, k)
        if not q:
            return []
        found = None
        if prune:
            scope = None if doc_ids is None else distinct(self._rows_of(doc_ids))
            found = top_k(self._fields, q, k, doc_weight, scope)
        return self._hits(found if found is not None else self._exhaustive(q, k, doc_ids, doc_weight))

    def _query(self, query: str, k: int) -> list[str]:
        """``query``'s tokens; [] when nothing can match (an empty index, k <= 0, no known term)."""
        if not self._chunks.n or k <= 0:
            return []
        q = tokenize(query)
        return q if any(self._chunks.knows(t) for t in q) else []

    def _exhaustive(self, q: list[str], k: int, doc_ids: set[str] | None, doc_weight: float) -> Ranked:
        """``best`` of ``_scores``, read only at the rows some query term reaches (the others score 0)."""
        scores = self._chunks.scores(q)
        rows = np.flatnonzero(scores)
        if doc_ids is not None:
            in_scope = np.zeros(len(scores), dtype=bool)
            in_scope[self._rows_of(doc_ids)] = True
            rows = rows[in_scope[rows]]
        scores = scores[rows]
        if doc_weight and self._docs.n:
            scores = scores + doc_weight * self._docs.scores(q)[self._chunk_doc[rows]]
        return best(self._fields, rows, scores, k)

    def _hits(self, found: Ranked) -> list[SparseHit]:
        ids = self._all_ids
        return [SparseHit(ids[i], float(s)) for i, s in zip(found.rows.tolist(), found.scores.tolist(), strict=True)]

    def _scores(self, q: list[str], doc_ids: set[str] | None, doc_weight: float) -> np.ndarray:
        """The BM25 score of every row for the tokens ``q`` (document evidence added, scope masked)."""
        scores = self._chunks.scores(q)
        if doc_weight and self._docs.n:
            doc_scores = self._docs.scores(q)[self._chunk_doc]
            scores = np.where(scores > 0, scores + doc_weight * doc_scores, 0.0)
        if doc_ids is not None:
            mask = np.zeros(len(scores), dtype=scores.dtype)
            mask[self._rows_of(doc_ids)] = 1
            scores = scores * mask
        return scores

    def scores_of(self, query: str, chunk_ids: list[str], doc_weight: float = 0.0) -> np.ndarray:
        """The BM25 score of each of ``chunk_ids`` for ``query`` (0 for a chunk not in the index)."""
        q = tokenize(query)
        out = np.zeros(len(chunk_ids), dtype=np.float64)
        if not any(self._chunks.knows(t) for t in q):
            return out
        scores = self._scores(q, None, doc_weight)
        for i, cid in enumerate(chunk_ids):
            if (row := self._row(cid)) is not None:
                out[i] = float(scores[row])
        return out

    def has(self, chunk_id: str) -> bool:
        """Whether ``chunk_id`` is in this index (an active chunk when it was built)."""
        return self._row(chunk_id) is not None

    def probe(self, query: str, chunk_id: str, doc_ids: set[str] | None = None, doc_weight: float = 0.0) -> SparseProbe:
        """Where ``chunk_id`` stands in the full BM25 order for ``query``: every chunk is scored for
        a query anyway, so the rank beyond ``k`` costs one comparison over that vector."""
        row = self._row(chunk_id)
        if row is None:
            raise ValueError(f"chunk {chunk_id!r} is not in the BM25 index")
        q = tokenize(query)
        known = [t for t in q if self._chunks.knows(t)]
        missing = tuple(dict.fromkeys(t for t in q if t not in known))
        if not known:
            return SparseProbe(chunk_id, None, 0.0, 0, {}, missing)
        scores = self._scores(q, doc_ids, doc_weight)
        score = float(scores[row])
        terms = self.term_scores(query, [chunk_id], doc_weight)[chunk_id]
        lacks = [t for t in dict.fromkeys(known) if row not in self._chunks.postings(t)[0]]
        rank = 1 + int((scores > scores[row]).sum()) if score > 0 else None
        return SparseProbe(chunk_id, rank, score, int((scores > 0).sum()), terms, missing + tuple(lacks))

    def term_scores(self, query: str, chunk_ids: Iterable[str], doc_weight: float = 0.0) -> dict[str, dict[str, float]]:
        """Each query term's contribution to each chunk's BM25 score (terms it lacks left out).

        The query is scored one term at a time (BM25 is a sum over query tokens, so the parts add
        up to the full score); a chunk's document part is added only where the whole query matches
        the chunk, as in ``search``."""
        found = {c: row for c in chunk_ids if (row := self._row(c)) is not None}
        out: dict[str, dict[str, float]] = {c: {} for c in found}
        q = [t for t in tokenize(query) if self._chunks.knows(t)]
        if not found or not q:
            return out
        rows = np.array(list(found.values()), dtype=np.int64)
        matched = self._chunks.scores(q)[rows] > 0
        for term, count in Counter(q).items():
            part = self._chunks.scores([term])[rows]
            if doc_weight and self._docs.n:
                doc_part = self._docs.scores([term])[self._chunk_doc[rows]]
                part = part + np.where(matched, doc_weight * doc_part, 0.0)
            for cid, value in zip(found, part * count, strict=True):
                if value > 0:
                    out[cid][term] = float(value)
        return out

    def term_stats(self, terms: Iterable[str], doc_ids: set[str] | None = None, near: bool = True) -> TermStats:
        """How many chunks (of ``doc_ids`` when given) contain each of ``terms`` (already tokenized),
        read from the index's own postings: a term with ``df == 0`` occurs nowhere in that scope.
        ``near``: also look for how an absent term is present after all (``_near``; it scans the
        scope, so counts of synonyms skip it)."""
        terms = list(dict.fromkeys(terms))
        if not self._chunks.n:
            return TermStats(0, dict.fromkeys(terms, 0))
        rows = None if doc_ids is None else np.zeros(self._chunks.n_rows, dtype=bool)
        if rows is not None:
            rows[self._rows_of(doc_ids)] = True
        df = {term: self._df(term, rows) for term in terms}
        scope = self._chunks.n if rows is None else int(rows.sum())
        if not near:
            return TermStats(scope, df)
        found = {t: v for t in terms if df[t] == 0 and (v := self._near(t, rows))}
        # jieba also cuts pieces out of a number ("三千元" -> "三千", "千元"); a piece of a
        # number the scope spells in digits is present as that number
        numbers = {t: v for t, v in found.items() if is_figure(v)}
        for t in terms:
            if df[t] == 0 and t not in found:
                found.update((t, v) for whole, v in numbers.items() if t in whole)
        return TermStats(scope, df, found)

    def _df(self, term: str, rows: np.ndarray | None) -> int:
        chunks = self._chunks.postings(term)[0]
        return int(len(chunks) if rows is None else rows[chunks].sum())

    def _near(self, term: str, rows: np.ndarray | None) -> str:
        """What an absent term is present as in the scope: its own characters inside an indexed
        text (a CJK word jieba cut differently there), the number it spells as the scope writes it
        ("六百" as "600", "十二月" as "12 月"), or a close spelling of an indexed English word (a
        typo); '' when none."""
        texts = self._all_texts
        scope = np.flatnonzero(self._chunks.live if rows is None else rows)
        if _CJK_TERM.search(term):
            if any(term in texts[i] for i in scope):
                return term
            number = spelled_number(term)  # "六百块" where the documents write "600 元"
            if number is None:
                return ""
            spellings, found = figure_spellings(term, number), number_pattern(number).search
            held = (t for i in scope if any(s in (t := texts[i]) for s in spellings))
            return number if any(found(canonical(t)) for t in held) else ""
        if self._latin_vocab is None:
            self._latin_vocab = self._live_latin_words()
        for variant in self._latin_vocab.close(term, n=3, cutoff=NEAR_CUTOFF):
            if variant != term and self._df(variant, rows):
                return variant
        return ""

    def _live_latin_words(self) -> Spellings:
        """The English words of live chunks (for ``_near``'s look for a misspelling)."""
        words: set[str] = set()
        for seg, live in zip(self.segments, self._chunks.live_parts, strict=True):
            words.update(seg.chunks.live_terms(live))
        return Spellings(w for w in words if w and not _CJK_TERM.search(w))

    # -- files ---------------------------------------------------------------------
    def save(self, directory: Path) -> None:
        """Write this index as the directory's whole content (its segments under fresh names,
        then the manifest, then the old files removed: a crash leaves the old index or this one)."""
        store = SegmentStore(directory)
        with store.lock(fcntl.LOCK_EX):
            manifest = Manifest(self.version, next_id=(store.read() or Manifest(0)).next_id)
            names = []
            for seg in self.segments:
                manifest, name = manifest.named()
                store.write(dataclasses.replace(seg, name=name))
                names.append(name)
            manifest = Manifest(self.version, tuple(names), self.dead & self._rev_keys(), manifest.next_id)
            store.commit(manifest, "save")
            store.collect_garbage(manifest)

    def _rev_keys(self) -> frozenset[str]:
        return frozenset(k for s in self.segments for k in s.rev_keys)

    @classmethod
    def load(cls, directory: Path) -> BM25Index | None:
        """The saved index, or None when missing or unreadable (the caller rebuilds). Reads under a
        shared lock, so that a concurrent write can't remove a segment between manifest and read."""
        store = SegmentStore(directory)
        with store.lock(fcntl.LOCK_SH):
            manifest = store.read()
            if manifest is None:
                return None
            try:
                return cls(store.segments(manifest), manifest.version, manifest.dead)
            except (OSError, ValueError, KeyError) as exc:
                log.warning("BM25 index at %s unreadable (%s); it will be rebuilt", directory, exc)
                return None
