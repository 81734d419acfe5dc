"""Whether a piece of evidence holds the question's focus: its salient terms (``rag.text.terms``)
and the kind of answer it asks for; and how the searched scope says each term: as written, as
another spelling (a typo the index found, another jieba cut, a figure in digits), as a synonym
(WordNet, Cilin), or not at all (``term_matches``, which the Inspector lists).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rag import rules
from rag.records import TermStats
from rag.retrieval.trace import TermMatch
from rag.store.numerals import holds_number, is_figure
from rag.store.tokenize import tokenize
from rag.text import figures
from rag.text.amounts import amount_terms, covers, money_asked
from rag.text.frequency import zipf
from rag.text.lexical import sentences  # re-exported: the one coarse sentence cut
from rag.text.quantities import asked_quantities, covers_quantity, quantity_terms
from rag.text.script import CJK_LETTER_RE, HAN
from rag.text.synonyms import Synonym, in_evidence_words, other_words, synonyms
from rag.text.terms import AnswerKind, asks_for, question_terms

__all__ = [
    "AnswerKind",
    "Coverage",
    "alias_df",
    "asks_for",
    "carries",
    "coverage",
    "held_terms",
    "idf",
    "in_evidence_words",
    "present_synonyms",
    "question_terms",
    "sentences",
    "synonym_tokens",
    "term_matches",
    "typos_only",
]


_HAS = {
    AnswerKind.DATE: figures.DATE,
    AnswerKind.NUMBER: figures.NUMBER,
    # a capitalised word not opening the sentence, or a Chinese name-like run before a verb of saying/being
    AnswerKind.PERSON: re.compile(
        rf"(?<=[a-z,;:]\s)[A-Z][a-z]+|[{HAN}]{{2,4}}(?:先生|女士|教授|博士|总统|主席|总理|部长|经理|主任|董事长|表示|说|称|担任|出任|当选)"
    ),
}


def carries(kind: AnswerKind, text: str) -> bool:
    """Whether ``text`` holds an answer of ``kind`` (a date, a number, a name); always for NONE."""
    return kind is AnswerKind.NONE or bool(_HAS[kind].search(text))


def idf(df: int, n: int) -> float:
    """BM25's (Lucene) inverse document frequency; a term absent from the scope weighs most."""
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


@dataclass(frozen=True)
class Coverage:
    """How much of the question's weight one text holds."""

    share: float  # idf-weighted share of the question's terms present
    missing: tuple[str, ...]  # terms (surface forms) not present


def held_terms(
    terms, text: str, near: dict[str, str] | None = None, others: Mapping[str, Sequence[Synonym]] | None = None
) -> frozenset[str]:
    """The ``terms`` that ``text`` holds. ``near`` maps a term to how the scope spells it (a
    corrected typo; the term itself for a CJK word that jieba cut differently there: then its
    characters are looked for as they are; or, for a number spelled in words, its digits:
    "六百" is held by "600 元"); ``others``, to its synonyms present in the scope ("vacation"
    is held by "holiday")."""
    tokens = set(tokenize(text))
    near, others = near or {}, others or {}

    def held(t: str) -> bool:
        alias = near.get(t, "")
        if t in tokens or any(s.held_by(text, tokens) for s in others.get(t, ())):
            return True
        if not alias:
            return False
        if alias == t:
            return alias in text
        return holds_number(text, alias) if is_figure(alias) else alias in tokens

    return frozenset(t for t in terms if held(t))


def coverage(
    weights: dict[str, float],
    surface: dict[str, str],
    text: str,
    near: dict[str, str] | None = None,
    given: frozenset[str] = frozenset(),
    others: Mapping[str, Sequence[Synonym]] | None = None,
) -> Coverage:
    """How much of the question's weight ``text`` holds, counting the ``given`` terms as held
    (those of the headings the text sits under: see :func:`held_terms`)."""
    total = sum(weights.values())
    if total <= 0:
        return Coverage(1.0, ())
    got_terms = held_terms(weights, text, near, others) | given
    got = sum(w for t, w in weights.items() if t in got_terms)
    return Coverage(got / total, tuple(surface[t] for t in weights if t not in got_terms))


# a Zipf frequency (rag.text.frequency) from which an English word is a word, not a misspelling of
# another: "beach" 4.9, "guest" 4.6; common misspellings stay under it ("recieve" 2.75, "seperate" 2.82)
TYPO_MAX_ZIPF = 3.0


def typos_only(stats: TermStats, surface: Mapping[str, str]) -> TermStats:
    """``stats`` without the close spellings found for English words that are words already: the
    index's look for a misspelling reads "beach" as "each" and "bill" as "ill", but a word this
    common (``TYPO_MAX_ZIPF``) is what the user meant, so it is absent, not misspelled. Chinese
    aliases (another jieba cut, a number in digits) are kept."""
    kept = {
        t: v for t, v in stats.near.items() if CJK_LETTER_RE.search(t) or zipf(surface.get(t, t), "en") < TYPO_MAX_ZIPF
    }
    return stats if len(kept) == len(stats.near) else TermStats(stats.chunks, stats.df, kept)


def synonym_tokens(question: str) -> list[str]:
    """The BM25 tokens of every synonym of ``question``'s terms, whose counts in the scope tell
    which synonyms the documents use (``present_synonyms``)."""
    if not rules.on("synonyms"):
        return []
    return list(
        dict.fromkeys(tok for shown in question_terms(question).values() for s in synonyms(shown) for tok in s.tokens)
    )


def present_synonyms(surface: Mapping[str, str], stats: TermStats) -> dict[str, tuple[Synonym, ...]]:
    """Term -> its synonyms that some chunk of the scope holds every token of. A Chinese term the
    scope holds as written gets its Cilin synonyms too, but no cut of it (``other_words``): the
    best chunk may say it in other words where other documents use the term ("审批" there for the
    question's "审核"). An English one does not: on SciFact that let same-topic claims through
    (docs/BENCHMARKS.md, "A synonym covers a Chinese term in the evidence wherever the term is")."""
    out: dict[str, tuple[Synonym, ...]] = {}
    if not rules.on("synonyms"):
        return out
    for t in surface:
        if not stats.df.get(t, 0):
            pool = synonyms(surface[t])
        elif CJK_LETTER_RE.search(t):
            pool = other_words(surface[t])
        else:
            continue
        found = tuple(s for s in pool if all(stats.df.get(tok, 0) for tok in s.tokens))
        if found:
            out[t] = found
    return out


def alias_df(t: str, near: Mapping[str, str], others: Sequence[Synonym], stats: TermStats) -> int:
    """A term's document frequency through how the scope says it: its synonyms' (the rarest
    token of each, the most used synonym), or 1 for a spelling ``near`` found."""
    by_synonym = max((min(stats.df.get(tok, 0) for tok in s.tokens) for s in others), default=0)
    return by_synonym or (1 if t in near or others else 0)


@dataclass(frozen=True)
class Ranged:
    """What the question states as a figure that a rule's range holds: for an amount of money
    ("六百块") or a duration or count ("six years"), its terms and the evidence sentences whose rule
    holds it in its range ("单价超过 500 元的物品", "After five years of continuous service …")."""

    groups: tuple[tuple[frozenset[str], tuple[str, ...]], ...]  # (terms, covering sentences), each never empty

    @property
    def terms(self) -> frozenset[str]:
        return frozenset().union(*(terms for terms, _ in self.groups))

    def sentence_for(self, term: str) -> str:
        """The first sentence whose range holds the figure ``term`` is part of."""
        return next(sents[0] for terms, sents in self.groups if term in terms)

    def held_in(self, text: str) -> frozenset[str]:
        """The figures' terms where ``text`` (a sentence or a chunk) holds one of their sentences."""
        return frozenset().union(*(terms for terms, sents in self.groups if any(s in text for s in sents)))


def ranged_amount(question: str, surface: Mapping[str, str], texts: Sequence[str]) -> Ranged | None:
    """The amount of money and the durations or counts ``question`` states, with the sentences of
    ``texts`` (the best chunks) whose rule's range holds them; None when it states none or no
    sentence covers one."""
    split = [sent for text in texts for sent in sentences(text)]
    groups = []
    asked = money_asked(question) if rules.on("amount-ranges") else ()
    terms = amount_terms(question, surface) if asked else frozenset()
    if terms and (covering := tuple(sent for sent in split if covers(asked, sent))):
        groups.append((terms, covering))
    quantities = asked_quantities(question) if rules.on("quantity-ranges") else ()
    terms = quantity_terms(quantities, surface)
    if terms and (covering := tuple(sent for sent in split if covers_quantity(quantities, sent))):
        groups.append((terms, covering))
    return Ranged(tuple(groups)) if groups else None


def term_matches(
    surface: Mapping[str, str],
    stats: TermStats,
    others: Mapping[str, Sequence[Synonym]],
    best: str,
    ranged: Ranged | None = None,
    best_missing: Sequence[str] = (),
) -> tuple[TermMatch, ...]:
    """For each salient term: found as written, as another spelling, as a synonym, in a rule's
    amount range, or not at all, and whether the best sentence holds it (``best_missing``: the
    terms, as written, that the coverage of the best sentence under its headings lacks)."""
    in_best = frozenset(t for t, shown in surface.items() if shown not in best_missing) if best else frozenset()
    # the amount's terms the best sentence does not hold as written: found in a rule's range
    by_range = ranged.terms - held_terms(ranged.terms, best, stats.near, others) if ranged is not None else frozenset()
    out: list[TermMatch] = []
    for t, shown in surface.items():
        if t in by_range:
            how, via = "range", ranged.sentence_for(t)[:120]
        elif stats.df.get(t, 0):
            how, via = "as written", ""
        elif t in stats.near:
            how, via = "spelling", stats.near[t]
        elif t in others:
            close = others[t][0].source.startswith("close phrase")
            how = "close phrase" if close else "synonym"
            via = ", ".join(f"{s.spelling} ({s.source})" for s in others[t][:3])
        else:
            how, via = "absent", ""
        out.append(TermMatch(shown, how, via, t in in_best))
    return tuple(out)
