"""The end-of-run checks of ``python -m rag bench soak``: chat history against what was asked, and
every document against what the ingest loop believes (catalog, Chroma, BM25 and the multilingual
vectors all agree, nothing left of a deleted one)."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from rag.bench.soak_chat import Asked
from rag.records import ChunkRecord
from rag.views.conversations import INSPECTOR_CONVERSATION


@dataclass
class TurnCheck:
    asked: int  # questions whose turn the page showed
    stored: int  # chat turns in the catalog (Chat's conversations)
    lost: list[str] = field(default_factory=list)  # shown to the user, missing from the history
    duplicated: list[str] = field(default_factory=list)  # in the history more often than shown
    failed_but_stored: list[str] = field(default_factory=list)  # the page failed it, the history kept it


def check_turns(kb, asked: list[Asked]) -> TurnCheck:
    """Each conversation's stored questions against the questions shown in it, as multisets."""
    rows = kb.catalog.q("SELECT conversation, question FROM chat_turns WHERE kb=? ORDER BY seq", kb.name)
    stored: dict[str, Counter] = {}
    for r in rows:
        if r["conversation"] != INSPECTOR_CONVERSATION:
            stored.setdefault(r["conversation"], Counter())[r["question"]] += 1
    expected: dict[str, Counter] = {}
    for a in asked:
        if a.shown:
            expected.setdefault(a.conversation, Counter())[a.question] += 1
    check = TurnCheck(sum(c.total() for c in expected.values()), sum(c.total() for c in stored.values()))
    for conv in sorted(set(stored) | set(expected)):
        want, have = expected.get(conv, Counter()), stored.get(conv, Counter())
        check.lost += [f"{conv}: {q}" for q, n in (want - have).items() for _ in range(n)]
        extra = [f"{conv}: {q}" for q, n in (have - want).items() for _ in range(n)]
        failed = {a.question for a in asked if not a.shown}
        check.failed_but_stored += [e for e in extra if e.split(": ", 1)[1] in failed]
        check.duplicated += [e for e in extra if e.split(": ", 1)[1] not in failed]
    return check


@dataclass
class DocCheck:
    present: int  # documents the loop (and the demo) believe are in the knowledge base
    deleted: int  # documents the loop deleted and did not add again
    lost: list[str] = field(default_factory=list)
    half_indexed: list[str] = field(default_factory=list)
    leftovers: list[str] = field(default_factory=list)  # pieces of deleted documents or old revisions
    unexpected: list[str] = field(default_factory=list)  # documents nobody added


def check_documents(kb, believed: dict[str, str], deleted: set[str]) -> DocCheck:
    """``believed``: document name -> the marker its current revision's text carries ('soak3v2x';
    '' for a demo file), no other revision's; ``deleted``: names that must have left no trace."""
    docs = {d.name: d for d in kb.documents()}
    items = list(kb.vectors.all_items())
    chroma = {cid: ChunkRecord.from_metadata(cid, text or "", meta) for cid, text, meta in items}
    bm25, multilingual = set(kb.bm25().ids), kb.vectors.multilingual_ids()
    active = kb.catalog.active_revisions(kb.name)
    check = DocCheck(len(believed), len(deleted))
    for name, mark in sorted(believed.items()):
        doc = docs.get(name)
        if doc is None:
            check.lost.append(name)
            continue
        problem = _doc_problem(kb, doc, mark, chroma, bm25, multilingual)
        if problem:
            check.half_indexed.append(f"{name}: {problem}")
    check.unexpected = sorted(set(docs) - set(believed))
    for name in sorted(deleted & set(docs)):
        check.lost.append(f"{name}: deleted, still listed")
    stale = sorted(cid for cid, c in chroma.items() if active.get(c.doc_id) != c.revision)
    check.leftovers += [f"chroma {cid} ({chroma[cid].doc_name})" for cid in stale[:20]]
    live = {r["id"] for r in kb.catalog.active_chunk_rows(kb.name)}
    check.leftovers += [f"bm25 {cid}" for cid in sorted(bm25 - live)[:20]]
    check.leftovers += [f"multilingual {cid}" for cid in sorted(multilingual - live)[:20]]
    check.leftovers += [f"sentences of {cid}" for cid in sorted(kb.vectors.sentence_chunk_ids() - live)[:20]]
    return check


def _doc_problem(kb, doc, mark: str, chroma: dict, bm25: set, multilingual: set) -> str:
    rows = kb.catalog.doc_chunks(kb.name, doc.id, doc.revision)
    ids = [r["id"] for r in rows]
    if not ids or len(ids) != doc.chunks:
        return f"revision {doc.revision}: {len(ids)} chunks in the catalog, {doc.chunks} recorded"
    if missing := [i for i in ids if i not in chroma]:
        return f"{len(missing)} of {len(ids)} chunks missing from Chroma"
    if missing := [i for i in ids if i not in bm25]:
        return f"{len(missing)} of {len(ids)} chunks missing from BM25"
    if missing := [i for i in ids if kb.wants_multilingual(chroma[i]) and i not in multilingual]:
        return f"{len(missing)} of {len(ids)} chunks missing their multilingual vector"
    if mark:
        text = " ".join(chroma[i].text for i in ids)
        found = set(re.findall(mark.rstrip("0123456789x") + r"\d+x", text))
        if found != {mark}:
            return f"its chunks carry {sorted(found)}, the current revision is {mark}"
    return ""
