"""Amount conditions: the range a question asks about and the range a rule sentence covers.
The extractive answerer lowers a rule for other amounts than the asked one (``outside_range``);
the answerability stage counts the amount a question states as held by a rule whose range holds
it (``money_asked``, ``covers``): "六百块的办公用品" by "单价超过 500 元的物品".

"Who approves claims above USD 10,000?" asks about the amounts over 10,000, not about 10,000
itself: "Claims above USD 2,500 and up to USD 10,000 need a director" covers (2,500, 10,000],
which does not meet (10,000, ∞); "Claims above USD 10,000 need the CFO" covers exactly that.
A bare amount ("a USD 8,000 claim") is the point [8,000, 8,000]. Each comparison word gives a
bound with its direction and whether the figure itself is included ("above" leaves it out,
"up to" / "不超过" / "以上" keep it). Figures are read from canonical text (``numerals``), so
"两万元" is 20000. Only amounts count (300 and up, or written with a thousands separator):
"more than 3 days" is a duration, not the amount a rule is for.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

from rag.store.numerals import canonical
from rag.text.figures import CURRENCY, ZH_NUMERAL

_NUM = r"(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d{3,}(?:\.\d+)?)"
_CURRENCY = rf"(?:{CURRENCY}\s*)?"  # a general list (rag.text.figures), not the demo's
# (words, the bound it sets: "low" or "high", whether the figure itself is included); longest first
# within a direction, so "not exceeding" is read before "exceeding" and "不超过" before "超过".
BEFORE_WORDS: tuple[tuple[str, str, bool], ...] = (
    (
        r"not exceeding|not more than|no more than|up to|at most|a maximum of|maximum of|不超过|不高于|不多于|最多|至多",
        "high",
        True,
    ),
    (r"less than|fewer than|below|under|低于|少于|小于|不足|未满", "high", False),
    (r"at least|a minimum of|minimum of|not less than|no less than|不低于|不少于|至少", "low", True),
    (r"above|over|more than|exceeding|greater than|in excess of|超过|高于|大于|多于", "low", False),
)
AFTER_WORDS: tuple[tuple[str, str, bool], ...] = (
    (r"or more|or above|and above|以上|及以上", "low", True),
    (r"or less|or below|and below|以下|以内|及以下", "high", True),
)
_UNIT = r"\s*(?:元|块)?\s*"
_BEFORE_RE = re.compile(
    "|".join(f"(?P<b{i}>{words})\\s*{_CURRENCY}{_NUM}" for i, (words, _, _) in enumerate(BEFORE_WORDS)), re.I
)
_AFTER_RE = re.compile(
    "|".join(f"{_CURRENCY}{_NUM}{_UNIT}(?P<a{i}>{words})" for i, (words, _, _) in enumerate(AFTER_WORDS)), re.I
)
_BETWEEN_RE = re.compile(rf"(?:between\s+)?{_CURRENCY}{_NUM}{_UNIT}(?:至|到|-|–|and|to)\s*{_CURRENCY}{_NUM}", re.I)
_AMOUNT_RE = re.compile(_NUM)


@dataclass(frozen=True)
class Interval:
    """Amounts from ``low`` to ``high``; an open end leaves its figure out."""

    low: float = -math.inf
    high: float = math.inf
    low_open: bool = False
    high_open: bool = False

    @classmethod
    def point(cls, value: float) -> Interval:
        return cls(value, value)

    def intersect(self, other: Interval) -> Interval:
        """The amounts in both ranges (its low above its high when there are none)."""
        low = max((self.low, self.low_open), (other.low, other.low_open))  # at a tie the open end is tighter
        high = min((self.high, not self.high_open), (other.high, not other.high_open))
        return Interval(low[0], high[0], low[1], not high[1])

    def empty(self) -> bool:
        return self.low > self.high or (self.low == self.high and (self.low_open or self.high_open))

    def meets(self, other: Interval) -> bool:
        """Some amount lies in both ranges."""
        return not self.intersect(other).empty()


def bound(value: float, side: str, inclusive: bool) -> Interval:
    """The range a comparison word sets: from ``value`` up ("low") or up to it ("high")."""
    if side == "low":
        return Interval(low=value, low_open=not inclusive)
    return Interval(high=value, high_open=not inclusive)


def _value(raw: str) -> float:
    return float(raw.replace(",", ""))


def _bounds(text: str) -> tuple[list[Interval], list[tuple[int, int]]]:
    """Each bound a comparison word sets in ``text``, and the character spans they take."""
    found, spans = [], []
    for regex, table, prefix in ((_BEFORE_RE, BEFORE_WORDS, "b"), (_AFTER_RE, AFTER_WORDS, "a")):
        for m in regex.finditer(text):
            i = next(k for k in range(len(table)) if m.group(f"{prefix}{k}"))
            _, side, inclusive = table[i]
            found.append(bound(_value(_AMOUNT_RE.search(m.group()).group()), side, inclusive))
            spans.append(m.span())
    for m in _BETWEEN_RE.finditer(text):
        if not any(s <= m.start() < e or s < m.end() <= e for s, e in spans):
            a, b = sorted((_value(m.group(1)), _value(m.group(2))))
            found.append(Interval(a, b))
            spans.append(m.span())
    return found, spans


def sentence_range(text: str) -> Interval | None:
    """The amounts a rule sentence covers (all its bounds together), None when it sets none."""
    bounds, _ = _bounds(canonical(text))
    if not bounds:
        return None
    out = Interval()
    for b in bounds:
        out = out.intersect(b)
    return out


def question_ranges(text: str) -> tuple[Interval, ...]:
    """The amounts a question asks about: each comparison it makes ("above USD 10,000",
    "超过两万元") as a range, each other amount it names as a point."""
    text = canonical(text)
    bounds, spans = _bounds(text)
    points = [
        Interval.point(_value(m.group()))
        for m in _AMOUNT_RE.finditer(text)
        if not any(s <= m.start() < e for s, e in spans)
    ]
    return (*bounds, *points)


def outside_range(asked: tuple[Interval, ...], text: str) -> bool:
    """``text`` states a rule for a range of amounts that none of the ``asked`` ranges meets:
    a rule for other cases than the one asked about."""
    if not asked:
        return False
    covered = sentence_range(text)
    return covered is not None and not any(a.meets(covered) for a in asked)


# an amount of money as written: a currency before the figure or 元 / 块 after it ("USD 8,000",
# "£800", "8,000 元", "两万元", "六百块")
_MONEY_RE = re.compile(
    rf"{CURRENCY}\s*\d[\d,.]*(?:\s*[万千])?|\d[\d,.]*\s*[万千]?\s*(?:元|块)|[\d{ZH_NUMERAL}]+(?:元|块)", re.I
)


def money_asked(question: str) -> tuple[Interval, ...]:
    """The amounts of money a question states or compares (``question_ranges``), none when it
    names no money: a year or a count ("in 2022", "500 条") is no amount a rule is for."""
    return question_ranges(question) if _MONEY_RE.search(question) else ()


def amount_terms(question: str, surface: Mapping[str, str]) -> frozenset[str]:
    """The question terms (term -> as written) that are part of how it writes an amount of money:
    "usd", "20", "000" of "USD 20,000"; "六百", "百块", "六百块" of "六百块"."""
    spans = [m.group().casefold() for m in _MONEY_RE.finditer(question)]
    return frozenset(t for t, shown in surface.items() if any(shown.casefold() in span for span in spans))


def covers(asked: tuple[Interval, ...], text: str) -> bool:
    """``text`` states a rule for a range of amounts that one of the ``asked`` amounts falls in:
    "单价超过 500 元的物品" covers 600, "Claims above USD 10,000 need the CFO" covers 20,000."""
    if not asked:
        return False
    covered = sentence_range(text)
    return covered is not None and any(a.meets(covered) for a in asked)
