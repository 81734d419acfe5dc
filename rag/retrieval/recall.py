"""Hybrid recall for one attempt: every query to dense and BM25 in parallel, then RRF.

The queries are embedded in one batch, then the BM25 searches run on a thread pool while the
calling thread runs the dense searches (``RAG_PARALLEL_RECALL=false`` runs them one after the
other; docs/BENCHMARKS.md has the measurement). Each query's hit ids are
recorded on its ``QueryRun`` so the trace shows what each query found on its own.
"""

from __future__ import annotations

import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from rag.records import Hit
from rag.retrieval.fusion import Fused, RankedList, Source, rrf_fuse
from rag.retrieval.rerankers import EmbedderVectors, RankedResults
from rag.retrieval.trace import Candidate, Dropped, QueryRun
from rag.stages import Stage

_pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="rag-recall")
DENSE_ONLY_KINDS = {"hyde"}  # a hypothetical passage is a dense query only


@dataclass
class Attempt:
    recall_k: int
    fused: list[Fused]


def _timed(fn, *args) -> tuple[list[Hit], float]:
    t = time.perf_counter()
    out = fn(*args)
    return out, (time.perf_counter() - t) * 1000


class Recall:
    """Runs the queries against one knowledge base; ``run(k)`` may be called again wider."""

    def __init__(
        self, kb, vectors: EmbedderVectors, queries: list[QueryRun], allowed, rrf_k: int, timings, dense: bool = True
    ) -> None:
        self.kb, self.vectors, self.queries = kb, vectors, queries
        self.allowed, self.rrf_k, self.timings = allowed, rrf_k, timings
        self.dense = dense  # False: BM25 only (see pipeline.dense_route)

    def _add(self, stage: str, ms: float) -> None:
        self.timings[stage] = self.timings.get(stage, 0.0) + ms

    def run(self, k: int) -> Attempt:
        if self.allowed is not None and not self.allowed:
            for q in self.queries:
                q.dense_ids, q.sparse_ids = [], []
            return Attempt(k, [])  # the filters match no document
        t = time.perf_counter()
        vecs = self.vectors.query_vectors([q.text for q in self.queries]) if self.dense else []
        self._add(Stage.EMBED, (time.perf_counter() - t) * 1000)
        # BM25 on the pool while this thread runs the dense searches (the vector store's native
        # query releases the GIL). Not during the embedding: Python work in a second thread makes
        # the model's forward pass wait on the GIL and costs more than the overlap saves.
        bm25 = [i for i, q in enumerate(self.queries) if q.kind not in DENSE_ONLY_KINDS or not self.dense]

        def bm25_search(i: int) -> tuple[list[Hit], float]:
            return _timed(self.kb.sparse_search, self.queries[i].text, k, self.allowed)

        sparse: dict[int, Future] = {}
        if self.kb.settings.parallel_recall:
            sparse = {i: _pool.submit(bm25_search, i) for i in bm25}
        lists: list[RankedList] = []
        for i, (q, vec) in enumerate(zip(self.queries, vecs, strict=False)):
            hits, ms = _timed(self.kb.dense_search, vec, k, self.allowed)
            self._add(Stage.DENSE, ms)
            q.dense_ids = [h.chunk.id for h in hits]
            lists.append(RankedList(i, Source.DENSE, hits))
        for i in bm25:
            hits, ms = sparse[i].result() if i in sparse else bm25_search(i)
            self._add(Stage.BM25, ms)
            self.queries[i].sparse_ids = [h.chunk.id for h in hits]
            lists.append(RankedList(i, Source.SPARSE, hits))
        t = time.perf_counter()
        fused = rrf_fuse(lists, self.rrf_k)
        self._add(Stage.RRF, (time.perf_counter() - t) * 1000)
        return Attempt(k, fused)


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
