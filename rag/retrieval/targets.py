"""What the why-not probe looks at: one chunk, found by its id, its document, or a phrase in it.

A target need not be indexed: a chunk of an older revision, of a deleted document, or of an
upload that failed is still a target, and the probe says why it was never a candidate.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

import numpy as np

from rag.errors import RagError
from rag.ingest.pipeline import doc_id_for
from rag.source import ProbedSource

SEARCH_LIMIT = 20  # chunks a phrase search lists


class ProbeTargetNotFound(RagError):
    fix = (
        "List the documents with `python -m rag docs --kb NAME` and give one's name or id; a chunk id "
        "looks like doc:revision:page:index (the Inspector's ledger shows them)."
    )


@dataclass(frozen=True)
class ProbeTarget:
    chunk_id: str  # '' when the document has no active chunk to name
    doc_id: str
    doc_name: str
    text: str = ""

    @property
    def label(self) -> str:
        where = self.chunk_id.split(":", 1)[1] if self.chunk_id else "no active chunk"
        return f"{self.doc_name or self.doc_id} · {where}"


def parse_chunk_id(chunk_id: str) -> tuple[str, int, int, int]:
    """(document id, revision, page, index) of ``doc:rev:page:idx``; a clear error otherwise."""
    if not (chunk_id or "").strip():
        raise ProbeTargetNotFound("Nothing to probe was picked.")
    parts = (chunk_id or "").strip().rsplit(":", 3)
    if len(parts) != 4 or not all(p.isdigit() for p in parts[1:]) or not parts[0]:
        raise ProbeTargetNotFound(f"'{chunk_id}' is not a chunk id.")
    return parts[0], int(parts[1]), int(parts[2]), int(parts[3])


def chunk_target(kb: ProbedSource, chunk_id: str) -> ProbeTarget:
    """The chunk ``chunk_id``, indexed or not (its document must have been ingested at least once)."""
    doc_id, *_ = parse_chunk_id(chunk_id)
    chunk = kb.get_chunks([chunk_id.strip()]).get(chunk_id.strip())
    if chunk is not None:
        return ProbeTarget(chunk.id, chunk.doc_id, chunk.doc_name, chunk.text)
    if not kb.revisions(doc_id):
        raise ProbeTargetNotFound(
            f"No chunk '{chunk_id}' in knowledge base '{kb.name}': no document '{doc_id}' was ever ingested there."
        )
    return ProbeTarget(chunk_id.strip(), doc_id, kb.catalog.document_names(kb.name, [doc_id]).get(doc_id, ""))


def document_id(kb: ProbedSource, doc: str) -> tuple[str, str]:
    """(id, name) of the document named or numbered ``doc``, active or not (a deleted or failed
    document is found by the name it was uploaded under)."""
    doc = (doc or "").strip()
    for d in kb.documents():
        if doc in (d.id, d.name):
            return d.id, d.name
    for candidate in (doc, doc_id_for(doc)):
        if kb.revisions(candidate):
            return candidate, kb.catalog.document_names(kb.name, [candidate]).get(candidate, doc)
    names = [d.name for d in kb.documents()]
    close = difflib.get_close_matches(doc, names, n=3, cutoff=0.5)
    hint = f" Did you mean {', '.join(repr(n) for n in close)}?" if close else ""
    raise ProbeTargetNotFound(f"No document '{doc}' in knowledge base '{kb.name}'.{hint}")


def document_target(kb: ProbedSource, doc: str, question: str, vectors) -> ProbeTarget:
    """The chunk of document ``doc`` that ``question`` ranks highest (by cosine plus BM25 over its
    own chunks), or a chunk-less target when the document has no active revision."""
    doc_id, name = document_id(kb, doc)
    chunks = kb.chunks(doc_id) if any(d.id == doc_id for d in kb.documents()) else []
    if not chunks:
        return ProbeTarget("", doc_id, name)
    ids = [c.id for c in chunks]
    found = kb.dense_scores(vectors.query_vector(question))
    at = {cid: i for i, cid in enumerate(found.ids)}
    dense = np.array([found.scores[at[c]] if c in at else -1.0 for c in ids])
    sparse = kb.bm25().scores_of(question, ids, kb.settings.bm25_doc_weight)
    best = int(np.argmax(_rr(dense) + _rr(sparse)))
    return ProbeTarget(ids[best], doc_id, name, chunks[best].text)


def _rr(scores: np.ndarray) -> np.ndarray:
    """Reciprocal rank of each score within the document (best = 1)."""
    order = np.argsort(-scores, kind="stable")
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(1, len(scores) + 1)
    return 1.0 / ranks


def search_targets(kb: ProbedSource, phrase: str, limit: int = SEARCH_LIMIT) -> list[ProbeTarget]:
    """Active chunks whose document name or text contains ``phrase`` (case-insensitive)."""
    needle = (phrase or "").strip().lower()
    if not needle:
        return []
    out = []
    for d in kb.documents():
        in_name = needle in d.name.lower()
        for c in kb.chunks(d.id):
            if in_name or needle in c.text.lower():
                out.append(ProbeTarget(c.id, c.doc_id, d.name, c.text))
                if len(out) >= limit:
                    return out
    return out


def revision_state(kb: ProbedSource, target: ProbeTarget) -> tuple[bool, str]:
    """Whether the target is an indexed chunk of its document's active revision, and if not, why."""
    revisions = dict(kb.revisions(target.doc_id))
    active = kb.catalog.active_revisions(kb.name, [target.doc_id]).get(target.doc_id)
    if not target.chunk_id:
        if active is None and "failed" in revisions.values() and "dropped" not in revisions.values():
            return False, "not indexed: its upload failed"
        return False, "not indexed: the document was deleted" if revisions else "not indexed: never ingested"
    rev = parse_chunk_id(target.chunk_id)[1]
    if rev == active:
        if kb.bm25().has(target.chunk_id):
            return True, "active"
        return False, f"not indexed: revision {rev} has no chunk '{target.chunk_id}'"
    state = revisions.get(rev, "unknown")
    if active is not None:
        return False, f"not active: revision {rev} ({state}) was replaced by revision {active}"
    if state == "failed":
        return False, f"not indexed: the upload of revision {rev} failed"
    return False, f"not active: the document was deleted (revision {rev} {state})"
