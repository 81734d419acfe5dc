"""Score one question: stage rankings from its trace, ranking metrics per stage and level,
refusal outcome, citation validity, answer containment and latency.

See :mod:`rag.eval.runs.results` for what the stages and levels mean.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rag.answer.result import Answer
from rag.eval.gold.goldset import GoldItem
from rag.eval.gold.labels import Labels
from rag.eval.metrics import answer_match, contains_answer, ranking_metrics
from rag.eval.runs.answer_quality import answer_counts
from rag.eval.runs.results import LEVELS, QuestionResult
from rag.retrieval.trace import Candidate, FallbackAction, Trace

NOT_ANSWERED = (FallbackAction.REJECT, FallbackAction.CLARIFY)
_LAST = 10**9


def stage_candidates(trace: Trace) -> dict[str, list[Candidate]]:
    """Ranked candidates of every stage (see ``rag.eval.runs.results.STAGES``)."""

    def by(attr: str) -> list[Candidate]:
        ranked = [c for c in trace.candidates if getattr(c, attr) is not None]
        return sorted(ranked, key=lambda c: (getattr(c, attr), c.chunk_id))

    return {
        "dense": by("dense_rank"),
        "bm25": by("sparse_rank"),
        "rrf": by("fused_rank"),
        "rerank": by("rerank_rank"),
        "evidence": evidence_by_strength(trace),
    }


def evidence_by_strength(trace: Trace) -> list[Candidate]:
    """The evidence, strongest first: kept candidates by rerank rank, each followed by the
    neighbours added for it (in document order)."""
    by_id = trace.by_id()

    def key(c: Candidate) -> tuple[int, int, int, int]:
        anchor = by_id.get(c.expanded_from or "", c)
        strength = anchor.rerank_rank if anchor.rerank_rank is not None else _LAST
        return (strength, 0 if anchor is c else 1, c.char_start, c.final_rank or 0)

    return sorted(trace.evidence(), key=key)


def score_question(
    item: GoldItem,
    trace: Trace,
    answer: Answer | None,
    kind: str,
    labels: Labels,
    ks: Sequence[int],
) -> QuestionResult:
    """A ``QuestionResult`` for an anchored gold item, its trace and (when answers ran) the answer."""
    stages = stage_candidates(trace)
    shown = trace.on_screen()
    fb = trace.fallback
    refused = answer.refused if answer is not None else bool(fb and fb.action in NOT_ANSWERED)
    result = QuestionResult(
        id=item.id,
        question=item.question,
        should_refuse=item.should_refuse,
        tags=list(item.tags),
        trace_id=trace.id,
        kind=kind,
        refused=refused,
        fallback=fb.action.value if fb else "",
        fallback_reason=fb.reason if fb else "",
        best_score=fb.best_score if fb else None,
        answerable_p=trace.answerability.probability if trace.answerability else None,
        chunks={stage: [c.chunk_id for c in cands] for stage, cands in stages.items()},
        docs={stage: _doc_order(cands, labels) for stage, cands in stages.items()},
        presented=[c.chunk_id for c in trace.evidence()],
        on_screen=[c.chunk_id for c in shown],
        relevant_chunks=labels.relevant_chunks(item),
        relevant_docs=labels.relevant_docs(item),
        hard_negatives_in_evidence=labels.hard_negatives_in(item, stages["evidence"]),
        latency_ms=dict(trace.timings_ms),
    )
    result.metrics = stage_metrics(result, ks)
    result.gold_on_screen = gold_on_screen(shown, result, labels)
    if answer is not None:
        _add_answer(result, item, answer)
    return result


def stage_metrics(result: QuestionResult, ks: Sequence[int]) -> dict[str, dict[str, dict[str, float | None]]]:
    """Ranking metrics per level and stage; a level without relevant labels is left out."""
    out: dict[str, dict[str, dict[str, float | None]]] = {}
    for level in LEVELS:
        relevant = result.relevant_chunks if level == "chunk" else result.relevant_docs
        rankings = result.chunks if level == "chunk" else result.docs
        if relevant and not result.should_refuse:
            out[level] = {stage: ranking_metrics(ids, relevant, ks) for stage, ids in rankings.items()}
    return out


def _doc_order(cands: Sequence[Candidate], labels: Labels) -> list[str]:
    return list(dict.fromkeys(labels.doc_name(c) for c in cands))


def _add_answer(result: QuestionResult, item: GoldItem, answer: Answer) -> None:
    shown = [] if answer.refused else list(answer.citations)
    result.answer = answer.text
    result.citations_shown = len(shown)
    result.citations_valid = sum(1 for c in shown if c.valid)
    for name, value in vars(answer_counts(item, answer)).items():
        setattr(result, name, value)
    if item.reference_answer:
        answered = not answer.refused
        result.contained = answered and reference_contained(answer.text, item)
        result.token_recall = answer_match(answer.text, item.reference_answer).token_recall if answered else 0.0


def reference_contained(text: str, item: GoldItem) -> bool:
    """The reference answer is in ``text``. With RGB-style ``meta.answers`` (a list whose items
    are all required, a nested list giving alternatives) every item needs one alternative."""
    answers: Any = item.meta.get("answers")
    if isinstance(answers, list) and answers:
        parts = [a if isinstance(a, list) else [a] for a in answers]
        return all(any(contains_answer(text, str(alt)) for alt in part) for part in parts)
    return contains_answer(text, item.reference_answer)


def gold_on_screen(shown: Sequence[Candidate], result: QuestionResult, labels: Labels) -> bool | None:
    """Whether a relevant passage is among those the user sees (chunk labels when the item has
    them, else its documents); None for a question to refuse or without labels. Under a false
    refusal it says whether the answer was still put in front of the user (Chat's closest passages)."""
    if result.should_refuse:
        return None
    if result.relevant_chunks:
        return any(c.chunk_id in result.relevant_chunks for c in shown)
    if result.relevant_docs:
        return any(labels.doc_name(c) in result.relevant_docs for c in shown)
    return None
