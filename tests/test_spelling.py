"""``Spellings.close`` is ``difflib.get_close_matches`` over all the words, whatever the words:
narrowing the candidates by difflib's own bound first must never change its answer."""

from __future__ import annotations

import difflib
import random
import string

import pytest

from rag.store.bm25 import NEAR_CUTOFF, BM25Index
from rag.store.spelling import Spellings


def _typo(rng: random.Random, word: str) -> str:
    i = rng.randrange(len(word))
    edit = rng.choice(["drop", "swap", "add", "change"])
    if edit == "drop" and len(word) > 1:
        return word[:i] + word[i + 1 :]
    if edit == "swap" and i + 1 < len(word):
        return word[:i] + word[i + 1] + word[i] + word[i + 2 :]
    if edit == "add":
        return word[:i] + rng.choice(string.ascii_lowercase) + word[i:]
    return word[:i] + rng.choice(string.ascii_lowercase + "é-'0") + word[i + 1 :]


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("cutoff", [NEAR_CUTOFF, 0.6, 0.95])
def test_close_equals_difflib_over_every_word(seed, cutoff):
    rng = random.Random(seed)
    alphabet = "aaeeiioonnrrsttlcdmpuhy" + "é-'0"
    words = {"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 14))) for _ in range(3000)}
    words |= {"vitamin", "vitamins", "protein", "mitochondria", "leave", "leaves", "ninety"}
    spellings = Spellings(words)
    asked = [_typo(rng, w) for w in rng.sample(sorted(words), 300)] + ["vitamn", "", "x", "zzzzzzzzzzzzzzzzzzzz"]
    for word in asked:
        assert spellings.close(word, 3, cutoff) == difflib.get_close_matches(word, sorted(words), 3, cutoff), word


def test_an_index_finds_a_misspelling_of_its_own_word_and_not_of_a_stranger():
    index = BM25Index.build([("c1", "Vitamin D supplements reduce falls"), ("c2", "Annual leave is 25 days")], 1)
    stats = index.term_stats(["vitamn", "anual", "sabbatical"])
    assert stats.near == {"vitamn": "vitamin", "anual": "annual"}
