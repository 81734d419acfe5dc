"""Durations and counts with a unit, in a question and in the range a rule sentence covers.

"I've been here six years" is held by "After five years of continuous service the allowance rises
to 27 working days": six years lies in the years from five on. "我已经连续病了四天" is held by
"连续病假超过 3 天须提供医院证明". The same reading as amounts of money (``amounts``: the comparison
words, open and closed ends, ``Interval``), but each quantity has its unit, and a rule holds a
question's quantity only in the same unit: "up to 5 unused days" says nothing about six years.

Only coverage is read from it, never a reason to lower a sentence: a limit ("up to 5 days")
answers a question about more ("Can I carry over 7 days?" is answered no by it). A calendar
reference is no quantity: "2022年" is a year, "3月" a month of the year, "15日" a date, and
"哪一年" / "这一天" point at one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from rag.store.numerals import canonical
from rag.text.amounts import AFTER_WORDS, BEFORE_WORDS, Interval, bound

# English number words a duration or count is written with ("six years", "twelve nights")
_WORDS = (
    "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen twenty"
).split()
NUMBER_WORDS: Mapping[str, int] = {w: i for i, w in enumerate(_WORDS, start=1)} | {
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "sixty": 60,
    "ninety": 90,
}
# unit -> how English writes it (after up to two words: "3 consecutive working days"), and Chinese
# (right after the figure; 年 not after four digits, a month only as 个月, a day not as 日)
_UNITS_EN = {
    "year": r"years?",
    "month": r"months?",
    "week": r"weeks?",
    "day": r"days?",
    "hour": r"hours?",
    "night": r"nights?",
    "minute": r"minutes?",
}
_UNITS_ZH = {
    "year": r"(?:个)?(?:年|周年)",
    "month": r"个月",
    "week": r"(?:个)?(?:星期|礼拜)|周",
    "day": r"(?:个)?工作日|天",
    "hour": r"(?:个)?小时",
    "night": r"晚|夜",
    "minute": r"分钟",
}
_NUM_EN = r"(?P<num>\d+(?:\.\d+)?|" + "|".join(NUMBER_WORDS) + r")"
_EN_RE = re.compile(
    _NUM_EN
    + r"(?:[\s-]+(?!(?:and|or|of|to|per|a|an|the)\b)[a-z]+){0,2}?[\s-]+(?P<unit>"
    + "|".join(f"(?P<en_{u}>{w})" for u, w in _UNITS_EN.items())
    + r")\b",
    re.I,
)
_ZH_RE = re.compile(
    r"(?<![\d.])(?P<num>\d{1,3}(?:\.\d+)?)\s*(?P<unit>"
    + "|".join(f"(?P<zh_{u}>{w})" for u, w in _UNITS_ZH.items())
    + ")"
)
# the comparison words of amounts, and those only durations take ("within 30 days", "after five years",
# "满五年", "or longer"), by the bound they set and whether the figure is included
_DURATION_BEFORE = {("high", True): "within", ("low", True): "after|from|满", ("low", False): "longer than"}
_DURATION_AFTER = {("low", True): "or longer|and over|或以上", ("high", True): "or fewer|之内"}


def _with(table: tuple[tuple[str, str, bool], ...], extra: Mapping[tuple[str, bool], str]):
    return tuple((f"{w}|{extra[(side, inc)]}" if (side, inc) in extra else w, side, inc) for w, side, inc in table)


_BEFORE, _AFTER = _with(BEFORE_WORDS, _DURATION_BEFORE), _with(AFTER_WORDS, _DURATION_AFTER)
_POINTING = frozenset("哪那这每同当某其另第")  # "哪一年", "这一天", "每一周", "第一天": which, each or the nth one
_GAP = r"[\s，,]*"  # between the comparison word and the figure, or the unit and the word after it


@dataclass(frozen=True)
class Quantity:
    """A quantity as written: its unit, the range it states (a point without a comparison word),
    whether a comparison word set that range, and how the canonical text writes it ("six years", "4天")."""

    unit: str
    interval: Interval
    compared: bool
    written: str


def _value(raw: str) -> float:
    return float(NUMBER_WORDS.get(raw.casefold(), 0) or raw)


def _unit(m: re.Match) -> str:
    return next(k.split("_", 1)[1] for k, v in m.groupdict().items() if v and k.startswith(("en_", "zh_")))


def _bound(text: str, start: int, end: int, value: float) -> Interval | None:
    """The range a comparison word right before ``start`` or right after ``end`` sets, or None."""
    before, after = text[max(0, start - 24) : start], text[end : end + 12]
    for words, side, inclusive in _BEFORE:
        if re.search(rf"(?:^|[^a-z])(?:{words}){_GAP}$", before, re.I):
            return bound(value, side, inclusive)
    for words, side, inclusive in _AFTER:
        if re.match(rf"{_GAP}(?:{words})(?![a-z])", after, re.I):
            return bound(value, side, inclusive)
    return None


def quantities(text: str) -> list[Quantity]:
    """Every duration or count with a unit in ``text`` (canonical figures: "五年" is 5 years)."""
    text = canonical(text)
    out = []
    for regex in (_EN_RE, _ZH_RE):
        for m in regex.finditer(text):
            if regex is _ZH_RE and (
                (m.group("unit").endswith("年") and re.match(r"\d{4}", text[m.start() :]))
                or (m.start() and text[m.start() - 1] in _POINTING)
            ):
                continue
            value = _value(m.group("num"))
            found = _bound(text, m.start(), m.end(), value)
            out.append(Quantity(_unit(m), found or Interval.point(value), found is not None, m.group()))
    return out


def asked_quantities(question: str) -> tuple[Quantity, ...]:
    """The durations and counts a question states, each a point or the range it compares with."""
    return tuple(quantities(question))


def rule_ranges(text: str) -> dict[str, Interval]:
    """The range, per unit, that a rule sentence's comparisons cover (bare figures set none: "25
    working days of paid leave" is what is given, not a condition)."""
    out: dict[str, Interval] = {}
    for q in quantities(text):
        if q.compared:
            out[q.unit] = out.get(q.unit, Interval()).intersect(q.interval)
    return out


def covers_quantity(asked: tuple[Quantity, ...], text: str) -> bool:
    """``text`` states a rule for a range that one of the ``asked`` quantities lies in, in its unit."""
    if not asked:
        return False
    ranges = rule_ranges(text)
    return any(q.unit in ranges and q.interval.meets(ranges[q.unit]) for q in asked)


def quantity_terms(asked: tuple[Quantity, ...], surface: Mapping[str, str]) -> frozenset[str]:
    """The question terms (term -> as written) that are part of how it writes the ``asked``
    durations or counts: "six", "years" of "six years"; "四天" of "病了四天"."""
    written = [q.written.casefold() for q in asked]
    return frozenset(t for t, shown in surface.items() if any(canonical(shown).casefold() in w for w in written))
