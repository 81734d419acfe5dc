"""Re-embed a knowledge base with the configured embedder (the fix for a model mismatch)."""

from __future__ import annotations

from rag.store.vectors import VectorStore, chroma_client


def reindex(kb) -> int:
    """Drop the collection, re-embed every active chunk, record the new model. Returns documents done."""
    with kb.write_lock():
        chunks = kb._records(list(kb.catalog.active_chunk_rows(kb.name)))
        client = chroma_client(kb.settings)
        client.delete_collection(kb.vectors.collection_name)
        kb.vectors = VectorStore(kb.settings, kb.name)
        step = max(kb.settings.embed_batch_size * 8, 256)
        for i in range(0, len(chunks), step):
            part = chunks[i : i + step]
            kb.vectors.add(part, kb.embedder.embed_texts([c.index_text for c in part], kb.settings.embed_batch_size))
        kb.catalog.set_kb_model(kb.name, kb.embedder.model_id, kb.embedder.dim)
        with kb.catalog.tx() as db:
            db.execute(
                "UPDATE revisions SET embed_model=? WHERE kb=? AND state='active'", (kb.embedder.model_id, kb.name)
            )
            db.execute("UPDATE kbs SET index_version=index_version+1 WHERE name=?", (kb.name,))
        kb.refresh_bm25()
        return len({c.doc_id for c in chunks})
