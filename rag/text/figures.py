"""One set of rules for what a question asks when it asks for a figure or a date, and for the
figures and dates a text holds. Chinese numerals are read by ``rag.store.numerals``.

Retrieval (the answerability's ``kind_missing``), the extractive answerer (a part that asks
for a figure or a date) and the rewrite guard (time words a rewrite must keep) read these.
No rule names a domain's word: quantity nouns, units and currencies are general lists.
"""

from __future__ import annotations

import re

MONTHS = (
    "january february march april may june july august september october november december".split()
)  # the one month list
_MONTH = "|".join(m for m in MONTHS if m != "may")  # "may" alone is the modal: with a day or year only
_MONTH_ABBR = "|".join(m[:3] for m in MONTHS if m != "may") + "|sept"
WEEKDAYS = "monday tuesday wednesday thursday friday saturday sunday".split()
TIME_UNITS_EN = "day days week weeks month months year years quarter quarters hour hours minute minutes".split()
# nouns that name an amount in any domain (money, size, time), so "What is the X?" asks for a figure
QUANTITY_NOUNS_EN = frozenset(
    """amount cap ceiling limit maximum minimum rate price cost fee fare charge total sum number count
    percentage share ratio length duration period size deadline age distance height weight budget
    salary wage allowance""".split()
)
QUANTITY_NOUNS_ZH = "人数 数量 总数 金额 价格 费用 比例 率 增速 年龄 面积 距离 长度 高度 时长 时间 日期 上限 下限 限额 标准 期限".split()
# ISO 4217 codes of the most traded currencies and their signs: an amount's unit
CURRENCIES = "USD EUR JPY GBP CNY RMB AUD CAD CHF HKD SGD SEK NOK KRW INR NZD MXN BRL ZAR".split()
CURRENCY_SIGNS = "$€£¥₩₹"
CURRENCY = rf"(?:{'|'.join(CURRENCIES)}|[{CURRENCY_SIGNS}])"  # "USD 230", "USD230", "€230"
NUMBER_WORDS_EN = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred thousand million "
    "billion dozen half twice"
).split()
ZH_NUMERAL = "零〇一二两三四五六七八九十百千万亿"
ZH_MEASURE = "个名人次位家项天年岁分秒种条只架部所件张台辆座届"

_AUX = "is|are|was|were|do|does|did|will|would|can|could|may|might|must|should|shall|has|have|had"
_ASKS_DATE = re.compile(
    # "when" asks only as a question word: opening the question or a clause, before an auxiliary,
    # after "until/by/since", or last ("…held when?"); "the limit when taking customers out" does not
    rf"(?:^\s*|[,;:]\s*)when\b|\bwhen\s+(?:{_AUX})\b|\b(?:until|by|since|from)\s+when\b|\bwhen\s*\?"
    # how soon / early / late; what or which day(s), what time; "what's the deadline", "deadline to …?"
    r"|\bhow (?:soon|early|late)\b|\b(?:what|which) (?:year|date|day|month|time)s?\b"
    r"|\bwhat(?:['’]s|\s+is|\s+are)?\s+(?:(?:the|my|our|your)\s+)?deadlines?\b|^\s*deadlines?\b"
    r"|何时|什么时候|什么时间|哪一?年|哪一?天|哪个月|几月|几号|几日|截止|日期|时间[？?]?$",
    re.I,
)
_ASKS_NUMBER = re.compile(
    r"\bhow (?:many|much|long|old|often|far|large|big|quickly|tall|high|wide|deep|heavy)\b"
    r"|\bwhat (?:percentage|number|share|proportion)\b|\bnumber of\b"
    rf"|多少|几[{ZH_MEASURE}%]|多久|多长|多大|多高|多重|多远|多深|多宽|百分之几|几成",
    re.I,
)
# a share: a percentage, a proportion, a ratio, a discount ("what percentage", 比例, 几成, 打几折)
_ASKS_SHARE = re.compile(
    r"\b(?:what|which)\s+(?:percentage|percent|per\s+cent|proportion|fraction|share|ratio|portion)\b"
    r"|\bhow many (?:percent|per\s+cent)\b|\b(?:the|a)\s+(?:percentage|proportion|ratio|fraction)\s+of\b"
    # 比例 / 比重 asked for ("比例是多少", "什么比例", "多大比重"), not "与体积成比例" or "比重力弱"
    r"|(?<!成)(?:比例|比重|比率|占比)(?:分别)?(?:是|为|有)?(?:多少|几|多大|[？?])|(?:什么|多少|多大|何种)(?:比例|比重|比率)"
    r"|百分比|百分之几|百分之多少|几成|占多少|几折|多少折",
    re.I,
)
_ZH_DIGIT = "一二三四五六七八九两"
SHARE = re.compile(
    # a ratio ("1：7", "3 比 1"), not a time of day ("21:00", "8:45")
    r"\d\s*[%％‰]|\d\s*比\s*\d|(?<!\d)(?!(?:[01]?\d|2[0-4])[:：][0-5]\d(?!\d))\d+\s*[:：]\s*\d|\d\s*/\s*\d|(?<![\d.])0\.\d|(?<![\d,.])\d{1,3}\s+to\s+\d{1,3}(?!\d|[,.]\d|%)|\bper\s?cent\b|\bhalf\b"
    r"|\bmajority\b|\b(?:a|one|two|three|four|five|six|seven|eight|nine)[\s-]+"
    r"(?:third|quarter|fifth|sixth|seventh|eighth|ninth|tenth)s?\b"
    rf"|百分之|千分之|分之|一半|半数|过半|大半|[{_ZH_DIGIT}]成(?![为功本员立绩年都果长熟交])|\d\s*折|[{_ZH_DIGIT}]折",
    re.I,
)
_QUANTITY_NOUN = re.compile(
    rf"\b(?:{'|'.join(sorted(QUANTITY_NOUNS_EN))})\b|(?:{'|'.join(QUANTITY_NOUNS_ZH)})[？?]?$", re.I
)
# a kind of day a count of days is counted in ("3 working days", "10 clear days")
_DAY_KINDS = "working|business|calendar|clear|full|consecutive|school|banking"
_ORDINAL_DAY = r"(?:[12]?\d|3[01])(?:st|nd|rd|th)"
DATE = re.compile(
    r"\b(?:1[5-9]\d\d|20\d\d)\b"  # a year
    r"|\d{4}-\d{2}-\d{2}|\b\d{1,2}[/-]\d{1,2}\b"
    rf"|\d{{1,4}}\s*(?:[年月日号天周]|个月|小时)|[{ZH_NUMERAL}]+(?:[年月日号天周]|个月|小时)"
    rf"|\b(?:{_MONTH}|{_MONTH_ABBR})\b|\bmay\s+\d{{1,4}}\b|\b\d{{1,2}}\s+may\b"
    rf"|\b(?:{'|'.join(WEEKDAYS)}|weekend|weekday)s?\b|\b(?:q[1-4]|fy\s?\d{{2,4}})\b"
    rf"|\b(?:\d+|{'|'.join(NUMBER_WORDS_EN[:20])})\s+(?:(?:{_DAY_KINDS})\s+)?(?:{'|'.join(TIME_UNITS_EN)})\b"
    # a time of day: "10:30", "20:00", "9.30am", "5 p.m.", "noon"
    r"|(?<![\d:：.])(?:[01]?\d|2[0-3])[:：][0-5]\d(?![\d:：])|\b(?:1[0-2]|0?[1-9])(?:[:.][0-5]\d)?\s*(?:[ap]\.m\.|[ap]m\b)"
    r"|\b(?:noon|midday|midnight)\b"
    # 上午九点, 下午5点半, 9点30分, 八点钟 (a bare 点 is a point or "a little": 一点, 3点建议)
    rf"|(?:上午|下午|中午|晚上|早上|凌晨|傍晚|夜里|半夜)\s*[\d{ZH_NUMERAL}]{{1,3}}\s*[点时]"
    rf"|[\d{ZH_NUMERAL}]{{1,3}}\s*点(?:半|钟|\s*[\d{ZH_NUMERAL}]{{1,3}}\s*分)"
    # a day of the month by its ordinal: "the 1st of each month", "by the 5th", "15th day"
    rf"|\b{_ORDINAL_DAY}\s+(?:of|day)\b|\b(?:on|by|until|till|before|after|from)\s+the\s+{_ORDINAL_DAY}\b"
    # a day named by an event: "their last working day", "your start date"
    rf"|\b(?:last|first|final|next|same|following|previous)\s+(?:(?:{_DAY_KINDS})\s+)?day\b"
    r"|\b(?:start|end|due|expiry|closing|renewal|effective|leaving)\s+date\b"
    r"|(?:上|下|本|去|今|明|前|后)(?:年|月|周|季度)|周[一二三四五六日末]|星期|每年|每月|每周|季度",
    re.I,
)
NUMBER = re.compile(rf"\d|[{ZH_NUMERAL}]|\b(?:{'|'.join(NUMBER_WORDS_EN)})\b", re.I)


def asks_date(question: str) -> bool:
    """The wording asks when: "when", "by when", "what year", 何时, 哪一年, "…的时间"."""
    return bool(_ASKS_DATE.search(question))


def asks_number(question: str) -> bool:
    """The wording asks how many or how much: "how many", "what percentage", 多少, 几项."""
    return bool(_ASKS_NUMBER.search(question))


def asks_share(question: str) -> bool:
    """The wording asks for a share: "what percentage", "what proportion", 比例, 几成, 几折."""
    return bool(_ASKS_SHARE.search(question))


def holds_share(text: str) -> bool:
    """A percentage, a ratio, a fraction or a discount: "50%", "1：7", "20 to 1", "0.6", "two-thirds", 百分之三十, 三成, 八折."""
    return bool(SHARE.search(text))


# a year as written: 1500-2099 (1000-1499 before 年 or a range word, or after "in"), not part of a longer
# figure, an amount or a count ("2000 元", "1500 人"), nor a decade or century ("the 1970s", "1700年代")
_YEAR = re.compile(
    r"(?<![\d,.$€£¥])(1[5-9]\d\d|20\d\d|1[0-4]\d\d(?=\s*(?:年|至|到|–))|(?<=in )1[0-4]\d\d)"
    r"(?!\d|[,.]\d|'?s\b|\s*(?:年代|[元块万亿%％人个名多余]|dollars|people))"
)


def years_in(text: str) -> frozenset[int]:
    """The years ``text`` states ("in 1901", "1361年", "2004 to 2005"), not amounts or counts."""
    return frozenset(int(m.group(1)) for m in _YEAR.finditer(text))


_DECADE = re.compile(r"(?<![\d,.])(1[0-9]\d0|20\d0)(?:'?s\b|\s*年代)")


def _decades(text: str) -> frozenset[int]:
    """The first and last year of each decade ("the 1970s": 1970, 1979) or century ("1700年代",
    "the 1700s": 1700, 1799) ``text`` names."""
    out: set[int] = set()
    for m in _DECADE.finditer(text):
        start = int(m.group(1))
        out |= {start, start + (99 if start % 100 == 0 else 9)}
    return frozenset(out)


def other_years(asked: frozenset[int], text: str) -> bool:
    """``text`` states years (or decades) and none of them is, or spans, an asked one: a sentence
    about 1576 does not answer a question about 1361 (one about 1361 to 1528 may), nor "the early
    1970s" one about 2001."""
    if not asked:
        return False
    held = years_in(text) | _decades(text)
    return bool(held) and not any(min(held) <= y <= max(held) for y in asked)


def names_quantity(question: str) -> bool:
    """The question names an amount ("the cap", "the price", "…的人数"): it asks for a figure."""
    return bool(_QUANTITY_NOUN.search(question))


def dates_in(text: str) -> frozenset[str]:
    """The dates and time expressions ``text`` holds ("2019", "every March", "31 March",
    "下周一", "30 days", "Q3"), casefolded, whitespace dropped."""
    return frozenset(re.sub(r"\s+", "", m.group()).casefold() for m in DATE.finditer(text))


def holds_date(text: str) -> bool:
    return bool(DATE.search(text))


def has_number(text: str) -> bool:
    """Digits, a Chinese numeral or an English number word."""
    return bool(NUMBER.search(text))
