"""Lexical evidence: content tokens, numbers, negation and normalized text for quote checks.

English text gives lowercased, lightly stemmed words without stopwords; Chinese text gives
character bigrams (a run of one character stays a unigram). Numbers are compared as
normalized strings, including number words ("seven" == "7", "七" == "7").
"""

from __future__ import annotations

import re
import unicodedata

from rag.store.numerals import canonical, chinese_value
from rag.text.script import HAN

# Where a passage is cut into coarse sentences (answerability's coverage, both readers): the
# windows and passages the shipped readers were fit on were cut here, so a change to it changes
# what the readers read. A point between two digits ("2.0", "1.5 days") is a decimal, not an end.
_SENTENCE_END = re.compile(r"(?:(?<=[!?。！？；;])|(?<=\.)(?!\d)|(?<=\D\.))\s*|\n+")

_STOPWORDS = frozenset(
    """a an the and or but if of to in on at by for with from as into about over under is are
    was were be been being am do does did have has had having i you he she it we they me him
    her us them my your his its our their this that these those there here what which who whom
    whose when where why how can could may might must shall should will would also only just
    than then so such very any all each some more most other s t""".split()
)
_NEGATIONS = frozenset("not no never cannot can't won't don't doesn't isn't aren't none neither nor".split())
_CJK_NEGATIONS = ("不能", "不得", "不可", "不会", "不是", "不予", "不允许", "没有", "未经", "无法")
_SMALL_NUMBERS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty"
).split()
# "one" is left out: it is far more often a pronoun ("one of the ...") than a quantity.
_NUMBER_WORDS = {w: str(i) for i, w in enumerate(_SMALL_NUMBERS) if w != "one"}
_NUMBER_WORDS.update(
    {w: str(10 * (i + 3)) for i, w in enumerate("thirty forty fifty sixty seventy eighty ninety".split())}
)
_NUMBER_WORDS.update({"hundred": "100", "thousand": "1000", "million": "1000000", "billion": "1000000000"})

_WORD_RE = re.compile(r"[a-z0-9]+(?:['’.][a-z0-9]+)*")
# "I've", "I'm", "doesn't", "employee's": the tail is grammar, not a word of its own
_CLITIC_RE = re.compile(r"['’](?:ve|m|re|ll|d|s|t)$|n['’]t$", re.I)
# negations whose stem changes: cutting "n't" would leave "ca", "wo", "sha", "ai"
_IRREGULAR_NEGATIONS = {"ca": "can", "wo": "will", "sha": "shall", "ai": "is"}
_IRREGULAR_NEGATION_RE = re.compile(r"^(ca|wo|sha|ai)n['’]t$", re.I)
_CJK_RUN_RE = re.compile(f"[{HAN}]+")
_NUMBER_RE = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?")
_CJK_NUMBER_RE = re.compile(r"[零一二两三四五六七八九十百千万]+(?=[天日月年个名人次岁小时分秒周号元倍项条页家位种%％])")


def normalize(text: str) -> str:
    """Casefold, NFKC, drop punctuation and symbols, collapse whitespace (for quote matching)."""
    text = unicodedata.normalize("NFKC", text).casefold()
    kept = [" " if unicodedata.category(ch)[0] in "PSZC" else ch for ch in text]
    return " ".join("".join(kept).split())


def uncontracted(word: str) -> str:
    """``word`` without its clitic: "what's" -> "what", "company's" -> "company", "isn't" -> "is",
    "won't" -> "will"; a word whose apostrophe is inside it stays whole ("o'clock")."""
    m = _IRREGULAR_NEGATION_RE.match(word)
    return _IRREGULAR_NEGATIONS[m.group(1).lower()] if m else _CLITIC_RE.sub("", word)


def _stem(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def content_tokens(text: str) -> set[str]:
    """Content words (English) and character bigrams (CJK) of ``text``, every figure in one
    spelling (``numerals.canonical``): "三千元", "3,000 元" and "3000 元" all give the token "3000"."""
    text = canonical(unicodedata.normalize("NFKC", text)).lower()
    words = (uncontracted(w) for w in _WORD_RE.findall(text))
    tokens = {_stem(w) for w in words if w not in _STOPWORDS}
    for run in _CJK_RUN_RE.findall(text):
        if len(run) == 1:
            tokens.add(run)
        tokens.update(run[i : i + 2] for i in range(len(run) - 1))
    return tokens


def coverage(claim_tokens: set[str], span_text: str, span_tokens: set[str]) -> float:
    """Share of the claim's tokens found in the span (CJK tokens by substring)."""
    if not claim_tokens:
        return 0.0
    found = sum(1 for t in claim_tokens if t in span_tokens or (_CJK_RUN_RE.match(t) and t in span_text))
    return found / len(claim_tokens)


def numbers(text: str) -> set[str]:
    """Numbers in ``text`` as normalized strings: digits, English number words, CJK numerals."""
    text = unicodedata.normalize("NFKC", text)
    found = {_norm_number(m.group()) for m in _NUMBER_RE.finditer(text)}
    found.update(_NUMBER_WORDS[w] for w in re.findall(r"[a-z]+", text.lower()) if w in _NUMBER_WORDS)
    for run in _CJK_NUMBER_RE.findall(text):
        value = chinese_value(run)
        if value is not None:
            found.add(str(value))
    return found


def _norm_number(raw: str) -> str:
    raw = raw.replace(",", "")
    if "." in raw:
        raw = raw.rstrip("0").rstrip(".")
    return raw.lstrip("0") or "0"


def has_negation(text: str) -> bool:
    words = set(re.findall(r"[a-z]+(?:['’][a-z]+)?", text.lower().replace("’", "'")))
    return bool(words & _NEGATIONS) or any(n in text for n in _CJK_NEGATIONS)


_CJK_NEGATION_RE = re.compile(r"不|未|没|无(?!线)|非(?!常)|勿|别(?=[^人处的])")


def negation_count(text: str) -> int:
    """How many negation cues ``text`` holds: English negation words, and CJK negation characters
    (不, 未, 没, 无, 非, 勿, 别; so 无需, 不超过, 不得 each count). A sentence whose count differs
    from its support's flips a negation, even when both hold one ("无需批准，不超过 300 元" against
    "须批准，不超过 300 元")."""
    words = re.findall(r"[a-z]+(?:['’][a-z]+)?", text.lower().replace("’", "'"))
    return sum(1 for w in words if w in _NEGATIONS) + len(_CJK_NEGATION_RE.findall(text))


def sentences(text: str) -> list[str]:
    """Coarse sentences, the one cut answerability and the readers share (no offsets needed)."""
    return [s for s in _SENTENCE_END.split(text) if s.strip()]
