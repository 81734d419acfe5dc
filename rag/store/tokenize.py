"""BM25 tokenization: English words lower-cased, stop-worded and Snowball-stemmed; CJK by jieba."""

from __future__ import annotations

import logging
import re
from functools import lru_cache

import jieba
import Stemmer
from bm25s.stopwords import STOPWORDS_EN

jieba.setLogLevel(logging.WARNING)

_CJK = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af"
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
