"""A knowledge base's reads: its documents and chunks, dense and BM25 search, and the BM25 index
kept in step with the catalog. ``KnowledgeBase`` (``rag.kb``) opens the stores this reads and
holds the writes; reads never block on writes.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from functools import partial
from pathlib import Path

import numpy as np

from rag.config import Settings
from rag.errors import DocumentNotFound
from rag.limits import check_query
from rag.records import ChunkRecord, DocumentRecord, Hit, TermStats
from rag.store import bm25_sync
from rag.store.bm25 import BM25Index
from rag.store.catalog import Catalog, chunk_from_row
from rag.store.dense import DenseMatrix, DenseScores
from rag.store.vectors import VectorStore

TEXTS_CACHED = 256  # document revisions whose text a knowledge base keeps in memory


class KnowledgeBaseReads:
    """What a knowledge base answers from its catalog, vectors and BM25 index (mixed into
    ``KnowledgeBase``, whose ``__init__`` sets the attributes below)."""

    name: str
    settings: Settings
    catalog: Catalog
    vectors: VectorStore
    _bm25: BM25Index | None
    _bm25_lock: threading.Lock
    _dense: DenseMatrix
    _ml_dense: DenseMatrix
    _texts: OrderedDict[tuple[str, int], str]  # (doc id, revision) -> text
    _texts_lock: threading.Lock  # the BM25 worker thread reads texts beside the caller

    # -- documents and chunks ----------------------------------------------------
    def documents(self) -> list[DocumentRecord]:
        return self.catalog.documents(self.name)

    def document(self, doc: str) -> DocumentRecord:
        """The active document whose id or name ``doc`` is."""
        for d in self.catalog.documents(self.name, ref=doc):
            return d
        raise DocumentNotFound(f"No document '{doc}' in knowledge base '{self.name}'.")

    def active_hash(self, doc_id: str) -> str | None:
        rows = self.catalog.q(
            "SELECT r.content_hash FROM revisions r JOIN documents d ON d.kb=r.kb AND d.id=r.doc_id "
            "AND d.active_revision=r.revision WHERE r.kb=? AND r.doc_id=?",
            self.name,
            doc_id,
        )
        return rows[0][0] if rows else None

    def active_parser(self, doc_id: str) -> tuple[str, str] | None:
        """(parser, parser version) that produced the active revision."""
        rows = self.catalog.q(
            "SELECT r.parser, r.parser_version FROM revisions r JOIN documents d ON d.kb=r.kb AND d.id=r.doc_id "
            "AND d.active_revision=r.revision WHERE r.kb=? AND r.doc_id=?",
            self.name,
            doc_id,
        )
        return (rows[0][0], rows[0][1]) if rows else None

    def next_revision(self, doc_id: str) -> int:
        rows = self.catalog.q("SELECT MAX(revision) FROM revisions WHERE kb=? AND doc_id=?", self.name, doc_id)
        return int(rows[0][0] or 0) + 1

    def document_text(self, doc_id: str, revision: int | None = None) -> str:
        if revision is None:
            return self.catalog.document_text(self.name, doc_id)
        key = (doc_id, revision)
        with self._texts_lock:
            text = self._texts.get(key)
        if text is None:
            text = self.catalog.document_text(self.name, doc_id, revision)
            if text:  # a revision's text never changes while it has chunks; "" means dropped
                with self._texts_lock:
                    self._texts[key] = text
                    while len(self._texts) > TEXTS_CACHED:
                        self._texts.popitem(last=False)
        return text

    def _records(self, rows) -> list[ChunkRecord]:
        """Chunk records with their text; call inside ``catalog.snapshot()`` with the rows' read."""
        rows = list(rows)
        names = self.catalog.document_names(self.name, (r["doc_id"] for r in rows))
        return [
            chunk_from_row(r, self.document_text(r["doc_id"], r["revision"]), names.get(r["doc_id"], "")) for r in rows
        ]

    def chunks(self, doc: str) -> list[ChunkRecord]:
        record = self.document(doc)
        with self.catalog.snapshot():
            return self._records(self.catalog.doc_chunks(self.name, record.id, record.revision))

    def get_chunks(self, ids: list[str]) -> dict[str, ChunkRecord]:
        """Chunks by id, read in one snapshot (a concurrent drop can't leave a chunk without its text)."""
        with self.catalog.snapshot():
            return {c.id: c for c in self._records(self.catalog.chunk_rows(self.name, list(ids)))}

    def get_embeddings(self, ids: list[str], multilingual: bool = False) -> dict[str, np.ndarray]:
        """The stored vectors of ``ids`` (the embedder's, or with ``multilingual`` the multilingual
        embedder's): the ones the vector store holds."""
        return self.vectors.get_embeddings(ids, multilingual=multilingual)

    def get_sentence_embeddings(self, ids: list[str]) -> dict[str, np.ndarray]:
        """The multilingual vectors of the sentences of chunks ``ids`` the vector store holds, by key."""
        return self.vectors.sentence_embeddings(ids)

    def neighbours(self, chunk_id: str, before: int = 1, after: int = 1) -> list[ChunkRecord]:
        with self.catalog.snapshot():
            return self._neighbours(chunk_id, before, after)

    def _neighbours(self, chunk_id: str, before: int, after: int) -> list[ChunkRecord]:
        rows = self.catalog.chunk_rows(self.name, [chunk_id])
        if not rows:
            return []
        r = rows[0]
        near = self.catalog.q(
            "SELECT * FROM chunks WHERE kb=? AND doc_id=? AND revision=? AND idx BETWEEN ? AND ? "
            "AND id<>? ORDER BY idx",
            self.name,
            r["doc_id"],
            r["revision"],
            r["idx"] - before,
            r["idx"] + after,
            chunk_id,
        )
        return self._records(near)

    def all_texts(self) -> list[str]:
        with self.catalog.snapshot():
            return [c.text for c in self._records(list(self.catalog.active_chunk_rows(self.name)))]

    def filter_doc_ids(self, doc_ids=None, tags=None, date_from=None, date_to=None) -> set[str] | None:
        if not (doc_ids or tags or date_from or date_to):
            return None
        return self.catalog.filter_docs(self.name, doc_ids, tags, date_from, date_to)

    # -- search -------------------------------------------------------------------
    def dense_search(
        self, query_vec: np.ndarray, k: int, doc_ids: set[str] | None = None, multilingual: bool = False
    ) -> list[Hit]:
        """The ``k`` nearest active chunks to ``query_vec``: in the embedder's collection, or with
        ``multilingual`` in the multilingual embedder's (a query vector from ``multilingual_embedder``)."""
        if multilingual:
            self.check_multilingual()
        else:
            self.check_model()
        if doc_ids is not None and not doc_ids:
            return []
        inactive = self.catalog.inactive_rev_keys(self.name)
        clauses = ([{"doc_id": {"$in": sorted(doc_ids)}}] if doc_ids is not None else []) + (
            [{"rev_key": {"$nin": inactive}}] if inactive else []
        )
        where = clauses[0] if len(clauses) == 1 else ({"$and": clauses} if clauses else None)
        rows = self.vectors.query(np.asarray(query_vec, dtype=np.float32), k, where, multilingual=multilingual)
        active = self.catalog.active_revisions(self.name, (str(meta.get("doc_id")) for _, _, meta, _ in rows))
        hits = []
        for cid, text, meta, score in rows:
            chunk = ChunkRecord.from_metadata(cid, text, meta)
            if active.get(chunk.doc_id) == chunk.revision:
                hits.append(Hit(chunk, score))
        return hits

    def sparse_search(self, query: str, k: int, doc_ids: set[str] | None = None) -> list[Hit]:
        check_query(query, self.settings, allow_empty=True)
        index = self.bm25()
        found = index.search(query, k, doc_ids, self.settings.bm25_doc_weight)
        chunks = self.get_chunks([h.chunk_id for h in found])
        return [Hit(chunks[h.chunk_id], h.score) for h in found if h.chunk_id in chunks]

    def dense_scores(self, query_vec: np.ndarray, multilingual: bool = False) -> DenseScores:
        """Cosine of ``query_vec`` with every active chunk's stored vector (see ``DenseMatrix``); with
        ``multilingual``, with every multilingual vector (a multilingual query vector)."""
        matrix = self._ml_dense if multilingual else self._dense
        return matrix.scores(query_vec, self.index_revision, lambda: self.catalog.active_revisions(self.name))

    def revisions(self, doc_id: str) -> list[tuple[int, str]]:
        """(revision, state) of every revision of ``doc_id`` the catalog remembers, oldest first."""
        rows = self.catalog.q(
            "SELECT revision, state FROM revisions WHERE kb=? AND doc_id=? ORDER BY revision", self.name, doc_id
        )
        return [(int(r[0]), str(r[1])) for r in rows]

    def term_stats(self, terms: list[str], doc_ids: set[str] | None = None, near: bool = True) -> TermStats:
        """Chunks containing each BM25 term, within ``doc_ids`` when given (answerability);
        ``near``: with how absent terms are present after all (``BM25Index.term_stats``)."""
        return self.bm25().term_stats(terms, doc_ids, near)

    # -- BM25 -----------------------------------------------------------------------
    @property
    def bm25_dir(self) -> Path:
        return self.settings.home / "bm25" / self.name

    def bm25(self) -> BM25Index:
        """The BM25 index matching the catalog's index version; brought up to it when stale."""
        version = self.index_revision
        with self._bm25_lock:
            if self._bm25 is None or self._bm25.version != version:
                self._bm25 = self._sync_bm25(version)
            return self._bm25

    def refresh_bm25(self) -> None:
        with self._bm25_lock:
            self._bm25 = self._sync_bm25(self.index_revision)

    def _sync_bm25(self, version: int) -> BM25Index:
        """Add a segment for what was published since, mask what went (rag.store.bm25_sync)."""
        active = partial(self.catalog.active_revisions, self.name)  # read after ``version``
        merge_factor = self.settings.bm25_merge_factor
        return bm25_sync.sync(self.bm25_dir, self._bm25, version, active, self._index_items, merge_factor)

    def _index_items(self, revisions: list[tuple[str, int]]) -> list[tuple[str, str]]:
        """(chunk id, indexed text) of each chunk of ``revisions``, read in one snapshot."""
        with self.catalog.snapshot():
            rows = [r for doc_id, rev in revisions for r in self.catalog.doc_chunks(self.name, doc_id, rev)]
            return [(c.id, c.index_text) for c in self._records(rows)]
