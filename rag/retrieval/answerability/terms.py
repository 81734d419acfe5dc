"""The question's focus: its salient terms, what kind of answer it asks for, and whether a
piece of evidence holds them.

Terms are the BM25 index's own tokens (``rag.store.tokenize``: stemmed English words, jieba
words for Chinese), so a term's document frequency is read straight from the index, and each
term keeps the surface form the user typed for messages ("sabbatical", not "sabbat").
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache
from types import MappingProxyType

from rag.store.numerals import holds_number, is_figure
from rag.store.tokenize import tokenize
from rag.text import figures
from rag.text.frames import is_frame_token
from rag.text.frequency import is_grammar
from rag.text.script import CJK_LETTERS, HAN, HAN_RE
from rag.text.synonyms import Synonym

# Words that shape a question but are not its subject: a document rarely contains "how" or
# "什么", so counting them would read as "the documents don't mention it".
QUESTION_WORDS_EN = frozenset(
    "what which who whom whose when where why how many much does do did done doing is are was were be been "
    "can could should would will shall may might must has have had having any some there get got please tell "
    "me my we our us you your i about also exist exists".split()
)
QUESTION_WORDS_ZH = frozenset(
    "什么 哪些 哪个 哪里 哪儿 哪位 哪家 哪年 哪一年 哪天 哪一天 哪国 哪 多少 几 几个 几年 几次 几名 几人 如何 怎么 怎样 怎么样 "
    "为什么 为何 是否 是不是 吗 呢 吧 啊 谁 请问 有 有没有 没有 会 能 可以 要 需要 何时 什么时候 时候 多久 多长 多大 "
    "一下 请 我 我们 你 你们 他 她 它 哪些人 什么样 多少钱 怎么办 是 为 被 给 让 对 从 到 把 向 上 下 中 个 些 "
    "由谁 谁来 由谁来 被谁 的话 现在 目前 如今 做出 有何 有哪些 方面 地方 这个 这些 那个 那些 "
    "大约 大概 大致 左右 主要 实际 称之为 之为".split()
)
# "Which *regions* does", "what *colour* is", "哪些*地区*", "什么*颜色*": the word after these names
# the kind of answer asked for, which the answer need not say ("It lives in Peru"): not a term to
# look for. In English only when a verb follows it ("which sabbatical rules apply": "sabbatical"
# is the subject, not the category).
CATEGORY_AFTER_EN = frozenset({"which", "what"})
_CATEGORY_BEFORE_EN = frozenset("is are was were does do did can could will would has have had should".split())
CATEGORY_AFTER_ZH = frozenset("哪些 哪个 哪一个 哪种 哪一种 哪类 哪一类 什么".split())
_CJK_CHAR = HAN_RE
_CJK_SCRIPTS = CJK_LETTERS
_WORD = re.compile(rf"[{_CJK_SCRIPTS}]+|[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)
# "I've", "I'm", "doesn't", "employee's": the tail is grammar, not a word to look for
_CONTRACTION = re.compile(r"['’](?:ve|m|re|ll|d|s|t)$|n['’]t$", re.I)
_LATIN_RUN = re.compile(rf"[^\W_{_CJK_SCRIPTS}]+")
_SENTENCE_END = re.compile(r"(?<=[.!?。！？；;])\s*|\n+")


class AnswerKind(str, Enum):  # noqa: UP042 (str Enum, as STYLE.md asks)
    """What a question asks for, when its wording says so."""

    DATE = "date"  # when / 何时 / 哪一年
    NUMBER = "number"  # how many / how much / 多少 / 几
    PERSON = "person"  # who / 谁
    NONE = ""  # no particular kind (or a claim, not a question)


_PERSON_ASKED = re.compile(r"\b(who|whom|whose)\b|谁|哪位|什么人|哪个人", re.I)
_HAS = {
    AnswerKind.DATE: figures.DATE,
    AnswerKind.NUMBER: figures.NUMBER,
    # a capitalised word not opening the sentence, or a Chinese name-like run before a verb of saying/being
    AnswerKind.PERSON: re.compile(
        rf"(?<=[a-z,;:]\s)[A-Z][a-z]+|[{HAN}]{{2,4}}(?:先生|女士|教授|博士|总统|主席|总理|部长|经理|主任|董事长|表示|说|称|担任|出任|当选)"
    ),
}


def asks_for(question: str) -> AnswerKind:
    """The kind of answer the wording asks for: a date, else a number (``rag.text.figures``),
    else a person."""
    if figures.asks_date(question):
        return AnswerKind.DATE
    if figures.asks_number(question):
        return AnswerKind.NUMBER
    return AnswerKind.PERSON if _PERSON_ASKED.search(question) else AnswerKind.NONE


def carries(kind: AnswerKind, text: str) -> bool:
    """Whether ``text`` holds an answer of ``kind`` (a date, a number, a name); always for NONE."""
    return kind is AnswerKind.NONE or bool(_HAS[kind].search(text))


@lru_cache(maxsize=512)
def question_terms(question: str) -> Mapping[str, str]:
    """Salient BM25 terms of ``question`` -> the surface form the user wrote (first seen), less
    the answer category after "which" / "哪些" (``CATEGORY_AFTER_*``).
    Cached (read-only): the pipeline reads them for the term statistics and again for the features."""
    out: dict[str, str] = {}
    words = [_CONTRACTION.sub("", w) for w in _WORD.findall(question)]
    for i, word in enumerate(words):
        if word.lower() in QUESTION_WORDS_EN or _is_category(words, i) or _is_grammar(word):
            continue
        prev = ""
        for term in tokenize(word):
            after, prev = prev, term
            if (
                term in QUESTION_WORDS_ZH
                or term in QUESTION_WORDS_EN
                or not term.strip()
                or (after in CATEGORY_AFTER_ZH and _CJK_CHAR.match(term))  # Latin tokens come last
                or (_CJK_CHAR.match(term) and is_frame_token(term))  # "几项", "哪所", "慧是": rag.text.frames
            ):
                continue
            if len(term) == 1 and _CJK_CHAR.match(term):  # jieba cuts single characters inconsistently
                continue
            out.setdefault(term, term if _CJK_CHAR.search(term) else _latin_surface(term, word))
    return MappingProxyType(out)


def _is_grammar(word: str) -> bool:
    """One of the most common English words ("here", "am"), not a figure ("one", "three")."""
    return bool(_LATIN_RUN.fullmatch(word)) and is_grammar(word) and not carries(AnswerKind.NUMBER, word)


def _latin_surface(term: str, word: str) -> str:
    """What the user wrote for a Latin ``term`` (stemmed: "sabbat") of ``word``: the word itself,
    or, where the question runs Latin letters into Chinese ones ("2021年香港GDP增长了多少"), the
    Latin run that gives the term ("GDP"), so a message quotes that and not the whole question."""
    for run in _LATIN_RUN.findall(word):
        if term in tokenize(run):
            return run
    return word


def _is_category(words: list[str], i: int) -> bool:
    before = words[i - 1].lower() if i else ""
    after = words[i + 1].lower() if i + 1 < len(words) else ""
    return before in CATEGORY_AFTER_EN and (not after or after in _CATEGORY_BEFORE_EN)


def idf(df: int, n: int) -> float:
    """BM25's (Lucene) inverse document frequency; a term absent from the scope weighs most."""
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


def sentences(text: str) -> list[str]:
    """Coarse sentences (coverage is all they are for: no offsets needed)."""
    return [s for s in _SENTENCE_END.split(text) if s.strip()]


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
