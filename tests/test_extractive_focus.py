"""The extractive answer addresses the question, on a tiny real knowledge base (real embedder,
real Chroma, the Chat ask path): the list item over its lead-in, a compound question answered
part by part, no off-topic sentence in the Chinese hotel-cap case."""

from __future__ import annotations

import pytest

from rag.answer.question import question_parts
from rag.ask import ask
from rag.ingest.pipeline import UploadItem
from rag.text.amounts import Interval, outside_range

TRAVEL = b"""# Travel policy

## Accommodation

Book standard rooms in business hotels close to where you work. The nightly room rate,
excluding taxes, must not exceed the cap for the city tier:

- Tier A cities (New York, London, Tokyo): USD 320 per night.
- Tier B cities (Boston, Dublin, Paris): USD 230 per night.
- All other cities: USD 180 per night.

Rates above the cap need your director's approval before booking, for example during a large
trade fair. Staying with friends or family is welcome but is not compensated.

## Meals

Meals on business trips are covered by a daily per diem of USD 75 instead of receipts.
"""

EXPENSES_ZH = """# 费用报销制度

## 一、总则

1. 本制度适用于上海办公室的全体正式员工、试用期员工及实习生。
2. 报销应当遵循真实、合理、节约的原则。

## 三、报销标准

### 3.2 出差餐费补贴

出差期间按自然日发放餐费补贴，无需提供餐饮发票：

- 北京、上海、广州、深圳等一线城市：每人每天 180 元；
- 其他城市：每人每天 150 元。

### 3.3 住宿标准

1. 一线城市住宿费每晚不超过 600 元，其他城市每晚不超过 450 元。
2. 超出标准的部分由员工个人承担。
""".encode()


@pytest.fixture(scope="module")
def tiny_kb(tmp_path_factory, embedder):
    from rag.config import Settings
    from rag.kb import KnowledgeBase

    home = tmp_path_factory.mktemp("focus")
    # answerer tests: the retrieval decision must not refuse (tests/test_answerability_kb.py tests that)
    settings = Settings.from_env(env={}, home=home).replace(rerank_threshold=0.0, answerable_threshold=0.0)
    kb = KnowledgeBase("focus", settings, embedder)
    kb.ingest([UploadItem("travel.md", TRAVEL), UploadItem("expenses_zh.md", EXPENSES_ZH)])
    return kb


def answer(kb, question: str):
    turn, _ = ask(kb, question, kb.settings, None, conversation="t", persist=False)
    assert not turn.answer.refused, turn.answer.refusal_reason
    return turn.answer


def test_the_list_item_is_chosen_over_its_lead_in(tiny_kb):
    a = answer(tiny_kb, "What is the nightly hotel cap in London?")
    assert "USD 320" in a.text
    assert "must not exceed the cap for the city tier" not in a.text
    assert len(a.sentences) == 1


def test_a_compound_question_is_answered_part_by_part(tiny_kb):
    a = answer(tiny_kb, "What is the nightly hotel cap in London, and who approves exceptions?")
    texts = [s.text for s in a.sentences]
    assert len(texts) == 2
    assert "USD 320" in texts[0] and "director's approval" in texts[1]  # in the question's order
    assert all(s.verified and s.citations for s in a.sentences)


def test_a_part_the_documents_do_not_answer_is_named(tiny_kb):
    a = answer(tiny_kb, "What is the nightly hotel cap in London, and what is the Zurich office's wifi password?")
    assert "USD 320" in a.sentences[0].text
    gap = a.sentences[-1]
    assert gap.kind.value == "gap" and not gap.citations
    assert "do not answer" in gap.text and "wifi password" in gap.text


def test_the_chinese_hotel_cap_has_no_off_topic_sentence(tiny_kb):
    a = answer(tiny_kb, "上海办公室员工在一线城市出差，住宿费每晚上限是多少？")
    assert [s.text for s in a.sentences] == ["一线城市住宿费每晚不超过 600 元，其他城市每晚不超过 450 元。"]
    assert "适用于" not in a.text and "180" not in a.text


def test_a_chinese_compound_question_gets_both_figures(tiny_kb):
    a = answer(tiny_kb, "一线城市出差的餐费补贴和住宿标准分别是多少？")
    assert len(a.sentences) == 2
    assert "180 元" in a.sentences[0].text and "600 元" in a.sentences[1].text


@pytest.mark.parametrize(
    ("question", "parts"),
    [
        ("What is the nightly hotel cap in London, and who approves exceptions?", 2),
        ("Which cloud region will host EU data residency, and by when?", 1),  # "by when" is too short alone
        ("How many days of bereavement leave for a parent, and for other relatives?", 1),
        ("一线城市出差的餐费补贴和住宿标准分别是多少？", 2),
        ("上海办公室员工在一线城市出差，住宿费每晚上限是多少？", 1),
        ("单笔报销需要谁审批，多少天内付款？", 2),
    ],
)
def test_question_parts(question, parts):
    assert len(question_parts(question)) == parts


def test_an_amount_outside_a_rules_range_is_recognized():
    assert outside_range((Interval.point(8000),), "Your line manager approves claims of up to USD 2,500.")
    assert not outside_range(
        (Interval.point(8000),), "Claims above USD 2,500 and up to USD 10,000 need approval from a director."
    )
    assert not outside_range(
        (Interval.point(8000),), "单笔报销金额在 5,000 元至 20,000 元之间的，由部门经理审批后，报财务经理审批；"
    )
    assert outside_range((Interval.point(8000),), "单笔报销金额超过 20,000 元的，须由总经理审批。")
    assert not outside_range((), "Claims above USD 10,000 need approval from the CFO.")


@pytest.mark.parametrize(
    ("question", "figure", "date"),
    [
        ("住宿费每晚上限是多少？", True, False),
        ("这次事故的死亡人数", True, False),  # a noun phrase naming a quantity asks for a figure
        ("新园区的开工时间", True, True),  # ... 时间 / 日期 at the end asks for a date
        ("纽西兰鸡毛松有多高？", True, False),
        ("时间管理的原则是什么？", False, False),  # 时间 as the subject, not what is asked for
        ("报销应当遵循什么原则？", False, False),
    ],
)
def test_what_a_chinese_question_asks_for(question, figure, date):
    part = question_parts(question)[0]
    assert (part.wants_figure, part.wants_date) == (figure, date)


def test_a_cjk_part_ignores_an_embedder_that_cannot_read_it():
    """All-MiniLM reads Chinese as [UNK] tokens: its cosine would pick by noise. The switch the
    generator sets from the embedder (``ENGLISH_ONLY_EMBEDDERS``) leaves term coverage to choose."""
    import numpy as np

    from rag.answer.extractive import ExtractiveGenerator
    from rag.answer.scoring import score_for_part
    from rag.answer.support import EvidenceIndex
    from rag.config import Settings

    intro = "黄鳍紫鱼，又称黄鳍姬鲷，为笛鲷科的其中一个种。"
    colour = "黄鳍紫鱼的身体呈淡蓝红色，体侧有黄色斑纹。"

    question = "黄鳍紫鱼的身体是什么颜色的？"

    def embed(texts):  # an embedder whose cosine puts the question next to the intro sentence
        return np.array([[1.0, 0.0] if t in (question, intro) else [0.0, 1.0] for t in texts])

    index = EvidenceIndex([f"{intro}{colour}"], embed)
    part = question_parts(question)[0]
    best = lambda vectors: max(score_for_part(part, index, vectors), key=lambda p: p.score).segment.text  # noqa: E731
    assert best(vectors=True) == intro  # the noise decides
    assert best(vectors=False) == colour  # term coverage decides
    assert not ExtractiveGenerator.build(Settings.from_env(env={}), embed, None).cjk_vectors
    assert ExtractiveGenerator.build(
        Settings.from_env(env={}).replace(embed_model="/models/bge-m3"), embed, None
    ).cjk_vectors


def test_the_first_sentence_under_a_heading_can_answer():
    from rag.answer.base import DraftRequest
    from rag.answer.extractive import select_sentences
    from rag.answer.support import EvidenceIndex

    text = (
        "# Employee handbook\n## Refunds\nCustomers may request a refund within 7 days of purchase. "
        "Approved refunds are paid to the original payment method within 5 business days."
    )
    request = DraftRequest("How long do I have to request a refund?", [], EvidenceIndex([text], None))
    picks = select_sentences(request)
    assert [p.segment.text for p in picks] == ["Customers may request a refund within 7 days of purchase."]


SPECIES_ZH = """# 青岚蜂鸟

青岚蜂鸟，又称山岚小蜂鸟，是蜂鸟科的一种小型鸟类。本种分布于安第斯山脉东坡，包括秘鲁、玻利维亚和厄瓜多尔的云雾林。体长约8公分，雄鸟喉部呈翠绿色。以花蜜和小型昆虫为食。
""".encode()

DRONE = b"""# Contoso Drone X2

The Contoso Drone X2 is a folding camera drone for site surveys. It weighs 900 grams.
A full battery gives 35 minutes of flight in calm weather.
"""


@pytest.fixture(scope="module")
def topic_kb(tmp_path_factory, embedder):
    from rag.config import Settings
    from rag.kb import KnowledgeBase

    settings = Settings.from_env(env={}, home=tmp_path_factory.mktemp("topic"))
    kb = KnowledgeBase("topic", settings, embedder)  # the real default thresholds
    kb.ingest([UploadItem("species_zh.md", SPECIES_ZH), UploadItem("drone.md", DRONE)])
    return kb


@pytest.mark.parametrize(
    "question, expected",
    [
        ("青岚蜂鸟分布在哪些地区？", "本种分布于安第斯山脉东坡，包括秘鲁、玻利维亚和厄瓜多尔的云雾林。"),
        ("青岚蜂鸟以什么为食？", "以花蜜和小型昆虫为食。"),
        ("How long does the Contoso Drone X2 fly on one battery?", "35 minutes of flight"),
    ],
)
def test_a_sentence_takes_its_subject_from_the_heading(topic_kb, question, expected):
    """ "本种分布于……" never names the bird, and "A full battery gives 35 minutes" never names the
    drone: the heading they sit under does. The sentence that answers is shown, not the one that
    only repeats the name."""
    text = answer(topic_kb, question).text
    assert expected in text
    assert "又称" not in text and "folding camera drone" not in text


def test_a_chinese_attribute_is_found_by_its_characters():
    """ "体重" is not a word of "成鸟约重4克", but its character 重 is; the sentence that only names
    the bird (and holds a year) ties with it on terms and figures and must not win."""
    from rag.answer.scoring import score_for_part
    from rag.answer.support import EvidenceIndex

    text = "# 青岚蜂鸟\n\n青岚蜂鸟是蜂鸟科的一种小型鸟类，1998年首次被描述。成鸟约重4克。"
    part = question_parts("青岚蜂鸟的体重是多少？")[0]
    picks = score_for_part(part, EvidenceIndex([text], None, ["青岚蜂鸟"]), vectors=False)
    assert max(picks, key=lambda p: p.score).segment.text == "成鸟约重4克。"


def test_a_figure_in_chinese_numerals_counts_toward_the_sentence_that_writes_it_in_digits():
    """ "三千元" in the question and "3,000 元" in the policy are one term to the answerer: the
    备用金 rule holds it, and a rule about another amount does not."""
    from rag.answer.support import EvidenceIndex

    index = EvidenceIndex(
        [
            "1. 出差预计费用超过 3,000 元的，员工可在出差前申请备用金。2. 个人申请采购单价超过 500 元的物品，须事先提交采购申请。"
        ],
        None,
    )
    part = question_parts("出差预计费用超过三千元，可以申请备用金吗？")[0]
    assert "3000" in part.tokens
    from rag.answer.scoring import score_for_part

    by_text = {p.segment.text: p for p in score_for_part(part, index, vectors=False)}
    backup = next(p for t, p in by_text.items() if "备用金" in t)
    other = next(p for t, p in by_text.items() if "500" in t)
    assert "3000" in backup.terms and "3000" not in other.terms


def test_a_sentence_that_asks_does_not_answer():
    """A headline or FAQ line that repeats the question ("2022北京冬奥会开幕式总导演是谁?", "How many
    days … in 2025?") holds all its terms and states nothing: the sentence that answers is chosen."""
    from rag.answer.base import DraftRequest
    from rag.answer.extractive import select_sentences
    from rag.answer.support import EvidenceIndex

    def best(question: str, texts: list[str]) -> str:
        request = DraftRequest(question, [], EvidenceIndex(texts, None))
        return " ".join(p.segment.text for p in select_sentences(request, cjk_vectors=False))

    director = best(
        "2022年冬奥会开幕式总导演是谁？",
        ["2022北京冬奥会开幕式总导演是谁? 网友热议。", "北京冬奥会开幕式由张艺谋担任总导演，于2月4日晚举行。"],
    )
    assert "张艺谋" in director and "?" not in director
    english = best(
        "How many days of leave do new employees get in 2025?",
        ["How many days of leave do new employees get in 2025?", "In 2025 new employees get 25 days of leave."],
    )
    assert english == "In 2025 new employees get 25 days of leave."


def test_a_sentence_about_another_year_does_not_answer_for_the_asked_one():
    """Two rules of one kind, each under its year: the asked year's sentence answers even where the
    other one holds more of the question's words ("及周边城镇")."""
    from rag.answer.base import DraftRequest
    from rag.answer.extractive import select_sentences
    from rag.answer.support import EvidenceIndex

    text = (
        "# 威尼斯\n## 瘟疫\n1576年的瘟疫在威尼斯造成 50,000 人死亡。1630年的瘟疫在威尼斯及周边城镇造成 46,000 人死亡。"
    )

    def chosen(question):
        return [p.segment.text for p in select_sentences(DraftRequest(question, [], EvidenceIndex([text], None)))]

    assert chosen("1576年威尼斯及周边城镇的瘟疫造成多少人死亡？") == ["1576年的瘟疫在威尼斯造成 50,000 人死亡。"]
    assert chosen("1630年威尼斯的瘟疫造成多少人死亡？") == ["1630年的瘟疫在威尼斯及周边城镇造成 46,000 人死亡。"]


def test_a_chinese_sentence_saying_a_synonym_holds_the_question_s_word(monkeypatch):
    """ "审核" and "给付" are Cilin synonyms of the policy's "审批" and "付款": the payment sentence
    holds them, so it outscores the sentence that only shares "财务"; with the synonyms rule off it
    holds neither. "办公" is a cut of "办公室", not another word for it: "办公用品" holds the pair 办公,
    as written, and not the rest of the word."""
    from rag import rules
    from rag.answer.scoring import score_for_part
    from rag.answer.support import EvidenceIndex

    index = EvidenceIndex(["财务部每月初公布上月报销汇总。财务部在审批完成后 10 个工作日内付款。"], None)
    part = question_parts("审核完毕后财务几天内给付？")[0]
    monkeypatch.delenv(rules.ENV, raising=False)
    picks = {p.segment.text: p for p in score_for_part(part, index, vectors=False)}
    pay = picks["财务部在审批完成后 10 个工作日内付款。"]
    assert {"审核", "给付"} <= pay.terms and max(picks.values(), key=lambda p: p.score) is pay
    monkeypatch.setenv(rules.ENV, "synonyms")  # read where the question's parts are made, once an answer
    as_written = question_parts("审核完毕后财务几天内给付？")[0]
    plain = {p.segment.text: p for p in score_for_part(as_written, index, vectors=False)}
    assert not {"审核", "给付"} & plain["财务部在审批完成后 10 个工作日内付款。"].terms
    monkeypatch.delenv(rules.ENV)
    office = question_parts("上海办公室的住房补贴是每月多少？")[0]
    held = score_for_part(office, EvidenceIndex(["办公用品单价超过 500 元须经审批。"], None), vectors=False)
    assert "公室" in office.tokens and "公室" not in held[0].terms
