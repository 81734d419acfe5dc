"""What a question part asks, for the extractive answerer: its terms, whether it wants a figure,
a share or a date, the amounts and names it states. The parts themselves come from the
question's one reading (``rag.text.question.analyse``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rag import rules
from rag.text import figures as figure_rules
from rag.text import lexical
from rag.text.amounts import Interval, question_ranges
from rag.text.asked import AnswerKind, Asked, asked_for
from rag.text.quantities import Quantity, asked_quantities
from rag.text.question import QuestionAnalysis, analyse
from rag.text.script import CJK, HAN_RE, script_of
from rag.text.synonyms import other_words
from rag.text.terms import AnswerKind as Kind
from rag.text.terms import asks_for, question_terms

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
    asked: Asked = Asked(AnswerKind.OPEN)  # the kind of answer it asks for and the asked thing's head
    context: frozenset[str] = (
        frozenset()
    )  # terms of the answered parts before it ("…cap, and who approves exceptions?")
    wants_share: bool = False  # asks for a percentage, a proportion, a ratio or a discount (a figure too)
    years: frozenset[int] = frozenset()  # the years it states ("in 1901", "1361年"): the time it is about
    quantities: tuple[Quantity, ...] = ()  # durations and counts it states ("six years", "四天")
    quantity_tokens: frozenset[str] = frozenset()  # its tokens that write them ("six", "year")
    # each Chinese word with Cilin synonyms: its tokens (the character pairs inside it), its synonyms
    synonyms: tuple[tuple[frozenset[str], tuple[str, ...]], ...] = ()
    # asks "who" in English: a name or role answers it (not in Chinese, which has no capitals: the
    # name test there, a title after any 2-4 characters, reads "举行了总统" as a name)
    wants_person: bool = False

    @property
    def yes_no(self) -> bool:
        return self.asked.kind is AnswerKind.YES_NO

    def said_otherwise(self, text: str) -> frozenset[str]:
        """The tokens of the words ``text`` says as one of their Cilin synonyms ("审批" for "审核")."""
        return frozenset().union(*(toks for toks, said in self.synonyms if any(w in text for w in said)))


def question_parts(question: str | QuestionAnalysis) -> list[QuestionPart]:
    """The parts of the question (``rag.text.question.analyse``: one part when it is not
    compound), each with what the extractive answerer needs."""
    analysis = question if isinstance(question, QuestionAnalysis) else analyse(question)
    return [_part(p) for p in analysis.parts]


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
    share = rules.on("shares") and figure_rules.asks_share(text)
    figure = date or share or figure_rules.asks_number(text) or figure_rules.names_quantity(text)
    ranges = question_ranges(text)
    names = tuple(m for m in _NAME_RE.findall(text.strip()[1:]) if m.casefold() not in _NOT_NAMES)
    chars = frozenset(HAN_RE.findall(text)) - _ZH_FUNCTION_CHARS - _ZH_QUESTION_CHARS
    asked = asked_for(text, cjk, _content)
    quantities = asked_quantities(text) if rules.on("quantity-ranges") else ()
    tokens = _content(text)
    return QuestionPart(
        text.strip(),
        tokens,
        figure,
        cjk,
        ranges,
        date,
        names,
        chars,
        asked,
        wants_share=share,
        years=figure_rules.years_in(text),
        quantities=quantities,
        quantity_tokens=frozenset().union(*(_content(q.written) for q in quantities)) & tokens,
        synonyms=_synonyms(text, tokens) if cjk and rules.on("synonyms") else (),
        wants_person=not cjk and asks_for(text) is Kind.PERSON,
    )


def _synonyms(text: str, tokens: frozenset[str]) -> tuple[tuple[frozenset[str], tuple[str, ...]], ...]:
    """For each word of a Chinese part with Cilin synonyms (``other_words``: no cut of it): the
    part's character pairs inside it and those synonyms. A sentence saying one holds the word's
    tokens, as the decision's coverage counts a synonym held."""
    out = []
    for word in question_terms(text).values():
        toks = frozenset(t for t in tokens if t in word)
        said = tuple(s.spelling for s in other_words(word))
        if toks and said:
            out.append((toks, said))
    return tuple(out)


def has_date(text: str) -> bool:
    """``text`` holds a date ("31 March", "2025-02-11", "1 月 1 日", "Q3 2025")."""
    return bool(figure_rules.dates_in(text))


def missing_names(part: QuestionPart, known: str) -> list[str]:
    """Names and version numbers of ``part`` that the evidence (``known``, casefolded) never
    mentions: the question is about something the documents do not cover ("Contoso", "6.0")."""
    if not rules.on("missing-names"):
        return []
    return [n for n in part.names if n.casefold() not in known]
