"""Knowledge base integration: real bundled embedder, real Chroma (embedded and `chroma run`)."""

from __future__ import annotations

import shutil

import pytest

from rag.embedder import Embedder
from rag.errors import DocumentNotFound, EmbeddingModelMismatch
from rag.ingest.pipeline import UploadItem
from rag.source import KnowledgeSource, TextEmbedder, TraceStore

HANDBOOK = b"""# Handbook

## Leave
Employees get 25 days of paid leave per year.

## Expenses
Receipts must be filed within 30 days of purchase.
"""
SECURITY = b"Passwords rotate every 90 days. Laptops use full-disk encryption."


def _ids(hits):
    return [h.chunk.doc_name for h in hits]


def _roundtrip(kb):
    results = kb.ingest([UploadItem("handbook.md", HANDBOOK), UploadItem("security.txt", SECURITY)])
    assert [r.status for r in results] == ["added", "added"]
    docs = {d.name: d for d in kb.documents()}
    assert set(docs) == {"handbook.md", "security.txt"}
    hb = docs["handbook.md"]
    assert hb.revision == 1 and hb.parser and hb.embed_model == kb.embedder.model_id
    chunks = kb.chunks("handbook.md")
    assert chunks and all(c.id == f"{hb.id}:1:{c.page}:{c.idx}" for c in chunks)
    text = kb.document_text(hb.id)
    assert all(text[c.char_start : c.char_end] == c.text for c in chunks)
    assert any(c.heading_path == ("Handbook", "Expenses") for c in chunks)
    dense = kb.dense_search(kb.embedder.embed_query("how long do I have to submit receipts?"), 3)
    assert _ids(dense)[0] == "handbook.md" and -1.0 <= dense[0].score <= 1.0
    assert _ids(kb.sparse_search("password rotation", 3)) == ["security.txt"]


def test_embedded_ingest_search_roundtrip(make_kb):
    _roundtrip(make_kb())


@pytest.mark.server
def test_a_knowledge_base_is_a_knowledge_source(make_kb):
    kb = make_kb("source")
    assert isinstance(kb, KnowledgeSource) and isinstance(kb.embedder, TextEmbedder)
    assert isinstance(kb.catalog, TraceStore)


def test_server_mode_same_code_path(make_kb, chroma_server):
    kb = make_kb(chroma_host="127.0.0.1", chroma_port=chroma_server.port)
    _roundtrip(kb)
    assert kb.vectors.count() == sum(d.chunks for d in kb.documents())


def test_unchanged_is_noop_changed_is_new_revision(make_kb):
    kb = make_kb()
    kb.ingest_file("handbook.md", HANDBOOK)
    version = kb.index_revision
    again = kb.ingest_file("handbook.md", HANDBOOK)
    assert again.status == "unchanged" and kb.index_revision == version
    changed = kb.ingest_file("handbook.md", HANDBOOK.replace(b"25 days", b"27 days"))
    assert changed.status == "updated" and changed.revision == 2
    chunks = kb.chunks("handbook.md")
    assert all(c.revision == 2 for c in chunks)
    assert kb.vectors.count() == len(chunks)  # the old revision's vectors are gone
    hits = kb.sparse_search("paid leave days", 5)
    assert hits and all(h.chunk.revision == 2 for h in hits) and "27 days" in hits[0].chunk.text
    dense = kb.dense_search(kb.embedder.embed_query("paid leave"), 10)
    assert all(h.chunk.revision == 2 for h in dense)


def test_delete_really_deletes(make_kb):
    kb = make_kb()
    kb.ingest([UploadItem("handbook.md", HANDBOOK), UploadItem("security.txt", SECURITY)])
    removed = kb.delete("security.txt")
    assert [d.name for d in kb.documents()] == ["handbook.md"]
    assert kb.sparse_search("password", 5) == []
    assert all(h.chunk.doc_id != removed.id for h in kb.dense_search(kb.embedder.embed_query("password"), 10))
    assert kb.vectors.count() == kb.documents()[0].chunks
    assert kb.catalog.q("SELECT COUNT(*) FROM chunks WHERE doc_id=?", removed.id)[0][0] == 0
    with pytest.raises(DocumentNotFound, match="python -m rag docs"):
        kb.delete("security.txt")


def test_bm25_rebuilt_when_missing_or_stale(make_kb):
    import shutil

    kb = make_kb()
    kb.ingest_file("security.txt", SECURITY)
    shutil.rmtree(kb.bm25_dir)
    kb._bm25 = None
    assert _ids(kb.sparse_search("encryption", 3)) == ["security.txt"]
    assert kb.bm25_dir.exists()


def test_every_chunk_is_indexed_with_its_heading_path(make_kb):
    """A section's title finds its later chunks too (BM25 and dense), while the stored text is the source's."""
    body = " ".join(f"Clause {i}: the supplier shall deliver goods on the agreed date." for i in range(40))
    kb = make_kb(chunk_size=300, chunk_overlap=0)
    kb.ingest_file("contract.md", f"# Zanzibar shipping contract\n\n{body}".encode())
    kb.ingest_file("other.md", f"# General terms\n\n{body}".encode())
    chunks = kb.chunks("contract.md")
    assert len(chunks) > 3 and not chunks[-1].text.startswith("#")
    assert chunks[-1].index_text.startswith("Zanzibar shipping contract\n\n")
    text = kb.document_text(chunks[-1].doc_id)
    assert all(text[c.char_start : c.char_end] == c.text for c in chunks)
    sparse = kb.sparse_search("Zanzibar", 100)
    assert {h.chunk.id for h in sparse} == {c.id for c in chunks}
    kb._bm25 = None  # the rebuild from the vector store indexes the same text
    shutil.rmtree(kb.bm25_dir)
    assert {h.chunk.id for h in kb.sparse_search("Zanzibar", 100)} == {c.id for c in chunks}
    dense = kb.dense_search(kb.embedder.embed_query("Zanzibar shipping contract"), 2 * len(chunks))
    assert {h.chunk.doc_name for h in dense[: len(chunks)]} == {"contract.md"}


def test_bad_file_fails_alone_and_loses_nothing(make_kb):
    kb = make_kb()
    kb.ingest_file("handbook.md", HANDBOOK)
    before = (kb.index_revision, kb.vectors.count())
    results = kb.ingest(
        [UploadItem("empty.txt", b""), UploadItem("x.exe", b"MZ"), UploadItem("broken.pdf", b"%PDF-1.4 nonsense")]
    )
    assert [r.status for r in results] == ["failed"] * 3
    assert all(r.error and r.error_type for r in results)
    assert (kb.index_revision, kb.vectors.count()) == before
    assert [d.name for d in kb.documents()] == ["handbook.md"]


def test_model_guard_names_both_models_and_the_fix(make_kb, embedder, settings):
    from rag.kb import KnowledgeBase

    kb = make_kb()
    kb.ingest_file("security.txt", SECURITY)
    other = Embedder(
        model_id="some/other-model", dim=embedder.dim, max_tokens=embedder.max_tokens, li_model=embedder.li_model
    )
    kb2 = KnowledgeBase("t", settings, other)
    with pytest.raises(EmbeddingModelMismatch) as err:
        kb2.dense_search(other.embed_query("password"), 3)
    msg = str(err.value)
    assert embedder.model_id in msg and "some/other-model" in msg and "reindex" in msg
    with pytest.raises(EmbeddingModelMismatch):
        kb2.ingest_file("handbook.md", HANDBOOK)


def test_reindex_fixes_the_mismatch(make_kb, embedder, settings):
    from rag.ingest.reindex import reindex
    from rag.kb import KnowledgeBase

    make_kb().ingest_file("security.txt", SECURITY)
    other = Embedder(
        model_id="renamed-minilm", dim=embedder.dim, max_tokens=embedder.max_tokens, li_model=embedder.li_model
    )
    kb2 = KnowledgeBase("t", settings, other)
    assert reindex(kb2) == 1
    assert _ids(kb2.dense_search(other.embed_query("password rotation"), 1)) == ["security.txt"]


def test_filters_by_doc_and_tag(make_kb):
    kb = make_kb()
    kb.ingest(
        [
            UploadItem("handbook.md", HANDBOOK, ("hr",), "2025-01-01"),
            UploadItem("security.txt", SECURITY, ("it",), "2026-03-01"),
        ]
    )
    it_docs = kb.filter_doc_ids(tags=["it"])
    assert _ids(kb.sparse_search("days", 5, it_docs)) == ["security.txt"]
    assert set(_ids(kb.dense_search(kb.embedder.embed_query("days"), 5, it_docs))) == {"security.txt"}
    recent = kb.filter_doc_ids(date_from="2026-01-01")
    assert _ids(kb.sparse_search("days", 5, recent)) == ["security.txt"]
    assert kb.filter_doc_ids() is None


def test_unchanged_pdf_from_an_older_parser_is_parsed_again(make_kb):
    """Same bytes, but the active revision came from pypdf (before issue 15): re-ingest re-parses."""
    from test_pdf_parser import make_pdf

    from rag.ingest.parsers.pdf import PARSER, PARSER_VERSION

    kb = make_kb()
    data = make_pdf([["Receipts are filed within 30 days."]])
    first = kb.ingest_file("policy.pdf", data)
    assert kb.ingest_file("policy.pdf", data).status == "unchanged"
    with kb.catalog.tx() as db:
        db.execute("UPDATE revisions SET parser='pypdf', parser_version='7.1.0' WHERE kb=?", (kb.name,))
    again = kb.ingest_file("policy.pdf", data)
    assert again.status == "updated" and again.revision == first.revision + 1
    assert (kb.document("policy.pdf").parser, kb.document("policy.pdf").parser_version) == (PARSER, PARSER_VERSION)
    assert kb.ingest_file("policy.pdf", data).status == "unchanged"


def test_document_texts_are_read_from_several_threads_at_once(make_kb, monkeypatch):
    """The BM25 worker thread reads chunk texts beside the caller's thread: the text cache's
    eviction once raced with an insert ("OrderedDict mutated during iteration")."""
    import sys
    from concurrent.futures import ThreadPoolExecutor

    import rag.kb.reads

    monkeypatch.setattr(rag.kb.reads, "TEXTS_CACHED", 2)  # six documents read in turn: every read evicts
    kb = make_kb()
    items = [UploadItem(f"note{i}.txt", f"Note {i}: the office opens at {i} am.".encode()) for i in range(6)]
    kb.ingest(items)
    docs = [(d.id, d.revision, f"Note {d.name[4]}:") for d in kb.documents()]

    def read(n: int) -> bool:
        doc_id, revision, start = docs[n % len(docs)]
        return kb.document_text(doc_id, revision).startswith(start)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads take turns every few bytecodes, as on a loaded machine
    try:
        with ThreadPoolExecutor(8) as pool:
            assert all(pool.map(read, range(100000)))
    finally:
        sys.setswitchinterval(interval)
    assert len(kb._texts) <= 2
