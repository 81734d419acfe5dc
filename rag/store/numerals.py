"""One spelling for a number, so "两万元", "20,000 元" and "2万元" read as the same figure.

Chinese writes the same amount as Chinese numerals (两万, 三千五百, 十五), as digits with a
thousands separator (20,000) or as digits with a Chinese magnitude (2万, 1.5亿). ``canonical``
rewrites each to plain digits. Chinese numerals are rewritten only where they count something:
followed by a measure word or unit (元, 人, 天, 年, %, ...), so words that merely contain a
numeral character ("一线城市", "十分", "千万不要") stay as they are.

The readers read canonical text; the answerer's content tokens are canonical; and the BM25
index reads a question term that spells a figure (``spelled_number``: "六百块") as present where
its scope writes that figure in digits ("600 元"), so a refusal does not name it as missing.
"""

from __future__ import annotations

import re

_DIGIT = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_UNIT = {"十": 10, "百": 100, "千": 1000}
_BIG = {"万": 10**4, "亿": 10**8}
_COUNTED = "元块角人名位个家项件张条次天日月年周岁米倍台辆座所届%％"
_NUMERAL = "零〇一二两三四五六七八九十百千万亿"
_CHINESE = re.compile(rf"[{_NUMERAL}]+(?=\s?[{_COUNTED}])")
_MAGNITUDE = re.compile(r"(\d+(?:\.\d+)?)\s?([万亿])")
_SEPARATOR = re.compile(r"(?<=\d)[,，](?=\d{3}(?!\d))")


def chinese_value(numeral: str) -> int | None:
    """The value of a Chinese numeral ("三千五百" -> 3500, "二〇二二" -> 2022), None if it has no digit."""
    if not any(c in _DIGIT or c == "十" for c in numeral):
        return None
    if not any(c in _UNIT or c in _BIG for c in numeral):
        return int("".join(str(_DIGIT[c]) for c in numeral))  # read digit by digit (years)
    yi, wan, section, digit = 0, 0, 0, 0  # the parts above 亿, between 万 and 亿, below 万
    for c in numeral:
        if c in _DIGIT:
            digit = _DIGIT[c]
        elif c in _UNIT:
            section += (digit or 1) * _UNIT[c]
            digit = 0
        elif c == "万":
            wan = (section + digit or 1) * _BIG[c]
            section = digit = 0
        else:  # 亿
            yi = (yi + wan + section + digit or 1) * _BIG[c]
            wan = section = digit = 0
    return yi + wan + section + digit


def _digits(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def canonical(text: str) -> str:
    """``text`` with every number it counts with written as plain digits."""
    text = _SEPARATOR.sub("", text)
    text = _MAGNITUDE.sub(lambda m: _digits(float(m.group(1)) * _BIG[m.group(2)]), text)

    def chinese(m: re.Match[str]) -> str:
        value = chinese_value(m.group(0))
        return m.group(0) if value is None else str(value)

    return _CHINESE.sub(chinese, text)


_LEADING = re.compile(rf"[{_NUMERAL}]+")
_DATE_UNIT = "年月日"
MIN_SPELLED = 10


def spelled_number(term: str) -> str | None:
    """The figure a word spells in Chinese numerals, in digits with its unit: "六百块" -> "600块",
    "十二月" -> "12月"; None when the numeral counts nothing ("四海", "一直", "神舟十三号": a
    name, not a figure), holds no digit ("千元"), stands alone ("六百", "十三": whether it is a
    figure depends on what follows it in the question; as a piece of "六百块" it goes with it) or
    is under ``MIN_SPELLED`` ("两个", "三角", "五月艾": a small count is in nearly any text, and
    is as often part of a name)."""
    m = _LEADING.match(term)
    rest = term[m.end() :] if m else ""
    if not rest or rest[0] not in _COUNTED:
        return None
    value = chinese_value(m.group(0))
    return None if value is None or value < MIN_SPELLED else f"{value}{rest[0]}"


def is_figure(spelling: str) -> bool:
    """Whether ``spelling`` is a :func:`spelled_number` (digits first), not a word."""
    return spelling[:1].isdigit()


def figure_spellings(term: str, number: str) -> tuple[str, ...]:
    """How a text may write ``number``, the :func:`spelled_number` of ``term``, before
    ``canonical`` reads it: the term's own numeral ("六百" of "六百块"), or digits ("3000",
    "3,000"; "20000" also as "2万"). A cheap filter ahead of :func:`number_pattern`, so a large
    scope is not rewritten text by text."""
    value = int(number.rstrip(_COUNTED))
    out = {str(value), f"{value:,}", _LEADING.match(term).group(0)}
    for big, char in ((10**8, "亿"), (10**4, "万")):
        if value >= big:
            out.add(f"{value / big:g}{char}")
    return tuple(sorted(out))


def number_pattern(number: str) -> re.Pattern[str]:
    """What finds a :func:`spelled_number` in a :func:`canonical` text, as a whole figure ("600"
    is not in "1600" or "6.005"): a date with its own unit ("12月" is "12 月", not "12 日"),
    another count with any unit ("600块" is "600 元"; "7人" is "7 名")."""
    digits = number.rstrip(_COUNTED)
    unit = number[len(digits) :]
    figure = rf"(?<![\d.]){re.escape(digits)}(?![\d.])"
    return re.compile(figure + (rf"\s?{unit}" if unit in _DATE_UNIT else rf"\s?[{_COUNTED}]"))


def holds_number(text: str, number: str) -> bool:
    """Whether ``text``, numbers in one spelling, holds ``number`` (see :func:`number_pattern`)."""
    return number_pattern(number).search(canonical(text)) is not None
