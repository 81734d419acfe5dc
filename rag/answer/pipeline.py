"""Draft -> validate -> correct -> refuse, streamed. Nothing unverified is ever shown as the answer.

``stream_answer`` yields the evidence first, then (per attempt) draft deltas marked as
drafts and each sentence as soon as it has passed validation. The first failed sentence
dooms the attempt: no further sentences of it are emitted, a REJECTED event tells the UI
to discard what it showed, and the generator retries with a correction naming the bad
citations (at most ``MAX_CORRECTIONS`` times). Then the fixed refusal text is returned.
"""

from __future__ import annotations

import time
from collections.abc import Generator as Gen
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from llama_index.core.llms import LLM

from rag.answer.base import DraftRequest, Generator, make_generator
from rag.answer.citations import CitationValidator, SentenceCheck
from rag.answer.meaning import MeaningSource, SentenceMeaning
from rag.answer.result import (
    Answer,
    AnswerEvent,
    DraftRejection,
    EventKind,
    Issue,
    IssueCode,
    Outcome,
    SentenceKind,
)
from rag.answer.sentences import SentenceStream
from rag.answer.spans import citations_for
from rag.answer.support import Embed, EvidenceIndex
from rag.config import Settings
from rag.limits import check_query
from rag.records import EvidencePassage, ModelLabel
from rag.retrieval.fallback import refusal_text  # the one refusal text (weak evidence or failed validation)
from rag.text.question import QuestionAnalysis
from rag.text.script import CJK

MAX_CORRECTIONS = 2  # retries after the first draft
STOP_AFTER_FAILED = 2  # failed sentences after which a draft is abandoned mid-stream


@dataclass
class _Attempt:
    draft: str = ""
    checks: list[SentenceCheck] = field(default_factory=list)

    @property
    def issues(self) -> list[Issue]:
        return [i for c in self.checks for i in c.issues]

    @property
    def has_claim(self) -> bool:
        return any(c.sentence.kind is SentenceKind.CLAIM for c in self.checks)


@dataclass
class _Clock:
    start: float = field(default_factory=time.perf_counter)
    ms: dict[str, float] = field(default_factory=dict)

    def add(self, key: str, since: float) -> None:
        self.ms[key] = round(self.ms.get(key, 0.0) + (time.perf_counter() - since) * 1000, 2)

    def mark(self, key: str) -> None:
        self.ms.setdefault(key, round((time.perf_counter() - self.start) * 1000, 2))


def answer_question(
    question: str,
    evidence: Sequence[EvidencePassage],
    settings: Settings,
    embed: Embed | None,
    llm: LLM | None = None,
    generator: Generator | None = None,
    analysis: QuestionAnalysis | None = None,
    meaning: MeaningSource | None = None,
) -> Answer:
    """The validated answer (or the refusal) for ``question`` from numbered ``evidence``."""
    final = None
    for event in stream_answer(question, evidence, settings, embed, llm, generator, analysis, meaning):
        if event.kind is EventKind.FINAL:
            final = event.answer
    if final is None:
        raise RuntimeError("stream_answer ended without a FINAL event")
    return final


def stream_answer(
    question: str,
    evidence: Sequence[EvidencePassage],
    settings: Settings,
    embed: Embed | None,
    llm: LLM | None = None,
    generator: Generator | None = None,
    analysis: QuestionAnalysis | None = None,
    meaning: MeaningSource | None = None,
) -> Iterator[AnswerEvent]:
    """Events: EVIDENCE, then per attempt DRAFT / SENTENCE (verified) / REJECTED, then FINAL.

    ``analysis`` is the ask's one reading of ``question`` (``rag.text.question.analyse``), as
    retrieval read it; None reads it here. ``meaning``: where the multilingual model's sentence
    vectors come from, for choosing a Chinese part's sentence by meaning too (``meaning.py``);
    the answer's generator label then names the model, or says it was missing."""
    check_query(question, settings)
    clock, evidence = _Clock(), list(evidence)
    yield AnswerEvent(EventKind.EVIDENCE, evidence=evidence)
    gen = generator or make_generator(settings, embed, llm)
    answer = Answer(
        question=question,
        text=refusal_text(question),
        generator=gen.label_for(question),
        support_threshold=settings.support_threshold,
    )
    answer.evidence_ids = [c.chunk_id for c in evidence]
    if not evidence:
        msg = "No evidence was retrieved for this question."
        yield _final(_refuse(answer, msg, [Issue(IssueCode.NO_EVIDENCE, msg)]), clock)
        return
    since = time.perf_counter()
    index = EvidenceIndex([c.text for c in evidence], embed, [" ".join(c.heading_path) for c in evidence])
    index.meaning = SentenceMeaning(meaning, evidence) if meaning is not None else None
    clock.add("index_ms", since)
    answer.warnings = _injection_warnings(index)
    validator = CitationValidator(index, settings.support_threshold)
    request = DraftRequest(question, evidence, index, analysis=analysis)
    yield from _attempts(gen, request, validator, answer, clock, settings, embed)
    answer.generator = _with_meaning(answer.generator, index.meaning)
    yield _final(answer, clock)


def _with_meaning(label: ModelLabel, meaning: SentenceMeaning | None) -> ModelLabel:
    """The generator's label naming the model that read the sentences' meaning, or why none did."""
    if meaning is None or not (meaning.used or meaning.missing):
        return label
    if meaning.missing:
        note = f"multilingual model missing ({meaning.missing}): sentences chosen without their meaning"
        return ModelLabel(label.backend, label.model, True, "; ".join(n for n in (label.note, note) if n))
    return ModelLabel(label.backend, f"{label.model} + {meaning.label} (meaning)", label.stand_in, label.note)


def _attempts(
    gen: Generator,
    request: DraftRequest,
    validator: CitationValidator,
    answer: Answer,
    clock: _Clock,
    settings: Settings,
    embed: Embed | None,
) -> Iterator[AnswerEvent]:
    """Fills ``answer`` with the first draft that passes, or with the refusal."""
    attempt = _Attempt()
    for number in range(1, MAX_CORRECTIONS + 2):
        request.attempt = answer.attempts = number
        attempt = yield from _run_attempt(gen, request, validator, clock)
        if not attempt.issues and attempt.has_claim:
            _accept(answer, attempt, request.evidence)
            return
        if not attempt.issues:  # only gap statements: the generator found no answer
            msg = declined(request)
            _refuse(answer, msg, [Issue(IssueCode.NO_ANSWER, msg, attempt.draft)])
            return
        answer.drafts_rejected.append(DraftRejection(number, attempt.draft, attempt.issues))
        request.previous.append((attempt.draft, attempt.issues))
        yield AnswerEvent(EventKind.REJECTED, attempt=number, issues=attempt.issues)
    reason = f"No draft passed citation checks after {answer.attempts} attempts: {_summary(attempt.issues)}."
    if gen.name != "extractive":
        fallback = _extractive(settings, embed)
        accepted = yield from _extractive_fallback(fallback, request, validator, answer, clock, reason)
        if accepted:
            return
    _refuse(answer, reason, attempt.issues)


def declined(request: DraftRequest) -> str:
    """Why the generator found no answer: what it said (the extractive answerer names, for each
    part, the closest sentence and what it lacks), in the question's language."""
    cjk = request.reading.script == CJK
    if not request.declined:
        return "证据没有回答这个问题。" if cjk else "The evidence does not answer this question."
    if cjk:
        return "；".join(request.declined) + "。"
    said = "; ".join(request.declined).rstrip(".")
    return said[:1].upper() + said[1:] + "."


def _extractive(settings: Settings, embed: Embed | None) -> Generator:
    """The extractive generator as ``settings`` would build it (it knows which languages the
    embedder reads)."""
    from rag.answer.extractive import ExtractiveGenerator

    return ExtractiveGenerator.build(settings, embed, None)


def _extractive_fallback(
    extractive: Generator,
    request: DraftRequest,
    validator: CitationValidator,
    answer: Answer,
    clock: _Clock,
    reason: str,
) -> Gen[AnswerEvent, None, bool]:
    """Every draft failed, but retrieval judged the evidence strong enough to answer: show the
    extractive answer (evidence sentences verbatim, validated like any draft), labelled as such,
    instead of refusing. Fail closed on unverified text, not on the user. False when the
    extractive answer does not pass either (then the refusal stands)."""
    retry = DraftRequest(
        request.question, request.evidence, request.index, attempt=answer.attempts + 1, analysis=request.analysis
    )
    attempt = yield from _run_attempt(extractive, retry, validator, clock)
    if attempt.issues or not attempt.has_claim:
        yield AnswerEvent(EventKind.REJECTED, attempt=retry.attempt, issues=attempt.issues)
        return False
    _accept(answer, attempt, request.evidence)
    drafted = f"{answer.generator.backend}:{answer.generator.model}"
    answer.generator = ModelLabel(
        backend="extractive",
        model=f"evidence-sentences (fallback: no {drafted} draft passed)",
        note=f"fallback: no {drafted} draft passed citation checks",
    )
    msg = f"{reason} Shown instead: the evidence sentences themselves (extractive answer), each checked like a draft."
    answer.warnings = [*answer.warnings, Issue(IssueCode.EXTRACTIVE_FALLBACK, msg)]
    return True


def _run_attempt(
    gen: Generator, request: DraftRequest, validator: CitationValidator, clock: _Clock
) -> Gen[AnswerEvent, None, _Attempt]:
    """Streams one draft; yields each sentence once it passed. Stops drafting after
    ``STOP_AFTER_FAILED`` failed sentences: the draft is rejected anyway, and the correction
    names what failed so far."""
    attempt, stream = _Attempt(), SentenceStream()
    deltas = gen.draft(request)
    since = time.perf_counter()
    for delta in deltas:
        clock.add("draft_ms", since)
        yield AnswerEvent(EventKind.DRAFT, attempt=request.attempt, text=delta)
        yield from _check_segments(stream.feed(delta), attempt, validator, request.attempt, clock)
        if sum(not c.ok for c in attempt.checks) >= STOP_AFTER_FAILED:
            close = getattr(deltas, "close", None)
            if close is not None:
                close()
            break
        since = time.perf_counter()
    else:
        clock.add("draft_ms", since)
        yield from _check_segments(stream.close(), attempt, validator, request.attempt, clock)
    attempt.draft = stream.text.strip()
    return attempt


def _check_segments(
    segments: list, attempt: _Attempt, validator: CitationValidator, number: int, clock: _Clock
) -> Iterator[AnswerEvent]:
    for seg in segments:
        since = time.perf_counter()
        check = validator.check(seg.text)
        clock.add("validate_ms", since)
        doomed = bool(attempt.issues)
        attempt.checks.append(check)
        if check.ok and not doomed:
            clock.mark("first_sentence_ms")
            yield AnswerEvent(EventKind.SENTENCE, attempt=number, sentence=check.sentence)


def _accept(answer: Answer, attempt: _Attempt, evidence: Sequence[EvidencePassage]) -> None:
    answer.text = attempt.draft
    answer.sentences = [c.sentence for c in attempt.checks]
    answer.citations = citations_for(attempt.checks, evidence)


def _refuse(answer: Answer, reason: str, issues: list[Issue]) -> Answer:
    answer.text, answer.outcome, answer.refusal_reason = refusal_text(answer.question), Outcome.REFUSAL, reason
    answer.sentences, answer.citations = [], []
    answer.warnings = [*answer.warnings, *issues]
    return answer


def _final(answer: Answer, clock: _Clock) -> AnswerEvent:
    clock.ms["total_ms"] = round((time.perf_counter() - clock.start) * 1000, 2)
    answer.timings_ms = dict(clock.ms)
    return AnswerEvent(EventKind.FINAL, attempt=answer.attempts, text=answer.text, answer=answer)


def _injection_warnings(index: EvidenceIndex) -> list[Issue]:
    msg = "Evidence [{n}] contains text that reads like instructions to an AI; it was treated as data and never used as support."
    return [Issue(IssueCode.INJECTION, msg.format(n=n), n=n) for n in index.flagged()]


def _summary(issues: list[Issue]) -> str:
    counts: dict[str, int] = {}
    for issue in issues:
        counts[issue.code.value] = counts.get(issue.code.value, 0) + 1
    return ", ".join(f"{k.replace('_', ' ')} x{v}" for k, v in counts.items()) or "no checkable claim"
