"""The answerability stage: one typed decision, for every question in every language.

``assess`` reads the reranked evidence, the question's salient terms and their document
frequency in the searched scope (the BM25 index's own postings, after filters), and returns an
``Answerability`` (trace.py) with every feature, each feature's contribution, the probability,
the threshold it was compared with, and, when it says no, what was missing, e.g. "The
documents don't mention 'sabbatical'". How the scope says each term is in ``terms``, what the
readers read in ``reader_features``, what a refusal says in ``messages``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from rag import rules
from rag.readers.reader import READER_SCRIPTS
from rag.records import TermStats
from rag.retrieval.answerability.messages import (
    UNCALIBRATED,
    absent_words,
    compared,
    decimals,
    missing,
    reader_off,
    reason,
    refusing,
    vetoing,
)
from rag.retrieval.answerability.model import FEATURES, AnswerabilityModel, model_for
from rag.retrieval.answerability.phrases import Embed, close_phrases
from rag.retrieval.answerability.reader_features import Locator, read_sentences, read_window, shipped_readers
from rag.retrieval.answerability.terms import (
    AnswerKind,
    alias_df,
    carries,
    coverage,
    held_terms,
    idf,
    in_evidence_words,
    present_synonyms,
    ranged_amount,
    sentences,
    term_matches,
    typos_only,
)
from rag.retrieval.trace import Answerability, TermMatch
from rag.store.tokenize import tokenize
from rag.text.question import QuestionAnalysis, reading
from rag.text.script import CJK_LETTER_RE, is_chinese, script_of  # script_of, is_chinese: re-exported
from rag.text.synonyms import Synonym

__all__ = [  # the stage's interface; the rest is imported from its module
    "FEATURES",
    "Answerability",
    "EvidenceChunk",
    "assess",
    "compared",
    "decimals",
    "features",
    "is_chinese",
    "refusing",
    "script_of",
    "vetoing",
]

EVIDENCE_CHUNKS = 3  # sentences are looked for in the best 3 reranked chunks


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
    reader_question: str = ""  # the question as the readers read it, where it differs
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
    reader's window is looked for by meaning too). An amount of money the question states is held
    where a sentence of the best chunks states a rule whose range holds it (``rag.text.amounts``)."""
    analysis = reading(question, analysis)  # the ask's one reading, when the pipeline hands it over
    surface = analysis.terms
    stats = typos_only(stats, surface)
    near = stats.near
    others = present_synonyms(surface, stats)
    gone = {t for t in surface if stats.df.get(t, 0) == 0 and t not in near and t not in others}  # in no searched chunk
    top = list(ranked[:EVIDENCE_CHUNKS])
    if embed is not None and gone and top and rules.on("close-phrases"):
        latin = {t: surface[t] for t in gone if not CJK_LETTER_RE.search(t)}
        for t, close in close_phrases(latin, [c.text for c in top], embed).items():
            others[t] = (Synonym(close.phrase, tuple(tokenize(close.phrase)), f"close phrase, cos {close.cosine:.2f}"),)
            gone.discard(t)
    # an amount the question states is held by a rule whose range holds it ("六百块" by "超过 500 元")
    ranged = ranged_amount(question, surface, [c.text for c in top])
    if ranged:
        gone -= ranged.terms
    df = {t: stats.df.get(t, 0) or alias_df(t, near, others.get(t, ()), stats) for t in surface}
    weights = {t: idf(df[t], max(stats.chunks, 1)) for t in surface}
    total = sum(weights.values()) or 1.0
    absent = tuple(surface[t] for t in surface if t in gone)
    missing_share = sum(w for t, w in weights.items() if t in gone) / total if weights else 0.0
    kind = analysis.asks
    given = ranged.held_in if ranged else (lambda _text: frozenset())
    cover_chunk = coverage(weights, surface, top[0].text, near, given(top[0].text), others).share if top else 0.0
    best, best_share, best_missing = _best_sentence(top, weights, surface, near, others, kind, given)
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
    readers, window, read_as = _read_readers(x, question, surface, top, reader, sentence_reader, locate)
    matches = term_matches(surface, stats, others, best, ranged, best_missing)
    return _Read(x, kind, absent, unheld, best, readers, window, "" if read_as == question else read_as, matches)


def _read_readers(
    x: dict[str, float],
    question: str,
    surface: Mapping[str, str],
    top: Sequence[EvidenceChunk],
    reader,
    sentence_reader,
    locate: Locator | None,
) -> tuple[dict[str, str], str, str]:
    """Add the features of the readers given (none: none added) to ``x``; the model that gave
    each, the window the answer reader read, and the question as they read it: in the best
    chunk's words where it holds a synonym of a term (``in_evidence_words``)."""
    readers, window = {}, ""
    if top and (reader is not None or sentence_reader is not None):
        question = in_evidence_words(question, surface, f"{top[0].heading}\n{top[0].text}")
    if reader is not None:
        x["reader"], window = read_window(reader, question, top, locate)
        readers["reader"] = (
            f"{reader.label} (window: shared characters + {locate.label} cosine)" if locate else reader.label
        )
    if sentence_reader is not None:
        x["reader_sentence"] = read_sentences(sentence_reader, question, top)
        readers["reader_sentence"] = sentence_reader.label
    return readers, window, question


def _best_sentence(
    top: Sequence[EvidenceChunk],
    weights: dict[str, float],
    surface: Mapping[str, str],
    near: dict[str, str],
    others: Mapping[str, Sequence[Synonym]],
    kind: AnswerKind,
    given: Callable[[str], frozenset[str]],
) -> tuple[str, float, tuple[str, ...]]:
    """The sentence of the ``top`` chunks holding the most of the question's weight (a sentence
    holds its headings' terms and the ``given`` ones), its share and the terms it lacks; ties go to
    the sentence that carries what is asked for."""
    best, best_share, best_missing = "", 0.0, tuple(surface.values())
    for chunk in top:
        headed = held_terms(weights, chunk.heading, near, others) if chunk.heading else frozenset()
        for sent in sentences(chunk.text):
            cov = coverage(weights, surface, sent, near, headed | given(sent), others)
            key = (cov.share, carries(kind, sent))
            if not best or key > (best_share, carries(kind, best)):
                best, best_share, best_missing = sent, cov.share, cov.missing
    return best, best_share, best_missing


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
    reader, sreader = shipped_readers(reader_precision) if use_reader and script in READER_SCRIPTS else (None, None)
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
        reason=reason(prob, thr, veto, bool(ranked)) if calibrated else UNCALIBRATED,
        missing=missing(read, question) if not ok else "",
        reader=readers or (reader_off(use_reader) if script in READER_SCRIPTS else ""),
        reader_window=read.reader_window[:400] if "reader" in model.features else "",
        reader_question=read.reader_question if read.readers else "",
        term_matches=list(read.matches),
    )
