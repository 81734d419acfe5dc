"""A persisted BM25 index (bm25s) over one knowledge base's active chunks.

The index is stamped with the catalog's ``index_version`` it was built from; a
missing or stale index is rebuilt from the chunk texts on first use, so a second
app instance (or a crash between publish and rebuild) never serves stale results.

Beside the chunk index it keeps one over whole documents (each document's chunk tokens
together). A chunk that matches the query scores ``chunk BM25 + doc_weight x document BM25``:
passage evidence plus document evidence (Callan 1994), so that a chunk of a document that is
about the query as a whole outranks an equally matching chunk of one that only mentions it.
``doc_weight`` (``RAG_BM25_DOC_WEIGHT``) was chosen on SciFact train; the figures are in
docs/BENCHMARKS.md.
"""

from __future__ import annotations

import difflib
import fcntl
import json
import logging
import os
import re
import shutil
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import bm25s
import numpy as np

from rag.records import ChunkRecord, TermStats
from rag.store.numerals import canonical, figure_spellings, is_figure, number_pattern, spelled_number
from rag.store.tokenize import tokenize

log = logging.getLogger(__name__)
logging.getLogger("bm25s").setLevel(logging.WARNING)


FORMAT = 3  # 2: chunk index + document index; 3: + each chunk's indexed text (answerability look-ups)
NEAR_CUTOFF = 0.8  # difflib ratio above which an absent word is read as a misspelling of an indexed one
_CJK_TERM = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


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
    """Immutable once built; ``search`` is thread-safe."""

    def __init__(
        self,
        retriever: bm25s.BM25 | None,
        ids: list[str],
        version: int,
        docs: bm25s.BM25 | None = None,
        texts: list[str] | None = None,
    ) -> None:
        self._retriever = retriever
        self.texts = texts if texts is not None else [""] * len(ids)  # the indexed text of each chunk
        self._latin_vocab: dict[int, list[str]] | None = None  # indexed English words by length
        self._docs = docs  # one row per document, in order of first appearance in ``ids``
        self.ids = ids
        self.version = version
        owners = [ChunkRecord.doc_of(cid) for cid in ids]
        rows = {d: i for i, d in enumerate(dict.fromkeys(owners))}
        self._chunk_doc = np.array([rows[d] for d in owners], dtype=np.int64)
        self._doc_rows: dict[str, list[int]] | None = None  # built on the first filtered search
        self._row: dict[str, int] | None = None  # chunk id -> row, built on the first probe

    def _rows_of(self, doc_ids: set[str]) -> list[int]:
        if self._doc_rows is None:
            rows: dict[str, list[int]] = {}
            for i, cid in enumerate(self.ids):
                rows.setdefault(ChunkRecord.doc_of(cid), []).append(i)
            self._doc_rows = rows
        return [i for d in doc_ids for i in self._doc_rows.get(d, ())]

    @classmethod
    def build(cls, items: Iterable[tuple[str, str]], version: int) -> BM25Index:
        ids, tokens, texts = [], [], []
        doc_tokens: dict[str, list[str]] = {}
        for chunk_id, text in items:
            ids.append(chunk_id)
            texts.append(text)
            tokens.append(tokenize(text))
            doc_tokens.setdefault(ChunkRecord.doc_of(chunk_id), []).extend(tokens[-1])
        if not ids:
            return cls(None, [], version)
        retriever = bm25s.BM25()  # Lucene variant, k1=1.5, b=0.75
        retriever.index(tokens, show_progress=False)
        docs = bm25s.BM25()
        docs.index(list(doc_tokens.values()), show_progress=False)
        return cls(retriever, ids, version, docs, texts)

    def search(self, query: str, k: int, doc_ids: set[str] | None = None, doc_weight: float = 0.0) -> list[SparseHit]:
        """The ``k`` best chunks with a positive score, only from ``doc_ids`` when given; with
        ``doc_weight`` a matching chunk's score adds that share of its document's score."""
        if self._retriever is None or k <= 0:
            return []
        q = tokenize(query)
        if not q or not any(t in self._retriever.vocab_dict for t in q):
            return []
        scores = self._scores(q, doc_ids, doc_weight)
        k = min(k, len(self.ids))
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [SparseHit(self.ids[i], float(scores[i])) for i in top if scores[i] > 0]

    def _scores(self, q: list[str], doc_ids: set[str] | None, doc_weight: float) -> np.ndarray:
        """bm25s's score of every chunk for the tokens ``q`` (document evidence added, scope masked)."""
        scores = self._retriever.get_scores(q)
        if doc_weight and self._docs is not None:
            doc_scores = self._docs.get_scores(q)[self._chunk_doc]
            scores = np.where(scores > 0, scores + doc_weight * doc_scores, 0.0).astype(scores.dtype)
        if doc_ids is not None:
            mask = np.zeros(len(self.ids), dtype=scores.dtype)
            mask[self._rows_of(doc_ids)] = 1
            scores = scores * mask
        return scores

    def scores_of(self, query: str, chunk_ids: list[str], doc_weight: float = 0.0) -> np.ndarray:
        """The BM25 score of each of ``chunk_ids`` for ``query`` (0 for a chunk not in the index)."""
        q = tokenize(query)
        out = np.zeros(len(chunk_ids), dtype=np.float64)
        if self._retriever is None or not any(t in self._retriever.vocab_dict for t in q):
            return out
        scores = self._scores(q, None, doc_weight)
        for i, cid in enumerate(chunk_ids):
            if self.has(cid):
                out[i] = float(scores[self._row[cid]])
        return out

    def has(self, chunk_id: str) -> bool:
        """Whether ``chunk_id`` is in this index (an active chunk when it was built)."""
        if self._row is None:
            self._row = {cid: i for i, cid in enumerate(self.ids)}
        return chunk_id in self._row

    def probe(self, query: str, chunk_id: str, doc_ids: set[str] | None = None, doc_weight: float = 0.0) -> SparseProbe:
        """Where ``chunk_id`` stands in the full BM25 order for ``query``: bm25s scores every chunk
        for a query anyway, so the rank beyond ``k`` costs one comparison over that vector."""
        if not self.has(chunk_id):
            raise ValueError(f"chunk {chunk_id!r} is not in the BM25 index")
        q = tokenize(query)
        known = [t for t in q if self._retriever is not None and t in self._retriever.vocab_dict]
        missing = tuple(dict.fromkeys(t for t in q if t not in known))
        if not known:
            return SparseProbe(chunk_id, None, 0.0, 0, {}, missing)
        scores = self._scores(q, doc_ids, doc_weight)
        row = self._row[chunk_id]
        score = float(scores[row])
        terms = self.term_scores(query, [chunk_id], doc_weight)[chunk_id]
        lacks = [t for t in dict.fromkeys(known) if self._retriever.get_scores([t])[row] <= 0]
        rank = 1 + int((scores > scores[row]).sum()) if score > 0 else None
        return SparseProbe(chunk_id, rank, score, int((scores > 0).sum()), terms, missing + tuple(lacks))

    def term_scores(self, query: str, chunk_ids: Iterable[str], doc_weight: float = 0.0) -> dict[str, dict[str, float]]:
        """Each query term's contribution to each chunk's BM25 score (terms it lacks left out).

        The query is scored one term at a time with bm25s's own ``get_scores`` (BM25 is a sum over
        query tokens, so the parts add up to the full score); a chunk's document part is added
        only where the whole query matches the chunk, as in ``search``."""
        chunk_ids = [c for c in chunk_ids if self.has(c)]
        out: dict[str, dict[str, float]] = {c: {} for c in chunk_ids}
        if self._retriever is None or not chunk_ids:
            return out
        q = [t for t in tokenize(query) if t in self._retriever.vocab_dict]
        if not q:
            return out
        rows = np.array([self._row[c] for c in chunk_ids], dtype=np.int64)
        matched = self._retriever.get_scores(q)[rows] > 0
        for term, count in Counter(q).items():
            part = self._retriever.get_scores([term])[rows].astype(np.float64)
            if doc_weight and self._docs is not None:
                doc_part = self._docs.get_scores([term])[self._chunk_doc[rows]]
                part = part + np.where(matched, doc_weight * doc_part, 0.0)
            for cid, value in zip(chunk_ids, part * count, strict=True):
                if value > 0:
                    out[cid][term] = float(value)
        return out

    def term_stats(self, terms: Iterable[str], doc_ids: set[str] | None = None, near: bool = True) -> TermStats:
        """How many chunks (of ``doc_ids`` when given) contain each of ``terms`` (already tokenized),
        read from the index's own postings: a term with ``df == 0`` occurs nowhere in that scope.
        ``near``: also look for how an absent term is present after all (``_near``; it scans the
        scope, so counts of synonyms skip it)."""
        terms = list(dict.fromkeys(terms))
        if self._retriever is None:
            return TermStats(0, dict.fromkeys(terms, 0))
        rows = None if doc_ids is None else np.zeros(len(self.ids), dtype=bool)
        if rows is not None:
            rows[self._rows_of(doc_ids)] = True
        df = {term: self._df(term, rows) for term in terms}
        scope = len(self.ids) if rows is None else int(rows.sum())
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
        tid = self._retriever.vocab_dict.get(term)
        if tid is None:
            return 0
        postings = self._retriever.scores
        chunks = postings["indices"][postings["indptr"][tid] : postings["indptr"][tid + 1]]
        return int(len(chunks) if rows is None else rows[chunks].sum())

    def _near(self, term: str, rows: np.ndarray | None) -> str:
        """What an absent term is present as in the scope: its own characters inside an indexed
        text (a CJK word jieba cut differently there), the number it spells as the scope writes it
        ("六百" as "600", "十二月" as "12 月"), or a close spelling of an indexed English word (a
        typo); '' when none."""
        scope = range(len(self.ids)) if rows is None else np.flatnonzero(rows)
        if _CJK_TERM.search(term):
            if any(term in self.texts[i] for i in scope):
                return term
            number = spelled_number(term)  # "六百块" where the documents write "600 元"
            if number is None:
                return ""
            spellings, found = figure_spellings(term, number), number_pattern(number).search
            held = (t for i in scope if any(s in (t := self.texts[i]) for s in spellings))
            return number if any(found(canonical(t)) for t in held) else ""
        if self._latin_vocab is None:
            by_len: dict[int, list[str]] = {}
            for w in self._retriever.vocab_dict:
                if w and not _CJK_TERM.search(w):
                    by_len.setdefault(len(w), []).append(w)
            self._latin_vocab = by_len
        # a difflib ratio >= 0.8 needs the lengths within a factor 1.5 of each other: only those are compared
        n = len(term)
        pool = [w for k in range(-(-2 * n // 3), 3 * n // 2 + 1) for w in self._latin_vocab.get(k, ())]
        for variant in difflib.get_close_matches(term, pool, n=3, cutoff=NEAR_CUTOFF):
            if variant != term and self._df(variant, rows):
                return variant
        return ""

    def save(self, directory: Path) -> None:
        """Write atomically: build in a temp dir, then swap it in under the directory's lock.

        A crash can leave ``<dir>.old`` behind (after the swap, before its removal); it is removed
        before the next swap, else renaming onto it would fail for ever ("Directory not empty").
        """
        directory.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".bm25-", dir=directory.parent))
        if self._retriever is not None:
            self._retriever.save(str(tmp), show_progress=False)
        if self._docs is not None:
            self._docs.save(str(tmp / "docs"), show_progress=False)
        meta = {"format": FORMAT, "version": self.version, "ids": self.ids, "texts": self.texts}
        (tmp / "ragscope.json").write_text(json.dumps(meta))
        old = directory.with_name(directory.name + ".old")
        with _dir_lock(directory, fcntl.LOCK_EX):
            shutil.rmtree(old, ignore_errors=True)
            if directory.exists():
                os.replace(directory, old)
            os.replace(tmp, directory)
            shutil.rmtree(old, ignore_errors=True)

    @classmethod
    def load(cls, directory: Path) -> BM25Index | None:
        """The saved index, or None when missing or unreadable (the caller rebuilds).

        Reads under a shared lock so that a concurrent ``save`` (another thread or process) can't
        swap the files between reading the ids and the matrix (which would pair ids with the wrong rows).
        """
        if not (directory / "ragscope.json").exists():
            return None
        try:
            with _dir_lock(directory, fcntl.LOCK_SH):
                meta = json.loads((directory / "ragscope.json").read_text())
                if meta.get("format") != FORMAT:
                    log.info("BM25 index at %s is an older format; it will be rebuilt", directory)
                    return None
                retriever = docs = None
                if meta["ids"]:
                    retriever = bm25s.BM25.load(str(directory), show_progress=False)
                    docs = bm25s.BM25.load(str(directory / "docs"), show_progress=False)
        except (OSError, ValueError, KeyError) as exc:
            log.warning("BM25 index at %s unreadable (%s); it will be rebuilt", directory, exc)
            return None
        return cls(retriever, list(meta["ids"]), int(meta["version"]), docs, list(meta["texts"]))


@contextmanager
def _dir_lock(directory: Path, mode: int) -> Iterator[None]:
    """An advisory lock beside ``directory`` (exclusive for swaps, shared for reads), across processes."""
    with open(directory.with_name(f".{directory.name}.lock"), "a") as fh:
        fcntl.flock(fh, mode)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
