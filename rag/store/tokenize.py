"""BM25 tokenization: English words lower-cased, stop-worded and Snowball-stemmed; CJK by jieba."""

from __future__ import annotations

import logging
import re
from functools import lru_cache

import jieba
import Stemmer
from bm25s.stopwords import STOPWORDS_EN

from rag.text.script import CJK_LETTERS

jieba.setLogLevel(logging.WARNING)

_CJK = CJK_LETTERS
_SPLIT = re.compile(rf"([{_CJK}]+)|([^\W_{_CJK}]+)", re.UNICODE)
_CJK_PUNCT_OR_STOP = set("的了和是在也就都而及与或之其这那")
_STOP = frozenset(STOPWORDS_EN)


@lru_cache(maxsize=1)
def _stemmer() -> Stemmer.Stemmer:
    return Stemmer.Stemmer("english")


def tokenize(text: str) -> list[str]:
    """Tokens for BM25. Numbers are kept; CJK runs go through jieba's search-mode cut."""
    out: list[str] = []
    latin: list[str] = []
    for cjk, word in _SPLIT.findall(text.lower()):
        if cjk:
            out.extend(t for t in jieba.lcut_for_search(cjk) if t.strip() and t not in _CJK_PUNCT_OR_STOP)
        elif word not in _STOP:
            latin.append(word)
    out.extend(_stemmer().stemWords(latin))
    return out


def token_spans(text: str) -> list[tuple[str, int, int]]:
    """(BM25 token, start, end) for each token ``tokenize`` would make of ``text``, with its place
    in ``text``, so that the query terms BM25 matched can be marked in the chunk as written."""
    out: list[tuple[str, int, int]] = []
    for m in _SPLIT.finditer(text):
        if m.group(1):
            for word, start, end in jieba.tokenize(m.group(1), mode="search"):
                if word.strip() and word not in _CJK_PUNCT_OR_STOP:
                    out.append((word.lower(), m.start() + start, m.start() + end))
        elif (word := m.group(2).lower()) not in _STOP:
            out.append((_stemmer().stemWord(word), m.start(), m.end()))
    return out
