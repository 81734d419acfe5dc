"""Plotly figures for the Inspector and Evaluation pages, built from ``rag.views.ledger`` frames.

Pure functions returning ``go.Figure``; the pages only pass them to ``st.plotly_chart``.
Text from documents reaches figures only as hover text and labels, which Plotly renders as
text (its own pseudo-HTML is limited to a few formatting tags), and we escape it anyway.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from rag.views.decision import ChartLine, OperatingPoint
from rag.views.highlight import escape
from rag.views.ledger import STAGES

STATUS_COLORS = {"evidence": "#1f9d55", "neighbour": "#6cb2eb", "dropped": "#b8c2cc"}
_X = {stage: i for i, stage in enumerate(STAGES)}
_LAYOUT = dict(margin=dict(l=10, r=10, t=40, b=10), height=380, template="plotly_white")


def _path(ranks: dict[str, int]) -> tuple[list, list]:
    """x/y of one candidate: dense -> RRF and BM25 -> RRF, then RRF -> rerank -> final."""
    xs: list = []
    ys: list = []
    rrf = ranks.get("RRF")
    for source in ("dense", "BM25"):
        if source in ranks and rrf is not None:
            xs += [_X[source], _X["RRF"], None]
            ys += [ranks[source], rrf, None]
    tail = [s for s in ("RRF", "rerank", "final") if s in ranks]
    xs += [_X[s] for s in tail]
    ys += [ranks[s] for s in tail]
    return xs, ys


def rank_flow_figure(flow: pd.DataFrame) -> go.Figure:
    """One line per candidate from its dense and BM25 ranks to its RRF, rerank and final ranks."""
    fig = go.Figure()
    shown: set[str] = set()
    for candidate, rows in flow.groupby("candidate", sort=False):
        ranks = dict(zip(rows["stage"], rows["rank"], strict=True))
        status = rows["status"].iloc[0]
        xs, ys = _path(ranks)
        hover = escape(str(candidate)) + "<br>" + " · ".join(f"{s} {r}" for s, r in ranks.items())
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=ys,
                mode="lines+markers",
                name=status,
                legendgroup=status,
                showlegend=status not in shown,
                line=dict(color=STATUS_COLORS.get(status, "#888"), width=2.5 if status == "evidence" else 1.2),
                hovertext=hover,
                hoverinfo="text",
            )
        )
        shown.add(status)
    fig.update_yaxes(autorange="reversed", title="rank (1 = best)", rangemode="tozero")
    fig.update_xaxes(tickvals=list(_X.values()), ticktext=list(_X.keys()), range=[-0.2, len(STAGES) - 0.8])
    fig.update_layout(title="Rank flow: dense / BM25 → RRF → rerank → final", **_LAYOUT)
    return fig


def score_figure(scores: pd.DataFrame, line: ChartLine | None, best: float | None, title: str = "") -> go.Figure:
    """Rerank scores as a strip per status; ``line``: the rerank threshold, drawn only when it is
    what decided (``rag.views.decision.Explanation.rerank_line``)."""
    fig = go.Figure()
    for status, rows in scores.groupby("status", sort=False):
        fig.add_trace(
            go.Box(
                x=rows["rerank_score"],
                name=status,
                boxpoints="all",
                jitter=0.5,
                pointpos=0,
                fillcolor="rgba(0,0,0,0)",
                line=dict(color="rgba(0,0,0,0)"),
                marker=dict(color=STATUS_COLORS.get(status, "#888"), size=8),
                hovertext=[escape(str(c)) for c in rows["candidate"]],
                hoverinfo="text+x",
            )
        )
    if line is not None:
        fig.add_vline(
            x=line.value,
            line=dict(color="#e3342f", dash="dash"),
            annotation_text=escape(line.label),
            annotation_position="top",
        )
    if best is not None:
        fig.add_vline(x=best, line=dict(color="#1f9d55", dash="dot"), annotation_text=f"best {best:.2f}")
    fig.update_layout(
        title=escape(title or "Rerank score distribution"), showlegend=False, **{**_LAYOUT, "height": 300}
    )
    fig.update_xaxes(title="rerank score")
    return fig


def decision_figure(point: OperatingPoint) -> go.Figure:
    """P(answerable) against the threshold it was compared with, on [0, 1]: the operating point
    that decided (``rag.views.decision.Explanation.operating_point``)."""
    passed = point.probability >= point.threshold
    fig = go.Figure(
        go.Scatter(
            x=[point.probability],
            y=[0],
            mode="markers",
            marker=dict(color="#1f9d55" if passed else "#e3342f", size=16, symbol="diamond"),
            hoverinfo="text",
            hovertext=escape(point.label),
        )
    )
    fig.add_vline(
        x=point.threshold,
        line=dict(color="#e3342f", dash="dash"),
        annotation_text=f"{point.threshold:.2f}",
        annotation_position="top",
    )
    fig.update_layout(title=escape(point.label), showlegend=False, **{**_LAYOUT, "height": 180})
    fig.update_xaxes(title="P(answerable)", range=[-0.02, 1.02])
    fig.update_yaxes(visible=False, range=[-1, 1])
    return fig


def timings_figure(timings: pd.DataFrame) -> go.Figure:
    """Horizontal bars of per-stage milliseconds (the total drawn apart)."""
    parts = timings[timings["stage"] != "total"]
    fig = go.Figure(go.Bar(x=parts["ms"], y=parts["stage"], orientation="h", marker_color="#3490dc"))
    total = timings.loc[timings["stage"] == "total", "ms"]
    title = f"Per-stage time (total {float(total.iloc[0]):.0f} ms)" if len(total) else "Per-stage time"
    fig.update_layout(title=title, **{**_LAYOUT, "height": 260})
    fig.update_yaxes(autorange="reversed")
    fig.update_xaxes(title="ms")
    return fig


def metrics_figure(metrics: pd.DataFrame) -> go.Figure:
    """Grouped bars: one group per (stage, metric), one bar per run. Columns: run, stage, metric, value."""
    fig = go.Figure()
    for run, rows in metrics.groupby("run", sort=False):
        x = [rows["stage"], rows["metric"]]
        fig.add_trace(go.Bar(x=x, y=rows["value"], name=escape(str(run))))
    fig.update_layout(barmode="group", title="Retrieval metrics per stage", **_LAYOUT)
    fig.update_yaxes(range=[0, 1.05])
    return fig


def tradeoff_figure(curve: pd.DataFrame, point: tuple[float, float, float] | None) -> go.Figure:
    """Refusal trade-off: share of answerable questions refused (x) against share of unanswerable
    ones refused (y) as the answerability threshold moves; the run's operating point marked."""
    fig = go.Figure(
        go.Scatter(
            x=curve["answerable refused"],
            y=curve["unanswerable refused"],
            mode="lines+markers",
            name="threshold",
            text=[f"threshold {t:.2f}" for t in curve["threshold"]],
            hoverinfo="text+x+y",
            line=dict(color="#3490dc"),
        )
    )
    if point is not None:
        t, right, wrong = point
        fig.add_trace(
            go.Scatter(
                x=[wrong],
                y=[right],
                mode="markers+text",
                name="this run",
                text=[f"operating point (threshold {t:.2f})"],
                textposition="bottom right",
                marker=dict(color="#e3342f", size=13, symbol="x"),
            )
        )
    fig.update_layout(title="Refusal trade-off as the answerability threshold moves", **{**_LAYOUT, "height": 340})
    fig.update_xaxes(title="answerable questions refused (share)", range=[-0.02, 1.02])
    fig.update_yaxes(title="unanswerable questions refused (share)", range=[-0.02, 1.02])
    return fig
