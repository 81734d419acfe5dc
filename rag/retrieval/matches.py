"""Which query terms BM25 matched in each candidate, and how much each added to its score.

Read from bm25s's own scoring (``BM25Index.term_scores``: the query scored one term at a time),
so the parts add up to the BM25 score the trace shows. Terms the rewrite added to the question
are scored from the rewritten query and flagged, since only that query could match them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rag.retrieval.recall import DENSE_ONLY_KINDS
from rag.retrieval.trace import Trace
from rag.source import KnowledgeSource
from rag.store.tokenize import tokenize


@dataclass
class TermMatch:
    """One candidate's BM25 terms: in its own text, or reached only through its document's score."""

    terms: dict[str, float] = field(default_factory=dict)  # term in the chunk's text -> contribution
    via_document: dict[str, float] = field(default_factory=dict)  # term only its document has -> contribution
    rewrite: set[str] = field(default_factory=set)  # of those, the terms the rewrite added

    @property
    def total(self) -> float:
        return sum(self.terms.values()) + sum(self.via_document.values())


def term_matches(kb: KnowledgeSource, trace: Trace) -> dict[str, TermMatch]:
    """``chunk id -> TermMatch`` for every candidate still in the BM25 index."""
    index = kb.bm25()
    ids = [c.chunk_id for c in trace.candidates if index.has(c.chunk_id)]
    weight = float(trace.settings.get("bm25_doc_weight", kb.settings.bm25_doc_weight) or 0.0)
    out = {cid: TermMatch() for cid in ids}
    original = set(tokenize(trace.queries[0].text)) if trace.queries else set()
    for i, q in enumerate(trace.queries):
        if q.kind in DENSE_ONLY_KINDS:
            continue
        full = index.term_scores(q.text, ids, weight)
        own = index.term_scores(q.text, ids, 0.0)
        for cid in ids:
            match = out[cid]
            for term, value in full[cid].items():
                if i > 0 and term in original:
                    continue  # the original question's terms are scored from the original question
                (match.terms if term in own[cid] else match.via_document)[term] = value
                if i > 0:
                    match.rewrite.add(term)
    return out
