"""Metrics against hand-computed values, and against ir-measures (pytrec_eval) on random rankings."""

from __future__ import annotations

import math
import random

import ir_measures
import pytest

from rag.eval.metrics import (
    answer_match,
    answer_tokens,
    citation_validity,
    contains_answer,
    hit_rate,
    latency_summary,
    mean,
    mrr,
    ndcg_at_k,
    precision_at_k,
    ranking_metrics,
    recall_at_k,
    refusal_stats,
    token_recall,
)

RANKED = ["a", "b", "c", "d", "e"]


def test_one_hit_at_rank_3():
    rel = {"c": 1}
    assert [recall_at_k(RANKED, rel, k) for k in (1, 2, 3, 5)] == [0.0, 0.0, 1.0, 1.0]
    assert precision_at_k(RANKED, rel, 3) == pytest.approx(1 / 3)
    assert precision_at_k(RANKED, rel, 5) == pytest.approx(0.2)
    assert [hit_rate(RANKED, rel, k) for k in (2, 3)] == [0.0, 1.0]
    assert mrr(RANKED, rel) == pytest.approx(1 / 3)
    assert mrr(RANKED, rel, 2) == 0.0
    assert ndcg_at_k(RANKED, rel, 3) == pytest.approx(1 / math.log2(4))  # 0.5
    assert ndcg_at_k(RANKED, rel, 2) == 0.0


def test_k_zero_is_zero():
    rel = {"a": 1}
    for metric in (recall_at_k, precision_at_k, hit_rate, mrr, ndcg_at_k):
        assert metric(RANKED, rel, 0) == 0.0


def test_negative_k_raises():
    with pytest.raises(ValueError, match="k must be >= 0"):
        recall_at_k(RANKED, {"a": 1}, -1)


def test_no_relevant_is_undefined_and_left_out_of_means():
    for rel in ({}, {"a": 0}):
        values = ranking_metrics(RANKED, rel, ks=(1, 5))
        assert set(values.values()) == {None}
    assert mean([1.0, None, 0.0]) == 0.5
    assert mean([None, None]) is None


def test_all_hits():
    rel = {"a": 1, "b": 1, "c": 1}
    values = ranking_metrics(["a", "b", "c"], rel, ks=(3,))
    assert values == {"recall@3": 1.0, "precision@3": 1.0, "hit@3": 1.0, "mrr@3": 1.0, "ndcg@3": 1.0}


def test_graded_ndcg_by_hand():
    rel = {"a": 1, "b": 0, "c": 3, "d": 2}  # d is relevant but not retrieved
    dcg = 1 / math.log2(2) + 0 + 3 / math.log2(4)  # 1 + 1.5
    idcg = 3 / math.log2(2) + 2 / math.log2(3) + 1 / math.log2(4)
    assert ndcg_at_k(["a", "b", "c"], rel, 3) == pytest.approx(dcg / idcg)
    assert ndcg_at_k(["c", "d", "a"], rel, 3) == pytest.approx(1.0)
    assert recall_at_k(["a", "b", "c"], rel, 3) == pytest.approx(2 / 3)  # grade 0 is not relevant


def test_duplicates_count_once_and_short_lists_are_not_rewarded():
    assert mrr(["a", "a", "b"], {"b": 1}) == pytest.approx(0.5)
    assert precision_at_k(["a"], {"a": 1}, 5) == pytest.approx(0.2)


def _random_case(rng: random.Random) -> tuple[dict[str, int], list[str]]:
    pool = [f"d{i}" for i in range(30)]
    judged = rng.sample(pool, rng.randint(1, 12))
    qrels = {d: rng.choice([0, 1, 1, 2, 3]) for d in judged}
    ranked = rng.sample(pool, rng.randint(0, 20))
    return qrels, ranked


def test_agrees_with_ir_measures_on_random_rankings():
    rng = random.Random(20250701)
    cases = {f"q{i}": _random_case(rng) for i in range(40)}
    qrels = [ir_measures.Qrel(q, d, g) for q, (rel, _) in cases.items() for d, g in rel.items()]
    run = [ir_measures.ScoredDoc(q, d, 100.0 - i) for q, (_, ranked) in cases.items() for i, d in enumerate(ranked)]
    measures = {}
    for k in (1, 3, 5, 10):
        measures |= {
            f"ndcg@{k}": ir_measures.nDCG @ k,
            f"precision@{k}": ir_measures.P @ k,
            f"recall@{k}": ir_measures.R @ k,
            f"mrr@{k}": ir_measures.RR @ k,
            f"hit@{k}": ir_measures.Success @ k,
        }
    by_measure = {m: name for name, m in measures.items()}
    checked = 0
    for metric in ir_measures.iter_calc(list(measures.values()), qrels, run):
        rel, ranked = cases[metric.query_id]
        ours = ranking_metrics(ranked, rel, ks=(1, 3, 5, 10))[by_measure[metric.measure]]
        if ours is None:  # no relevant document: trec_eval reports 0, we leave the question out
            assert metric.value == 0.0
            continue
        assert ours == pytest.approx(metric.value, abs=1e-9), (metric.query_id, metric.measure)
        checked += 1
    assert checked > 500


def test_refusal_stats():
    stats = refusal_stats([(True, True), (True, False), (False, True), (False, False), (False, False)])
    assert (stats.total, stats.should_refuse) == (5, 2)
    assert (stats.correct_refusals, stats.answered_when_should_refuse) == (1, 1)
    assert (stats.false_refusals, stats.answered) == (1, 2)
    assert stats.accuracy == pytest.approx(3 / 5)
    assert stats.refusal_recall == pytest.approx(0.5)
    assert stats.refusal_precision == pytest.approx(0.5)
    assert stats.false_refusal_rate == pytest.approx(1 / 3)
    assert stats.as_dict()["accuracy"] == pytest.approx(0.6)


def test_refusal_stats_empty():
    stats = refusal_stats([])
    assert stats.total == 0
    assert stats.accuracy is None and stats.refusal_recall is None and stats.false_refusal_rate is None


def test_citation_validity():
    assert citation_validity([True, True, False, True]) == pytest.approx(0.75)
    assert citation_validity([]) is None


def test_answer_tokens_fold_case_numbers_and_cjk():
    assert answer_tokens("USD 2,500 Approved!") == ["usd", "2500", "approved"]
    assert answer_tokens("每人每天180元") == ["每", "人", "每", "天", "180", "元"]


@pytest.mark.parametrize(
    ("answer", "reference", "expected"),
    [
        ("Employees get 25 working days of leave [1].", "25 working days", True),
        ("Claims up to USD 2500 need a manager.", "USD 2,500", True),
        ("一线城市每人每天180元。", "每人每天 180 元", True),
        ("Employees get 25 days.", "25 working days", False),
        ("The cap is USD 3200.", "USD 320", False),  # token boundaries, not raw substrings
        ("anything", "", False),
    ],
)
def test_contains_answer(answer, reference, expected):
    assert contains_answer(answer, reference) is expected


def test_token_recall():
    assert token_recall("40 widgets", "40 widgets (raised from 24)") == pytest.approx(2 / 5)
    assert token_recall("anything", "...") is None
    match = answer_match("The limit is 40 widgets.", "40 widgets")
    assert match.contained and match.token_recall == 1.0


def test_latency_summary():
    summary = latency_summary([30.0, 10.0, 20.0, 40.0])
    assert summary == {"mean": 25.0, "p50": 20.0, "p95": 40.0, "max": 40.0}
    assert latency_summary([])["p50"] is None
