"""Answerability features on hand-built inputs: exact terms, document frequencies and coverage."""

from __future__ import annotations

import math

import pytest

from rag.records import TermStats
from rag.retrieval.answerability import EvidenceChunk, assess, features, script_of
from rag.retrieval.answerability.model import AnswerabilityModel
from rag.retrieval.answerability.terms import (
    AnswerKind,
    asks_for,
    carries,
    idf,
    in_evidence_words,
    present_synonyms,
    question_terms,
)
from rag.store.bm25 import BM25Index
from rag.store.tokenize import tokenize


def test_question_terms_keep_the_subject_and_the_surface_form():
    assert question_terms("How many days of paid sabbatical do employees get?") == {
        "day": "days",
        "paid": "paid",
        "sabbat": "sabbatical",
        "employe": "employees",
    }
    zh = question_terms("上海办公室员工出差住宿费每晚上限是多少？")
    assert "多少" not in zh and "是" not in zh
    assert {"上海", "办公室", "住宿费", "上限"} <= set(zh)


def test_the_answer_category_is_not_a_term_to_look_for():
    """ "Which regions" asks for a place; the answer ("It lives in Peru") need not say "region",
    so a knowledge base without the word can still answer."""
    assert question_terms("In which regions does the hummingbird live?") == {
        "hummingbird": "hummingbird",
        "live": "live",
    }
    assert set(question_terms("青岚蜂鸟分布在哪些地区？")) == {"青岚", "蜂鸟", "分布"}
    assert "颜色" not in question_terms("黄鳍紫鱼的身体是什么颜色的？")
    assert "sabbat" in question_terms("Which sabbatical rules apply after ten years?")  # the subject stays


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("When was the policy last revised?", AnswerKind.DATE),
        ("What year did the office open?", AnswerKind.DATE),
        ("How many days of leave do I get?", AnswerKind.NUMBER),
        ("Who approves exceptions?", AnswerKind.PERSON),
        ("2022年冬奥会在哪一年举办？", AnswerKind.DATE),
        ("印控克什米尔寺庙踩踏事故死亡人数是多少", AnswerKind.NUMBER),
        ("谁获得了2022年诺贝尔文学奖？", AnswerKind.PERSON),
        ("0-dimensional biomaterials lack inductive properties.", AnswerKind.NONE),
    ],
)
def test_asks_for(question, kind):
    assert asks_for(question) is kind


def test_carries():
    assert carries(AnswerKind.DATE, "The office opened in March 2019.")
    assert carries(AnswerKind.DATE, "会议于2022年2月4日开幕。")
    assert not carries(AnswerKind.DATE, "The office is in Berlin.")
    assert carries(AnswerKind.NUMBER, "造成至少12人死亡")
    assert carries(AnswerKind.NUMBER, "二十五天带薪年假")
    assert not carries(AnswerKind.NUMBER, "Employees get paid leave.")
    assert carries(AnswerKind.NONE, "anything")


def test_script_of():
    assert script_of("住宿费每晚上限是多少？") == "cjk"
    assert script_of("What is the RCEP?") == "latin"
    assert script_of("RCEP具体包括哪些国家") == "cjk"


@pytest.fixture()
def index():
    docs = [
        ("a:1:1:0", "Employees get 25 days of paid annual leave."),
        ("a:1:1:1", "Unused leave days expire in March."),
        ("b:1:1:0", "Hotels are capped at 180 EUR a night."),
        ("c:1:1:0", "员工每年享有十五天带薪年假。"),
    ]
    return BM25Index.build(docs, version=1)


def test_term_stats_counts_chunks_within_the_scope(index):
    all_docs = index.term_stats(["leav", "day", "hotel", "sabbat", "带薪"])
    assert all_docs.chunks == 4
    assert all_docs.df == {"leav": 2, "day": 2, "hotel": 1, "sabbat": 0, "带薪": 1}
    scoped = index.term_stats(["leav", "hotel", "带薪"], doc_ids={"b", "c"})
    assert scoped.chunks == 2
    assert scoped.df == {"leav": 0, "hotel": 1, "带薪": 1}


def test_features_exact_values():
    stats = TermStats(10, {"day": 2, "paid": 1, "leav": 2, "employe": 5})
    w = {t: idf(df, 10) for t, df in stats.df.items()}
    chunks = [
        EvidenceChunk("Leave policy\nEmployees get 25 days of paid leave. Meals are covered.", 0.8, 1, 2),
        EvidenceChunk("Paid parking is available.", 0.3, 9, 1),
    ]
    r = features("How many days of paid leave do employees get?", chunks, stats)
    assert r.kind is AnswerKind.NUMBER
    assert r.x["p_top"] == 0.8
    assert r.x["missing_share"] == 0.0 and r.absent == ()
    assert r.x["cover_chunk"] == pytest.approx(1.0)
    assert r.x["cover_sentence"] == pytest.approx(1.0)
    assert r.best_sentence == "Employees get 25 days of paid leave."
    assert r.x["kind_missing"] == 0.0
    # the same question over a scope that never says "paid": its weight is missing
    stats2 = TermStats(10, {**stats.df, "paid": 0})
    r2 = features("How many days of paid leave do employees get?", chunks[1:], stats2)
    assert r2.absent == ("paid",)
    total = idf(2, 10) * 2 + idf(0, 10) + idf(5, 10)
    assert r2.x["missing_share"] == pytest.approx(idf(0, 10) / total)
    assert r2.x["cover_chunk"] == pytest.approx(idf(0, 10) / total)  # "Paid parking": only "paid" present
    assert r2.x["kind_missing"] == 1.0  # asks for a number; "Paid parking is available." holds none
    assert math.isclose(sum(w.values()), idf(2, 10) * 2 + idf(1, 10) + idf(5, 10))


def test_assess_fitted_model_says_what_is_missing():
    model = AnswerabilityModel("test", ("p_top", "missing_share"), (4.0, -8.0), -2.0)
    stats = TermStats(10, {"day": 2, "sabbat": 0, "employe": 5})
    chunks = [EvidenceChunk("Employees get 25 days of paid annual leave.", 0.9, 1, 1)]
    a = assess("How many days of sabbatical do employees get?", chunks, stats, "latin", 0.5, 0.59, model=model)
    assert not a.answerable and a.absent_terms == ["sabbatical"]
    assert a.missing == "The documents don't mention 'sabbatical'."
    assert a.contributions["p_top"] == pytest.approx(3.6)
    assert a.probability < 0.5 and "P(answerable)" in a.reason and "< 0.500" in a.reason
    ok = assess(
        "How many days do employees get?",
        chunks,
        TermStats(10, {"day": 2, "employe": 5}),
        "latin",
        0.5,
        0.59,
        model=model,
    )
    assert ok.answerable and ok.missing == ""


def test_rule_model_compares_the_best_probability():
    rule = AnswerabilityModel("rule")
    chunks = [EvidenceChunk("Employees get 25 days of leave.", 0.58, 1, 1)]
    a = assess(
        "How many days do employees get?",
        chunks,
        TermStats(5, {"day": 1, "employe": 1}),
        "latin",
        0.5,
        0.59,
        model=rule,
    )
    assert not a.answerable and a.threshold == 0.59 and a.probability == 0.58
    assert not assess("anything", [], TermStats(0, {}), "latin", 0.5, 0.59, model=rule).answerable


def test_scores_that_are_no_probabilities_give_no_p_top_and_decide_nothing():
    """An uncalibrated reranker (RAG_RERANKER=none: RRF scores): no p_top is made up for the fitted
    model, so no model decides; the stage says so and never refuses."""
    from rag.retrieval.answerability.messages import UNCALIBRATED

    chunks = [EvidenceChunk("Employees get 25 days of leave.", 0.016, 1, 1)]
    stats = TermStats(5, {"day": 1, "employe": 1})
    a = assess("How many days do employees get?", chunks, stats, "latin", 0.5, 0.59, calibrated=False)
    assert "p_top" not in a.features
    assert a.model == UNCALIBRATED and a.reason == UNCALIBRATED and a.threshold == 0.0 and a.answerable
    fitted = assess("How many days do employees get?", chunks, stats, "latin", 0.5, 0.59)
    assert fitted.model.startswith("logreg[") and fitted.features["p_top"] == 0.016


def test_inspector_view_lists_every_feature_with_its_weight_and_contribution():
    from rag.views.answerability import feature_frame, verdict_lines

    model = AnswerabilityModel("logreg[test]", ("p_top", "missing_share"), (4.0, -8.0), -2.0)
    stats = TermStats(10, {"day": 2, "sabbat": 0, "employe": 5})
    chunks = [EvidenceChunk("Employees get 25 days of paid annual leave.", 0.9, 1, 1)]
    a = assess("How many days of sabbatical do employees get?", chunks, stats, "latin", 0.5, 0.59, model=model)
    df = feature_frame(a)
    assert list(df["feature"]) == [*a.features, "bias"]
    row = df.set_index("feature").loc["p_top"]
    assert row["value"] == 0.9 and row["weight"] == 4.0 and row["contribution"] == pytest.approx(3.6)
    assert df.set_index("feature").loc["bias", "contribution"] == -2.0
    lines = verdict_lines(a)
    assert lines[0].startswith("Model logreg[test] (latin script): P(answerable)")
    assert "Found in no searched chunk: 'sabbatical'." in lines
    assert lines[-1] == "Shown to the user: The documents don't mention 'sabbatical'."


def test_absent_terms_spelled_differently_in_the_scope_are_not_missing():
    index = BM25Index.build(
        [
            ("a:1:1:0", "The microenvironment of the tumour shapes treatment response."),
            ("b:1:1:0", "康忠是唐朝的一位将军。"),
            ("c:1:1:0", "员工每年享有十五天带薪年假。"),
        ],
        version=1,
    )
    from rag.store.tokenize import tokenize

    typo = tokenize("microenviroment")[0]
    stats = index.term_stats([typo, "sabbat"])
    assert stats.df == {typo: 0, "sabbat": 0}
    assert stats.near == {typo: tokenize("microenvironment")[0]}  # a misspelling, not an absence
    zh = question_terms("康忠是谁？")
    zh_stats = index.term_stats(list(zh))
    assert all(zh_stats.df[t] or t in zh_stats.near for t in zh)  # jieba cut the question differently
    # scoped: the same characters outside the searched documents do not count
    scoped = index.term_stats(["带薪"], doc_ids={"a", "b"})
    assert scoped.df == {"带薪": 0} and scoped.near == {}
    r = features("How does the microenviroment shape treatment?", [EvidenceChunk(index.texts[0], 0.9, 1, 1)], stats)
    assert "microenviroment" not in r.absent


def test_an_english_word_is_never_read_as_a_misspelling_of_another_word():
    """The index's look for a misspelling finds "each" for "beach" and "tension" for "pension"
    (difflib ratio 0.8+): words that common are what the user meant, so they are absent; one that
    is no everyday word is named as missing and the absent-term rule refuses. A real typo
    ("vacaton") is still read as the word it misses."""
    index = BM25Index.build(
        [
            (
                "a:1:1:0",
                "Each employee may work from another country for up to 4 weeks. Raise any tension in "
                "the team with your manager. Vacation requests go to the People Team.",
            )
        ],
        version=1,
    )
    chunks = [EvidenceChunk(index.texts[0], 0.9, 1, 1)]

    def ask(question: str):
        return assess(question, chunks, index.term_stats(list(question_terms(question))), "latin", 0.5, 0.59)

    assert {tokenize("beach")[0], tokenize("pension")[0]} <= set(
        index.term_stats(tokenize("beach pension")).near
    )  # the store's look finds close spellings ...
    a = ask("Does the company pay into a pension while I work from a beach?")
    assert {"beach", "pension"} <= set(a.absent_terms)  # ... the decision does not take them
    assert [m.found for m in a.term_matches if m.term in ("beach", "pension")] == ["absent", "absent"]
    assert not a.answerable and a.missing == "The documents don't mention 'pension'."  # "beach" is everyday
    a = ask("How many vacaton days are there?")
    assert [(m.found, m.via) for m in a.term_matches if m.term == "vacaton"] == [("spelling", tokenize("vacation")[0])]
    assert "vacaton" not in a.absent_terms


def test_a_figure_spelled_in_chinese_numerals_is_present_where_the_documents_write_digits():
    """ "六百块", "三千元", "十二月份" against a policy that writes "600 元", "3,000 元", "12 月":
    neither the figure nor the pieces jieba cuts out of it ("六百", "百块", "千元", "二月") is
    missing, and the sentence with the figure holds it. A name with a numeral ("神舟十三号") and a
    small count ("两个") are not read as figures, and a figure the scope lacks stays missing."""
    index = BM25Index.build(
        [
            ("a:1:1:0", "一线城市住宿费每晚不超过 600 元。"),
            ("b:1:1:0", "预计费用在 3,000 元以上的出差，可以申请备用金。"),
            ("c:1:1:0", "12 月发生的费用须在 12 月 25 日前提交报销单。"),
            ("d:1:1:0", "神舟飞船的两名航天员于13号返回。"),
        ],
        version=1,
    )
    for question, figure in [
        ("自己买六百块的东西要做什么？", "六百块"),
        ("预计出差花费三千元以上，可以先向公司借钱吗？", "三千元"),
        ("十二月份的开销最晚什么时候交报销单？", "十二月"),
    ]:
        terms = question_terms(question)
        pieces = [t for t in terms if t in figure or figure in t]
        stats = index.term_stats(list(terms))
        assert pieces and all(stats.df[t] or t in stats.near for t in pieces), (question, stats.near)
        r = features(question, [EvidenceChunk(text, 0.9, 1, 1) for text in index.texts], stats)
        assert not {terms[t] for t in pieces} & set(r.absent + r.unheld)
    stats = index.term_stats(["十三号", "两个", "八百元"])
    assert stats.near == {}  # a name, a small count, and a figure no text holds
    assert index.term_stats(["八百元"], doc_ids={"b", "c"}).near == {}
    assert index.term_stats(["六百元"], doc_ids={"b", "c"}).near == {}  # 600 is outside the scope
    assert index.term_stats(["六百元"]).near == {"六百元": "600元"}


def test_a_latin_term_run_into_chinese_is_quoted_as_written():
    """ "2021年香港GDP增长了多少？" has no spaces: a message quotes "GDP", not the whole question."""
    terms = question_terms("2021年香港GDP增长了多少？")
    assert terms["gdp"] == "GDP" and terms["2021"] == "2021"


@pytest.mark.parametrize(
    ("question", "not_terms"),
    [
        ("这个计划由谁来主持？", {"这个", "由谁来", "谁来"}),
        ("全香港共有几所高中书院？", {"几所"}),
        ("此鱼分布在哪些地区？", {"此鱼", "地区"}),
        ("误食软枝黄蝉的话，有什么症状？", {"的话"}),
        ("王法慧是谁的女儿？", {"慧是"}),
        ("尤金袋鼠的体重大约是多少？", {"大约"}),
        # a user's own words: cuts across grammar jieba makes up, or lists only as rare phrases
        ("三天内要交吗，我能报销吗，还会扣钱吗？", {"内要", "我能", "还会"}),
        ("一个月顶多能拿几块钱？", {"顶多能"}),
        # what 几 asks in (a time, a day of the month, a month) and relations English says with a preposition
        ("请问早上最晚几点得到公司？", {"几点"}),
        ("食堂周几供应早餐？", {"周几"}),
        ("这个月的网费最迟几号之前要交？", {"几号", "之前"}),
        ("费用产生以后要在几天之内提交报销？", {"以后", "之内"}),
        ("单价一千元以上的采购谁审批？", {"以上"}),
    ],
)
def test_question_frames_are_not_terms(question, not_terms):
    """Words that frame a Chinese question (who by, how many of, this, if) are not what the
    answer says, so their absence from the documents is no reason to refuse."""
    assert not (not_terms & set(question_terms(question)))


def test_grammar_cuts_keep_the_words_a_user_asks_about():
    """The rule drops a cut across grammar, never the colloquial words themselves (倒休, 扣钱 and
    快递费 are as rare in jieba's dictionary as 顶多能)."""
    assert {"报销", "扣钱"} <= set(question_terms("三天内要交吗，我能报销吗，还会扣钱吗？"))
    assert {"倒休", "快递费"} <= set(question_terms("倒休和快递费怎么算？"))


def test_relations_and_asked_units_keep_words_built_on_the_same_characters():
    """Only the 以 / 之 compounds of a direction and an interrogative glued to a unit are frames:
    the words around them stay terms ("早点" is breakfast, "每月" a period the answer must match)."""
    assert set(question_terms("早点补贴几点发？")) == {"早点", "补贴"}
    assert set(question_terms("入职之后每月的补贴是多少？")) == {"入职", "每月", "补贴"}


def test_a_latin_name_in_a_chinese_question_stays_a_term():
    """jieba's tokens come before the Latin ones, so "agg01" follows "哪些" in the token list; it
    is still the subject, not the category asked for."""
    assert "agg01" in question_terms("AGG01的实际功效有哪些？")


def test_a_sentence_holds_the_terms_of_its_heading():
    """ "本种分布于……" under "# 青岚蜂鸟" holds the bird's name: the best sentence is the one that
    says where it lives, and nothing the question asks is reported missing."""
    stats = TermStats(10, {"青岚": 1, "蜂鸟": 2, "分布": 3})
    text = "青岚蜂鸟是蜂鸟科的一种小型鸟类。本种分布于安第斯山脉东坡的云雾林。"
    plain = features("青岚蜂鸟分布在哪些地区？", [EvidenceChunk(text, 0.9, 1, 1)], stats)
    assert plain.x["cover_sentence"] < 1.0 and plain.unheld  # no sentence names both
    headed = features("青岚蜂鸟分布在哪些地区？", [EvidenceChunk(text, 0.9, 1, 1, heading="青岚蜂鸟")], stats)
    assert headed.x["cover_sentence"] == pytest.approx(1.0) and not headed.unheld
    assert headed.best_sentence == "本种分布于安第斯山脉东坡的云雾林。"


def test_one_unheld_term_is_not_called_absent():
    """A term the documents hold, but not where the rest of the question is: the message says the
    closest passage lacks it, not that no passage says anything about it."""
    model = AnswerabilityModel("test", ("cover_sentence",), (1.0,), -5.0)  # refuses whatever the features
    chunks = [EvidenceChunk("Employees get 25 days of paid annual leave. Parking is free for staff.", 0.9, 1, 1)]
    a = assess(
        "How many parking days do employees get?",
        chunks,
        TermStats(10, {"park": 1, "day": 2, "employe": 5}),
        "latin",
        0.5,
        0.59,
        model=model,
    )
    assert a.missing == "The closest passage doesn't mention 'parking'."


def test_the_readers_twin_decides_only_when_every_feature_it_reads_was_computed(tmp_path):
    import json

    from rag.retrieval.answerability.model import load_models, model_for

    path = tmp_path / "weights.json"
    plain = {"features": ["p_top"], "weights": [1.0], "bias": 0.0}
    twin = {"features": ["p_top", "reader", "reader_sentence"], "weights": [1.0, 1.0, 1.0], "bias": 0.0}
    path.write_text(json.dumps({"models": {"cjk": plain, "cjk/reader": twin}}), encoding="utf-8")
    load_models.cache_clear()
    try:
        both = model_for("cjk", str(path), features={"p_top": 0.9, "reader": 0.8, "reader_sentence": 0.7})
        one = model_for("cjk", str(path), features={"p_top": 0.9, "reader": 0.8})  # the sentence reader missing
        assert both.features == ("p_top", "reader", "reader_sentence")
        assert one.features == ("p_top",)
        assert model_for("latin", str(path), features={"p_top": 0.9}).is_rule  # no model for the script
        assert model_for("cjk", str(path), features={"reader": 0.8}).is_rule  # not even the plain model's p_top
    finally:
        load_models.cache_clear()


def test_a_refusal_where_every_term_is_there_says_the_readers_found_no_answer():
    """RGB's case: the passages hold every word of the question and carry what it asks for, and
    only the readers say no. The refusal says so instead of naming nothing."""
    from rag.retrieval.answerability import _Read
    from rag.retrieval.answerability.messages import READERS_NO, missing

    def read(reader: float, sentence: float) -> _Read:
        x = {"kind_missing": 0.0, "reader": reader, "reader_sentence": sentence}
        readers = {"reader": "window reader", "reader_sentence": "sentence reader"}
        return _Read(x, AnswerKind.NUMBER, (), (), "2007年，卡塞雷斯举办了人口论坛。", readers)

    q = "2007年，卡塞雷斯的人口有多少？"
    assert "答案阅读器在其中找不到回答这个问题的句子" in missing(read(0.2, 0.1), q)  # in the question's language
    assert "answer readers find no sentence" in missing(read(0.2, 0.1), "How many people lived in Cáceres in 2007?")
    assert missing(read(READERS_NO, 0.1), q) == ""  # one reader reads an answer: nothing specific to say
    no_readers = _Read({"kind_missing": 0.0}, AnswerKind.NUMBER, (), (), "…")
    assert missing(no_readers, q) == ""


def test_what_was_missing_is_said_in_the_question_s_language():
    """Each reason a refusal names, for a Chinese question, in Chinese; for an English one (and a
    Japanese one: CJK but not Chinese) in English."""
    from rag.retrieval.answerability import _Read
    from rag.retrieval.answerability.messages import missing

    def read(absent=(), unheld=(), kind_missing=0.0, kind=AnswerKind.NONE) -> _Read:
        return _Read({"kind_missing": kind_missing}, kind, tuple(absent), tuple(unheld), "最相关的句子。")

    zh = "员工体检和年假可以报销多少？"
    assert missing(read(absent=["体检", "年假"]), zh) == "文档中没有提到“体检”、“年假”。"
    # jieba cuts 假发 (a wig) out of 假发票 as well: only the word the question says is named
    fake = "有人拿假发票来报销会怎么处理？"
    assert missing(read(absent=["假发", "假发票"]), fake) == "文档中没有提到“假发票”。"
    both = "The documents don't mention 'polyester', 'ester'."  # English words are whole: neither is a cut
    assert missing(read(absent=["polyester", "ester"]), "Is polyester an ester?") == both
    assert missing(read(kind_missing=1.0, kind=AnswerKind.DATE), zh) == "问题问的是日期，但最相关的段落里没有日期。"
    assert missing(read(unheld=["停车"]), zh) == "最相关的段落没有提到“停车”。"
    assert missing(read(unheld=["停车", "夜间", "发票"]), zh) == "没有哪个段落同时提到“停车”、“夜间”和“发票”。"
    # an everyday word (费用, "cost") is no more named there than among the absent ones
    assert missing(read(unheld=["停车", "夜间", "费用"]), zh) == "没有哪个段落同时提到“停车”和“夜间”。"
    # grammar is never named, in either list: 以后 and 之内 (locatives), 自己 (a pronoun); what is
    # left is named as the question writes it: jieba's 六百 and 百块 are the user's 六百块
    deadline = "费用产生以后要在几天之内提交报销？"
    assert missing(read(unheld=["以后", "之内"]), deadline) == ""
    assert missing(read(absent=["以后", "年假"]), deadline + "年假呢？") == "文档中没有提到“年假”。"
    buy = "自己买一件六百块的办公用品之前要做什么？"
    assert missing(read(unheld=["自己", "六百", "百块"]), buy) == "最相关的段落没有提到“六百块”。"
    assert (
        missing(read(unheld=["体检", "自己"]), "自己体检要先做什么？") == "最相关的段落没有提到“体检”。"
    )  # a verb is named
    assert (
        missing(read(absent=["sabbatical"]), "How long is the sabbatical?")
        == "The documents don't mention 'sabbatical'."
    )
    assert missing(read(absent=["健康診断"]), "健康診断の費用は？").startswith("The documents don't mention")


def test_a_decimal_point_does_not_end_the_sentence_that_holds_the_answer():
    """ "版本 2.0，自 2025 年 1 月 1 日起施行。" is one sentence: cut at "2." the date sits in a piece
    without the question's terms, and a date question reads as if the best sentence held none."""
    from rag.text.lexical import sentences

    assert sentences("Leave is 1.5 days a month. Carry-over ends in March.") == [
        "Leave is 1.5 days a month.",
        "Carry-over ends in March.",
    ]
    stats = TermStats(10, {"文件": 1, "编号": 1, "施行": 1, "制度": 2, "报销": 3})
    text = "文件编号：FIN-SH-003，版本 2.0，自 2025 年 1 月 1 日起施行。"
    r = features("这份报销制度从哪天开始施行？文件编号是多少？", [EvidenceChunk(text, 0.9, 1, 1)], stats)
    assert r.best_sentence == text and r.x["kind_missing"] == 0.0


def test_an_amount_the_question_states_is_held_by_a_rule_whose_range_holds_it():
    """ "六百块的办公用品" against "单价超过 500 元的物品须事先申请", "a USD 20,000 expense" against "Claims
    above USD 10,000 need the CFO": the amount is the case the rule is for, not a word the
    documents must repeat. The best sentence holds it, the Inspector says how ("range"), and a
    rule for other amounts, a year and a count never do; the ablation switch turns it off."""
    index = BM25Index.build(
        [
            ("a:1:1:0", "个人申请采购单价超过 500 元的物品，须事先提交采购申请。办公用品由行政部统一采购。"),
            ("b:1:1:0", "Claims above USD 10,000 need approval from the CFO. Smaller claims need a director."),
            ("c:1:1:0", "单笔报销金额不超过 300 元的，由部门经理审批。"),
        ],
        version=1,
    )

    def read(question, text):
        terms = question_terms(question)
        return terms, features(question, [EvidenceChunk(text, 0.9, 1, 1)], index.term_stats(list(terms)))

    terms, r = read("自己买一件六百块的办公用品之前要做什么？", index.texts[0])
    pieces = {t for t in terms if t in "六百块"}
    assert pieces and not {terms[t] for t in pieces} & set(r.absent + r.unheld)
    assert {m.term: m.found for m in r.matches if m.term in pieces} == dict.fromkeys(pieces, "range")
    assert all(m.in_best_sentence for m in r.matches if m.term in pieces)
    assert r.best_sentence.startswith("个人申请采购单价超过 500 元")

    _, r = read("Who has to sign off on a USD 20,000 expense?", index.texts[1])
    assert {m.term for m in r.matches if m.in_best_sentence} >= {"USD", "20", "000"}
    assert r.best_sentence.startswith("Claims above USD 10,000")

    _, r = read("自己买一件六百块的办公用品之前要做什么？", index.texts[2])  # a rule for up to 300 元
    assert "六百块" in r.unheld + r.absent
    assert not any(
        m.found == "range" for m in read("Who won in 2022?", "Claims above 2,000 need a director.")[1].matches
    )


def test_the_amount_range_rule_switches_off(monkeypatch):
    monkeypatch.setenv("RAG_RULES_OFF", "amount-ranges")
    index = BM25Index.build([("a:1:1:0", "个人申请采购单价超过 500 元的物品，须事先提交采购申请。")], version=1)
    question = "自己买一件六百块的办公用品之前要做什么？"
    terms = question_terms(question)
    r = features(question, [EvidenceChunk(index.texts[0], 0.9, 1, 1)], index.term_stats(list(terms)))
    assert "六百块" in r.unheld + r.absent and not any(m.found == "range" for m in r.matches)


def test_the_readers_read_a_synonym_the_best_chunk_holds_as_the_chunk_writes_it():
    """A term the chunk lacks is read as its Cilin synonym that the chunk holds ("散布" over a
    passage saying "分布"); terms the chunk holds, and those without a synonym in it, stay."""
    question = "尤金袋鼠散布在哪些地区？"
    chunk = "尤金袋鼠分布于澳大利亚南部及附近岛屿。"
    assert in_evidence_words(question, question_terms(question), chunk) == "尤金袋鼠分布在哪些地区？"
    assert in_evidence_words(question, question_terms(question), "尤金袋鼠散布于澳大利亚南部。") == question
    assert in_evidence_words(question, question_terms(question), "袋鼠以草为食。") == question  # no synonym there


def test_a_synonym_inside_the_term_is_a_cut_not_another_word_for_it():
    """Cilin's "办公" for "办公室": the chunk's "办公用品" says nothing about an office, so the
    question the readers read keeps "办公室"."""
    question = "上海办公室的住房补贴是每月多少？"
    assert in_evidence_words(question, question_terms(question), "办公用品单价超过 500 元须经审批。") == question


def test_the_readers_read_the_question_as_written_with_the_rule_off(monkeypatch):
    question = "尤金袋鼠散布在哪些地区？"
    monkeypatch.setenv("RAG_RULES_OFF", "reader-synonyms")
    assert in_evidence_words(question, question_terms(question), "尤金袋鼠分布于澳大利亚南部。") == question


def test_a_synonym_in_the_evidence_covers_a_term_other_documents_hold_as_written(monkeypatch):
    """Other documents of the scope say "审核" and "给付", the best chunk "审批" and "付款": its
    sentence holds both terms through Cilin, as it would if no document said them as written. A
    cut of a word covers nothing: "办公用品" does not hold "办公室"."""
    question = "审核完毕后财务几天内给付？"
    terms = question_terms(question)
    chunk = [EvidenceChunk("财务部在审批完成后 10 个工作日内付款。", 0.9, 1, 1)]
    said = {"审批": 3, "付款": 3, "财务": 3}
    elsewhere = features(question, chunk, TermStats(10, {t: 2 for t in terms} | said))
    absent = features(question, chunk, TermStats(10, {t: 0 for t in terms} | said))
    held = {m.term: m for m in elsewhere.matches}
    assert held["审核"].found == "as written" and held["审核"].in_best_sentence and held["给付"].in_best_sentence
    assert {"审核", "给付"}.isdisjoint(elsewhere.unheld) and {"审核", "给付"}.isdisjoint(absent.unheld)
    monkeypatch.setenv("RAG_RULES_OFF", "synonyms")
    plain = features(question, chunk, TermStats(10, {t: 2 for t in terms} | said))
    assert {"审核", "给付"} <= set(plain.unheld) and plain.x["cover_sentence"] < elsewhere.x["cover_sentence"]
    monkeypatch.delenv("RAG_RULES_OFF")
    # an English term the scope holds gets no synonyms: on SciFact they let same-topic claims through
    vacation = question_terms("How many vacation days do employees get?")
    assert "vacat" not in present_synonyms(vacation, TermStats(10, {"vacat": 2, "holiday": 2, "day": 2}))
    assert "vacat" in present_synonyms(vacation, TermStats(10, {"vacat": 0, "holiday": 2, "day": 2}))
    office = "上海办公室的住房补贴是每月多少？"
    stats = TermStats(10, {t: 2 for t in question_terms(office)})
    read = features(office, [EvidenceChunk("办公用品单价超过 500 元须经审批。", 0.9, 1, 1)], stats)
    assert not {m.term: m for m in read.matches}["办公室"].in_best_sentence
