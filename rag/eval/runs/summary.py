"""Aggregate per-question results into a run summary (plain JSON types).

* ``retrieval[level][stage][metric]``: the mean over answerable questions where the metric is
  defined (labels at that level), with ``n`` the number of such questions;
* ``refusal``: :class:`~rag.eval.metrics.RefusalStats` counts and rates over questions that
  did not error;
* ``citations``: citations shown in answers, how many validate, and the pooled share;
* ``answers``: over answerable questions with a reference answer: share contained, mean token recall;
* ``answer_quality``: key-fact recall, citation precision and recall against gold spans,
  off-topic share, validation failures (:mod:`rag.eval.runs.answer_quality`);
* ``hard_negatives``: questions with a hard-negative chunk in the evidence;
* ``latency_ms[stage]``: mean / p50 / p95 / max per stage over questions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rag.eval.metrics import latency_summary, mean, refusal_stats
from rag.eval.runs.answer_quality import quality_summary
from rag.eval.runs.results import LEVELS, STAGES, QuestionResult
from rag.stages import TIMED_STAGES, TOTAL

LATENCY_STAGES = (*TIMED_STAGES, TOTAL, "answer", "wall")  # answer: generation; wall: the whole question


def summarize(questions: Sequence[QuestionResult]) -> dict[str, Any]:
    ok = [q for q in questions if not q.error]
    answerable = [q for q in ok if not q.should_refuse]
    return {
        "questions": len(questions),
        "errors": len(questions) - len(ok),
        "answerable": len(answerable),
        "should_refuse": len(ok) - len(answerable),
        "retrieval": retrieval_summary(answerable),
        "refusal": refusal_stats((q.should_refuse, q.refused) for q in ok).as_dict() | false_refusals_shown(answerable),
        "citations": citation_summary(ok),
        "answers": answer_summary(answerable),
        "answer_quality": quality_summary(ok),
        "hard_negatives": {
            "questions_with_hard_negatives_in_evidence": sum(1 for q in ok if q.hard_negatives_in_evidence)
        },
        "latency_ms": latency(ok),
    }


def retrieval_summary(questions: Sequence[QuestionResult]) -> dict[str, dict[str, dict[str, float | None]]]:
    out: dict[str, dict[str, dict[str, float | None]]] = {}
    for level in LEVELS:
        scored = [q for q in questions if level in q.metrics]
        if not scored:
            continue
        out[level] = {}
        for stage in STAGES:
            names = list(dict.fromkeys(name for q in scored for name in q.metrics[level].get(stage, {})))
            figures: dict[str, float | None] = {n: mean(q.metrics[level][stage].get(n) for q in scored) for n in names}
            figures["n"] = len(scored)
            out[level][stage] = figures
    return out


def false_refusals_shown(answerable: Sequence[QuestionResult]) -> dict[str, int]:
    """Of the false refusals with labels, how many still showed a relevant passage (the closest
    passages under the refusal, or the evidence when the answer stage refused)."""
    judged = [q for q in answerable if q.refused and q.gold_on_screen is not None]
    return {
        "false_refusals_labelled": len(judged),
        "false_refusals_gold_on_screen": sum(1 for q in judged if q.gold_on_screen),
    }


def citation_summary(questions: Sequence[QuestionResult]) -> dict[str, Any]:
    shown = sum(q.citations_shown for q in questions)
    valid = sum(q.citations_valid for q in questions)
    answered = [q for q in questions if not q.refused and q.kind == "answer"]
    return {
        "shown": shown,
        "valid": valid,
        "validity": valid / shown if shown else None,
        "answers_with_citations": sum(1 for q in answered if q.citations_shown),
        "answers": len(answered),
    }


def answer_summary(questions: Sequence[QuestionResult]) -> dict[str, Any]:
    with_reference = [q for q in questions if q.contained is not None]
    return {
        "with_reference": len(with_reference),
        "contained": mean(1.0 if q.contained else 0.0 for q in with_reference),
        "token_recall": mean(q.token_recall for q in with_reference),
    }


def latency(questions: Sequence[QuestionResult]) -> dict[str, dict[str, float | None]]:
    stages = [s for s in LATENCY_STAGES if any(s in q.latency_ms for q in questions)]
    return {s: latency_summary(q.latency_ms[s] for q in questions if s in q.latency_ms) for s in stages}
