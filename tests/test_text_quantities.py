"""Durations and counts in a rule's range (``rag.text.quantities``): a question's "six years" is held
by "after five years of continuous service", in its unit only, and a calendar reference is none."""

from __future__ import annotations

import pytest

from rag.text.amounts import Interval
from rag.text.quantities import asked_quantities, covers_quantity, quantities, quantity_terms, rule_ranges

FIVE_YEARS = "After five years of continuous service the allowance rises to 27 working days."
CERTIFICATE = "A medical certificate is required for absences of more than 3 consecutive working days."
CARRY_OVER = "Up to 5 unused days of annual leave may be carried over into the next calendar year."
ZH_CERTIFICATE = "连续病假超过 3 天的，须提供二级以上医院出具的病假证明。"


@pytest.mark.parametrize(
    ("question", "rule", "held"),
    [
        ("I've been here six years, how many days of annual leave do I get?", FIVE_YEARS, True),
        ("I joined 4 years ago; how much annual leave do I get?", FIVE_YEARS, False),
        ("I've been off sick for four days, do I need a doctor's note?", CERTIFICATE, True),
        ("I was off sick for 3 days, do I need a doctor's note?", CERTIFICATE, False),  # "more than 3" leaves 3 out
        ("I've been here six years, how many days can I carry over?", CARRY_OVER, False),  # days, not years
        ("我已经连续病了四天，要交什么证明？", ZH_CERTIFICATE, True),
        ("我病了两天，要交什么证明？", ZH_CERTIFICATE, False),
    ],
)
def test_a_stated_duration_is_held_by_a_rule_whose_range_holds_it_in_its_unit(question, rule, held):
    assert covers_quantity(asked_quantities(question), rule) is held


def test_a_rule_sets_its_range_per_unit_and_a_bare_figure_sets_none():
    assert rule_ranges(FIVE_YEARS) == {"year": Interval(low=5.0)}  # "27 working days" is what is given
    notice = "Give at least four weeks' notice for any absence longer than 5 consecutive working days."
    assert rule_ranges(notice) == {"week": Interval(low=4.0), "day": Interval(low=5.0, low_open=True)}
    assert rule_ranges("报销须在费用发生后 30 天以内提交。") == {"day": Interval(high=30.0)}
    assert rule_ranges("入职满五年的员工每年享有 15 天年假。") == {"year": Interval(low=5.0)}


@pytest.mark.parametrize(
    "text", ["2022年的年假怎么算？", "3月15日以后提交", "哪一年开始实行？", "这一天要值班吗？", "出差第一天的餐补"]
)
def test_a_calendar_reference_is_no_quantity(text):
    assert quantities(text) == []


def test_the_terms_that_write_a_quantity():
    surface = {"six": "six", "years": "years", "annual": "annual", "leave": "leave"}
    asked = asked_quantities("I've been here six years, how much annual leave?")
    assert quantity_terms(asked, surface) == {"six", "years"}
    assert quantity_terms(asked_quantities("病了四天要交什么证明？"), {"四天": "四天", "证明": "证明"}) == {"四天"}
