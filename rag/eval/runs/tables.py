"""Runs as text: the per-stage metric table, refusal, citation and latency lines (CLI and report)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rag.eval.runs.compare import RunComparison
from rag.eval.runs.results import STAGES, EvalRun
from rag.eval.runs.summary import LATENCY_STAGES
from rag.stages import Stage

TABLE_METRICS = ("recall@1", "recall@5", "recall@10", "precision@5", "hit@5", "mrr@10", "ndcg@10")
LATENCY_SHOWN = tuple(s for s in LATENCY_STAGES if s != Stage.FALLBACK)


def fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def stage_rows(run: EvalRun, level: str, metrics: Sequence[str] = TABLE_METRICS) -> list[list[str]]:
    """One row per stage: the stage, then each metric's mean (— where undefined)."""
    figures = run.summary.get("retrieval", {}).get(level, {})
    return [[stage, *(fmt(figures.get(stage, {}).get(m)) for m in metrics)] for stage in STAGES if stage in figures]


def text_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(str(c).rjust(w) if i else str(c).ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
        for r in [header, *rows]
    ]
    return "\n".join(lines)


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    out = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|",
    ]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def level_title(run: EvalRun, level: str) -> str:
    n = run.summary.get("retrieval", {}).get(level, {}).get("dense", {}).get("n", 0)
    what = "chunks against span-anchored labels" if level == "chunk" else "documents by first chunk"
    return f"{level} level ({what}; {n} questions)"


def refusal_line(run: EvalRun) -> str:
    r = run.summary.get("refusal", {})
    source = "answers" if run.answers else "fallback decision (answers off)"
    return (
        f"refusal ({source}): accuracy {fmt(r.get('accuracy'))} · correct refusals "
        f"{r.get('correct_refusals', 0)}/{r.get('should_refuse', 0)} · false refusals "
        f"{r.get('false_refusals', 0)}/{r.get('total', 0) - r.get('should_refuse', 0)} · answered when it "
        f"should refuse {r.get('answered_when_should_refuse', 0)}"
        + (
            f" · false refusals that still showed a relevant passage {r['false_refusals_gold_on_screen']}/"
            f"{r['false_refusals_labelled']}"
            if r.get("false_refusals_labelled")
            else ""
        )
    )


def answer_line(run: EvalRun) -> str:
    if not run.answers:
        return "citations and answers: not run (--no-answers)"
    c, a = run.summary.get("citations", {}), run.summary.get("answers", {})
    return "\n".join(
        [
            *quality_lines(run),
            f"answers with a reference: {a.get('with_reference', 0)}, contained {fmt(a.get('contained'))}, "
            f"token recall {fmt(a.get('token_recall'))}",
            f"shown citations that passed validation: {c.get('valid', 0)}/{c.get('shown', 0)} "
            f"({fmt(c.get('validity'))}; only validated answers are shown, so this is 1.000 by construction)",
        ]
    )


def quality_lines(run: EvalRun) -> list[str]:
    """The answer metrics that can fail (rag.eval.runs.answer_quality), one figure per line."""
    q = run.summary.get("answer_quality")
    if not q:
        return []
    return [
        f"key-fact recall {fmt(q.get('key_fact_recall'))} ({q.get('key_fact_questions', 0)} questions with key facts)",
        f"citation precision {fmt(q.get('citation_precision'))} ({q.get('citations', 0)} shown citations "
        f"against gold spans) · citation recall {fmt(q.get('citation_recall'))} (grade-2 spans cited, "
        f"{q.get('gold_span_questions', 0)} questions)",
        f"off-topic sentences {fmt(q.get('off_topic_share'))} ({q.get('sentences', 0)} shown sentences)",
        f"validation failures: first draft rejected {fmt(q.get('rejection_rate_first'))}, every draft rejected "
        f"{fmt(q.get('rejection_rate_final'))} ({q.get('drafted', 0)} questions drafted); drafts rejected "
        f"{fmt(q.get('draft_rejection_share'))} ({q.get('drafts_rejected', 0)} of {q.get('drafts', 0)})"
        + _reasons(q.get("rejection_reasons") or {}),
    ]


def _reasons(reasons: dict[str, int]) -> str:
    """The failed checks of the rejected drafts by issue code, most frequent first."""
    if not reasons:
        return ""
    return "; failed checks: " + ", ".join(f"{code.replace('_', ' ')} {n}" for code, n in reasons.items())


def latency_rows(run: EvalRun) -> list[list[str]]:
    lat = run.summary.get("latency_ms", {})
    return [[s, fmt(lat[s].get("p50"), 1), fmt(lat[s].get("p95"), 1)] for s in LATENCY_SHOWN if s in lat]


def run_text(run: EvalRun) -> str:
    """The whole run as the CLI prints it."""
    s = run.summary
    parts = [
        f"run {run.id} · gold set '{run.goldset}' on kb '{run.kb}' (index revision {run.index_revision}) · "
        f"config {run.config_fingerprint}",
        f"{s.get('questions', 0)} questions: {s.get('answerable', 0)} answerable, {s.get('should_refuse', 0)} "
        f"should be refused, {s.get('errors', 0)} errors · reranker {run.reranker} · {run.duration_s:.1f} s",
    ]
    for level in ("chunk", "doc"):
        rows = stage_rows(run, level)
        if rows:
            parts += ["", level_title(run, level), text_table(["stage", *TABLE_METRICS], rows)]
    parts += [
        "",
        refusal_line(run),
        answer_line(run),
        "",
        "latency (ms)",
        text_table(["stage", "p50", "p95"], latency_rows(run)),
    ]
    errors = [q for q in run.questions if q.error]
    parts += [f"error in '{q.id}': {q.error}" for q in errors[:5]]
    return "\n".join(parts)


def comparison_text(cmp: RunComparison, limit: int = 15) -> str:
    """Metric deltas of the summary table, wins and losses, and evidence moves, as text."""
    head = f"compare {cmp.a} (a) -> {cmp.b} (b): {cmp.metric} at stage '{cmp.stage}', {cmp.level} level"
    notes = [] if cmp.same_goldset else ["note: the gold sets differ; questions matched by id"]
    notes += ["note: the index changed between the runs"] if cmp.index_changed else []
    if cmp.answers[0] != cmp.answers[1]:
        notes.append(
            "note: only one run generated answers; refusals come from the answer in one, the fallback in the other"
        )
    notes += [f"setting {k}: {a!r} -> {b!r}" for k, (a, b) in cmp.settings_changed.items()]
    rows = delta_rows(cmp, cmp.level)
    tally = f"per question: {len(cmp.wins)} wins, {len(cmp.losses)} losses, {len(cmp.ties)} ties (b against a)"
    moved = [q for q in cmp.questions if q.outcome in ("win", "loss") or q.refusal_changed][:limit]
    lines = [
        f"  {q.outcome:4} {q.id}: {fmt(q.a)} -> {fmt(q.b)}; evidence +{len(q.entered)} "
        f"({len(q.entered_relevant)} relevant) -{len(q.left)} ({len(q.left_relevant)} relevant)"
        + (f"; refused {q.refused_a} -> {q.refused_b}" if q.refusal_changed else "")
        for q in moved
    ]
    ref = [
        f"refusal {k}: {fmt(a)} -> {fmt(b)}"
        for k, (a, b) in cmp.refusal.items()
        if k in ("accuracy", "false_refusals", "correct_refusals")
    ]
    return "\n".join(
        [
            head,
            *notes,
            "",
            f"{cmp.level} level: b (b - a)",
            text_table(["stage", *TABLE_METRICS], rows),
            "",
            tally,
            *lines,
            "",
            *ref,
        ]
    )


def delta_rows(cmp: RunComparison, level: str, metrics: Sequence[str] = TABLE_METRICS) -> list[list[str]]:
    """One row per stage: each metric as ``b (+delta)``."""
    cells = {(d.stage, d.metric): d for d in cmp.deltas if d.level == level}
    rows = []
    for stage in STAGES:
        if any((stage, m) in cells for m in metrics):
            rows.append([stage, *(_delta_cell(cells.get((stage, m))) for m in metrics)])
    return rows


def _delta_cell(d: Any) -> str:
    if d is None or d.b is None:
        return "—"
    return fmt(d.b) if d.delta is None else f"{d.b:.3f} ({d.delta:+.3f})"
