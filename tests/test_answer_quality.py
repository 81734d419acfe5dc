"""Answer metrics that can fail, on hand-built answers and runs with known values."""

from __future__ import annotations

import json

import pytest

from rag.answer.result import (
    Answer,
    AnswerSentence,
    Citation,
    DraftRejection,
    Issue,
    IssueCode,
    Outcome,
    SentenceKind,
)
from rag.eval.gold.goldset import GoldItem, Passage
from rag.eval.runs.answer_quality import answer_counts, on_gold
from rag.eval.runs.results import EvalRun, QuestionResult
from rag.eval.runs.summary import summarize
from rag.eval.runs.tables import run_text
from rag.retrieval.trace import ModelLabel

DOC = "travel.md"
# gold: the cap sentence [100, 160) grade 2, the approver sentence [200, 260) grade 2, a context
# sentence [300, 340) grade 1; the meal allowance sentence [400, 450) is not relevant.
ITEM = GoldItem(
    id="cap",
    question="What is the hotel cap in London, and who approves exceptions?",
    relevant=(
        Passage(doc=DOC, start=100, end=160, grade=2),
        Passage(doc=DOC, start=200, end=260, grade=2),
        Passage(doc=DOC, start=300, end=340),
    ),
    key_facts=("USD 320", "finance director"),
)


def cite(n: int, sentence: int, start: int, end: int, doc: str = DOC) -> Citation:
    return Citation(
        n=n, sentence=sentence, chunk_id=f"{doc}:1:0:{n}", doc_id=f"id-{doc}", doc_name=doc, page=1,
        heading_path=(), start=start, end=end, chunk_char_start=0, quote="", support=1.0,
    )  # fmt: skip


def answer(sentences: list[str], citations: list[Citation], **kw) -> Answer:
    return Answer(
        question=ITEM.question,
        text=" ".join(f"{s} [{i + 1}]" for i, s in enumerate(sentences)),
        generator=ModelLabel(backend="test", model="hand"),
        sentences=[
            AnswerSentence(s, f"{s} [{i + 1}]", SentenceKind.CLAIM, [i + 1], True) for i, s in enumerate(sentences)
        ],
        citations=citations,
        attempts=kw.pop("attempts", 1),
        **kw,
    )


def test_a_perfect_answer_scores_one():
    a = answer(
        ["London hotels are capped at USD 320 a night.", "Exceptions need the finance director."],
        [cite(1, 0, 100, 160), cite(2, 1, 200, 260)],
    )
    c = answer_counts(ITEM, a)
    assert (c.key_facts, c.key_facts_found) == (2, 2)
    assert (c.citations_on_gold, c.sentences_shown, c.sentences_off_topic) == (2, 2, 0)
    assert (c.gold_spans, c.gold_spans_cited) == (2, 2)


def test_an_answer_citing_the_wrong_span_scores_below_one():
    """The lead-in sentence plus the meal allowance: a validated answer that does not answer."""
    a = answer(
        ["Room rates must not exceed the cap for the city tier:", "Meals are paid at EUR 60 a day."],
        [cite(1, 0, 300, 340), cite(2, 1, 400, 450)],
    )
    c = answer_counts(ITEM, a)
    assert c.key_facts_found == 0
    assert c.citations_on_gold == 1  # the lead-in is a (grade-1) relevant span, the meal one is not
    assert c.sentences_off_topic == 1
    assert c.gold_spans_cited == 0  # neither grade-2 span is cited


def test_on_gold_needs_the_same_document_and_half_the_shorter_span():
    gold = Passage(doc=DOC, start=100, end=160)
    assert on_gold(cite(1, 0, 90, 140), gold)  # 40 of 50 characters
    assert not on_gold(cite(1, 0, 150, 250), gold)  # 10 characters shared: a neighbour sentence
    assert not on_gold(cite(1, 0, 100, 160, doc="other.md"), gold)
    assert on_gold(cite(1, 0, 0, 10), Passage(chunk_id=f"{DOC}:1:0:1"))
    assert not on_gold(cite(1, 0, 100, 160), Passage(doc=DOC))  # a whole-document label says nothing


def test_refusal_and_document_labels():
    refused = answer(["London hotels are capped at USD 320 a night."], [cite(1, 0, 100, 160)])
    refused.outcome = Outcome.REFUSAL
    c = answer_counts(ITEM, refused)
    assert (c.key_facts_found, c.citations_on_gold, c.sentences_shown, c.gold_spans_cited) == (0, 0, 0, 0)
    doc_only = GoldItem(id="d", question="q", relevant=(Passage(doc=DOC),))
    c = answer_counts(doc_only, answer(["x y z w."], [cite(1, 0, 100, 160)]))
    assert c.citations_on_gold is None and c.sentences_off_topic is None and c.gold_spans is None


def test_drafts_rejected_are_counted():
    a = answer(["London hotels are capped at USD 320 a night."], [cite(1, 0, 100, 160)], attempts=3)
    uncited, unsupported = Issue(IssueCode.UNCITED, "no [n]"), Issue(IssueCode.UNSUPPORTED, "weak")
    a.drafts_rejected = [DraftRejection(1, "bad", [uncited, uncited]), DraftRejection(2, "bad", [unsupported])]
    c = answer_counts(ITEM, a)
    assert (c.drafts, c.drafts_rejected) == (3, 2)
    assert c.rejection_reasons == {"uncited": 2, "unsupported": 1}


def q(id: str, **kw) -> QuestionResult:
    base = {"question": id, "kind": "answer", "citations_shown": 0, "citations_valid": 0}
    return QuestionResult(id=id, **{**base, **kw})


def hand_run() -> EvalRun:
    questions = [
        # full marks; two citations on gold
        q("a", key_facts=2, key_facts_found=2, citations_shown=2, citations_valid=2, citations_on_gold=2,
          sentences_shown=2, sentences_off_topic=0, gold_spans=2, gold_spans_cited=2, drafts=1),
        # one fact of two, one of three citations on gold, two of three sentences off topic, 1 of 2 spans
        q("b", key_facts=2, key_facts_found=1, citations_shown=3, citations_valid=3, citations_on_gold=1,
          sentences_shown=3, sentences_off_topic=2, gold_spans=2, gold_spans_cited=1, drafts=2, drafts_rejected=1,
          rejection_reasons={"number_mismatch": 1}),
        # refused after every draft failed: 0 facts, 0 spans cited, no sentences
        q("c", kind="refusal", refused=True, key_facts=1, citations_on_gold=0, sentences_off_topic=0,
          gold_spans=1, gold_spans_cited=0, drafts=3, drafts_rejected=3,
          rejection_reasons={"uncited": 4, "number_mismatch": 1}),
        # should be refused and was; not part of the answer figures
        q("d", kind="refusal", refused=True, should_refuse=True),
    ]  # fmt: skip
    run = EvalRun(
        id="r1", kb="kb", goldset="g", goldset_hash="h", settings={}, config_fingerprint="f",
        index_revision=1, created_at="2026-01-01T00:00:00", questions=questions,
    )  # fmt: skip
    run.summary = summarize(questions)
    return run


def test_run_figures_are_exact():
    s = hand_run().summary["answer_quality"]
    assert s["key_fact_recall"] == pytest.approx((1 + 0.5 + 0) / 3)
    assert s["citation_precision"] == pytest.approx(3 / 5)
    assert s["citation_recall"] == pytest.approx((1 + 0.5 + 0) / 3)
    assert s["off_topic_share"] == pytest.approx(2 / 5)
    assert (s["drafted"], s["first_draft_rejected"], s["all_drafts_rejected"]) == (3, 2, 1)
    assert s["rejection_rate_first"] == pytest.approx(2 / 3)
    assert s["rejection_rate_final"] == pytest.approx(1 / 3)
    assert (s["drafts"], s["drafts_rejected"]) == (6, 4)
    assert s["draft_rejection_share"] == pytest.approx(4 / 6)
    assert s["rejection_reasons"] == {"uncited": 4, "number_mismatch": 2}


def test_run_text_leads_with_the_figures_that_can_fail():
    text = run_text(hand_run())
    assert "key-fact recall 0.500" in text
    assert "citation precision 0.600" in text
    assert "off-topic sentences 0.400" in text
    assert "first draft rejected 0.667, every draft rejected 0.333" in text
    assert "drafts rejected 0.667 (4 of 6); failed checks: uncited 4, number mismatch 2" in text
    assert text.index("key-fact recall") < text.index("shown citations that passed validation: 5/5")


def test_retrieval_only_runs_have_no_answer_figures():
    questions = [q("a", kind="retrieval", key_facts=2, citations_on_gold=0, gold_spans=1, gold_spans_cited=0)]
    s = summarize(questions)["answer_quality"]
    assert s["key_fact_recall"] is None and s["citation_recall"] is None and s["citation_precision"] is None


def test_key_facts_round_trip_and_are_checked():
    from rag.errors import GoldSetError
    from rag.eval.gold.goldset import parse_goldset, parse_item

    line = '{"id": "q", "question": "Cap?", "key_facts": ["USD 320", "director"]}'
    item = parse_item(line)
    assert item.key_facts == ("USD 320", "director")
    assert parse_goldset([json.dumps(item.to_dict())]).items[0].key_facts == item.key_facts
    with pytest.raises(GoldSetError, match="key_facts"):
        parse_item('{"id": "q", "question": "Cap?", "key_facts": "USD 320"}')
    with pytest.raises(GoldSetError, match="key_facts"):
        parse_item('{"id": "q", "question": "Cap?", "should_refuse": true, "key_facts": ["x"]}')
