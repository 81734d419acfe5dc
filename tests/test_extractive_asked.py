"""The extractive answer answers what is asked: the rule for the amount range the question names,
the sentence that says yes or no, a table row whole with its column names, and no answer from a
sentence that only shares the question's topic. On a tiny real knowledge base with the default
thresholds (real embedder, real Chroma, the Chat ask path), plus the rules they rest on."""

from __future__ import annotations

import math

import pytest
from answer_helpers import make_evidence

from rag.answer.base import DraftRequest
from rag.answer.extractive import choose_sentences, select_sentences
from rag.answer.question import question_parts
from rag.answer.scoring import score_for_part
from rag.answer.sentences import partial_row, record_keys, split_sentences
from rag.answer.support import EvidenceIndex
from rag.ask import ask
from rag.ingest.pipeline import UploadItem
from rag.text import lexical
from rag.text.amounts import Interval, outside_range, question_ranges, sentence_range
from rag.text.asked import AnswerKind, asked_share, carries

POLICY = b"""# Claims handbook

## Approval limits

- Your team lead approves claims of up to EUR 1,000.
- Claims above EUR 1,000 and up to EUR 5,000 need approval from a regional manager.
- Claims above EUR 5,000 need approval from the finance director, Ines Moreau.

Nobody may approve their own claim.

## Meals

Meals on trips are paid as a daily allowance, and no receipts are needed:

- Domestic trips: EUR 40 per day.
- International trips: EUR 65 per day.

## Facilities

The Lisbon office car park has 25 spaces, booked through the front desk.
Visitors to the Lisbon office sign in at reception on the ground floor.
"""

EXPENSES_ZH = """# 费用报销制度

## 出差餐费补贴

出差期间按自然日发放餐费补贴，无需提供餐饮发票：

- 一线城市：每人每天 160 元；
- 其他城市：每人每天 120 元。

## 住宿标准

一线城市住宿费每晚不超过 550 元，其他城市每晚不超过 400 元。
""".encode()

_CITIES = ["Lisbon", "Porto", "Madrid", "Valencia", "Seville", "Bilbao", "Malaga", "Zaragoza"]
OFFICES = (
    "code,city,address,site_lead,headcount,support_hours\n"
    + "".join(
        f'{c[:3].upper()},{c},"{10 + i} Harbour Street, Floor {i + 2}, {c}",Lead {c}son,{40 + i},08:00-18:00 Monday-Friday\n'
        for i, c in enumerate(_CITIES)
    )
).encode()


@pytest.fixture(scope="module")
def kb(tmp_path_factory, embedder):
    from rag.config import Settings
    from rag.kb import KnowledgeBase

    settings = Settings.from_env(env={}, home=tmp_path_factory.mktemp("asked"))  # the default thresholds
    kb = KnowledgeBase("asked", settings, embedder)
    kb.ingest(
        [UploadItem("claims.md", POLICY), UploadItem("expenses_zh.md", EXPENSES_ZH), UploadItem("offices.csv", OFFICES)]
    )
    return kb


def answer(kb, question: str):
    turn, _ = ask(kb, question, kb.settings, None, conversation="t", persist=False)
    return turn.answer


@pytest.mark.parametrize(
    ("question", "approver"),
    [
        ("Who approves claims above EUR 5,000?", "finance director"),
        ("Who approves a claim of EUR 5,000?", "regional manager"),  # "up to" keeps the figure itself
        ("Who approves claims of more than EUR 1,000 but at most EUR 5,000?", "regional manager"),
        # in other words than the rule's: the named role answers "who", the verb need not be there
        ("Who has to sign off on a EUR 8,000 claim?", "finance director"),
    ],
)
def test_the_rule_for_the_asked_range_answers(kb, question, approver):
    a = answer(kb, question)
    assert not a.refused, a.refusal_reason
    assert approver in a.sentences[0].text, a.text


def test_a_chinese_yes_no_question_is_answered_by_the_sentence_that_says_no(kb):
    a = answer(kb, "出差期间的餐费补贴需要提供发票吗？")
    assert not a.refused, a.refusal_reason
    assert "无需提供餐饮发票。" in a.text and "160" not in a.text  # the lead-in, its colon now a full stop


def test_an_english_yes_no_question_is_answered_by_the_sentence_that_says_no(kb):
    a = answer(kb, "Are receipts needed for meals on trips?")
    assert not a.refused, a.refusal_reason
    assert "no receipts are needed." in a.text and "EUR 40" not in a.text


def test_a_figure_question_still_takes_the_list_item(kb):
    a = answer(kb, "What is the daily meal allowance for international trips?")
    assert not a.refused, a.refusal_reason
    assert "EUR 65" in a.text


def test_a_csv_row_is_cited_whole_with_its_column_names(kb):
    a = answer(kb, "Who is the site lead of the Valencia office?")
    assert not a.refused, a.refusal_reason
    [shown] = a.sentences
    assert shown.text.startswith("code: VAL; city: Valencia;") and "site_lead: Lead Valenciason" in shown.text
    assert shown.text.count("city:") == 1  # one row, not the rows of the chunk run together


def test_a_question_no_sentence_answers_is_refused(kb):
    a = answer(kb, "What is the Wi-Fi password in the Lisbon office?")
    assert a.refused
    assert "car park" not in a.text and "Lead Lisbonson" not in a.text


def test_the_answerer_refuses_a_sentence_that_shares_only_the_topic():
    """The decision to answer is the retrieval stage's; here the answerer alone sees evidence that
    names the office and passwords but no Wi-Fi password, and picks nothing."""
    _, evidence = make_evidence(
        [
            "The Lisbon office car park has 25 spaces, booked through the front desk.",
            "Passwords must be at least 12 characters long.",
            "code: LIS; city: Lisbon; site_lead: Lead Lisbonson; headcount: 40",
        ]
    )
    index = EvidenceIndex([c.text for c in evidence], None)

    def picked(question: str) -> list[str]:
        return [p.segment.text for p in select_sentences(DraftRequest(question, evidence, index))]

    assert picked("What is the Wi-Fi password in the Lisbon office?") == []
    assert picked("How many spaces does the car park of the Lisbon office have?") == [evidence[0].text]
    assert picked("Who is the site lead of the Lisbon office?") == [evidence[2].text]


def test_a_clitic_is_no_word_of_its_own():
    """ "What's", "company's" and "don't" are "what", "company" and "do": a possessive matches the
    word the evidence writes, and a question's contraction is never a term a sentence lacks."""
    tokens = lexical.content_tokens("What's the company's policy? I don't know, can't say; at 5 o'clock")
    assert tokens == {"company", "policy", "know", "say", "5", "o'clock"}
    assert question_parts("Who's the site lead?")[0].asked.head == {"lead"}
    _, evidence = make_evidence(["The Lisbon office car park has 25 spaces, booked through the front desk."])
    request = DraftRequest(
        "What's the password for the office wifi?", evidence, EvidenceIndex([evidence[0].text], None)
    )
    (gap,) = choose_sentences(request)
    assert "'password'" in gap.why and "'what" not in gap.why, gap.why


def test_a_who_question_is_carried_by_a_sentence_that_names_someone():
    """ "Who VERB ...?" asks for a person: a sentence naming one (a capitalised name or role inside
    it) carries the part as a figure carries "how much", even when it words the verb otherwise
    ("sign off" / "approval"); one that names nobody still needs the verb."""
    _, evidence = make_evidence(
        [
            "Claims above EUR 5,000 need approval from the finance director, Ines Moreau.",
            "Claims above EUR 5,000 are paid within 10 working days.",
        ]
    )
    part = question_parts("Who has to sign off on a EUR 8,000 claim?")[0]
    assert part.wants_person and part.asked.head == {"sign"}
    picks = score_for_part(part, EvidenceIndex([c.text for c in evidence], None))
    assert [p.carried for p in picks] == [True, False]
    assert not question_parts("How many claims need approval?")[0].wants_person


def test_a_one_character_head_is_held_by_the_word_that_contains_it():
    """ "哪些人批" asks about 批, which the tokenizer keeps as no term of the part: the rule that says
    who 审批 carries it, the sentence about something else does not."""
    _, evidence = make_evidence(
        [
            "单笔报销金额在 5,000 元至 20,000 元之间的，由部门经理审批后，报财务经理审批。",
            "前一笔备用金未冲账的，不得申请新的备用金。",
        ]
    )
    part = question_parts("报销一笔一万元的费用要经过哪些人批？")[0]
    assert part.asked.head == {"批"} and "批" not in part.tokens
    picks = score_for_part(part, EvidenceIndex([c.text for c in evidence], None))
    assert [p.carried for p in picks] == [True, False]


@pytest.mark.parametrize(
    ("question", "kind", "head"),
    [
        ("What is the Wi-Fi password in the Lisbon office?", AnswerKind.THING, {"password"}),
        ("Which cloud region will host the archive?", AnswerKind.OPEN, set()),  # a type: the answer names one
        ("What is the hourly rate of the Porto office?", AnswerKind.THING, {"rate"}),
        ("Who approves claims above EUR 5,000?", AnswerKind.THING, {"approve"}),
        ("Who has to approve a claim?", AnswerKind.THING, {"approve"}),
        ("What is the process for booking travel?", AnswerKind.THING, {"travel"}),  # a light head hands over
        ("Do I need receipts for meals?", AnswerKind.YES_NO, set()),
        ("How long are backups kept?", AnswerKind.OPEN, set()),
        ("上海办公室的年终奖是怎么发放的？", AnswerKind.THING, {"年终", "终奖"}),
        ("单笔报销需要谁审批？", AnswerKind.THING, {"审批"}),
        ("报销 3,000 元需要谁来审批？", AnswerKind.THING, {"审批"}),  # 来 is no verb asked about
        ("谁可以批准加班？", AnswerKind.THING, {"批准"}),
        ("这件事该找谁负责？", AnswerKind.THING, {"负责"}),
        ("青岚蜂鸟分布在哪些地区？", AnswerKind.OPEN, set()),
        ("出差期间的餐费补贴需要提供发票吗？", AnswerKind.YES_NO, set()),
    ],
)
def test_what_a_part_asks_for(question, kind, head):
    asked = question_parts(question)[0].asked
    assert (asked.kind, set(asked.head)) == (kind, head)


def test_the_asked_thing_weighs_as_much_as_its_scope():
    part = question_parts("What is the Wi-Fi password in the Lisbon office?")[0]
    tokens, asked = part.tokens, part.asked
    assert tokens == {"wi", "fi", "password", "lisbon", "office"}
    assert asked_share(asked, tokens, frozenset({"password"}), False) == 0.5  # the head alone: not carried
    assert not carries(asked, tokens, frozenset({"lisbon", "office"}), False)  # the scope alone
    assert carries(asked, tokens, frozenset({"password", "office"}), False)
    cap = question_parts("What is the nightly hotel cap in Lisbon?")[0]
    assert carries(cap.asked, cap.tokens, frozenset({"lisbon"}), True)  # the figure asked for stands for "cap"


def test_question_ranges_keep_the_comparison_direction():
    assert question_ranges("Who approves claims above USD 10,000?") == (Interval(10000, math.inf, low_open=True),)
    assert question_ranges("Who approves a USD 8,000 claim?") == (Interval.point(8000),)
    assert question_ranges("单笔超过两万元的报销需要谁审批？") == (Interval(20000, math.inf, low_open=True),)
    assert question_ranges("三千元以上的出差") == (Interval(3000, math.inf),)
    assert sentence_range("Claims above USD 2,500 and up to USD 10,000 need a director.") == Interval(
        2500, 10000, low_open=True
    )
    assert sentence_range("单笔报销金额在 5,000 元至 20,000 元之间的，由部门经理审批") == Interval(5000, 20000)
    assert sentence_range("单笔报销金额不超过 5,000 元的，由部门经理审批。") == Interval(high=5000)
    assert sentence_range("Nobody may approve their own claim.") is None


def test_a_rule_for_another_range_is_outside_the_asked_one():
    above = question_ranges("Who approves claims above USD 10,000?")
    assert outside_range(above, "Claims above USD 2,500 and up to USD 10,000 need approval from a director.")
    assert not outside_range(above, "Claims above USD 10,000 need approval from the CFO.")
    assert not outside_range(above, "Nobody may approve their own claim.")
    at = (Interval.point(10000),)
    assert not outside_range(at, "Claims above USD 2,500 and up to USD 10,000 need approval from a director.")
    assert outside_range(at, "Claims above USD 10,000 need approval from the CFO.")
    assert outside_range((Interval.point(8000),), "单笔报销金额超过 20,000 元的，须由总经理审批。")
    assert not outside_range((), "Claims above USD 10,000 need approval from the CFO.")


def test_a_record_line_is_one_sentence_and_a_cut_off_row_is_known():
    text = (
        "hours: 08:00-18:00 Mon.-Fri.; phone: 555 0100\n"
        "code: LIS; city: Lisbon; hours: 08:00-18:00 Mon. to Fri. Closed Aug.; phone: 555 0101\n"
        "code: POR; city: Porto; hours: 09:00-17:00; phone: 555 0102"
    )
    segments = split_sentences(text)
    assert [s.text for s in segments] == text.split("\n")
    assert record_keys(segments[1].text) == ["code", "city", "hours", "phone"]
    assert partial_row(segments)  # starts at "hours", a later column of the other rows
    assert not partial_row(segments[1:])
    assert partial_row(split_sentences("Floor 5, Porto; phone: 555 0102; hours: 09:00-17:00\ncode: LIS; city: Lisbon"))
    assert record_keys("Note: this is prose; it has a semicolon") is None
