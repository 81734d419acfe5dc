"""The Evaluation page's run views: per-run headline figures, and two runs compared."""

from __future__ import annotations

import streamlit as st

from rag.eval.runs import EvalRun, compare_runs, to_csv, to_json
from rag.views.charts import tradeoff_figure
from rag.views.evaluation import (
    delta_frame,
    headline,
    levels,
    operating_point,
    question_delta_frame,
    refusal_tradeoff,
    run_label,
)
from rag.views.highlight import md_escape
from rag.views.tables import display_frame


def overview(runs: list[EvalRun]) -> str:
    """Headline figures and downloads per run; returns the chosen level (chunk | doc)."""
    cols = st.columns(len(runs))
    for col, run in zip(cols, runs, strict=True):
        with col.container(border=True):
            st.markdown(f"**{md_escape(run_label(run))}**")
            st.caption(md_escape(f"reranker {run.reranker} · fingerprint {run.config_fingerprint}"))
            figs = headline(run)
            mcols = st.columns(3)
            for j, (name, value) in enumerate(figs.items()):
                shown = "—" if value is None else (f"{value:.3f}" if isinstance(value, float) else str(value))
                mcols[j % 3].metric(name, shown)
            c1, c2 = st.columns(2)
            c1.download_button("CSV", to_csv(run), f"run-{run.id}.csv", "text/csv", key=f"csv_{run.id}")
            c2.download_button("JSON", to_json(run), f"run-{run.id}.json", "application/json", key=f"json_{run.id}")
    options = sorted({lv for run in runs for lv in levels(run)}) or ["doc"]
    return st.radio("Level", options, horizontal=True, key="eval_level")


def comparison(runs: list[EvalRun], level: str) -> None:
    """Run b against run a: settings changed, wins and losses, per-stage and per-question deltas."""
    a, b = runs
    cmp = compare_runs(a, b, stage="evidence", level=level)
    st.subheader(f"Run {b.id} against {a.id}")
    changed = ", ".join(f"{k}: {x} → {y}" for k, (x, y) in cmp.settings_changed.items()) or "none"
    st.markdown(
        f"**Settings changed:** {md_escape(changed)} · {len(cmp.wins)} wins, {len(cmp.losses)} losses, "
        f"{len(cmp.ties)} ties on {cmp.metric} ({cmp.level}, evidence)"
    )
    if not cmp.same_goldset:
        st.warning("The runs used different gold sets; only questions in both are compared.")
    if cmp.index_changed:
        st.warning("The index changed between the runs: differences may come from the data too.")
    left, right = st.columns(2)
    left.dataframe(display_frame(delta_frame(cmp)), hide_index=True, width="stretch", key="eval_deltas")
    right.dataframe(display_frame(question_delta_frame(cmp, b)), hide_index=True, width="stretch", key="eval_qdeltas")


def refusal_curve(run: EvalRun) -> None:
    """The refusal trade-off of a run whose gold set has questions that must be refused."""
    curve = refusal_tradeoff(run)
    if curve.empty:
        return
    st.plotly_chart(tradeoff_figure(curve, operating_point(run)), key=f"tradeoff_{run.id}")
