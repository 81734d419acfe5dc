"""The refusal trade-off curve and operating point on a hand-built run with known values."""

from __future__ import annotations

import pytest

from rag.eval.runs.results import EvalRun, QuestionResult
from rag.views.charts import tradeoff_figure
from rag.views.evaluation import operating_point, refusal_tradeoff


def _run(rows) -> EvalRun:
    qs = [
        QuestionResult(id=str(i), question=f"q{i}", should_refuse=sr, refused=ref, answerable_p=p)
        for i, (sr, ref, p) in enumerate(rows)
    ]
    return EvalRun("r1", "kb", "gold", "h", {"answerable_threshold": 0.5}, "fp", 1, "2026-12-01", questions=qs)


def test_curve_counts_refusals_at_each_threshold():
    run = _run(
        [
            (True, True, 0.1),
            (True, True, 0.3),
            (True, False, 0.7),  # answered though it should be refused
            (False, False, 0.6),
            (False, False, 0.9),
            (False, True, 0.45),  # refused though answerable
        ]
    )
    curve = refusal_tradeoff(run, thresholds=(0.2, 0.5, 0.8))
    assert list(curve["unanswerable refused"]) == pytest.approx([1 / 3, 2 / 3, 1.0])
    assert list(curve["answerable refused"]) == pytest.approx([0.0, 1 / 3, 2 / 3])
    assert operating_point(run) == pytest.approx((0.5, 2 / 3, 1 / 3))
    fig = tradeoff_figure(curve, operating_point(run))
    assert len(fig.data) == 2 and list(fig.data[1].x) == pytest.approx([1 / 3])


def test_no_curve_without_questions_to_refuse_or_probabilities():
    assert refusal_tradeoff(_run([(False, False, 0.9), (False, True, 0.2)])).empty
    assert operating_point(_run([(False, False, 0.9)])) is None
    assert refusal_tradeoff(_run([(True, True, None), (False, False, None)])).empty
