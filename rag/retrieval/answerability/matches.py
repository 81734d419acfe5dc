"""How the searched scope says each salient question term: as written, as another spelling (a
typo the index found, another jieba cut, a figure in digits), as a synonym (WordNet, Cilin), or
not at all. ``features`` weighs the terms by these; the Inspector lists them (``TermMatch``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rag import rules
from rag.records import TermStats
from rag.retrieval.answerability.terms import held_terms, question_terms
from rag.retrieval.trace import TermMatch
from rag.text.frequency import zipf
from rag.text.script import CJK_LETTER_RE
from rag.text.synonyms import Synonym, synonyms

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
    return list(dict.fromkeys(tok for t in question_terms(question) for s in synonyms(t) for tok in s.tokens))


def present_synonyms(surface: Mapping[str, str], stats: TermStats) -> dict[str, tuple[Synonym, ...]]:
    """Term -> its synonyms that some chunk of the scope holds every token of (its terms that the
    scope holds as written need none)."""
    out: dict[str, tuple[Synonym, ...]] = {}
    if not rules.on("synonyms"):
        return out
    for t in surface:
        if stats.df.get(t, 0):
            continue
        found = tuple(s for s in synonyms(t) if all(stats.df.get(tok, 0) for tok in s.tokens))
        if found:
            out[t] = found
    return out


def alias_df(t: str, near: Mapping[str, str], others: Sequence[Synonym], stats: TermStats) -> int:
    """A term's document frequency through how the scope says it: its synonyms' (the rarest
    token of each, the most used synonym), or 1 for a spelling ``near`` found."""
    by_synonym = max((min(stats.df.get(tok, 0) for tok in s.tokens) for s in others), default=0)
    return by_synonym or (1 if t in near or others else 0)


def term_matches(
    surface: Mapping[str, str], stats: TermStats, others: Mapping[str, Sequence[Synonym]], best: str
) -> tuple[TermMatch, ...]:
    """For each salient term: found as written, as another spelling, as a synonym, or not at all,
    and whether the best sentence holds it."""
    in_best = held_terms(surface, best, stats.near, others) if best else frozenset()
    out: list[TermMatch] = []
    for t, shown in surface.items():
        if stats.df.get(t, 0):
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
