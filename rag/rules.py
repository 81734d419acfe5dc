"""The rules that shape what the answer-or-refuse decision and the extractive answerer read, by
name, each with a switch that turns it off for an ablation (``docs/ANSWERABILITY.md``).

``RAG_RULES_OFF=frames,synonyms`` asks with those rules off: ``python -m rag bench refusal ...
--dump FILE`` then measures what each one buys (``python -m rag.bench.ablation BASE --again
RULE=FILE``). Never in use: the shipped models were fit with every rule on. The switch is read
from the environment where each rule runs (deep in term extraction, which takes no settings);
``Settings.rules_off`` reads the same variable, so the fingerprint of every trace says which
rules were off.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import lru_cache
from types import MappingProxyType

from rag.errors import ConfigError

ENV = "RAG_RULES_OFF"

# name -> what it does (one line; docs/ANSWERABILITY.md has the failure each exists for)
RULES: Mapping[str, str] = MappingProxyType(
    {
        # the question's terms (rag.text.terms) and how the evidence holds them
        "categories": "the answer category after which / what / 哪些 / 什么 is not a term",
        "frames": "a Chinese token glued to a pointer or a particle (几项, 哪所, 慧是) is not a term",
        "grammar-cuts": "a made-up Chinese token on a common grammatical character (我能, 内要, 还会) is not a term",
        "asked-units": "an interrogative glued to the unit it asks in (几点, 几号, 周几) is not a term",
        "relations": "a Chinese locative of relation (以后, 之内, 以上), an English preposition's work, is not a term",
        "hedges": "hedges (大约, 主要, 实际, 称之为) are not terms",
        "grammar-words": "the most common English words (Zipf >= 5.75: 'here', 'am') are not terms",
        "everyday-words": "an everyday word (Zipf >= 4.5: 'money') absent from the documents never refuses",
        "spellings": "another spelling (a typo, another jieba cut, a figure in Chinese numerals) is not absent",
        "synonyms": "a WordNet (English) or Cilin (Chinese) synonym in the documents covers a term, and a Cilin "
        "synonym in a Chinese sentence holds the answerer's term",
        "reader-synonyms": "the readers read the question with each term the best chunk lacks said as the "
        "synonym the chunk holds (Cilin, WordNet)",
        "close-phrases": "an evidence phrase close in meaning (MiniLM cosine >= 0.599) covers an English term",
        "amount-ranges": "an amount the question states is held by a rule whose range holds it (六百块 by 超过 500 元)",
        "quantity-ranges": "a duration or count the question states is held by a rule whose range holds it in its "
        "unit (six years by after five years), for the decision and the answerer alike",
        # the evidence the answer is drafted from (rag.retrieval.pipeline)
        "judged-evidence": "the chunk holding the sentence the decision judged best stays in the evidence under the floor",
        # the extractive answerer (rag.answer.extractive)
        "question-sentences": "a sentence that asks (a headline, an FAQ line) never answers",
        "missing-names": "a name or version the evidence never mentions leaves the part unanswered",
        "shares": "a part asking for a share (what percentage, 比例, 几折) prefers a sentence holding one (50%, 三成, 1:7)",
        "out-of-range": "a rule for a range the asked amount is outside of is lowered",
        "other-years": "a sentence stating other years than the one the part asks about (1576 for 1361) is lowered",
        "lead-ins": "a list item counts its lead-in's terms, and a lead-in never answers",
        "reader-reads-all": "the sentence reader reads chunks under headings too and English questions' chunks, "
        "and a sentence it finds likely to answer carries what is asked",
    }
)


def parse(text: str) -> frozenset[str]:
    """Rule names from a comma list; an unknown one raises with the known names."""
    names = frozenset(n.strip() for n in text.split(",") if n.strip())
    unknown = sorted(names - RULES.keys())
    if unknown:
        raise ConfigError(f"Unknown rule(s) in {ENV}: {', '.join(unknown)}.", fix=f"Use any of: {', '.join(RULES)}.")
    return names


def off() -> frozenset[str]:
    """The rules turned off now (``RAG_RULES_OFF``); none in normal use."""
    raw = os.environ.get(ENV, "")
    return _parsed(raw) if raw else frozenset()


@lru_cache(maxsize=16)
def _parsed(raw: str) -> frozenset[str]:
    return parse(raw)


def on(name: str) -> bool:
    """Whether rule ``name`` applies (a name ``RULES`` lacks is a programmer's mistake)."""
    if name not in RULES:
        raise ValueError(f"unknown rule {name!r}; known: {', '.join(RULES)}")
    return name not in off()
