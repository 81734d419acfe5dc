"""Reciprocal Rank Fusion written out, so every candidate keeps each retriever's own rank and score.

Each query sent to the retrievers contributes two ranked lists (dense and BM25). A candidate's
fused score is ``sum(1 / (k + rank))`` over every list it appears in (ranks are 1-based).
Per-retriever ranks and scores are kept beside the fused ones: when several queries found the
same chunk, its dense (or BM25) rank is the best one any query gave it, with that query's score.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from rag.records import ChunkRecord, Hit

RRF_K = 60  # Cormack et al. 2009


class Source(StrEnum):
    DENSE = "dense"
    SPARSE = "sparse"


@dataclass(frozen=True)
class RankedList:
    """One retriever's hits for one query, best first."""

    query_index: int
    source: Source
    hits: Sequence[Hit]


@dataclass
class Fused:
    """A fused candidate: the chunk, each retriever's best rank/score, and the RRF rank/score."""

    chunk: ChunkRecord
    dense_rank: int | None = None
    dense_score: float | None = None
    sparse_rank: int | None = None
    sparse_score: float | None = None
    fused_rank: int = 0
    fused_score: float = 0.0
    found_by: list[int] = field(default_factory=list)
    dense_by_query: dict[int, float] = field(default_factory=dict)  # query index -> dense score

    @property
    def chunk_id(self) -> str:
        return self.chunk.id


def rrf_fuse(lists: Sequence[RankedList], k: int = RRF_K) -> list[Fused]:
    """Fuse ranked lists with RRF; returns candidates by fused score, with ``fused_rank`` 1..n.

    Ties on the fused score are broken by the best single-list rank, then by chunk id, so the
    order is deterministic.
    """
    if k < 1:
        raise ValueError(f"RRF constant k must be at least 1, got {k}")
    pool: dict[str, Fused] = {}
    for ranked in lists:
        seen_here: set[str] = set()
        for rank, hit in enumerate(ranked.hits, start=1):
            if hit.chunk.id in seen_here:
                continue  # a retriever listing a chunk twice counts once, at its best rank
            seen_here.add(hit.chunk.id)
            cand = pool.setdefault(hit.chunk.id, Fused(chunk=hit.chunk))
            cand.fused_score += 1.0 / (k + rank)
            _keep_best(cand, ranked.source, rank, hit.score)
            if ranked.source is Source.DENSE:
                cand.dense_by_query.setdefault(ranked.query_index, float(hit.score))
            if ranked.query_index not in cand.found_by:
                cand.found_by.append(ranked.query_index)
    ordered = sorted(pool.values(), key=_order_key)
    for i, cand in enumerate(ordered, start=1):
        cand.fused_rank = i
        cand.found_by.sort()
    return ordered


def _keep_best(cand: Fused, source: Source, rank: int, score: float) -> None:
    if source is Source.DENSE:
        if cand.dense_rank is None or rank < cand.dense_rank:
            cand.dense_rank, cand.dense_score = rank, float(score)
    elif cand.sparse_rank is None or rank < cand.sparse_rank:
        cand.sparse_rank, cand.sparse_score = rank, float(score)


def _order_key(cand: Fused) -> tuple[float, int, str]:
    best = min(r for r in (cand.dense_rank, cand.sparse_rank) if r is not None)
    return (-cand.fused_score, best, cand.chunk.id)
