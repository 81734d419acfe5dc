"""One reading of a question (rag.text.question.analyse), read by retrieval and the answerer."""

from __future__ import annotations

import dataclasses

import pytest
from answer_helpers import REFUND, SHIPPING, make_evidence

from rag.answer import answer_question
from rag.answer.base import DraftRequest
from rag.answer.question import question_parts
from rag.answer.support import EvidenceIndex
from rag.config import Settings
from rag.retrieval.answerability.terms import question_terms
from rag.text.question import QuestionAnalysis, analyse
from rag.text.terms import AnswerKind


def test_the_analysis_is_frozen_and_read_once():
    a = analyse("What is the nightly hotel cap in Lisbon?")
    assert isinstance(a, QuestionAnalysis)
    assert analyse("What is the nightly hotel cap in Lisbon?") is a  # every stage gets the same reading
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.script = "cjk"  # type: ignore[misc]


def test_a_mixed_question_reads_chinese_everywhere():
    a = analyse("iPhone 15的价格是多少")
    assert (a.script, a.chinese, a.asks, a.wants_figure) == ("cjk", True, AnswerKind.NUMBER, True)
    assert question_parts(a)[0].cjk


def test_terms_salience_figures_dates_and_parts():
    a = analyse("What is the Wi-Fi password in the Dublin office?")
    assert dict(a.terms) == dict(question_terms(a.text))
    assert a.salience["password"] == len(a.terms) - 1  # the asked thing weighs as much as the rest
    assert {a.salience[t] for t in a.terms if t != "password"} == {1.0}
    compound = analyse("What is the cap in London, and who approves exceptions?")
    assert compound.parts == ("What is the cap in London", "who approves exceptions?")
    assert [p.text for p in question_parts(compound)] == list(compound.parts)
    zh = analyse("2022年特斯拉交付量是什么时候公布的？")
    assert zh.asks is AnswerKind.DATE and zh.wants_figure
    assert analyse("餐费补贴和住宿标准分别是多少？").parts == ("餐费补贴是多少？", "住宿标准是多少？")


def test_the_answerer_reads_the_analysis_it_is_handed():
    """The ask reads the question once (stream_ask) and hands that reading to the answerer: the
    parts it answers are the handed analysis's parts, not a second reading of the text."""
    question = "How long do customers have to request a refund, and how long does standard delivery take?"
    _, evidence = make_evidence([REFUND, SHIPPING])
    whole = answer_question(question, evidence, Settings(), None)
    assert sorted({n for s in whole.sentences for n in s.citations}) == [1, 2]
    first_part_only = dataclasses.replace(analyse(question), parts=analyse(question).parts[:1])
    narrowed = answer_question(question, evidence, Settings(), None, analysis=first_part_only)
    assert not narrowed.refused
    assert {n for s in narrowed.sentences for n in s.citations} == {1}


def test_an_analysis_of_another_question_is_refused():
    _, evidence = make_evidence([REFUND])
    index = EvidenceIndex([REFUND], None)
    with pytest.raises(ValueError, match="handed with question"):
        DraftRequest("How long is the refund window?", evidence, index, analysis=analyse("Who pays shipping?"))
