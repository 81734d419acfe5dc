"""What a question asks, for the extractive answerer: its parts, and whether it wants a figure.

A compound question ("What is the cap in London, and who approves exceptions?",
"餐费补贴和住宿标准分别是多少？") is split into parts, each answered on its own. Splitting is by
rule, never by a model: English clauses joined by ", and" / "and" before a question word, several
question sentences, and Chinese "A和B分别…" or clauses that each hold a question word. A piece
with fewer than ``MIN_PART_TOKENS`` content tokens ("and by when?") stays with the part before it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rag.answer import lexical
from rag.answer.asked import AnswerKind, Asked, asked_for
from rag.answer.conditions import Interval, question_ranges
from rag.text import figures as figure_rules
from rag.text.script import CJK, HAN_RE, script_of

MIN_PART_TOKENS = 2
_EN_JOIN_RE = re.compile(
    r",?\s+and\s+(?=(?:who|whom|whose|what|when|where|which|how|why|is|are|can|does|do|may|must|should|"
    r"above|below|until|if)\b)",
    re.I,
)
_EN_QUESTION_END_RE = re.compile(r"(?<=\?)\s+")
_ZH_QUESTION_WORD_RE = re.compile(r"多少|几|谁|什么|哪|何时|多久|多长|怎么|如何|吗|是否")
_ZH_BOTH_RE = re.compile(r"^(?P<head>.*?的)?(?P<a>[^，,的]+?)(?:以及|和|与|及)(?P<b>[^，,]+?)(?P<tail>分别.*)$")
_ZH_CLAUSE_RE = re.compile(r"(?<=[，；,;？?])")
_NAME_RE = re.compile(r"\b(?:[A-Z][a-z]+[A-Z]?[a-z]*|\d+\.\d+(?:\.\d+)*)\b")
_NOT_NAMES = frozenset("what who when where which how why is are can does do may must should i".split())


@dataclass(frozen=True)
class QuestionPart:
    text: str
    tokens: frozenset[str]  # content tokens (lexical.content_tokens)
    wants_figure: bool  # asks for a number, amount, duration or date
    cjk: bool
    ranges: tuple[Interval, ...] = ()  # amounts it asks about ("above USD 10,000", "a USD 8,000 claim")
    wants_date: bool = False  # asks when / until when / by when
    names: tuple[str, ...] = ()  # names and version numbers the part mentions ("Contoso", "6.0")
    chars: frozenset[str] = frozenset()  # its CJK characters less function and question ones
    figures: frozenset[str] = frozenset()  # numbers it states itself (lexical.numbers): "2022" of "2022年…交付量"
    dates: frozenset[str] = frozenset()  # dates it states itself ("2022年"), whitespace dropped
    asked: Asked = Asked(AnswerKind.OPEN)  # the kind of answer it asks for and the asked thing's head
    context: frozenset[str] = (
        frozenset()
    )  # terms of the answered parts before it ("…cap, and who approves exceptions?")

    @property
    def yes_no(self) -> bool:
        return self.asked.kind is AnswerKind.YES_NO


def question_parts(question: str) -> list[QuestionPart]:
    """The parts of ``question`` in order (one part when it is not compound)."""
    pieces = _zh_pieces(question) if script_of(question) == CJK else _en_pieces(question)
    merged: list[str] = []
    for piece in pieces:
        if merged and len(lexical.content_tokens(piece)) < MIN_PART_TOKENS:
            merged[-1] = f"{merged[-1]} {piece}"
        else:
            merged.append(piece)
    return [_part(p) for p in merged] or [_part(question)]


# A CJK bigram holding a function character ("的住", "准是") or a question word ("多少") spans
# words or asks rather than names: it says nothing about which sentence answers.
_ZH_FUNCTION_CHARS = frozenset("的是了在和与及或吗呢吧么哪几谁")
_ZH_QUESTION_BIGRAMS = frozenset("多少 什么 怎么 怎样 如何 是否 为何 何时 多久 多长 多高 多大 分别".split())
_ZH_QUESTION_CHARS = frozenset("多少什怎样如何否为久哪些个谁几吗呢")


def _content(text: str) -> frozenset[str]:
    return frozenset(
        t
        for t in lexical.content_tokens(text)
        if not (script_of(t) == CJK and (t in _ZH_QUESTION_BIGRAMS or (len(t) == 2 and _ZH_FUNCTION_CHARS & set(t))))
    )


def _part(text: str) -> QuestionPart:
    cjk = script_of(text) == CJK
    date = figure_rules.asks_date(text)
    figure = date or figure_rules.asks_number(text) or figure_rules.names_quantity(text)
    ranges = question_ranges(text)
    names = tuple(m for m in _NAME_RE.findall(text.strip()[1:]) if m.casefold() not in _NOT_NAMES)
    chars = frozenset(HAN_RE.findall(text)) - _ZH_FUNCTION_CHARS - _ZH_QUESTION_CHARS
    figures, dates = frozenset(lexical.numbers(text)), _dates(text)
    asked = asked_for(text, cjk, _content)
    return QuestionPart(text.strip(), _content(text), figure, cjk, ranges, date, names, chars, figures, dates, asked)


def has_date(text: str, given: frozenset[str] = frozenset()) -> bool:
    """``text`` holds a date ("31 March", "2025-02-11", "1 月 1 日", "Q3 2025") other than the
    ``given`` ones (a part's ``dates``): the "2022年" a question names does not answer its "什么时候"."""
    return bool(_dates(text) - given)


def new_figures(text: str, part: QuestionPart) -> set[str]:
    """The numbers of ``text`` that ``part`` does not state itself: the question's own "2022" is
    no answer to "2022年特斯拉交付量"."""
    return lexical.numbers(text) - part.figures


_dates = figure_rules.dates_in


def missing_names(part: QuestionPart, known: str) -> list[str]:
    """Names and version numbers of ``part`` that the evidence (``known``, casefolded) never
    mentions: the question is about something the documents do not cover ("Contoso", "6.0")."""
    return [n for n in part.names if n.casefold() not in known]


def _en_pieces(question: str) -> list[str]:
    out = []
    for sentence in _EN_QUESTION_END_RE.split(question.strip()):
        out += [p.strip(" ,") for p in _EN_JOIN_RE.split(sentence) if p.strip(" ,?")]
    return out


def _zh_pieces(question: str) -> list[str]:
    both = _ZH_BOTH_RE.match(question.strip())
    if both:
        head, tail = both["head"] or "", both["tail"].replace("分别", "", 1)
        return [f"{head}{both['a']}{tail}", f"{head}{both['b']}{tail}"]
    clauses = [c for c in _ZH_CLAUSE_RE.split(question.strip()) if c.strip()]
    asking = [c for c in clauses if _ZH_QUESTION_WORD_RE.search(c)]
    if len(asking) < 2:
        return [question.strip()]
    out: list[str] = []
    context = ""
    for clause in clauses:  # a clause without a question word is context for the next one
        if _ZH_QUESTION_WORD_RE.search(clause):
            out.append(context + clause)
            context = ""
        else:
            context += clause
    return out
