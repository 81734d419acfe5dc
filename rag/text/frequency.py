"""How common a word is in everyday language (``wordfreq``'s Zipf scale: log10 of uses per
billion words), so the decision can tell a question's subject from the words every question uses.

A word at ``GRAMMAR_ZIPF`` or above (about the 100 most common English words: "here", "am",
"time") carries no subject: it is not a question term at all. A word at ``EVERYDAY_ZIPF`` or above
(about the 3,000 most common: "money", "entitled", "leave") still weighs in how much of the
question a passage holds, but its absence alone never refuses and a refusal never names it: the
documents not saying "money" says nothing about whether they answer "how much money ...".
"""

from __future__ import annotations

from functools import lru_cache

from wordfreq import zipf_frequency

GRAMMAR_ZIPF = 5.75  # 1 use in 1,800 words
EVERYDAY_ZIPF = 4.5  # 3 uses in 100,000 words


@lru_cache(maxsize=8192)
def zipf(word: str, lang: str) -> float:
    """``word``'s Zipf frequency in ``lang`` (``en`` or ``zh``); 0 for a word wordfreq never saw."""
    return zipf_frequency(word.lower(), lang)


def is_grammar(word: str, lang: str = "en") -> bool:
    return zipf(word, lang) >= GRAMMAR_ZIPF


def is_everyday(word: str, lang: str = "en") -> bool:
    return zipf(word, lang) >= EVERYDAY_ZIPF
