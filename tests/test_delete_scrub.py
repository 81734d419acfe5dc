"""A delete that deletes: the document's text leaves the stored traces, chat turns and runs too.

Real knowledge base (bundled embedder, real Chroma), real catalog; the question is asked through
``rag.ask`` as Chat asks it, so the stored trace and turn are the ones Chat would show later.
"""

from __future__ import annotations

import json
import sqlite3

from rag import ask
from rag.ingest.pipeline import UploadItem
from rag.store.catalog import SCHEMA_VERSION, Catalog
from rag.store.scrub import REMOVED_SENTENCE, scrub_answer, scrub_trace
from rag.views.chat import OutdatedSource, changed_sources, evidence_markdown, footnotes
from rag.views.highlight import SOURCE_DELETED

HANDBOOK = b"""# Handbook

## Leave
Employees get 25 days of paid leave per year.

## Expenses
Receipts must be filed within 30 days of purchase.
"""
SECRET = "The vault combination is 4417 and it rotates every 90 days."
VAULT = f"# Vault\n\n{SECRET}\n".encode()
QUESTION = "What is the vault combination?"


def _stored_text(catalog: Catalog) -> str:
    """Everything the catalog keeps about past questions, as one string."""
    rows = catalog.q(
        "SELECT json FROM traces UNION ALL SELECT answer_json FROM chat_turns UNION ALL SELECT json FROM eval_runs"
    )
    return "\n".join(r[0] for r in rows)


def test_deleting_a_document_scrubs_its_text_from_traces_and_chat_turns(make_kb):
    kb = make_kb()
    kb.ingest([UploadItem("handbook.md", HANDBOOK), UploadItem("vault.md", VAULT)])
    turn, trace = ask.ask(kb, QUESTION, conversation="c-test")
    vault = kb.document("vault.md")
    assert not turn.answer.refused and "4417" in turn.answer.text
    assert "4417" in _stored_text(kb.catalog)
    cited = {c.chunk_id for c in turn.answer.citations if c.doc_id == vault.id}
    assert cited

    kb.delete("vault.md")

    assert "4417" not in _stored_text(kb.catalog) and "vault combination is" not in _stored_text(kb.catalog)
    kept = ask.load_trace(kb, trace.id)
    gone = [c for c in kept.candidates if c.doc_id == vault.id]
    assert gone and all(c.source_deleted and c.text == "" for c in gone)
    assert {c.chunk_id for c in gone} == {c.chunk_id for c in trace.candidates if c.doc_id == vault.id}
    others = [c for c in kept.candidates if c.doc_id != vault.id]
    assert all(not c.source_deleted and c.text for c in others)  # the handbook's passages stay
    old = ask.get_turn(kb, turn.id)
    assert old.question == QUESTION  # the user's own words stay
    vault_cites = [c for c in old.answer.citations if c.doc_id == vault.id]
    assert {c.chunk_id for c in vault_cites} == cited and all(c.source_deleted and not c.quote for c in vault_cites)
    assert REMOVED_SENTENCE in old.answer.text

    # what Chat shows for the old turn: the passages marked, the document named as deleted
    assert SOURCE_DELETED in evidence_markdown(kept.evidence())
    notes = footnotes(old.answer, kb.document_text)
    assert any(SOURCE_DELETED in n.html for n in notes if n.chunk_id in cited)
    assert changed_sources(kb, old, kept).deleted == ("vault.md",)


def test_a_turn_on_an_older_revision_is_out_of_date(make_kb):
    kb = make_kb()
    kb.ingest([UploadItem("handbook.md", HANDBOOK), UploadItem("vault.md", VAULT)])
    turn, trace = ask.ask(kb, QUESTION, conversation="c-test")
    assert changed_sources(kb, turn, trace).stale is False
    kb.ingest([UploadItem("vault.md", VAULT.replace(b"4417", b"9921"))])  # re-uploaded: revision 2
    sources = changed_sources(kb, turn, trace)
    assert sources.outdated == (OutdatedSource("vault.md", 1, 2),) and sources.deleted == ()
    assert "4417" in _stored_text(kb.catalog)  # a new revision is not a delete: the old turn keeps its text


def test_an_existing_catalog_is_scrubbed_of_documents_deleted_before(tmp_path):
    """A data directory written before deletes scrubbed: opening it scrubs what earlier deletes left."""
    path = tmp_path / "catalog.sqlite"
    catalog = Catalog(path)
    cand = {"chunk_id": "d0c:1:1:0", "doc_id": "d0c", "doc_name": "vault.md", "text": SECRET}
    trace = {"question": QUESTION, "candidates": [cand], "answerability": {"best_sentence": SECRET}}
    with catalog.tx() as db:
        db.execute("INSERT INTO revisions VALUES ('t','d0c',1,'h','md','1',1,1,1,'m','dropped',NULL,'[]','now')")
        db.execute("INSERT INTO traces VALUES ('tr1','t',?,'now',?)", (QUESTION, json.dumps(trace)))
        db.execute("PRAGMA user_version=0")  # as an earlier version left it
    catalog.close()

    Catalog(path)  # opening migrates

    with sqlite3.connect(path) as raw:
        blob = raw.execute("SELECT json FROM traces").fetchone()[0]
        assert raw.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert "4417" not in blob
    stored = json.loads(blob)
    assert stored["candidates"][0] == {**cand, "text": "", "source_deleted": True}
    assert stored["answerability"]["best_sentence"] == ""


def test_scrub_answer_replaces_only_the_sentences_citing_the_deleted_document():
    answer = {
        "text": "Leave is 25 days [1]. The combination is 4417 [2].",
        "sentences": [
            {"text": "Leave is 25 days", "raw": "Leave is 25 days [1].", "citations": [1]},
            {"text": "The combination is 4417", "raw": "The combination is 4417 [2].", "citations": [2]},
        ],
        "citations": [
            {"n": 1, "doc_id": "hb", "chunk_id": "hb:1:1:0", "quote": "25 days"},
            {"n": 2, "doc_id": "vt", "chunk_id": "vt:1:1:0", "quote": "4417"},
        ],
        "evidence_ids": ["hb:1:1:0", "vt:1:1:0"],
        "drafts_rejected": [{"draft": "It is 4417 [2].", "issues": [{"sentence": "It is 4417 [2]."}]}],
        "warnings": [],
    }
    assert scrub_answer(answer, {"vt"}) is True
    assert answer["text"] == f"Leave is 25 days [1]. {REMOVED_SENTENCE}"
    assert answer["citations"][0]["quote"] == "25 days" and "source_deleted" not in answer["citations"][0]
    assert answer["citations"][1] == {
        "n": 2,
        "doc_id": "vt",
        "chunk_id": "vt:1:1:0",
        "quote": "",
        "source_deleted": True,
    }
    assert answer["drafts_rejected"] == [{"draft": "", "issues": [{"sentence": ""}]}]
    assert scrub_answer(answer, {"vt"}) is False  # already scrubbed
    assert scrub_answer(answer, {"other"}) is False


def test_scrub_trace_keeps_a_quote_a_surviving_passage_holds():
    trace = {
        "candidates": [
            {"doc_id": "hb", "text": "Leave is 25 days."},
            {"doc_id": "vt", "text": "The combination is 4417."},
        ],
        "answerability": {"best_sentence": "Leave is 25 days.", "reader_window": "combination is 4417"},
    }
    assert scrub_trace(trace, {"vt"}) is True
    assert trace["answerability"] == {"best_sentence": "Leave is 25 days.", "reader_window": ""}
    assert trace["candidates"][1] == {"doc_id": "vt", "text": "", "source_deleted": True}


def test_scrub_trace_drops_the_question_read_in_the_words_of_a_deleted_best_chunk():
    """The readers' question borrows the best chunk's synonyms: it goes when that chunk's document
    does, and stays when another document goes."""
    verdict = {"reader_question": "尤金袋鼠分布在哪些地区？"}
    trace = {
        "candidates": [
            {"doc_id": "a", "text": "尤金袋鼠分布于澳大利亚南部。", "rerank_rank": 1},
            {"doc_id": "b", "text": "x"},
        ],
        "answerability": dict(verdict),
    }
    assert scrub_trace(trace, {"b"}) is True and trace["answerability"] == verdict
    assert scrub_trace(trace, {"a"}) is True and trace["answerability"] == {"reader_question": ""}
