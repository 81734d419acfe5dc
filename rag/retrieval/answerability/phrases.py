"""Close phrases: an English question term no searched chunk holds, in any spelling or WordNet
synonym, is still covered where the evidence has a phrase close to it in meaning ("maternity"
-> "parental leave"), judged by the cosine of the knowledge base's embedder.

The threshold is fit on WordNet alone (``python -m rag.bench.fit_close_phrases``): the 95%
quantile of the cosines of *sister* pairs (two kinds of one thing: "sabbatical", "sick leave"),
so a look-alike covers a term for about one pair in twenty, while about a third of synonym pairs pass
(held-out figures in docs/BENCHMARKS.md). Chinese terms are not read here: e5's word-level
cosines do not separate synonyms from sisters (same place).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from bm25s.stopwords import STOPWORDS_EN

from rag.text.frequency import is_grammar

# python -m rag.bench.fit_close_phrases: bundled all-MiniLM-L6-v2, 95% quantile of WordNet sister-pair cosines (fit half)
CLOSE_PHRASE_MIN = 0.599
CLOSE_PHRASE_MODEL = (
    "bundled:all-MiniLM-L6-v2"  # the embedder it was fit with: another one's cosines mean another thing
)
MAX_PHRASES = 200  # phrases read from the evidence, first seen first
_WORD = re.compile(r"[A-Za-z][A-Za-z'\u2019-]*[A-Za-z]|[A-Za-z]")
_CLAUSE = re.compile(r"[.,;:!?()\[\]\n\u2014\u2013]+|\s-\s")  # a phrase never spans these
_STOP = frozenset(STOPWORDS_EN)

Embed = Callable[[list[str]], np.ndarray]  # texts -> unit vectors, one row each


@dataclass(frozen=True)
class ClosePhrase:
    phrase: str  # as the evidence writes it (lower case)
    cosine: float


def phrases(texts: Sequence[str]) -> list[str]:
    """Words and two-word phrases of the ``texts``' clauses, with no stop word or one of the most
    common words in them ("annual leave", not "you may")."""
    out: dict[str, None] = {}
    for clause in (c for text in texts for c in _CLAUSE.split(text)):
        words = [w.lower() for w in _WORD.findall(clause)]
        content = [not (w in _STOP or len(w) < 2 or is_grammar(w)) for w in words]  # "kg", "tv" are words
        for i, w in enumerate(words):
            if not content[i]:
                continue
            out.setdefault(w)
            if i + 1 < len(words) and content[i + 1]:
                out.setdefault(f"{w} {words[i + 1]}")
        if len(out) >= MAX_PHRASES:
            break
    return list(out)[:MAX_PHRASES]


def close_phrases(
    terms: Mapping[str, str], texts: Sequence[str], embed: Embed, threshold: float = CLOSE_PHRASE_MIN
) -> dict[str, ClosePhrase]:
    """Term -> the evidence phrase closest to what the user wrote (``terms``: term -> surface),
    for the terms whose closest phrase reaches ``threshold``."""
    pool = phrases(texts)
    if not terms or not pool:
        return {}
    asked = list(terms.values())
    vecs = embed(asked + pool)
    sims = vecs[: len(asked)] @ vecs[len(asked) :].T
    out: dict[str, ClosePhrase] = {}
    for (term, shown), row in zip(terms.items(), sims, strict=True):
        row = np.where([shown.lower() in p.split() for p in pool], -1.0, row)  # not the word itself
        j = int(np.argmax(row))
        if row[j] >= threshold:
            out[term] = ClosePhrase(pool[j], round(float(row[j]), 3))
    return out
