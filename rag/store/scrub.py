"""Scrub a deleted document's text out of what the catalog stored about past questions.

A trace keeps every candidate's text, a chat turn its answer's sentences and citation quotes, an
evaluation run each question's answer. When a document is deleted, its text must go from all of
them: a candidate keeps its chunk and document ids with ``source_deleted`` set and an empty text;
a citation keeps its ids and offsets with an empty quote; an answer sentence that cited it is
replaced by :data:`REMOVED_SENTENCE`. Nothing else changes, so the turn still opens, and says
what was there.

These work on the stored JSON (plain dicts): the catalog sits below the rooms that define
``Trace`` and ``Answer``, whose loaders read the ``source_deleted`` fields back.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection
from typing import Any

REMOVED_SENTENCE = "(removed: its source document was deleted)"
TEXT_KEYS = ("best_sentence", "reader_window")  # answerability fields quoting the evidence
READ_AS_KEY = "reader_question"  # the question in the best chunk's words: goes with that chunk


def doc_of(chunk_id: str) -> str:
    """The document id of a chunk id ``doc:rev:page:idx``."""
    return chunk_id.split(":", 1)[0]


def scrub_trace(trace: dict[str, Any], doc_ids: Collection[str]) -> bool:
    """Empty the text of every candidate from ``doc_ids`` (marked ``source_deleted``) and any
    answerability quote no surviving candidate holds; True when anything changed."""
    gone = [c for c in trace.get("candidates", []) if c.get("doc_id") in doc_ids and not c.get("source_deleted")]
    for c in gone:
        c["text"], c["source_deleted"] = "", True
    if not gone:
        return False
    survivors = [c.get("text", "") for c in trace["candidates"] if not c.get("source_deleted")]
    verdict = trace.get("answerability") or {}
    for key in TEXT_KEYS:
        quote = verdict.get(key) or ""
        if quote and not any(quote in text for text in survivors):
            verdict[key] = ""
    best = [c for c in trace["candidates"] if c.get("rerank_rank") == 1]
    if verdict.get(READ_AS_KEY) and any(c.get("source_deleted") for c in best or gone):
        verdict[READ_AS_KEY] = ""
    return True


def scrub_answer(answer: dict[str, Any], doc_ids: Collection[str]) -> bool:
    """Empty the quotes of citations into ``doc_ids`` (marked ``source_deleted``), replace each
    sentence citing that evidence by :data:`REMOVED_SENTENCE`, and drop rejected drafts written
    from it; True when anything changed."""
    cites = [c for c in answer.get("citations", []) if c.get("doc_id") in doc_ids]
    gone_n = {c["n"] for c in cites}
    gone_n |= {n for n, cid in enumerate(answer.get("evidence_ids", []), start=1) if doc_of(cid) in doc_ids}
    if not gone_n:
        return False
    changed = False
    for c in cites:
        if not c.get("source_deleted"):
            c["quote"], c["source_deleted"], changed = "", True, True
    removed = []
    for s in answer.get("sentences", []):
        if gone_n & set(s.get("citations", [])) and s.get("raw") != REMOVED_SENTENCE:
            removed.append(s["raw"])
            s["text"], s["raw"] = "", REMOVED_SENTENCE
    changed = _scrub_text(answer, removed) or changed
    for draft in answer.get("drafts_rejected", []):
        if draft.get("draft"):
            draft["draft"], changed = "", True
        for issue in draft.get("issues", []):
            issue["sentence"] = ""
    for issue in answer.get("warnings", []):
        if issue.get("sentence") and issue["sentence"] in removed:
            issue["sentence"], changed = "", True
    return changed


def _scrub_text(answer: dict[str, Any], removed: list[str]) -> bool:
    """The answer's text without the removed sentences (each replaced where it stands; rebuilt
    from the sentences when one is not found as written)."""
    if not removed:
        return False
    text = answer.get("text", "")
    for raw in removed:
        if raw and raw in text:
            text = text.replace(raw, REMOVED_SENTENCE)
        else:
            text = " ".join(s["raw"] for s in answer.get("sentences", []))
            break
    answer["text"] = text
    return True


def scrub_run(run: dict[str, Any], doc_ids: Collection[str]) -> bool:
    """Empty the stored answer of every evaluated question whose evidence came from ``doc_ids``."""
    changed = False
    for q in run.get("questions", []):
        shown = [*q.get("presented", []), *q.get("on_screen", [])]
        if q.get("answer") and any(doc_of(cid) in doc_ids for cid in shown):
            q["answer"], changed = "", True
    return changed


# -- over the catalog's tables ------------------------------------------------------
SCRUBBED = (  # table, JSON column, scrubber
    ("traces", "json", scrub_trace),
    ("chat_turns", "answer_json", scrub_answer),
    ("eval_runs", "json", scrub_run),
)


def scrub_stored(db: sqlite3.Connection, kb: str, doc_ids: Collection[str]) -> int:
    """Scrub ``doc_ids`` from every trace, chat turn and evaluation run of ``kb`` (inside the
    caller's transaction); the number of rows rewritten."""
    changed = 0
    for table, column, scrub in SCRUBBED:
        seen: set[str] = set()
        for doc_id in doc_ids:  # only rows that name the document are read
            sql = f"SELECT id, {column} FROM {table} WHERE kb=? AND instr({column}, ?) > 0"  # noqa: S608 (fixed names)
            for row_id, blob in db.execute(sql, (kb, doc_id)).fetchall():
                if row_id in seen:
                    continue
                seen.add(row_id)
                data = json.loads(blob)
                if scrub(data, doc_ids):
                    update = f"UPDATE {table} SET {column}=? WHERE id=?"  # noqa: S608 (fixed names)
                    db.execute(update, (json.dumps(data, ensure_ascii=False), row_id))
                    changed += 1
    return changed


def deleted_documents(db: sqlite3.Connection) -> dict[str, set[str]]:
    """``kb -> doc ids`` with revisions on record but no active one: deleted (or never published)."""
    rows = db.execute(
        """SELECT DISTINCT r.kb, r.doc_id FROM revisions r LEFT JOIN documents d ON d.kb=r.kb AND d.id=r.doc_id
           WHERE d.id IS NULL OR d.active_revision IS NULL"""
    ).fetchall()
    out: dict[str, set[str]] = {}
    for kb, doc_id in rows:
        out.setdefault(kb, set()).add(doc_id)
    return out
