"""Why not this one? Where one chunk stands at every stage of a traced question.

The Inspector shows every candidate a question recalled; a chunk outside ``recall_k`` of both
retrievers is invisible there, and so is the reason. ``probe`` places one chunk without
recalling everything: its dense rank is its cosine with each query against every stored vector
(one matrix-vector product over vectors read once per index revision), its BM25 rank comes from
the score vector bm25s computes for the query anyway, its RRF score is what those ranks would
have added, and its rerank score is the reranker's verdict on the traced pool with it added.
The dense rank is exact; the dense retriever's HNSW search is approximate, so a traced dense
rank can differ from it by a place or two.
``rag.retrieval.suggest`` then names the first stage that excluded it and the smallest change
that would have let it in.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rag.config import Settings
from rag.records import ChunkRecord
from rag.retrieval.fusion import Fused
from rag.retrieval.pipeline import cjk_context, context, dense_route
from rag.retrieval.recall import DENSE_ONLY_KINDS
from rag.retrieval.replay import Replay, replay, settings_for
from rag.retrieval.suggest import Change, explain
from rag.retrieval.targets import ProbeTarget, revision_state
from rag.retrieval.trace import Answerability, Candidate, Dropped, FallbackDecision, Trace
from rag.source import ProbedSource
from rag.store.tokenize import tokenize


@dataclass(frozen=True)
class Place:
    """The chunk in one retriever's full ranked list: its best rank over the trace's queries."""

    rank: int | None  # 1 + chunks in scope scoring higher; None when the retriever can't find it at all
    score: float | None
    listed: int  # how many chunks that retriever ranks for the query (its whole list)
    query: int  # index into Trace.queries of the query that gave the best rank


@dataclass
class ProbeResult:
    """Everything the Inspector and ``python -m rag why`` say about one chunk and one question."""

    question: str
    trace_id: str
    chunk_id: str
    doc_id: str
    doc_name: str
    text: str
    active: bool  # the chunk belongs to its document's active revision and is indexed
    state: str  # 'active', or why not ('not active: revision 1 was replaced by revision 2', ...)
    recall_k: int  # per retriever, in the attempt the trace kept (doubled after a wider retry)
    dense: Place | None = None  # None when the chunk is not indexed or dense retrieval was skipped
    dense_note: str = ""  # why dense retrieval was skipped for this question
    bm25: Place | None = None
    terms: dict[str, float] = field(default_factory=dict)  # BM25 term -> its share of the BM25 score
    missing_terms: list[str] = field(default_factory=list)  # query terms the chunk lacks
    rewrite_terms: list[str] = field(default_factory=list)  # terms the rewrite added to the question
    filtered: list[str] = field(default_factory=list)  # filter keys that exclude its document
    fused_score: float | None = None  # RRF over every list it has a rank in (recall_k aside)
    fused_rank: int | None = None  # where that score would have entered the traced fused list
    rerank_score: float | None = None  # traced, or the reranker's score with it added to the pool
    rerank_rank: int | None = None
    pool: int = 0  # how many candidates the reranker scored (with it, when it was added)
    calibrated: bool = True
    candidate: Candidate | None = None  # its trace row, when it was a candidate
    excluded_by: Dropped | None = None  # None: it is evidence
    reason: str = ""
    changes: list[Change] = field(default_factory=list)  # smallest first; the first is the suggestion
    decision: FallbackDecision | None = None  # the traced question's fallback decision (what refused it)
    answerability: Answerability | None = None  # and the verdict it read

    @property
    def change(self) -> Change | None:
        return self.changes[0] if self.changes else None


def probe(kb: ProbedSource, trace: Trace, target: ProbeTarget, settings: Settings | None = None) -> ProbeResult:
    """Place ``target`` in every stage of ``trace`` (retrieved from ``kb``) and say what excluded it."""
    settings = settings or settings_for(trace, kb.settings)
    row = trace.by_id().get(target.chunk_id)
    active, state = revision_state(kb, target)
    k = settings.recall_k * (2 if trace.attempts > 1 else 1)
    out = ProbeResult(
        trace.question, trace.id, target.chunk_id, target.doc_id, target.doc_name,
        target.text or (row.text if row else ""), active, state, k, candidate=row,
        decision=trace.fallback, answerability=trace.answerability,
    )  # fmt: skip
    out.rewrite_terms = rewrite_terms(trace)
    if active:
        _place(kb, trace, settings, out)
        _rerank(kb, trace, settings, out)
    explain(kb, trace, settings, out)
    return out


def rewrite_terms(trace: Trace) -> list[str]:
    """BM25 terms the rewritten query has and the question doesn't (what the rewrite added)."""
    if len(trace.queries) < 2:
        return []
    own = set(tokenize(trace.queries[0].text))
    return list(dict.fromkeys(t for q in trace.queries[1:] for t in tokenize(q.text) if t not in own))


def _scope(kb: ProbedSource, trace: Trace, out: ProbeResult) -> set[str] | None:
    """The documents the question searched, or None for all; notes the filters that exclude the target
    (its ranks are then given as they would be without them)."""
    if not trace.filters:
        return None
    allowed = kb.filter_doc_ids(**trace.filters)
    if out.doc_id in allowed:
        return allowed
    out.filtered = [key for key, value in trace.filters.items() if out.doc_id not in kb.filter_doc_ids(**{key: value})]
    return None


def _place(kb: ProbedSource, trace: Trace, settings: Settings, out: ProbeResult) -> None:
    scope = _scope(kb, trace, out)
    route = dense_route(trace.question, kb.embedder.model_id)
    ranks: list[int] = []  # the chunk's rank in every list RRF fuses (each query x retriever)
    if route:
        out.dense_note = route
    else:
        out.dense, dense_ranks = _dense_place(kb, settings, trace, out.chunk_id, scope)
        ranks += dense_ranks
    sparse = [i for i, q in enumerate(trace.queries) if q.kind not in DENSE_ONLY_KINDS or route]
    index = kb.bm25()
    best = Place(None, 0.0, 0, 0)
    for i in sparse:
        found = index.probe(trace.queries[i].text, out.chunk_id, scope, settings.bm25_doc_weight)
        if i == 0:
            out.terms, out.missing_terms = dict(found.terms), list(found.missing)
        if found.rank is not None:
            ranks.append(found.rank)
            if best.rank is None or found.rank < best.rank:
                best = Place(found.rank, found.score, found.scored, i)
    out.bm25 = best
    if out.candidate is not None and out.candidate.fused_rank is not None:
        out.fused_rank, out.fused_score = out.candidate.fused_rank, out.candidate.fused_score
    elif ranks:
        out.fused_score = sum(1.0 / (settings.rrf_k + r) for r in ranks)
        traced = [c.fused_score for c in trace.candidates if c.fused_score is not None and c.chunk_id != out.chunk_id]
        out.fused_rank = 1 + sum(1 for s in traced if s > out.fused_score)


def _dense_place(
    kb: ProbedSource, settings: Settings, trace: Trace, chunk_id: str, scope: set[str] | None
) -> tuple[Place, list[int]]:
    """The best dense place over the queries, and the rank each query gives the chunk."""
    vectors = context(kb, settings).vectors
    best, ranks, keep = Place(None, None, 0, 0), [], None
    for i, q in enumerate(trace.queries):
        found = kb.dense_scores(vectors.query_vector(q.text))
        if chunk_id not in found.ids:
            break
        if keep is None:
            keep = np.ones(len(found.ids), dtype=bool)
            if scope is not None:
                keep = np.array([ChunkRecord.doc_of(c) in scope for c in found.ids], dtype=bool)
        score = float(found.scores[found.ids.index(chunk_id)])
        rank = 1 + int((found.scores[keep] > score).sum())
        ranks.append(rank)
        if best.rank is None or rank < best.rank:
            best = Place(rank, score, int(keep.sum()), i)
    return best, ranks


def _rerank(kb: ProbedSource, trace: Trace, settings: Settings, out: ProbeResult) -> None:
    """The traced rerank score, or the reranker's score for the traced pool with the chunk added."""
    row = out.candidate
    pool = sorted((c for c in trace.candidates if c.rerank_rank is not None), key=lambda c: c.fused_rank or 0)
    out.pool = len(pool)
    route = dense_route(trace.question, kb.embedder.model_id)
    ctx = context(kb, settings)
    reranker = cjk_context(kb, settings, ctx, route).reranker if route else ctx.reranker
    out.calibrated = reranker.calibrated
    if row is not None and row.rerank_rank is not None:
        out.rerank_score, out.rerank_rank = row.rerank_score, row.rerank_rank
        return
    chunk = kb.get_chunks([out.chunk_id])[out.chunk_id]
    me = Fused(
        chunk,
        dense_rank=out.dense.rank if out.dense else None,
        dense_score=out.dense.score if out.dense else None,
        sparse_rank=out.bm25.rank if out.bm25 else None,
        sparse_score=out.bm25.score if out.bm25 and out.bm25.rank else None,
        fused_rank=out.fused_rank or len(pool) + 1,
        fused_score=out.fused_score or 0.0,
    )
    fused = [_as_fused(c) for c in pool]
    fused.insert(min(max(me.fused_rank - 1, 0), len(fused)), me)
    ranked = reranker.rank(trace.question, fused)
    mine = ranked.by_id()[out.chunk_id]
    out.rerank_score, out.rerank_rank, out.pool, out.calibrated = mine.score, mine.rank, len(fused), ranked.calibrated


def _as_fused(c: Candidate) -> Fused:
    """A traced candidate as the reranker saw it (its chunk rebuilt from the trace row)."""
    _, rev, _, idx = c.chunk_id.rsplit(":", 3)
    chunk = ChunkRecord(
        c.chunk_id, c.doc_id, int(rev), c.page, int(idx), c.char_start, c.char_end, c.heading_path, c.text, c.doc_name
    )
    return Fused(
        chunk, c.dense_rank, c.dense_score, c.sparse_rank, c.sparse_score, c.fused_rank or 0, c.fused_score or 0.0
    )


def replay_change(kb: ProbedSource, trace: Trace, change: Change, llm=None) -> Replay:
    """Replay ``trace`` with a suggested change (not saved), to see whether it lets the chunk in."""
    if not change.replayable:
        raise ValueError(f"a {change.kind.value} change can't be replayed")
    return replay(kb, trace, change.settings, llm, persist=False, filters=change.filters)


def let_in(result: Replay, chunk_id: str) -> bool:
    """Whether the replayed question uses ``chunk_id`` as evidence."""
    return any(c.chunk_id == chunk_id for c in result.new.evidence())
