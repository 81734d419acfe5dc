"""Evaluation: run a gold set under one or two configurations; metrics per stage; compare; export."""

from pathlib import Path

import streamlit as st

import appkit
from rag.errors import RagError
from rag.eval.gold.goldset import parse_goldset
from rag.eval.runs import compare_runs, goldset_paths, goldsets_dir, list_runs, load_run, run_goldset, to_csv, to_json
from rag.retrieval.rerankers import REGISTRY
from rag.views.charts import metrics_figure
from rag.views.evaluation import (
    delta_frame,
    headline,
    levels,
    metrics_long,
    question_delta_frame,
    question_frame,
    run_label,
    stage_table,
)
from rag.views.highlight import md_escape

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
                text = up.getvalue().decode("utf-8")
                gold = parse_goldset(text.splitlines(), name=Path(up.name).stem, source=up.name)
            except (RagError, UnicodeDecodeError) as exc:
                appkit.show_error(exc)
                return
            target = goldsets_dir(kb) / (Path(up.name).stem.replace("/", "_") + ".jsonl")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
            st.success(f"Saved {len(gold)} questions as {md_escape(target.name)}.")


def _config(box, tag: str) -> dict:
    """Settings overrides for one configuration (defaults: the active settings)."""
    s = appkit.settings()
    c = box.columns(3)
    names = sorted(REGISTRY)
    return {
        "recall_k": c[0].number_input("recall_k", 1, 500, s.recall_k, key=f"{tag}_recall_k"),
        "top_n": c[1].number_input("top_n", 1, 100, s.top_n, key=f"{tag}_top_n"),
        "rrf_k": c[2].number_input("RRF k", 1, 1000, s.rrf_k, key=f"{tag}_rrf_k"),
        "rerank_threshold": c[0].number_input(
            "rerank threshold", 0.0, 1.0, float(s.rerank_threshold), 0.01, key=f"{tag}_threshold"
        ),
        "reranker": c[1].selectbox("reranker", names, names.index(s.reranker), key=f"{tag}_reranker"),
    }


def _run(path: Path, configs: list[dict], answers: bool) -> None:
    done = []
    for i, overrides in enumerate(configs, start=1):
        bar = st.progress(0.0, text=f"Configuration {i}: starting…")

        def progress(n: int, total: int, question: str, bar=bar, i=i) -> None:
            bar.progress(n / max(total, 1), text=md_escape(f"Configuration {i}: {n}/{total} · {question[:80]}"))

        try:
            settings = appkit.settings().replace(**overrides)
            run = run_goldset(kb, path, settings, appkit.llm(), progress, answers=answers)
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
    path = st.selectbox("Gold set", paths, format_func=lambda p: p.name + f" ({p.parent.name})", key="eval_goldset")
    _upload_goldset()
    two = st.toggle("Compare two configurations", key="eval_two")
    cols = st.columns(2 if two else 1)
    configs = [_config(cols[0].container(border=True), "cfg_a")]
    if two:
        configs.append(_config(cols[1].container(border=True), "cfg_b"))
    answers = st.checkbox(
        "Generate answers (refusal accuracy and citation validity need them)", True, key="eval_answers"
    )
    if st.button("Run evaluation", type="primary", key="eval_run"):
        _run(path, configs, answers)


def _pick_runs() -> list:
    infos = list_runs(kb)
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
    return [load_run(kb, r) for r in picked]


def _overview(runs: list) -> str:
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


def _questions(runs: list, level: str) -> None:
    run = runs[-1]
    st.subheader("Per question" + (f" — run {run.id}" if len(runs) > 1 else ""))
    df = question_frame(run, level)
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


def _compare(runs: list, level: str) -> None:
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
    left.dataframe(delta_frame(cmp), hide_index=True, width="stretch", key="eval_deltas")
    right.dataframe(question_delta_frame(cmp, b), hide_index=True, width="stretch", key="eval_qdeltas")


_setup()
st.divider()
runs = _pick_runs()
if not runs:
    st.info("Pick a run to see its results.")
    st.stop()
level = _overview(runs)
data = metrics_long(runs, level)
if not data.empty:
    st.plotly_chart(metrics_figure(data), key="eval_chart")
tables = st.columns(len(runs))
for col, run in zip(tables, runs, strict=True):
    col.dataframe(stage_table(run, level), hide_index=True, width="stretch", key=f"stages_{run.id}")
if len(runs) == 2:
    _compare(runs, level)
_questions(runs, level)
