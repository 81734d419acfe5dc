"""Query rewriting: at most two queries, the original always first.

Without an LLM the rules only *add* words: a known acronym gets its expansion from the corpus
("Service Level Agreement (SLA)") and an expansion gets its acronym, so time, scope, negation and
numbers can never be lost. With an LLM the rewrite is schema-checked and must keep every number,
negation and time word of the original; anything else falls back to the original alone.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cached_property

from rag.errors import RagError
from rag.retrieval.trace import QueryRun
from rag.text.figures import MONTHS, WEEKDAYS

log = logging.getLogger(__name__)

MAX_QUERIES = 2
_ACRO_AFTER = re.compile(r"((?:[A-Za-z][\w-]*[ \t]+){1,20})[(（]([A-Z][A-Za-z0-9&-]{1,9})[)）]")
_ACRO_BEFORE = re.compile(r"\b([A-Z][A-Z0-9&]{1,9})[ \t]*[(（]([A-Za-z][\w -]{3,80}?)[)）]")
_MINOR = {"of", "and", "the", "for", "to", "in", "on", "a", "an", "&", "de"}
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*%?")
_KEEP_WORDS = re.compile(
    r"\b(?:not|no|never|without|none|nor|except|excluding|before|after|since|until|during|between|"
    r"within|latest|earliest|last|next|current|previous|only|all|every|any|q[1-4]|fy\d*|"
    rf"{'|'.join(MONTHS)}|{'|'.join(WEEKDAYS)}|"
    r"today|yesterday|tomorrow|year|month|week|quarter)\b|不|没|无|非|未|之前|之后|以来|期间|年|月|日|季度",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Rewrite:
    queries: list[QueryRun]  # original first, at most MAX_QUERIES
    note: str = ""  # why a rewrite was or was not used


def best_long_form(short: str, words: list[str]) -> str | None:
    """Schwartz & Hearst (2003): the shortest tail of ``words`` whose letters spell ``short`` in order,
    the first letter of ``short`` starting a word. None when no tail does."""
    long = " ".join(words)
    s_i, l_i = len(short) - 1, len(long) - 1
    while s_i >= 0:
        c = short[s_i].lower()
        if not c.isalnum():
            s_i -= 1
            continue
        while l_i >= 0 and (long[l_i].lower() != c or (s_i == 0 and l_i > 0 and long[l_i - 1].isalnum())):
            l_i -= 1
        if l_i < 0:
            return None
        l_i, s_i = l_i - 1, s_i - 1
    form = long[long.rfind(" ", 0, l_i + 1) + 1 :]
    first = form.split()[0].lower() if form.split() else ""
    if first in _MINOR or len(form.split()) < 2 or short.lower() in form.lower().split():
        return None
    return form


class Acronyms(dict):
    """ACRONYM -> long form, with word indexes so that a question looks up its own words instead
    of scanning every acronym of the corpus (thousands in a 100k-chunk index)."""

    @cached_property
    def by_word(self) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
        """(acronym -> [acronym], first word of the long form, lowercased -> [acronyms])."""
        short: dict[str, list[str]] = {}
        first: dict[str, list[str]] = {}
        for acro, long_form in self.items():
            short.setdefault(acro, []).append(acro)
            if long_form:
                first.setdefault(long_form.split()[0].lower(), []).append(acro)
        return short, first


def mine_acronyms(texts: Iterable[str]) -> Acronyms:
    """ACRONYM -> its most frequent expansion, from "Long Form (LF)" and "LF (Long Form)" patterns."""
    seen: dict[str, Counter] = {}
    for text in texts:
        for words_blob, acro in _ACRO_AFTER.findall(text):
            words = words_blob.split()[-min(len(acro) + 5, len(acro) * 2) :]
            form = best_long_form(acro, words)
            if form:
                seen.setdefault(acro, Counter())[form] += 1
        for acro, long_form in _ACRO_BEFORE.findall(text):
            form = best_long_form(acro, long_form.split())
            if form == long_form.strip():
                seen.setdefault(acro, Counter())[form] += 1
    return Acronyms({acro: counts.most_common(1)[0][0] for acro, counts in seen.items()})


def _relevant(question: str, acronyms: dict[str, str]) -> list[tuple[str, str]]:
    """The few acronyms whose short form, or the first word of whose long form, is in the question."""
    short, first = (acronyms if isinstance(acronyms, Acronyms) else Acronyms(acronyms)).by_word
    words = set(re.findall(r"[\w&-]+", question))
    found = {a for w in words for a in short.get(w, ())} | {a for w in words for a in first.get(w.lower(), ())}
    return sorted((a, acronyms[a]) for a in found)


def acronym_query(question: str, acronyms: dict[str, str]) -> tuple[str, list[str]] | None:
    """The question with acronyms expanded (and expansions abbreviated); None when nothing applies."""
    out, used = question, []
    for acro, long_form in _relevant(question, acronyms):
        pattern = rf"(?<![\w]){re.escape(acro)}(?![\w])"
        has_acro = re.search(pattern, out) is not None
        has_long = long_form.lower() in out.lower()
        if has_acro and not has_long:
            out = re.sub(pattern, lambda m, a=acro, lf=long_form: f"{lf} ({a})", out, count=1)
            used.append(acro)
        elif has_long and not has_acro:
            end = out.lower().index(long_form.lower()) + len(long_form)
            out = f"{out[:end]} ({acro}){out[end:]}"
            used.append(acro)
    return (out, used) if used else None


def keeps_constraints(original: str, rewritten: str) -> list[str]:
    """Numbers, negations and time/scope words of ``original`` missing from ``rewritten``."""
    low = rewritten.lower()
    wanted = _NUMBER.findall(original) + [m.group(0) for m in _KEEP_WORDS.finditer(original)]
    return [w for w in wanted if w.lower() not in low]


def ask_json(llm: object, prompt: str, keys: list[str]) -> dict:
    """One JSON answer from ``llm`` with ``keys``; raises on bad output.

    ``llm`` is either a model handle for ``rag.llm.complete_json`` or an injected callable
    ``(prompt, keys) -> dict`` (tests, and before the answer package exists)."""
    if callable(llm) and not hasattr(llm, "complete"):
        out = llm(prompt, keys)
    else:
        from rag.llm import complete_json

        out = complete_json(llm, prompt, keys)
    if not isinstance(out, dict) or any(k not in out for k in keys):
        raise ValueError(f"LLM output lacks keys {keys}: {out!r}")
    return out


LLM_ERRORS = (RagError, ValueError, TypeError, KeyError, ImportError)

_REWRITE_PROMPT = (
    "Rewrite the question into one search query for a document collection. Keep every number, "
    "date, negation and scope word; expand abbreviations; add nothing else.\n"
    'Question: {q}\nAnswer with JSON: {{"query": "..."}}'
)
_HYDE_PROMPT = (
    "Write a short passage (2-3 sentences) that would answer the question, as it might appear "
    'in a document.\nQuestion: {q}\nAnswer with JSON: {{"passage": "..."}}'
)


def llm_rewrite(question: str, llm: object) -> QueryRun | None:
    try:
        text = str(ask_json(llm, _REWRITE_PROMPT.format(q=question), ["query"])["query"]).strip()
    except LLM_ERRORS as exc:
        log.warning("LLM rewrite failed (%s); using the original question", exc)
        return None
    lost = keeps_constraints(question, text)
    if not text or text == question or lost:
        log.info("LLM rewrite rejected (lost %s)", lost)
        return None
    return QueryRun(text=text, kind="rewrite", reason="LLM rewrite (numbers, negation, time kept)")


def hyde_passage(question: str, llm: object) -> QueryRun | None:
    try:
        text = str(ask_json(llm, _HYDE_PROMPT.format(q=question), ["passage"])["passage"]).strip()
    except LLM_ERRORS as exc:
        log.warning("HyDE failed (%s); skipped", exc)
        return None
    return QueryRun(text=text, kind="hyde", reason="hypothetical answer passage (dense only)") if text else None


def rewrite(
    question: str,
    mode: str,
    acronyms: Callable[[], dict[str, str]],
    llm: object | None = None,
    hyde: bool = False,
) -> Rewrite:
    """The queries to run. ``acronyms`` is called only when the rules need it (mining is cached)."""
    queries = [QueryRun(text=question, kind="original")]
    second: QueryRun | None = None
    if hyde and llm is not None:
        second = hyde_passage(question, llm)
    if second is None and mode == "llm" and llm is not None:
        second = llm_rewrite(question, llm)
    if second is None and mode in ("rules", "llm"):
        found = acronym_query(question, acronyms())
        if found:
            second = QueryRun(text=found[0], kind="rewrite", reason="acronyms from the corpus: " + ", ".join(found[1]))
    if second is not None:
        queries.append(second)
    return Rewrite(queries=queries[:MAX_QUERIES], note=second.reason if second else "original only")
