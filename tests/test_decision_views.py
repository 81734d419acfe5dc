"""One explanation per decision (rag.views.decision) and evidence numbered strongest first
(rag.retrieval.evidence): hand-built decisions with exact wording, then the real demo handbook."""

from __future__ import annotations

import pytest
from app_support import ANSWERABLE, build_kb

from rag.answer import Answer, Issue, IssueCode, Outcome
from rag.ask import ask
from rag.config import Settings
from rag.records import ChunkRecord, ModelLabel
from rag.retrieval.evidence import shape
from rag.retrieval.fallback import REFUSAL_TEXT, REFUSAL_TEXT_ZH, Evidence, decide_by_rules
from rag.retrieval.trace import ActionCause, Answerability, Candidate, Decider, FallbackAction, Trace
from rag.views.answerability import verdict_lines
from rag.views.chat import evidence_cards, outcome_box
from rag.views.decision import explain, turn_explanation, turn_note
from rag.views.highlight import md_escape
from rag.views.ledger import ledger_frame

SABBATICAL = "How many weeks of sabbatical do employees get after ten years of service?"
HOUSING_ZH = "上海办公室的住房补贴是每月多少？"


def verdict(p: float, *, absent=(), missing="", weights=True, best=0.55, threshold=0.5, script="latin"):
    """An answerability verdict as the stage records it: P(answerable) ``p``, best rerank ``best``."""
    veto = bool(absent)
    return Answerability(
        model="logreg[test]" if weights else "rule:p_top",
        script=script,
        features={"p_top": best},
        weights={"p_top": 4.0} if weights else {},
        contributions={},
        bias=0.0,
        probability=p,
        threshold=threshold,
        answerable=p >= threshold and not veto,
        asks_for="number",
        absent_terms=list(absent),
        unheld_terms=[],
        best_sentence="",
        reason="",
        missing=missing,
    )


def decide(question: str, a: Answerability | None, best: float = 0.55, attempt: int = 1, recalled: int = 9):
    return decide_by_rules(Evidence(question, best, 0.59, True, recalled, attempt, a))


def test_a_probability_just_under_the_threshold_is_never_shown_equal_to_it():
    threshold = Settings().answerable_threshold  # the real default
    question = "How many vacation days do I get per year?"
    a = verdict(threshold - 0.0004, threshold=threshold)  # 0.4996: "0.500 < 0.500" at three decimals
    fb = decide(question, a, attempt=2)
    assert fb.action is FallbackAction.REJECT and fb.decided_by is Decider.ANSWERABILITY
    assert "P(answerable) 0.4996 < 0.5000" in fb.reason
    ex = explain(question, fb, a)
    assert "0.4996 < 0.5000" in ex.why_line
    assert [m.value for m in ex.metrics][-3:] == ["0.4996", "0.5000", "-0.0004"]  # the Scores tab's tiles
    assert verdict_lines(a)[0].endswith("P(answerable) 0.4996 < 0.5000.")
    passing = verdict(threshold + 0.0004, threshold=threshold)
    assert "P(answerable) 0.5004 >= 0.5000" in decide(question, passing).reason
    assert "0.812 >= 0.500" in decide(question, verdict(0.812, threshold=threshold)).reason  # three decimals suffice


def test_an_absent_term_refusal_is_explained_by_that_rule_not_by_a_passing_probability():
    a = verdict(0.571, absent=["sabbatical"], missing="The documents don't mention 'sabbatical'.")
    fb = decide(SABBATICAL, a)
    assert fb.action is FallbackAction.REJECT and fb.decided_by is Decider.ABSENT_TERMS
    assert fb.vetoed_terms == ["sabbatical"] and fb.cause is ActionCause.SPECIFIC
    ex = explain(SABBATICAL, fb, a)
    assert ex.why_line == "Why: Decided by the absent-term rule: 'sabbatical' in no searched chunk."
    assert "0.571" not in ex.why and "≥" not in ex.why  # the passing probability is not given as the reason
    assert [(m.label, m.value) for m in ex.metrics] == [
        ("Decision", "reject"),
        ("Decided by", "absent-term rule"),
        ("Absent terms", "sabbatical"),
    ]  # no margin of +0.071 beside a reject
    assert ex.details == (
        "P(answerable) 0.571 ≥ 0.500 did not decide: the absent-term rule refuses whatever the score.",
        "The best rerank score 0.550 did not decide: the answerability model replaces the rerank threshold.",
    )
    assert ex.rerank_line is None and ex.operating_point is None  # neither threshold decided: none drawn
    assert (
        ex.exclusion
        == "Excluded by the absent-term rule ('sabbatical' in no searched chunk): the question was not answered."
    )
    assert fb.message == "The documents don't mention 'sabbatical'. " + REFUSAL_TEXT
    assert "filter" not in REFUSAL_TEXT and "筛选" not in REFUSAL_TEXT_ZH  # no page has filters


def test_a_chinese_refusal_by_the_model_is_in_chinese_and_names_no_rerank_score_as_the_decider():
    a = verdict(0.036, missing="文档中没有提到“住房补贴”。", best=0.998, script="cjk")
    fb = decide(HOUSING_ZH, a, best=0.998, attempt=2)
    assert fb.decided_by is Decider.ANSWERABILITY
    ex = explain(HOUSING_ZH, fb, a)
    assert ex.why_line == "原因：可回答性阈值：可回答概率 0.036 < 0.500。文档中没有提到“住房补贴”。扩大检索后仍然如此。"
    assert "0.998" not in ex.why
    assert ex.details == ("最高重排分数 0.998 不是决定因素：可回答性模型取代了重排阈值。",)
    assert [(m.label, m.value) for m in ex.metrics] == [
        ("决定", "拒答"),
        ("决定依据", "可回答性阈值"),
        ("可回答概率", "0.036"),
        ("阈值", "0.500"),
        ("差值", "-0.464"),
    ]
    assert ex.rerank_line is None
    assert (ex.operating_point.probability, ex.operating_point.threshold) == (0.036, 0.5)
    answer = Answer(HOUSING_ZH, fb.message, ModelLabel("fallback", "rules"), outcome=Outcome.REFUSAL)
    note = turn_note(answer, trace_with(HOUSING_ZH, fb, a))
    assert note.title == "未回答" and note.why == ex.why_line


def test_the_rerank_threshold_is_drawn_only_when_it_decided():
    rule = verdict(0.55, weights=False, best=0.55, threshold=0.59)  # no fitted model: the rule decides
    fb = decide(ANSWERABLE, rule)
    ex = explain(ANSWERABLE, fb, rule)
    assert fb.decided_by is Decider.TOP_SCORE_RULE
    assert ex.why.startswith("Decided by the rerank threshold: best rerank score 0.550 < 0.590.")
    assert (ex.rerank_line.value, ex.rerank_line.label) == (0.59, "Rerank threshold 0.59")
    assert ex.operating_point is None and ex.metrics[-1].value == "-0.040"
    retried = decide(ANSWERABLE, None, best=0.3, attempt=2)
    assert retried.decided_by is Decider.RERANK_THRESHOLD and retried.cause is ActionCause.RETRIED
    said = explain(ANSWERABLE, retried, None).why
    assert said == "Decided by the rerank threshold: best rerank score 0.300 < 0.590. Still so after a wider retry."
    nothing = decide(ANSWERABLE, None, best=None, recalled=0)
    assert explain("x y z", nothing, None).why.startswith("Nothing was recalled")


def test_a_refusal_by_the_citation_checks_is_explained_as_that_and_a_stored_decision_still_reads():
    a = verdict(0.9)
    fb = decide(ANSWERABLE, a)
    refused = Answer(ANSWERABLE, REFUSAL_TEXT, ModelLabel("x", "y"), outcome=Outcome.REFUSAL, refusal_reason="r")
    ex = turn_explanation(refused, trace_with(ANSWERABLE, fb, a))
    assert ex.rule == "citation check" and ex.why == "No drafted answer passed the citation checks: r"
    said = "The evidence never names 'Contoso'."  # the extractive answerer's reason (test_extractive)
    declined = Answer(ANSWERABLE, REFUSAL_TEXT, ModelLabel("x", "y"), outcome=Outcome.REFUSAL, refusal_reason=said)
    declined.warnings = [Issue(IssueCode.NO_ANSWER, said)]
    ex = turn_explanation(declined, trace_with(ANSWERABLE, fb, a))
    assert ex.rule == "answerer" and ex.why == f"The answerer found no evidence sentence that answers it: {said}"
    legacy = Trace.from_json(
        trace_with(SABBATICAL, decide(SABBATICAL, verdict(0.6, absent=["sabbatical"])), None).to_json()
    )
    legacy.fallback.decided_by, legacy.fallback.vetoed_terms = None, []  # stored before the record had them
    legacy.answerability = verdict(0.6, absent=["sabbatical"])
    assert explain(SABBATICAL, legacy.fallback, legacy.answerability).decided_by is Decider.ABSENT_TERMS
    stored = Trace.from_json(
        trace_with(SABBATICAL, decide(SABBATICAL, verdict(0.6, absent=["sabbatical"])), None).to_json()
    )
    assert stored.fallback.decided_by is Decider.ABSENT_TERMS and stored.fallback.cause is ActionCause.SPECIFIC


def trace_with(question, fb, a) -> Trace:
    label = ModelLabel("test", "test")
    return Trace(question, "t", "fp", 1, label, label, fallback=fb, answerability=a)


def cand(doc: str, idx: int, start: int, rerank: int) -> Candidate:
    text = f"passage {doc} {idx} " * 3
    return Candidate(f"{doc}:1:1:{idx}", doc, doc, 1, (), text, start, start + len(text), rerank_rank=rerank)


def test_evidence_is_numbered_strongest_first_with_each_passage_before_its_neighbours():
    best, second, third = cand("a", 5, 500, 1), cand("b", 0, 0, 2), cand("c", 0, 0, 3)
    before = ChunkRecord("a:1:1:4", "a", 1, 1, 4, 400, 460, (), "the chunk before a5", "a")
    after = ChunkRecord("a:1:1:6", "a", 1, 1, 6, 560, 620, (), "the chunk after a5", "a")
    out = shape([best, second, third], 10_000, lambda cid: [before, after] if cid == best.chunk_id else [])
    assert [c.chunk_id for c in out] == ["a:1:1:5", "a:1:1:4", "a:1:1:6", "b:1:1:0", "c:1:1:0"]
    assert [c.final_rank for c in out] == [1, 2, 3, 4, 5]
    assert [card.n for card in evidence_cards(out)] == [1, 2, 3, 4, 5]  # Chat numbers them as ranked


@pytest.fixture(scope="module")
def handbook(tmp_path_factory, embedder):
    return build_kb(Settings.from_env(env={}, home=tmp_path_factory.mktemp("decision") / "home"), embedder)


def test_an_answer_from_the_best_passage_cites_1_and_the_ledger_ranks_it_first(handbook):
    turn, trace = ask(handbook, ANSWERABLE)
    assert turn.answer.outcome is Outcome.ANSWER, turn.answer.refusal_reason
    evidence = trace.evidence()
    top = min((c for c in trace.candidates if c.rerank_rank is not None), key=lambda c: c.rerank_rank)
    assert evidence[0].chunk_id == top.chunk_id and top.final_rank == 1
    assert [c.n for c in turn.answer.citations][0] == 1
    for c in turn.answer.citations:  # each cited number is the evidence shown under that number
        assert evidence[c.n - 1].chunk_id == c.chunk_id
    ledger = ledger_frame(trace)
    assert ledger.loc[0, "chunk_id"] == top.chunk_id and ledger.loc[0, "final"] == 1
    kept = [c for c in evidence if not c.expanded_from]
    assert [c.rerank_rank for c in kept] == sorted(c.rerank_rank for c in kept)


def test_a_turn_s_outcome_box_shows_the_answer_or_the_decision_s_title_and_why():
    """``outcome_box``: an answer as Markdown with its badges; a refusal (warning) or a question
    back (info) as the decision record's title and text, its "Why" beneath, escaped."""
    label = ModelLabel("x", "y")
    answered = outcome_box(Answer(ANSWERABLE, "Five days [1].", label, outcome=Outcome.ANSWER), None)
    assert (answered.tone, answered.caption) == ("answer", "") and answered.markdown.startswith(
        "Five days :blue-badge[1]"
    )
    fb = decide(SABBATICAL, verdict(0.6, absent=["sabbatical"]))
    refused = Answer(SABBATICAL, fb.message, label, outcome=Outcome.REFUSAL)
    box = outcome_box(refused, trace_with(SABBATICAL, fb, verdict(0.6, absent=["sabbatical"])))
    note = turn_note(refused, trace_with(SABBATICAL, fb, verdict(0.6, absent=["sabbatical"])))
    assert box.tone == "warning" and box.markdown == f"**{note.title}** — {md_escape(refused.text)}"
    assert (box.icon, answered.icon) == (":material/block:", "")
    assert box.caption == md_escape(note.why) and "sabbatical" in box.caption
    back = outcome_box(Answer("what about it?", "Which policy do you mean?", label, outcome=Outcome.CLARIFY), None)
    assert back.tone == "info" and back.markdown.endswith("— " + md_escape("Which policy do you mean?"))
    assert back.icon == ":material/help:"
