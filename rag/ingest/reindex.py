"""Re-embed a knowledge base: the fix for a model mismatch, and how an index built before the
multilingual embedder gets its vectors."""

from __future__ import annotations

import logging

from rag.config import MULTILINGUAL_EMBEDDER
from rag.errors import VectorIndexDamaged
from rag.ingest.pipeline import embed_sentences, write_sentences
from rag.store import audit
from rag.store.access import LOCAL_OWNER, Action, Principal, require
from rag.store.chroma import chroma_client
from rag.store.vectors import VectorStore

log = logging.getLogger(__name__)
REPAIRER = Principal("system", "automatic repair")  # who the audit trail names for a repair on open


def reindex(kb, full: bool | None = None, principal: Principal = LOCAL_OWNER) -> int:
    """Rebuild the vectors of every active chunk from the catalog's texts; returns documents done.

    The embedder's collection is rebuilt when ``full`` (then the multilingual ones too), or (``None``) when the index records
    another model than the configured one. The multilingual collection gets a vector for each
    chunk that calls for one and lacks it, and the sentence collection its sentences' vectors (all
    of them again when the vectors come from another model). Texts, documents and their revisions
    are untouched. Editors only; audited (it changes the knowledge base's embedding model, its one
    stored setting)."""
    require(kb.catalog, kb.name, principal, Action.REINDEX)
    with kb.write_lock():
        return _reindex(kb, full, principal, {})


def repair(kb, damage: VectorIndexDamaged) -> int:
    """Rebuild every vector of ``kb`` from the catalog's texts, the writer lock held by the caller:
    what opening a knowledge base does when Chroma cannot read its index (``VectorIndexDamaged``, a
    kill while Chroma wrote it). Audited as a reindex by the system, naming the damage."""
    log.warning("knowledge base '%s': rebuilding its vectors from the catalog (%s)", kb.name, damage)
    return _reindex(kb, True, REPAIRER, {"repaired": damage.message[:500]})


def reconcile(kb) -> int:
    """Make the embedder's collection hold exactly the active chunks, the writer lock held by the
    caller (and a crashed writer's revisions already dropped): embed those it lacks, delete those
    it holds beyond them. What opening a knowledge base does when the counts differ, as a reindex
    killed half-way leaves them (its collection rebuilt in part); only when the catalog records the
    configured model (otherwise the model guard asks for a reindex). Returns the vectors added."""
    row = kb.catalog.kb(kb.name)
    if not row or (row["embed_model"], row["embed_dim"]) != (kb.embedder.model_id, kb.embedder.dim):
        return 0
    with kb.catalog.snapshot():
        chunks = kb._records(list(kb.catalog.active_chunk_rows(kb.name)))
    have = kb.vectors.ids()
    missing = [c for c in chunks if c.id not in have]
    extra = sorted(have - {c.id for c in chunks})
    if not missing and not extra:
        return 0
    log.warning(
        "knowledge base '%s': %d vectors missing, %d not active; reconciling", kb.name, len(missing), len(extra)
    )
    kb.vectors.delete_ids(extra)
    _add_main(kb, missing)
    _fill_multilingual(kb, chunks)
    note = {"reconciled": {"added": len(missing), "deleted": len(extra)}}
    _finish(kb, REPAIRER, note)
    return len(missing)


def _reindex(kb, full: bool | None, principal: Principal, note: dict) -> int:
    if full:  # every collection anew: also the fix for an index Chroma cannot read
        kb.vectors.reset_multilingual()
    with kb.catalog.snapshot():
        chunks = kb._records(list(kb.catalog.active_chunk_rows(kb.name)))
    row = kb.catalog.kb(kb.name)
    if full or (
        full is None and row and (row["embed_model"], row["embed_dim"]) != (kb.embedder.model_id, kb.embedder.dim)
    ):
        _rebuild_main(kb, chunks)
    _fill_multilingual(kb, chunks)
    _finish(kb, principal, note)
    return len({c.doc_id for c in chunks})


def _finish(kb, principal: Principal, note: dict) -> None:
    """A new index version (cached dense matrices and BM25 are rebuilt), audited."""
    with kb.catalog.tx() as db:
        db.execute("UPDATE kbs SET index_version=index_version+1 WHERE name=?", (kb.name,))
        detail = {"embed_model": kb.embedder.model_id, "multilingual": MULTILINGUAL_EMBEDDER} | note
        audit.record(db, principal, "kb.reindex", kb.name, kb.name, detail)
    kb.refresh_bm25()


def _rebuild_main(kb, chunks) -> None:
    client = chroma_client(kb.settings)
    client.delete_collection(kb.vectors.collection_name)
    kb.vectors = VectorStore(kb.settings, kb.name)
    _add_main(kb, chunks)
    kb.catalog.set_kb_model(kb.name, kb.embedder.model_id, kb.embedder.dim)
    with kb.catalog.tx() as db:
        db.execute("UPDATE revisions SET embed_model=? WHERE kb=? AND state='active'", (kb.embedder.model_id, kb.name))


def _add_main(kb, chunks) -> None:
    step = max(kb.settings.embed_batch_size * 8, 256)
    for i in range(0, len(chunks), step):
        part = chunks[i : i + step]
        kb.vectors.add(part, kb.embedder.embed_texts([c.index_text for c in part], kb.settings.embed_batch_size))


def _fill_multilingual(kb, chunks) -> None:
    if kb.vectors.multilingual_model() != MULTILINGUAL_EMBEDDER:
        kb.vectors.reset_multilingual()
    wanted = [c for c in chunks if kb.wants_multilingual(c)]
    have, have_sentences = kb.vectors.multilingual_ids(), kb.vectors.sentence_chunk_ids()
    todo = [c for c in wanted if c.id not in have]
    todo_sentences = [c for c in wanted if c.id not in have_sentences]  # a knowledge base stored before sentences were
    if not todo and not todo_sentences:
        return
    ml = kb.multilingual_embedder
    step = max(ml.batch_size * 8, 256)
    for i in range(0, len(todo), step):
        part = todo[i : i + step]
        kb.vectors.add_multilingual(part, ml.embed_texts([c.index_text for c in part], ml.batch_size))
    for i in range(0, len(todo_sentences), step):
        part = todo_sentences[i : i + step]
        write_sentences(kb.vectors, part, *embed_sentences(ml, part, lambda *_: None))
