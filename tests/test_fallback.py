"""Fallback: every branch reached on a tiny knowledge base; rules and LLM-judged decisions."""

from __future__ import annotations

import pytest

from rag.config import Settings
from rag.retrieval.fallback import REFUSAL_TEXT, Evidence, decide, decide_by_rules, vagueness
from rag.retrieval.pipeline import retrieve
from rag.retrieval.trace import Dropped, FallbackAction
from tests.retrieval_fakes import FakeDoc, FakeKB, HashEmbedder


@pytest.fixture()
def kb():
    docs = [
        FakeDoc("travel", ["Economy class is required for flights under six hours.", "Hotels up to 180 EUR a night."]),
        FakeDoc("leave", ["Full-time employees get 25 days of paid annual leave.", "Carry over at most 5 days."]),
    ] + [FakeDoc(f"filler{i}", [f"Filler paragraph number {i} about office plants and chairs."]) for i in range(30)]
    return FakeKB("tiny", docs, HashEmbedder(), settings=Settings(recall_k=3, top_n=2))


def ev(best, attempt=1, recalled=5, q="How many days of paid annual leave do employees get?", calibrated=True):
    return Evidence(q, best, 0.4, calibrated, recalled, attempt)


def test_rules_answer_retry_clarify_reject():
    assert decide_by_rules(ev(0.9)).action is FallbackAction.ANSWER
    d = decide_by_rules(ev(0.1))
    assert d.action is FallbackAction.RETRY_WIDER and d.best_score == 0.1 and d.threshold == 0.4
    assert "0.100 < threshold 0.400" in d.reason
    d = decide_by_rules(ev(0.1, attempt=2))
    assert d.action is FallbackAction.REJECT and d.message == REFUSAL_TEXT
    d = decide_by_rules(ev(0.1, attempt=2, q="and it?"))
    assert d.action is FallbackAction.CLARIFY and "more specific" in d.message
    d = decide_by_rules(ev(None, recalled=0))
    assert d.action is FallbackAction.REJECT and "nothing was recalled" in d.reason and d.margin is None


def test_fixed_policies_and_uncalibrated_scores():
    assert decide_by_rules(ev(0.1), "reject").action is FallbackAction.REJECT
    assert decide_by_rules(ev(0.1), "clarify").action is FallbackAction.CLARIFY
    assert decide_by_rules(ev(0.1, attempt=2), "retry_wider").action is FallbackAction.REJECT
    d = decide_by_rules(ev(0.01, calibrated=False))
    assert d.action is FallbackAction.ANSWER and "not calibrated" in d.reason


def test_vagueness():
    assert vagueness("leave?")
    assert vagueness("what about this one")
    assert not vagueness("How many days of paid annual leave do employees get?")


def test_llm_judge_and_bad_llm_output_falls_back_to_rules():
    d = decide(ev(0.1), llm=lambda p, k: {"action": "clarify", "reason": "ambiguous", "message": "Which year?"})
    assert (d.action, d.judged_by, d.message) == (FallbackAction.CLARIFY, "llm", "Which year?")
    assert "LLM: ambiguous" in d.reason and "0.100" in d.reason
    d = decide(ev(0.1), llm=lambda p, k: {"action": "answer", "reason": "x"})  # not an allowed action
    assert d.judged_by == "rules" and d.action is FallbackAction.RETRY_WIDER and "unusable" in d.reason
    d = decide(ev(0.1), llm=lambda p, k: "garbage")
    assert d.judged_by == "rules"
    d = decide(ev(0.9), llm=lambda p, k: {"action": "reject", "reason": "x"})
    assert d.action is FallbackAction.ANSWER and d.judged_by == "rules"  # strong evidence: no LLM call


def test_strong_evidence_answers(kb):
    t = retrieve(
        kb, "How many days of paid annual leave?", kb.settings.replace(rerank_threshold=0.0, answerable_threshold=0.0)
    )
    assert t.fallback.action is FallbackAction.ANSWER and t.attempts == 1
    assert t.evidence() and all(c.dropped_by is None for c in t.evidence())


def test_retry_wider_really_widens(kb):
    forced = kb.settings.replace(rerank_threshold=0.999, answerable_threshold=0.999)
    t = retrieve(kb, "office plants and chairs", forced)
    assert t.attempts == 2
    assert "attempt 1" in t.fallback.reason and "retry" not in t.fallback.action.value
    assert len(t.queries[0].dense_ids) == 6 and len(t.queries[0].sparse_ids) == 6  # recall_k 3 -> 6
    assert any(c.dropped_by is Dropped.RECALL_CUT for c in t.candidates)
    assert t.fallback.action is FallbackAction.REJECT and t.fallback.message.endswith(REFUSAL_TEXT)
    assert not t.evidence() and any(c.dropped_by is Dropped.THRESHOLD for c in t.candidates)


def test_vague_question_gets_a_question_back(kb):
    t = retrieve(kb, "and this?", kb.settings.replace(rerank_threshold=0.999, answerable_threshold=0.999))
    assert t.fallback.action is FallbackAction.CLARIFY and t.fallback.message.endswith("period.")


def test_nothing_recalled_never_crashes(kb):
    t = retrieve(kb, "annual leave days", filters={"doc_ids": ["no-such-doc"]})
    assert t.candidates == [] and t.fallback.action is FallbackAction.REJECT
    assert "nothing was recalled" in t.fallback.reason and t.attempts == 1
    empty = FakeKB("empty", [], HashEmbedder())
    t = retrieve(empty, "annual leave days")
    assert t.candidates == [] and t.fallback.best_score is None


def test_a_term_the_documents_never_use_is_refused_without_a_wider_retry(kb):
    t = retrieve(kb, "How many days of paid sabbatical do employees get?")  # real default thresholds
    assert t.fallback.action is FallbackAction.REJECT and t.attempts == 1
    assert t.answerability.absent_terms == ["sabbatical"] and not t.answerability.answerable
    assert t.fallback.message.startswith("The documents don't mention 'sabbatical'.")
    assert "P(answerable)" in t.fallback.reason
    assert "; The documents don't mention 'sabbatical'; question is specific" in t.fallback.reason  # one sentence
