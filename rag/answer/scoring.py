"""How every evidence sentence scores against one part of a question, for the extractive answerer
(``extractive.py``, which picks the best and judges whether it answers).

A sentence's score is its term coverage (a sentence holds the terms of the headings it sits under,
a list item those of its lead-in, a Chinese sentence the words it says as a Cilin synonym) blended
with embedding cosine, lowered when it lacks the figure, date or share the part asks for, is in the
other language, states a rule for another amount range or is about other years; a Chinese part adds
a little for the characters it shares and the sentence reader's reading. Each ``Pick`` also says
whether the sentence carries what the part asks for (``asked.py``), whether it can answer at all
(``_answer_like``) and how close it is in meaning (``meaning.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rag import rules
from rag.answer.picks import LIST_MARKER_RE, SOURCE_REF_RE, Pick, list_body
from rag.answer.question import QuestionPart, has_date
from rag.answer.sentences import CJK_RE, Segment, partial_row
from rag.answer.support import W_EMBED, W_LEXICAL, EvidenceIndex, IndexedChunk
from rag.readers.sentence_reader import SentenceReader
from rag.retrieval.answerability.terms import carries as holds_kind
from rag.text import lexical
from rag.text.amounts import outside_range
from rag.text.asked import carries
from rag.text.figures import holds_share, other_years
from rag.text.quantities import covers_quantity
from rag.text.script import CJK, script_of
from rag.text.terms import AnswerKind as Kind

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
MIN_WORDS, MIN_CJK_CHARS = 4, 6  # shorter pieces are headings or fragments, not answers


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
    gives the figure or date the part asks for, or names someone where an English part asks
    "who" (a name or role answers "Who has to sign off …?" however the sentence words the verb)."""
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
    gives = (
        (part.wants_figure and not no_figure and not no_share)
        or (part.wants_date and not no_date)
        or (part.wants_person and holds_kind(Kind.PERSON, body))
    )
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
