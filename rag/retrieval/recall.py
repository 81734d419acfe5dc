"""Hybrid recall for one attempt: every query to dense and BM25 in parallel, then RRF.

Dense is the knowledge base's embedder, the multilingual embedder over its own collection
(``MultilingualQueries``: a Chinese question on an English-only embedder), or both; each is one
ranked list per query, and each candidate's trace row names the model of its best dense rank.

The queries are embedded in one batch, then the BM25 searches run on a thread pool while the
calling thread runs the dense searches (``RAG_PARALLEL_RECALL=false`` runs them one after the
other; docs/BENCHMARKS.md has the measurement). Each query's hit ids are
recorded on its ``QueryRun`` so the trace shows what each query found on its own.
"""

from __future__ import annotations

import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from rag.records import Hit, ModelLabel
from rag.retrieval.fusion import Fused, RankedList, Source, rrf_fuse
from rag.retrieval.rerankers import EmbedderVectors, RankedResults
from rag.retrieval.trace import Candidate, Dropped, QueryRun
from rag.source import KnowledgeSource
from rag.stages import Stage

_pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="rag-recall")
DENSE_ONLY_KINDS = {"hyde"}  # a hypothetical passage is a dense query only


@dataclass
class Attempt:
    recall_k: int
    fused: list[Fused]
    dense_model: dict[str, str] = field(default_factory=dict)  # chunk id -> the model of its best dense rank


class MultilingualQueries:
    """The multilingual embedder's query vectors (``query: `` prefix), kept for a wider retry."""

    def __init__(self, embedder) -> None:
        self.embedder = embedder
        self.label: ModelLabel = embedder.label
        self._known: dict[str, np.ndarray] = {}

    def vector(self, text: str) -> np.ndarray:
        return self.vectors([text])[0]

    def vectors(self, texts: list[str]) -> list[np.ndarray]:
        missing = [t for t in dict.fromkeys(texts) if t not in self._known]
        if missing:
            self._known.update(zip(missing, self.embedder.embed_queries(missing), strict=True))
        return [self._known[t] for t in texts]


def _timed(fn, *args) -> tuple[list[Hit], float]:
    t = time.perf_counter()
    out = fn(*args)
    return out, (time.perf_counter() - t) * 1000


class Recall:
    """Runs the queries against one knowledge base; ``run(k)`` may be called again wider."""

    def __init__(
        self,
        kb: KnowledgeSource,
        vectors: EmbedderVectors,
        queries: list[QueryRun],
        allowed,
        rrf_k: int,
        timings,
        dense: bool = True,
        multilingual: MultilingualQueries | None = None,
    ) -> None:
        self.kb, self.vectors, self.queries = kb, vectors, queries
        self.allowed, self.rrf_k, self.timings = allowed, rrf_k, timings
        self.dense = dense  # False: not the knowledge base's embedder (see pipeline.dense_route)
        self.multilingual = multilingual  # the multilingual collection too (see pipeline.dense_plan)

    def _add(self, stage: str, ms: float) -> None:
        self.timings[stage] = self.timings.get(stage, 0.0) + ms

    def run(self, k: int) -> Attempt:
        if self.allowed is not None and not self.allowed:
            for q in self.queries:
                q.dense_ids, q.sparse_ids = [], []
            return Attempt(k, [])  # the filters match no document
        texts = [q.text for q in self.queries]
        t = time.perf_counter()
        vecs = self.vectors.query_vectors(texts) if self.dense else []
        ml_vecs = self.multilingual.vectors(texts) if self.multilingual else []
        self._add(Stage.EMBED, (time.perf_counter() - t) * 1000)
        # BM25 on the pool while this thread runs the dense searches (the vector store's native
        # query releases the GIL). Not during the embedding: Python work in a second thread makes
        # the model's forward pass wait on the GIL and costs more than the overlap saves.
        any_dense = self.dense or self.multilingual is not None
        bm25 = [i for i, q in enumerate(self.queries) if q.kind not in DENSE_ONLY_KINDS or not any_dense]

        def bm25_search(i: int) -> tuple[list[Hit], float]:
            return _timed(self.kb.sparse_search, self.queries[i].text, k, self.allowed)

        sparse: dict[int, Future] = {}
        if self.kb.settings.parallel_recall:
            sparse = {i: _pool.submit(bm25_search, i) for i in bm25}
        lists: list[RankedList] = []
        best: dict[str, tuple[int, str]] = {}  # chunk id -> (best dense rank, its model)
        for i, (q, vec) in enumerate(zip(self.queries, vecs, strict=False)):
            lists.append(self._dense(i, vec, k, False, str(self.kb.embedder.label), best))
            q.dense_ids = [h.chunk.id for h in lists[-1].hits]
        for i, (q, vec) in enumerate(zip(self.queries, ml_vecs, strict=False)):
            lists.append(self._dense(i, vec, k, True, str(self.multilingual.label), best))
            ids = [h.chunk.id for h in lists[-1].hits]
            if self.dense:
                q.multilingual_ids = ids
            else:
                q.dense_ids = ids
        for i in bm25:
            hits, ms = sparse[i].result() if i in sparse else bm25_search(i)
            self._add(Stage.BM25, ms)
            self.queries[i].sparse_ids = [h.chunk.id for h in hits]
            lists.append(RankedList(i, Source.SPARSE, hits))
        t = time.perf_counter()
        fused = rrf_fuse(lists, self.rrf_k)
        self._add(Stage.RRF, (time.perf_counter() - t) * 1000)
        return Attempt(k, fused, {cid: model for cid, (_, model) in best.items()})

    def _dense(self, i: int, vec, k: int, multilingual: bool, model: str, best: dict) -> RankedList:
        """One dense search, timed; ``best`` keeps each chunk's best dense rank with its model."""
        search = self.kb.dense_search
        hits, ms = _timed(
            lambda: search(vec, k, self.allowed, multilingual=True) if multilingual else search(vec, k, self.allowed)
        )
        self._add(Stage.DENSE, ms)
        for rank, h in enumerate(hits, 1):
            if h.chunk.id not in best or rank < best[h.chunk.id][0]:
                best[h.chunk.id] = (rank, model)
        return RankedList(i, Source.DENSE, hits)


def to_candidates(attempt: Attempt, ranked: RankedResults, base_k: int, pool_size: int) -> list[Candidate]:
    """Trace rows for every fused candidate, with rerank fields and recall/fusion drops."""
    scores = ranked.by_id()
    rows = []
    for f in attempt.fused:
        c = f.chunk
        row = Candidate.from_chunk(
            c,
            dense_rank=f.dense_rank,
            dense_score=f.dense_score,
            sparse_rank=f.sparse_rank,
            sparse_score=f.sparse_score,
            fused_rank=f.fused_rank,
            fused_score=f.fused_score,
            found_by=list(f.found_by),
            dense_model=attempt.dense_model.get(c.id, ""),
        )
        if c.id in scores:
            row.rerank_rank, row.rerank_score = scores[c.id].rank, scores[c.id].score
        else:
            row.dropped_by = Dropped.RECALL_CUT if widened_only(row, attempt, base_k) else Dropped.FUSION_CUT
        rows.append(row)
    return rows


def widened_only(row: Candidate, attempt: Attempt, base_k: int) -> bool:
    """Seen only because a wider retry looked past ``base_k`` in every retriever."""
    return attempt.recall_k > base_k and all(r is None or r > base_k for r in (row.dense_rank, row.sparse_rank))
