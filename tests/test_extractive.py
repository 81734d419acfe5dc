"""The extractive generator (default, no LLM): shown sentences are verbatim evidence with the right [n]."""

from __future__ import annotations

import re

import pytest
from answer_helpers import INJECTION, REFUND, SHIPPING, make_evidence, minilm_embed

from rag.answer import (
    REFUSAL_TEXT,
    REFUSAL_TEXT_ZH,
    EventKind,
    IssueCode,
    SentenceKind,
    answer_question,
    render_markdown,
    stream_answer,
)
from rag.config import Settings

DEFAULT = Settings()

ENGLISH = [
    "Leave policy. Full-time employees receive 25 days of paid annual leave per year. "
    "Unused leave of up to 5 days may be carried over to the next year.",
    SHIPPING,
    REFUND,
    INJECTION,
    "Security. Laptops must be locked with a password when unattended. "
    "Lost devices must be reported to IT within 24 hours.",
]
CHINESE = [
    "休假制度。全职员工每年享有25天带薪年假。未使用的年假最多可结转5天到下一年。",
    "退款政策。客户可以在购买后7天内申请退款。退款将在5个工作日内退回原支付方式。",
    "信息安全。笔记本电脑在无人看管时必须锁屏。设备丢失须在24小时内报告IT部门。",
]


@pytest.fixture(scope="session")
def embed():
    return minilm_embed()


def assert_verbatim(answer, evidence):
    """Every shown sentence is a substring of the chunk it cites, and each cites exactly one chunk."""
    assert not answer.refused
    for s in answer.sentences:
        assert s.kind is SentenceKind.CLAIM and s.verified
        [n] = s.citations
        assert s.text in evidence[n - 1].text, (s.text, n)
    for c in answer.citations:
        assert c.quote in evidence[c.n - 1].text


@pytest.mark.parametrize(
    ("question", "expected_n", "must_contain"),
    [
        ("How many days of annual leave do full-time employees get?", 1, "25 days"),
        ("How long do customers have to request a refund?", 3, "7 days"),
        ("When must a lost laptop be reported?", 5, "24 hours"),
        ("Is shipping free?", 2, "free"),
    ],
)
def test_english_answers_are_verbatim_and_cited(embed, question, expected_n, must_contain):
    _, evidence = make_evidence(ENGLISH)
    answer = answer_question(question, evidence, DEFAULT, embed)
    assert_verbatim(answer, evidence)
    assert answer.generator.backend == "extractive"
    assert expected_n in answer.sentences[0].citations + [n for s in answer.sentences for n in s.citations]
    assert must_contain in answer.text
    assert "42" not in answer.text and "ignore" not in answer.text.lower()


@pytest.mark.parametrize(
    ("question", "expected_n", "must_contain"),
    [
        ("全职员工每年有多少天带薪年假？", 1, "25天"),
        ("客户可以在购买后多久申请退款？", 2, "7天"),
        ("设备丢失后多久必须报告？", 3, "24小时"),
    ],
)
def test_chinese_answers_are_verbatim_and_cited(embed, question, expected_n, must_contain):
    _, evidence = make_evidence(CHINESE, doc_id="zh", doc_name="员工手册.pdf")
    answer = answer_question(question, evidence, DEFAULT, embed)
    assert_verbatim(answer, evidence)
    assert expected_n in [n for s in answer.sentences for n in s.citations]
    assert must_contain in answer.text


@pytest.mark.parametrize(
    ("chinese", "question", "why"),
    [
        (False, "How many days of annual leave do Contoso employees get?", "The evidence never names 'Contoso'."),
        (
            False,
            "Who pays for a lost laptop?",
            "No sentence holds what it asks for: the closest, [5] “Lost devices must be reported to IT within 24 "
            "hours.”, lacks 'pay', 'laptop'.",
        ),
        (
            False,
            "How much does the company pay towards a new laptop?",
            "The best sentence, [1] “Full-time employees receive 25 days of paid annual leave per year.”, scores "
            "SCORE, under the 0.300 an answer needs.",
        ),
        (
            True,
            "设备丢失后由谁赔偿？",
            "没有句子包含问题所问的内容：最接近的是 [3] “设备丢失须在24小时内报告IT部门。”，缺少“赔偿”。",
        ),
        (
            True,
            "年假可以折算成多少工资？",
            "最好的句子 [1] “全职员工每年享有25天带薪年假。” 的得分为 SCORE，低于回答所需的 0.300。",
        ),
    ],
)
def test_the_answerer_s_refusal_says_which_sentence_came_closest_and_what_it_lacks(embed, chinese, question, why):
    """The decision to answer is retrieval's; an answerer that then finds no sentence says why, in
    the question's language: a name the evidence never mentions, the closest sentence and the
    asked thing it lacks, or the best sentence's score (SCORE: any under the floor) under the floor an
    answer needs."""
    _, evidence = make_evidence(CHINESE, doc_id="zh", doc_name="员工手册.pdf") if chinese else make_evidence(ENGLISH)
    answer = answer_question(question, evidence, DEFAULT, embed)
    assert answer.refused and answer.text.endswith(REFUSAL_TEXT_ZH if chinese else REFUSAL_TEXT)
    assert re.fullmatch(re.escape(why).replace("SCORE", r"0\.[0-2]\d\d"), answer.refusal_reason), answer.refusal_reason
    assert [w.code for w in answer.warnings if w.code is IssueCode.NO_ANSWER] == [IssueCode.NO_ANSWER]


def test_spans_are_document_offsets(embed):
    doc, evidence = make_evidence(ENGLISH)
    answer = answer_question("How long do customers have to request a refund?", evidence, DEFAULT, embed)
    for c in answer.citations:
        assert doc[c.start : c.end] == c.quote
        assert c.start - c.chunk_char_start >= 0


def test_unrelated_question_is_refused(embed):
    _, evidence = make_evidence(ENGLISH)
    answer = answer_question("What is the boiling point of liquid nitrogen on Mars?", evidence, DEFAULT, embed)
    assert answer.refused and answer.text == REFUSAL_TEXT


def test_overlapping_chunks_do_not_repeat_sentences(embed):
    overlap = REFUND + " " + SHIPPING
    _, evidence = make_evidence([REFUND, overlap])
    answer = answer_question("How long do customers have to request a refund?", evidence, DEFAULT, embed)
    texts = [s.text for s in answer.sentences]
    assert len(texts) == len(set(texts))


def test_streams_evidence_then_sentences_then_final(embed):
    _, evidence = make_evidence(ENGLISH)
    events = list(stream_answer("How long do customers have to request a refund?", evidence, DEFAULT, embed))
    assert events[0].kind is EventKind.EVIDENCE and events[-1].kind is EventKind.FINAL
    sentences = [e.sentence for e in events if e.kind is EventKind.SENTENCE]
    assert sentences == events[-1].answer.sentences


def test_works_without_an_embedder():
    _, evidence = make_evidence(ENGLISH)
    answer = answer_question(
        "How many days of paid annual leave do full-time employees receive?", evidence, DEFAULT, None
    )
    assert_verbatim(answer, evidence)
    assert "25 days" in answer.text and "lexical only" in answer.generator.model


def test_bracketed_numbers_in_the_source_are_not_read_as_citations(embed):
    paper = "Results. Prior studies [12] found that sleep improves memory consolidation in adults."
    _, evidence = make_evidence([SHIPPING, paper], doc_id="paper")
    answer = answer_question("Does sleep improve memory consolidation?", evidence, DEFAULT, embed)
    assert_verbatim(answer, evidence)
    assert answer.sentences[0].citations == [2] and "[12]" in answer.sentences[0].text
    assert "[^12]" not in render_markdown(answer)


def test_a_footnote_marker_after_the_sentence_does_not_leave_it_uncited(embed):
    """Wikipedia-style sources end sentences with "[33]": the [n] goes after the sentence it cites,
    not after the footnote, or the validator reads "…市长。" as a sentence citing nothing."""
    news = "2022年11月26日，蒋万安当选台北市市长，并以43岁的年纪成为历任最年轻市长。[33]他于12月25日就职。"
    _, evidence = make_evidence([CHINESE[0], news], doc_id="news")
    answer = answer_question("蒋万安何时当选台北市市长？", evidence, DEFAULT, embed)
    assert_verbatim(answer, evidence)
    assert answer.sentences[0].citations == [2] and "[33]" not in answer.text
    assert answer.text.startswith("2022年11月26日，蒋万安当选台北市市长") and answer.text.count("[2]") == 1
