"""Export a run: ``to_json`` (the whole run, as stored) and ``to_csv`` (one row per question).

CSV columns: the question's id and text, tags (``;``-separated), the refusal outcome, fallback,
citation and answer figures, the evidence chunk ids (space-separated), the trace id, then one
column per ranking metric named ``<level>.<stage>.<metric>`` (e.g. ``doc.rerank.ndcg@10``) and
one per latency stage named ``latency_ms.<stage>``. Undefined values are empty cells.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from rag.eval.runs.results import LEVELS, STAGES, EvalRun, QuestionResult

BASE_COLUMNS = (
    "id",
    "question",
    "tags",
    "should_refuse",
    "kind",
    "refused",
    "refusal_correct",
    "fallback",
    "best_score",
    "citations_shown",
    "citations_valid",
    "contained",
    "token_recall",
    "relevant_chunks",
    "relevant_docs",
    "evidence",
    "hard_negatives_in_evidence",
    "error",
    "trace_id",
)


def to_json(run: EvalRun, indent: int | None = None) -> str:
    return json.dumps(run.to_dict(), ensure_ascii=False, indent=indent)


def to_csv(run: EvalRun) -> str:
    metric_cols = metric_columns(run)
    latency_cols = list(dict.fromkeys(s for q in run.questions for s in q.latency_ms))
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([*BASE_COLUMNS, *(".".join(c) for c in metric_cols), *(f"latency_ms.{s}" for s in latency_cols)])
    for q in run.questions:
        metrics = [q.metrics.get(level, {}).get(stage, {}).get(name) for level, stage, name in metric_cols]
        latencies = [q.latency_ms.get(s) for s in latency_cols]
        writer.writerow([_cell(v) for v in (*_base(q), *metrics, *latencies)])
    return buf.getvalue()


def metric_columns(run: EvalRun) -> list[tuple[str, str, str]]:
    """(level, stage, metric) for every metric any question has, in level and stage order."""
    names = list(
        dict.fromkeys(
            name for q in run.questions for stages in q.metrics.values() for m in stages.values() for name in m
        )
    )
    present = {(level, stage) for q in run.questions for level, stages in q.metrics.items() for stage in stages}
    return [(lv, st, n) for lv in LEVELS for st in STAGES if (lv, st) in present for n in names]


def _base(q: QuestionResult) -> tuple[Any, ...]:
    return (
        q.id,
        q.question,
        ";".join(q.tags),
        q.should_refuse,
        q.kind,
        q.refused,
        q.refusal_correct if not q.error else None,
        q.fallback,
        q.best_score,
        q.citations_shown,
        q.citations_valid,
        q.contained,
        q.token_recall,
        len(q.relevant_chunks),
        len(q.relevant_docs),
        " ".join(q.chunks.get("evidence", [])),
        len(q.hard_negatives_in_evidence),
        q.error,
        q.trace_id,
    )


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, float):
        return round(value, 6)
    return value
