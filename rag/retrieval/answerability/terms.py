"""Whether a piece of evidence holds the question's focus: its salient terms (``rag.text.terms``)
and the kind of answer it asks for.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rag.store.numerals import holds_number, is_figure
from rag.store.tokenize import tokenize
from rag.text import figures
from rag.text.lexical import sentences  # re-exported: the one coarse sentence cut
from rag.text.script import HAN
from rag.text.synonyms import Synonym
from rag.text.terms import AnswerKind, asks_for, question_terms

__all__ = [
    "AnswerKind",
    "Coverage",
    "asks_for",
    "carries",
    "coverage",
    "held_terms",
    "idf",
    "question_terms",
    "sentences",
]


_HAS = {
    AnswerKind.DATE: figures.DATE,
    AnswerKind.NUMBER: figures.NUMBER,
    # a capitalised word not opening the sentence, or a Chinese name-like run before a verb of saying/being
    AnswerKind.PERSON: re.compile(
        rf"(?<=[a-z,;:]\s)[A-Z][a-z]+|[{HAN}]{{2,4}}(?:先生|女士|教授|博士|总统|主席|总理|部长|经理|主任|董事长|表示|说|称|担任|出任|当选)"
    ),
}


def carries(kind: AnswerKind, text: str) -> bool:
    """Whether ``text`` holds an answer of ``kind`` (a date, a number, a name); always for NONE."""
    return kind is AnswerKind.NONE or bool(_HAS[kind].search(text))


def idf(df: int, n: int) -> float:
    """BM25's (Lucene) inverse document frequency; a term absent from the scope weighs most."""
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


@dataclass(frozen=True)
class Coverage:
    """How much of the question's weight one text holds."""

    share: float  # idf-weighted share of the question's terms present
    missing: tuple[str, ...]  # terms (surface forms) not present


def held_terms(
    terms, text: str, near: dict[str, str] | None = None, others: Mapping[str, Sequence[Synonym]] | None = None
) -> frozenset[str]:
    """The ``terms`` that ``text`` holds. ``near`` maps a term to how the scope spells it (a
    corrected typo; the term itself for a CJK word that jieba cut differently there: then its
    characters are looked for as they are; or, for a number spelled in words, its digits:
    "六百" is held by "600 元"); ``others``, to its synonyms present in the scope ("vacation"
    is held by "holiday")."""
    tokens = set(tokenize(text))
    near, others = near or {}, others or {}

    def held(t: str) -> bool:
        alias = near.get(t, "")
        if t in tokens or any(s.held_by(text, tokens) for s in others.get(t, ())):
            return True
        if not alias:
            return False
        if alias == t:
            return alias in text
        return holds_number(text, alias) if is_figure(alias) else alias in tokens

    return frozenset(t for t in terms if held(t))


def coverage(
    weights: dict[str, float],
    surface: dict[str, str],
    text: str,
    near: dict[str, str] | None = None,
    given: frozenset[str] = frozenset(),
    others: Mapping[str, Sequence[Synonym]] | None = None,
) -> Coverage:
    """How much of the question's weight ``text`` holds, counting the ``given`` terms as held
    (those of the headings the text sits under: see :func:`held_terms`)."""
    total = sum(weights.values())
    if total <= 0:
        return Coverage(1.0, ())
    got_terms = held_terms(weights, text, near, others) | given
    got = sum(w for t, w in weights.items() if t in got_terms)
    return Coverage(got / total, tuple(surface[t] for t in weights if t not in got_terms))
