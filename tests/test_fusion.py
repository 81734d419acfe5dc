"""RRF on hand-built ranked lists: exact order, ranks and scores."""

from __future__ import annotations

import pytest

from rag.records import ChunkRecord, Hit
from rag.retrieval.fusion import RRF_K, RankedList, Source, rrf_fuse


def hit(cid: str, score: float) -> Hit:
    rec = ChunkRecord(cid, "d", 1, 1, 0, 0, 1, (), f"text {cid}")
    return Hit(rec, score)


def dense(q: int, *pairs) -> RankedList:
    return RankedList(q, Source.DENSE, [hit(c, s) for c, s in pairs])


def sparse(q: int, *pairs) -> RankedList:
    return RankedList(q, Source.SPARSE, [hit(c, s) for c, s in pairs])


def test_rrf_k_is_cormack_default():
    assert RRF_K == 60


def test_two_lists_exact_order_ranks_and_scores():
    fused = rrf_fuse([dense(0, ("a", 0.9), ("b", 0.8), ("c", 0.7)), sparse(0, ("c", 12.0), ("a", 9.0), ("d", 3.0))])
    assert [f.chunk_id for f in fused] == ["a", "c", "b", "d"]
    assert [f.fused_rank for f in fused] == [1, 2, 3, 4]
    a, c, b, d = fused
    assert a.fused_score == pytest.approx(1 / 61 + 1 / 62)
    assert c.fused_score == pytest.approx(1 / 63 + 1 / 61)
    assert b.fused_score == pytest.approx(1 / 62)
    assert (a.dense_rank, a.dense_score, a.sparse_rank, a.sparse_score) == (1, 0.9, 2, 9.0)
    assert (c.dense_rank, c.sparse_rank, c.sparse_score) == (3, 1, 12.0)
    assert (b.sparse_rank, b.sparse_score) == (None, None)
    assert (d.dense_rank, d.dense_score, d.sparse_rank) == (None, None, 3)


def test_ties_break_on_best_single_rank_then_id():
    # b and x each appear once at rank 2 (tie on score and rank) -> id order; a beats them (rank 1)
    fused = rrf_fuse([dense(0, ("a", 1.0), ("x", 0.5)), sparse(0, ("z", 3.0), ("b", 2.0))])
    assert [f.chunk_id for f in fused] == ["a", "z", "b", "x"]


def test_several_queries_fuse_and_keep_best_rank_per_retriever():
    lists = [
        dense(0, ("a", 0.9), ("b", 0.5)),
        sparse(0, ("b", 4.0)),
        dense(1, ("b", 0.95), ("c", 0.6)),
        sparse(1, ("c", 7.0), ("a", 1.0)),
    ]
    fused = {f.chunk_id: f for f in rrf_fuse(lists)}
    assert fused["b"].fused_score == pytest.approx(1 / 62 + 1 / 61 + 1 / 61)
    assert (fused["b"].dense_rank, fused["b"].dense_score) == (1, 0.95)  # from query 1
    assert fused["b"].found_by == [0, 1]
    assert fused["c"].found_by == [1]
    assert fused["a"].found_by == [0, 1]
    assert [f.chunk_id for f in rrf_fuse(lists)] == ["b", "a", "c"]


def test_custom_k_and_duplicates_within_a_list_count_once():
    fused = rrf_fuse([dense(0, ("a", 0.9), ("a", 0.8), ("b", 0.1))], k=1)
    assert [f.chunk_id for f in fused] == ["a", "b"]
    assert fused[0].fused_score == pytest.approx(1 / 2)
    assert fused[1].fused_score == pytest.approx(1 / 4)  # b keeps its position in the list


def test_empty_and_bad_k():
    assert rrf_fuse([]) == []
    assert rrf_fuse([dense(0), sparse(0)]) == []
    with pytest.raises(ValueError):
        rrf_fuse([], k=0)
