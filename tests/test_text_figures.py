"""One set of date, figure and frame rules (rag.text.figures, rag.text.frames), read the same
way by the answerability stage and the extractive answerer."""

from __future__ import annotations

import pytest

from rag.answer.question import has_date, question_parts
from rag.retrieval.answerability.terms import AnswerKind, asks_for, carries, question_terms
from rag.text.figures import (
    MONTHS,
    asks_date,
    asks_number,
    asks_share,
    dates_in,
    holds_share,
    names_quantity,
    other_years,
    years_in,
)
from rag.text.frames import is_frame_token


@pytest.mark.parametrize("question", ["When are performance reviews held?", "会议什么时候开始？", "合同的截止日期"])
def test_a_date_question_asks_for_a_date_to_both_stages(question):
    assert asks_date(question)
    assert asks_for(question) is AnswerKind.DATE
    assert question_parts(question)[0].wants_date


@pytest.mark.parametrize(
    "text", ["Reviews are held every March.", "It opened in 2019.", "下周一开会。", "within 30 days"]
)
def test_a_date_is_held_for_both_stages(text):
    assert carries(AnswerKind.DATE, text)
    assert has_date(text)


@pytest.mark.parametrize(
    "text",
    [
        "Desks not checked into by 10:30 are released.",  # a time of day
        "The gym opens at 6am and closes at 9.30 p.m.",
        "Collections end at midday.",
        "Fees are taken on the 1st of each month.",  # a day of the month by its ordinal
        "Rent is late if not paid by the 5th.",
        "Return the car on or before your last working day.",  # a day named by an event
        "Send your bank details 3 working days before your start date.",
        "The library is closed at weekends.",
        "员工须在8:45前到岗。",  # a time of day in Chinese (什么时间 asks for one)
        "服务台下午5点半下班。",
        "每天上午九点开门。",
    ],
)
def test_a_time_of_day_a_day_of_the_month_or_a_day_named_by_an_event_answers_when(text):
    """A "when" question is answered by a time ("by 10:30"), an ordinal day or a day an event names, not
    only by a calendar date: none of them leaves the answer's kind missing."""
    assert carries(AnswerKind.DATE, text)
    assert has_date(text)


@pytest.mark.parametrize(
    "text",
    [
        "Version 2.0 is out.",
        "Mix them at a ratio of 1:7.",
        "Go to the 5th floor.",
        "Rated 3.5 stars.",
        "配比为1：7。",
        "请再快一点。",  # 点 after a numeral is "a little" or "points", not an hour, without 钟 / 半 / 分 or a time of day
        "我们提出3点建议。",
    ],
)
def test_a_version_a_ratio_or_a_floor_is_no_date(text):
    assert not has_date(text)


def test_may_alone_is_the_modal_not_the_month():
    assert not dates_in("You may claim a taxi.")
    assert dates_in("Signed on 3 May 2024") >= {"3may", "2024"}


@pytest.mark.parametrize(
    ("question", "number"),
    [("How many days of leave?", True), ("员工有几项福利？", True), ("几何是什么？", False), ("What is X?", False)],
)
def test_asks_number(question, number):
    assert asks_number(question) is number


@pytest.mark.parametrize(
    ("question", "share"),
    [
        ("出差第一天的餐补按什么比例发？", True),
        ("养老保险自己要从工资里扣百分之几", True),
        ("这季度评了个C，奖金打几折？", True),
        ("What percentage of France's population is protestant?", True),
        ("What proportion has to be farmland?", True),
        ("KPI在绩效里占多大比重？", True),
        ("肯尼亚沿海地区女孩卖淫的比例为？", True),
        ("出差一天的餐补是多少？", False),
        ("重力加速度与什么成比例？", False),  # proportional to what: no share asked
        ("在短距离内什么力比重力弱？", False),  # 比 + 重力, not 比重
        ("How many days of leave do I get?", False),
        ("How much of the budget goes to travel?", False),  # answered by an amount as often as by a share
        ("What was the ratio of British settlers to French?", True),
        ("What is the power-to-weight ratio of a steam plant?", False),  # a named quantity, not a share
    ],
)
def test_a_share_question_asks_for_a_share_and_a_figure(question, share):
    assert asks_share(question) is share
    part = question_parts(question)[0]
    assert part.wants_share is share
    assert part.wants_figure or not share


@pytest.mark.parametrize(
    ("text", "share"),
    [
        ("出发当天和返回当天按 50% 发放。", True),
        ("建筑业占国内生产总值的 6％至 9％。", True),
        ("男女生比例约为1：7。", True),
        ("British settlers outnumbered the French 20 to 1.", True),
        ("about one-eighth the number of French Catholics", True),
        ("estimates ranging from 200,000 to 1,000,000", False),
        ("绩效系数为 0.6。", True),
        ("试用期工资按转正工资的八折发放。", True),
        ("其中三成用于研发。", True),
        ("A two-thirds majority is needed.", True),
        ("Over half of the forest is gone.", True),
        ("每人每天 180 元。", False),
        ("项目已完成，成本为 3,000 元。", False),  # 成 after no numeral
        ("Reviews are held in Q3 2025.", False),
        ("Screens come in 16:9 or 3 比 1.", True),
        ("因加班至 21:00 以后下班的，可乘坐出租车回家。", False),  # a time of day, not a ratio
        ("每日 8:45 前到岗。", False),
    ],
)
def test_a_share_is_a_percentage_ratio_fraction_or_discount(text, share):
    assert holds_share(text) is share


def test_quantity_nouns_come_from_a_general_list():
    assert names_quantity("What is the price of the premium plan?")
    assert names_quantity("北京办公室的人数")
    assert not names_quantity("What is the per diem?")  # no demo word: a Latin loan is not a quantity noun


def test_one_month_list():
    assert len(MONTHS) == 12 and MONTHS[2] == "march"


@pytest.mark.parametrize(
    ("token", "frame"),
    [("几项", True), ("哪所", True), ("慧是", True), ("此鱼", True), ("几何", False), ("漫画", False), ("是", False)],
)
def test_frame_tokens_by_rule(token, frame):
    assert is_frame_token(token) is frame


def test_question_terms_keep_a_dictionary_word_that_starts_like_a_frame():
    assert "几何" in question_terms("几何学的创始人是谁？")
    assert set(question_terms("王法慧是谁")) == {"王法"}  # "慧是": a cut across 是
    assert set(question_terms("此鱼分布在哪里")) == {"分布"}


@pytest.mark.parametrize(
    ("question", "date"),
    [
        ("When are performance reviews held?", True),
        ("Reviews are held when?", True),
        ("By when must I submit the form?", True),
        ("I travel a lot, and when do I file the claim?", True),
        ("What's the limit per guest when taking customers out to dinner?", False),  # a conjunction
        ("How early do I have to put the bins out?", True),
        ("How late can I drop the car off?", True),
        ("Which days should I send my figures in?", True),
        ("what's our deadline to cancel for free?", True),
        ("deadline to upload my certificate after passing?", True),
        ("I missed the sign-up deadline, how much does it cost to enrol late?", False),  # asks a sum
        ("How long is the notice period?", False),
    ],
)
def test_a_date_is_asked_by_question_words_not_by_a_conjunction(question, date):
    assert asks_date(question) is date
    assert (asks_for(question) is AnswerKind.DATE) is date


@pytest.mark.parametrize(
    ("text", "years"),
    [
        ("1901 年华沙居民中天主教徒的比例是多少？", {1901}),
        ("在1361至1528年间，威尼斯发生了22次瘟疫。", {1361, 1528}),
        ("from 90% in 2004 to 60% in 2005", {2004, 2005}),
        ("in 1066 the Normans came", {1066}),
        ("单笔报销 2,000 元，2000 元以上需审批，1500 人参加", set()),  # amounts and counts, not years
        ("1200 soldiers and version 2.2010", set()),
        ("from the 1970s and beyond, 1700年代", set()),  # a decade or a century is no year asked about
    ],
)
def test_years_are_read_apart_from_amounts_and_counts(text, years):
    assert years_in(text) == years


def test_a_sentence_about_other_years_is_not_about_the_asked_one():
    assert other_years(frozenset({1361}), "1576年至77年的瘟疫在威尼斯杀死了50,000人。")
    assert not other_years(frozenset({1400}), "在1361至1528年间，威尼斯发生了22次瘟疫。")  # a span holding it
    assert not other_years(frozenset({1361}), "瘟疫杀死了三分之一的人口。")  # no year: the heading may set it
    assert not other_years(frozenset(), "It opened in 2019.")
    assert other_years(frozenset({2001}), "In the early 1970s, ABC completed its transition to color.")
    assert not other_years(frozenset({1975}), "In the early 1970s, ABC completed its transition to color.")
    assert question_parts("What percentage of Warsaw was Catholic in 1901?")[0].years == {1901}
