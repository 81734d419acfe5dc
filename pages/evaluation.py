"""Evaluation: run a gold set under one or two configurations; metrics per stage; compare; export."""

from pathlib import Path

import streamlit as st

import appkit
from appkit import evaluation as runs_view
from appkit.widgets import settings_overrides
from rag.errors import RagError
from rag.eval.gold.builder import save_uploaded_goldset
from rag.eval.runs import goldset_paths, list_runs, load_run, run_goldset
from rag.views.charts import metrics_figure
from rag.views.evaluation import (
    goldset_label,
    metrics_long,
    question_frame,
    stage_table,
)
from rag.views.highlight import md_escape
from rag.views.tables import display_frame

appkit.page_setup()

st.title("Evaluation")
kb = appkit.require_kb("Add some on the Upload page, then evaluate.")


def _goldsets() -> list[Path]:
    return [p for p in goldset_paths(kb, bundled=True) if p.exists()]


def _upload_goldset() -> None:
    with st.expander("Add a gold set (JSON Lines, see docs/GOLDSETS.md)"):
        up = st.file_uploader("Gold set file", type=["jsonl"], key="gold_upload")
        if up is not None and st.button("Save gold set", key="gold_save"):
            try:
                gold, target = save_uploaded_goldset(kb, up.name, up.getvalue())
            except RagError as exc:
                appkit.show_error(exc)
                return
            st.session_state["_saved_goldset"] = (target, f"Saved {len(gold)} questions as {md_escape(target.name)}.")
            st.rerun()  # the picker above lists it now, chosen


def _run(path: Path, configs: list[dict], answers: bool) -> None:
    done = []
    for i, overrides in enumerate(configs, start=1):
        bar = st.progress(0.0, text=f"Configuration {i}: starting…")

        def progress(n: int, total: int, question: str, bar=bar, i=i) -> None:
            bar.progress(n / max(total, 1), text=md_escape(f"Configuration {i}: {n}/{total} · {question[:80]}"))

        try:
            settings = appkit.settings().replace(**overrides)
            run = run_goldset(kb, path, settings, appkit.llm(), progress, answers=answers, principal=appkit.user())
        except Exception as exc:  # shown with its fix
            appkit.show_error(exc)
            return
        done.append(run.id)
    st.session_state["_want_runs"] = done
    st.rerun()


def _setup() -> None:
    paths = _goldsets()
    if not paths:
        st.info("No gold set for this knowledge base yet: add one below, or label candidates in the Inspector.")
        _upload_goldset()
        return
    saved, note = st.session_state.pop("_saved_goldset", (None, ""))
    if saved in paths:
        st.session_state["eval_goldset"] = saved
    path = st.selectbox("Gold set", paths, format_func=goldset_label, key="eval_goldset")
    if note:
        st.success(note)
    _upload_goldset()
    two = st.toggle("Compare two configurations", key="eval_two")
    cols = st.columns(2 if two else 1)
    configs = [settings_overrides(cols[0].container(border=True), appkit.settings(), "cfg_a")]
    if two:
        configs.append(settings_overrides(cols[1].container(border=True), appkit.settings(), "cfg_b"))
    answers = st.checkbox(
        "Generate answers (refusal accuracy and citation validity need them)", True, key="eval_answers"
    )
    if st.button("Run evaluation", type="primary", key="eval_run"):
        _run(path, configs, answers)


def _pick_runs() -> list:
    infos = list_runs(kb, appkit.user())
    if not infos:
        st.info("No runs yet. Run an evaluation above.")
        st.stop()
    ids = [i.id for i in infos]
    wanted = st.session_state.pop("_want_runs", None)
    if wanted:
        st.session_state["eval_pick"] = [w for w in wanted if w in ids]
    if "eval_pick" not in st.session_state:
        st.session_state["eval_pick"] = ids[:1]
    labels = {i.id: f"{i.id} · {i.goldset} · {i.created_at[:16].replace('T', ' ')} · {i.questions} q" for i in infos}
    picked = st.multiselect(
        "Runs to show (pick two to compare)", ids, format_func=labels.get, max_selections=2, key="eval_pick"
    )
    return [load_run(kb, r, appkit.user()) for r in picked]


def _questions(runs: list, level: str) -> None:
    run = runs[-1]
    st.subheader("Per question" + (f" — run {run.id}" if len(runs) > 1 else ""))
    df = display_frame(question_frame(run, level))
    event = st.dataframe(
        df,
        hide_index=True,
        width="stretch",
        key="eval_questions",
        on_select="rerun",
        selection_mode="single-row",
        column_config={"trace_id": st.column_config.TextColumn("trace")},
    )
    rows = event.selection.rows if event else []
    if rows and df.iloc[rows[0]]["trace_id"]:
        st.page_link(
            appkit.INSPECTOR,
            label="Open this question's trace in the Inspector",
            icon=":material/troubleshoot:",
            query_params={"kb": kb.name, "trace": str(df.iloc[rows[0]]["trace_id"])},
        )
    else:
        st.caption("Select a row to open its trace in the Inspector.")


_setup()
st.divider()
runs = _pick_runs()
if not runs:
    st.info("Pick a run to see its results.")
    st.stop()
level = runs_view.overview(runs)
data = metrics_long(runs, level)
if not data.empty:
    st.plotly_chart(metrics_figure(data), key="eval_chart")
tables = st.columns(len(runs))
for col, run in zip(tables, runs, strict=True):
    col.dataframe(display_frame(stage_table(run, level)), hide_index=True, width="stretch", key=f"stages_{run.id}")
for run in runs:
    runs_view.refusal_curve(run)
if len(runs) == 2:
    runs_view.comparison(runs, level)
_questions(runs, level)
