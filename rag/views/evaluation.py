"""Tables the Evaluation page shows, built from ``EvalRun`` / ``RunComparison`` (pure pandas).

``metrics_long`` feeds the per-stage chart, ``stage_table`` the per-stage figures,
``question_frame`` the per-question results, ``delta_frame`` / ``question_delta_frame`` the
side-by-side comparison of two runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from rag.demo import DEMO_DIR
from rag.eval.runs.results import STAGES, EvalRun
from rag.eval.runs.tables import TABLE_METRICS

CHART_METRICS = ("recall@5", "mrr@10", "ndcg@10")
QUALITY_HEADLINE = {  # shown first: answer figures that can fail (rag.eval.runs.answer_quality)
    "key-fact recall": "key_fact_recall",
    "citation precision": "citation_precision",
    "citation recall": "citation_recall",
    "off-topic sentences": "off_topic_share",
    "drafts rejected (first)": "rejection_rate_first",
    "drafts rejected (all)": "rejection_rate_final",
}
OVERRIDABLE = ("recall_k", "top_n", "rrf_k", "answerable_threshold", "reranker", "fallback", "rewrite")


def levels(run: EvalRun) -> list[str]:
    """Levels with figures in this run, chunk first."""
    return [lv for lv in ("chunk", "doc") if lv in run.summary.get("retrieval", {})]


def run_label(run: EvalRun) -> str:
    changed = ", ".join(f"{k}={run.settings[k]}" for k in OVERRIDABLE if k in run.settings)
    return f"{run.id} · {run.goldset} · {run.created_at[:16].replace('T', ' ')} · {changed}"


def metrics_long(runs: Sequence[EvalRun], level: str, metrics: Sequence[str] = CHART_METRICS) -> pd.DataFrame:
    """(run, stage, metric, value) for every run, stage and metric that has a value."""
    rows = []
    for run in runs:
        figures = run.summary.get("retrieval", {}).get(level, {})
        for stage in STAGES:
            for metric in metrics:
                value = figures.get(stage, {}).get(metric)
                if value is not None:
                    rows.append({"run": run.id, "stage": stage, "metric": metric, "value": float(value)})
    return pd.DataFrame(rows, columns=["run", "stage", "metric", "value"])


def stage_table(run: EvalRun, level: str, metrics: Sequence[str] = TABLE_METRICS) -> pd.DataFrame:
    figures = run.summary.get("retrieval", {}).get(level, {})
    rows = [{"stage": s, **{m: figures[s].get(m) for m in metrics}} for s in STAGES if s in figures]
    return pd.DataFrame(rows, columns=["stage", *metrics])


def headline(run: EvalRun) -> dict[str, Any]:
    """The few numbers shown as metrics at the top of a run."""
    s = run.summary
    quality = s.get("answer_quality", {})
    out: dict[str, Any] = {name: quality.get(key) for name, key in QUALITY_HEADLINE.items()}
    out.update(run.headline())
    out["questions"] = s.get("questions")
    out["errors"] = s.get("errors")
    return out


def question_frame(run: EvalRun, level: str, metric: str = "ndcg@10") -> pd.DataFrame:
    """One row per question: outcome, refusal correctness, the chosen metric for each stage, latency."""
    rows = []
    for q in run.questions:
        row = {
            "id": q.id,
            "question": q.question,
            "kind": q.kind,
            "should_refuse": q.should_refuse,
            "refusal_ok": q.refusal_correct if not q.error else None,
            "gold on screen": q.gold_on_screen if q.refused and not q.should_refuse else None,  # a false refusal
            "fallback": q.fallback,
            "best_score": q.best_score,
            **{f"{metric} {s}": q.metric(metric, s, level) for s in STAGES},
            "citations": f"{q.citations_valid}/{q.citations_shown}" if q.citations_shown else "",
            "key facts": f"{q.key_facts_found}/{q.key_facts}" if q.key_facts else "",
            "citations on gold": _of(q.citations_on_gold, q.citations_shown),
            "off-topic sentences": _of(q.sentences_off_topic, q.sentences_shown),
            "ms": q.latency_ms.get("wall"),
            "error": q.error,
            "trace_id": q.trace_id,
        }
        rows.append(row)
    return pd.DataFrame(rows)


def _of(part: int | None, whole: int) -> str:
    return "" if part is None or not whole else f"{part}/{whole}"


def delta_frame(cmp) -> pd.DataFrame:
    """Every (level, stage, metric) of either run with a, b and b - a."""
    rows = [
        {"level": d.level, "stage": d.stage, "metric": d.metric, "a": d.a, "b": d.b, "delta": d.delta}
        for d in cmp.deltas
        if d.metric != "n"
    ]
    return pd.DataFrame(rows, columns=["level", "stage", "metric", "a", "b", "delta"])


def question_delta_frame(cmp, run_b: EvalRun) -> pd.DataFrame:
    """Per question: the metric in both runs, win/loss, refusal changes, evidence that moved."""
    traces = {q.id: q.trace_id for q in run_b.questions}
    rows = [
        {
            "id": q.id,
            "question": q.question,
            "outcome": q.outcome,
            "a": q.a,
            "b": q.b,
            "delta": q.delta,
            "refused a→b": f"{q.refused_a}→{q.refused_b}" if q.refusal_changed else "",
            "entered": len(q.entered),
            "left": len(q.left),
            "relevant entered": len(q.entered_relevant),
            "relevant left": len(q.left_relevant),
            "trace_id": traces.get(q.id, ""),
        }
        for q in cmp.questions
    ]
    order = {"loss": 0, "win": 1, "tie": 2, "n/a": 3}
    df = pd.DataFrame(rows)
    if df.empty:
        return df
    return df.sort_values("outcome", key=lambda s: s.map(order), kind="stable").reset_index(drop=True)


TRADEOFF_THRESHOLDS = tuple(round(0.05 * i, 2) for i in range(1, 20))


def refusal_tradeoff(run: EvalRun, thresholds: Sequence[float] = TRADEOFF_THRESHOLDS) -> pd.DataFrame:
    """Share refused of the questions that should be refused and of those that should be answered,
    had the answerability threshold been each of ``thresholds`` (from each question's recorded
    P(answerable); a wider retry the change would have caused is not replayed). Empty when the run
    has no ``should_refuse`` question or no recorded probabilities."""
    scored = [q for q in run.questions if q.answerable_p is not None and not q.error]
    neg = [q.answerable_p for q in scored if q.should_refuse]
    pos = [q.answerable_p for q in scored if not q.should_refuse]
    if not neg or not pos:
        return pd.DataFrame(columns=["threshold", "unanswerable refused", "answerable refused"])
    return pd.DataFrame(
        {
            "threshold": list(thresholds),
            "unanswerable refused": [sum(p < t for p in neg) / len(neg) for t in thresholds],
            "answerable refused": [sum(p < t for p in pos) / len(pos) for t in thresholds],
        }
    )


def operating_point(run: EvalRun) -> tuple[float, float, float] | None:
    """(threshold, unanswerable refused, answerable refused) as the run actually decided."""
    scored = [q for q in run.questions if not q.error]
    neg = [q for q in scored if q.should_refuse]
    pos = [q for q in scored if not q.should_refuse]
    if not neg or not pos:
        return None
    t = float(run.settings.get("answerable_threshold", 0.5))
    return t, sum(q.refused for q in neg) / len(neg), sum(q.refused for q in pos) / len(pos)


def goldset_label(path: Path) -> str:
    """How the gold-set picker names a file: the shipped demo sets say so."""
    return f"{path.name} (shipped demo set)" if path.parent == DEMO_DIR else path.name
