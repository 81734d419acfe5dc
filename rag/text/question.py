"""One reading of a question, computed once per ask and handed to every stage.

``analyse`` gives a frozen ``QuestionAnalysis``: its script (``rag.text.script``), its salient
terms (``rag.text.terms``) with their salience, the kind of answer its wording asks for
(``rag.text.figures``) and its parts. Retrieval (rewrite
guard, recall routes, answerability, fallback wording) and the extractive answerer read it, so
no stage reads the question differently from another. ``rag.ask.stream_ask`` reads it once and
hands it to ``retrieve`` and to the answer stage (``DraftRequest.analysis``); it is also cached
by question text, so a stage called on its own with only the text gets the same object.

A compound question ("What is the cap in London, and who approves exceptions?",
"餐费补贴和住宿标准分别是多少？") is split into parts, each answered on its own. Splitting is by
rule, never by a model: English clauses joined by ", and" / "and" before a question word, several
question sentences, and Chinese "A和B分别…" or clauses that each hold a question word. A piece
with fewer than ``MIN_PART_TOKENS`` content tokens ("and by when?") stays with the part before it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType

from rag import rules
from rag.store.tokenize import tokenize
from rag.text import figures, lexical
from rag.text.asked import head_phrase
from rag.text.script import CJK, Script, is_chinese, script_of
from rag.text.terms import AnswerKind, asks_for, question_terms

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


@dataclass(frozen=True)
class QuestionAnalysis:
    """What a question is and asks, read once."""

    text: str
    script: Script  # cjk | latin (``script_of``): model, embedder, answerer
    chinese: bool  # CJK without kana or hangul: the refusal is worded in Chinese
    terms: Mapping[str, str]  # salient BM25 term -> the surface form the user wrote
    salience: Mapping[str, float]  # term -> weight: the asked thing's terms weigh as much as the rest together
    asks: AnswerKind  # date | number | person | none (the wording's kind)
    wants_figure: bool  # asks for a number, an amount, a duration or a date
    parts: tuple[str, ...]  # its parts in order (one when it is not compound)


def analyse(question: str) -> QuestionAnalysis:
    """The one reading of ``question`` (cached: read-only)."""
    return _analyse(question, rules.off())


@lru_cache(maxsize=256)
def _analyse(question: str, off: frozenset[str]) -> QuestionAnalysis:
    """``analyse`` under the rules turned ``off`` (``rag.rules``; they shape its terms)."""
    script = script_of(question)
    terms = question_terms(question)
    parts = tuple(split_parts(question, script))
    asks = asks_for(question)
    return QuestionAnalysis(
        text=question,
        script=script,
        chinese=is_chinese(question),
        terms=terms,
        salience=_salience(terms, parts, script),
        asks=asks,
        wants_figure=asks in (AnswerKind.DATE, AnswerKind.NUMBER) or figures.names_quantity(question),
        parts=parts,
    )


def reading(question: str, analysis: QuestionAnalysis | None = None) -> QuestionAnalysis:
    """``question``'s one reading: ``analysis`` when the ask hands it over, else ``analyse``.
    An analysis of another question is a programmer's mistake and raises."""
    if analysis is None:
        return analyse(question)
    if analysis.text != question:
        raise ValueError(f"analysis of {analysis.text!r} handed with question {question!r}")
    return analysis


def _salience(terms: Mapping[str, str], parts: tuple[str, ...], script: Script) -> Mapping[str, float]:
    """Each term's weight: 1, or, for the terms naming the asked thing of a part ("the Wi-Fi
    *password* in the Dublin office"), as much as the part's other terms together."""
    head = {t for p in parts if (phrase := head_phrase(p, script == CJK)) for t in tokenize(phrase) if t in terms}
    rest = max(len(terms) - len(head), 1)
    return MappingProxyType({t: float(rest) if t in head else 1.0 for t in terms})


def split_parts(question: str, script: Script | None = None) -> list[str]:
    """The parts of ``question`` in order (one part when it is not compound)."""
    cjk = (script or script_of(question)) == CJK
    pieces = _zh_pieces(question) if cjk else _en_pieces(question)
    merged: list[str] = []
    for piece in pieces:
        if merged and len(lexical.content_tokens(piece)) < MIN_PART_TOKENS:
            merged[-1] = f"{merged[-1]} {piece}"
        else:
            merged.append(piece)
    return merged or [question.strip()]


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
