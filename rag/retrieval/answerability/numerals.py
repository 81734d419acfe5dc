"""One spelling for a number, so the answer reader sees "两万元" and "20,000 元" as the same figure.

Chinese writes the same amount as Chinese numerals (两万, 三千五百, 十五), as digits with a
thousands separator (20,000) or as digits with a Chinese magnitude (2万, 1.5亿). ``canonical``
rewrites each to plain digits. Chinese numerals are rewritten only where they count something:
followed by a measure word or unit (元, 人, 天, 年, %, ...), so words that merely contain a
numeral character ("一线城市", "十分", "千万不要") stay as they are.
"""

from __future__ import annotations

import re

_DIGIT = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_UNIT = {"十": 10, "百": 100, "千": 1000}
_BIG = {"万": 10**4, "亿": 10**8}
_COUNTED = "元块角人名位个家项件张条次天日月年周岁米倍台辆座所届%％"
_CHINESE = re.compile(rf"[零〇一二两三四五六七八九十百千万亿]+(?=\s?[{_COUNTED}])")
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
