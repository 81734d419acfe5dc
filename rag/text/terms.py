"""The question's salient terms and what kind of answer its wording asks for.

Terms are the BM25 index's own tokens (``rag.store.tokenize``: stemmed English words, jieba
words for Chinese), so a term's document frequency is read straight from the index, and each
term keeps the surface form the user typed for messages ("sabbatical", not "sabbat").
Question words, the answer category after "which" / 哪些, everyday words and the question's
frame (``rag.text.frames``) are not terms.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from enum import Enum
from functools import lru_cache
from types import MappingProxyType

from rag import rules
from rag.store.tokenize import tokenize
from rag.text import figures
from rag.text.frames import is_asked_unit, is_frame_token, is_grammar_cut, is_relation_word
from rag.text.frequency import is_grammar
from rag.text.lexical import uncontracted
from rag.text.script import CJK_LETTERS, HAN_RE

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
    "由谁 谁来 由谁来 被谁 的话 现在 目前 如今 做出 有何 有哪些 方面 地方 这个 这些 那个 那些".split()
)
HEDGES_ZH = frozenset("大约 大概 大致 左右 主要 实际 称之为 之为".split())  # how sure, not what about
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
_LATIN_RUN = re.compile(rf"[^\W_{_CJK_SCRIPTS}]+")


class AnswerKind(str, Enum):  # noqa: UP042 (str Enum, as STYLE.md asks)
    """What a question asks for, when its wording says so."""

    DATE = "date"  # when / 何时 / 哪一年
    NUMBER = "number"  # how many / how much / 多少 / 几
    PERSON = "person"  # who / 谁
    NONE = ""  # no particular kind (or a claim, not a question)


_PERSON_ASKED = re.compile(r"\b(who|whom|whose)\b|谁|哪位|什么人|哪个人", re.I)


def asks_for(question: str) -> AnswerKind:
    """The kind of answer the wording asks for: a date, else a number (``rag.text.figures``),
    else a person."""
    if figures.asks_date(question):
        return AnswerKind.DATE
    if figures.asks_number(question):
        return AnswerKind.NUMBER
    return AnswerKind.PERSON if _PERSON_ASKED.search(question) else AnswerKind.NONE


def question_terms(question: str, off: frozenset[str] | None = None) -> Mapping[str, str]:
    """Salient BM25 terms of ``question`` -> the surface form the user wrote (first seen), less
    the answer category after "which" / "哪些" (``CATEGORY_AFTER_*``), with the rules ``off``
    turned off (default: ``RAG_RULES_OFF``; an ablation names its own).
    Cached (read-only): the pipeline reads them for the term statistics and again for the features."""
    return _question_terms(question, rules.off() if off is None else off)


@lru_cache(maxsize=512)
def _question_terms(question: str, off: frozenset[str]) -> Mapping[str, str]:
    """``question_terms`` with the rules ``off`` turned off (``rag.rules``: an ablation)."""
    categories, frames, cuts = "categories" not in off, "frames" not in off, "grammar-cuts" not in off
    grammar, hedges = "grammar-words" not in off, HEDGES_ZH if "hedges" not in off else frozenset()
    units, relations = "asked-units" not in off, "relations" not in off
    out: dict[str, str] = {}
    words = [uncontracted(w) for w in _WORD.findall(question)]  # "I've": the tail is no term
    for i, word in enumerate(words):
        if (
            word.lower() in QUESTION_WORDS_EN
            or (categories and _is_category(words, i))
            or (grammar and _is_grammar(word))
        ):
            continue
        prev = ""
        for term in tokenize(word):
            after, prev = prev, term
            if (
                term in QUESTION_WORDS_ZH
                or term in hedges
                or term in QUESTION_WORDS_EN
                or not term.strip()
                or (categories and after in CATEGORY_AFTER_ZH and _CJK_CHAR.match(term))  # Latin tokens come last
                or (
                    frames and _CJK_CHAR.match(term) and is_frame_token(term)
                )  # "几项", "哪所", "慧是": rag.text.frames
                or (cuts and _CJK_CHAR.match(term) and is_grammar_cut(term))  # "我能", "内要"
                or (units and is_asked_unit(term))  # "几点", "几号"
                or (relations and is_relation_word(term))  # "以后", "之内"
            ):
                continue
            if len(term) == 1 and _CJK_CHAR.match(term):  # jieba cuts single characters inconsistently
                continue
            out.setdefault(term, term if _CJK_CHAR.search(term) else _latin_surface(term, word))
    return MappingProxyType(out)


def _is_grammar(word: str) -> bool:
    """One of the most common English words ("here", "am"), not a figure ("one", "three")."""
    return bool(_LATIN_RUN.fullmatch(word)) and is_grammar(word) and not figures.has_number(word)


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
