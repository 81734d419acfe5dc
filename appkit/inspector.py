"""The Retrieval Inspector's tabs: candidates (with labelling), scores and fallback, sources,
queries and timings, replay. Each renders what rag.views computes for one trace."""

from __future__ import annotations

import streamlit as st

from appkit import llm, show_error
from appkit.widgets import column_config, settings_overrides
from rag.ask import Turn
from rag.errors import RagError
from rag.eval.gold.builder import goldsets_dir, new_goldset_path, own_goldsets
from rag.eval.runs import add_judgement
from rag.kb import KnowledgeBase
from rag.retrieval.answerability import is_chinese
from rag.retrieval.matches import term_matches
from rag.retrieval.replay import replay
from rag.retrieval.trace import Trace
from rag.views.answerability import feature_frame, verdict_lines
from rag.views.charts import decision_figure, rank_flow_figure, score_figure, timings_figure
from rag.views.decision import explain_trace
from rag.views.highlight import md_escape
from rag.views.ledger import (
    diff_summary,
    filter_ledger,
    ledger_columns,
    ledger_frame,
    query_frame,
    rank_flow,
    replay_frame,
    score_frame,
    status_options,
    timings_frame,
)
from rag.views.meaning import term_match_frame
from rag.views.sources import source_views
from rag.views.tables import display_frame


def candidates(kb: KnowledgeBase, trace: Trace) -> None:
    """The candidate ledger (filterable), with labelling of selected rows into a gold set."""
    df = ledger_frame(trace, term_matches(kb, trace))
    cols = st.columns([2, 2, 2])
    statuses = cols[0].multiselect("Status / dropped by", status_options(df), key="ledger_status")
    docs = cols[1].multiselect("Document", sorted(df["doc"].unique()), key="ledger_docs")
    text = cols[2].text_input("Contains", key="ledger_search")
    shown = filter_ledger(df, statuses, docs, text)
    st.caption(f"{len(shown)} of {len(df)} candidates · click a column header to sort · select rows to label them")
    cells = display_frame(shown, digits=4)  # a stage that never saw a candidate: an empty cell, not "None"
    texted = frozenset(c for c in shown.columns if cells[c].dtype != shown[c].dtype)
    event = st.dataframe(
        cells,
        hide_index=True,
        width="stretch",
        key="ledger",
        on_select="rerun",
        selection_mode="multi-row",
        column_config=column_config(ledger_columns(trace), texted),
    )
    rows = event.selection.rows if event else []
    _judge(kb, trace, shown.iloc[rows] if rows else shown.iloc[0:0])


NEW_GOLDSET = "A new gold set…"


def _chose_goldset() -> None:
    st.session_state["_judge_goldset"] = st.session_state["judge_goldset"]


def _label_target(kb: KnowledgeBase):
    """The gold set to label into, as the user chose it (never a default: labels in the wrong set
    are hard to find later), or None until they have. The choice is kept for the next question."""
    names = [p.name for p in own_goldsets(kb)]
    options = [*names, NEW_GOLDSET]
    if st.session_state.get("_judge_goldset") in options:
        st.session_state["judge_goldset"] = st.session_state["_judge_goldset"]
    cols = st.columns([2, 2], vertical_alignment="bottom")
    chosen = cols[0].selectbox(
        "Label into gold set",
        options,
        index=None,
        placeholder="Choose a gold set…",
        key="judge_goldset",
        on_change=_chose_goldset,
    )
    if chosen != NEW_GOLDSET:
        return goldsets_dir(kb) / chosen if chosen else None
    name = cols[1].text_input("New gold set name", key="judge_new_goldset", placeholder="e.g. leave-questions")
    if not name.strip():
        return None
    try:
        return new_goldset_path(kb, name)
    except RagError as exc:
        show_error(exc)
        return None


def _judge(kb: KnowledgeBase, trace: Trace, selected) -> None:
    """Label selected candidates relevant / irrelevant into the gold set the user picks."""
    if selected.empty:
        return
    path = _label_target(kb)
    cols = st.columns([1, 1, 2], vertical_alignment="bottom")
    verdict = None
    if cols[0].button("Mark relevant", key="judge_relevant", icon=":material/check_circle:", disabled=path is None):
        verdict = True
    if cols[1].button("Mark irrelevant", key="judge_irrelevant", icon=":material/cancel:", disabled=path is None):
        verdict = False
    if path is None:
        cols[2].caption("Choose the gold set these labels go into.")
    if verdict is not None and path is not None:
        by_id = trace.by_id()
        try:
            for cid in selected["chunk_id"]:
                add_judgement(path, trace.question, by_id[cid], verdict)
            st.success(f"Labelled {len(selected)} candidate(s) in {md_escape(path.name)}.")
        except Exception as exc:  # shown with its fix
            show_error(exc)


def scores(trace: Trace) -> None:
    ex = explain_trace(trace)
    if ex.action is not None:
        for col, m in zip(st.columns(len(ex.metrics)), ex.metrics, strict=True):
            col.metric(m.label, m.value)
        st.markdown(md_escape(ex.why))
        for line in ex.details:
            st.caption(md_escape(line))
        st.caption(
            f"Judged by {trace.fallback.judged_by} · attempts {trace.attempts} · {md_escape(trace.fallback.reason)}"
        )
    if ex.operating_point is not None:
        st.plotly_chart(decision_figure(ex.operating_point), key="decision_chart")
    if trace.answerability is not None:
        _answerability(trace.answerability, is_chinese(trace.question))
    scores = score_frame(trace)
    if scores.empty:
        st.info("No candidate reached the reranker.")
    else:
        best = float(scores["rerank_score"].max())
        st.plotly_chart(score_figure(scores, ex.rerank_line, best), key="score_chart")
    flow = rank_flow(trace)
    if not flow.empty:
        st.plotly_chart(rank_flow_figure(flow), key="rank_flow_chart")


def _answerability(a, chinese: bool) -> None:
    """The answerability stage: features, their weights and contributions, the verdict."""
    with st.expander("Answerability: does the evidence answer the question?", expanded=not a.answerable):
        for line in verdict_lines(a):
            st.markdown(md_escape(line))
        if a.term_matches:
            st.caption("How the documents say the question's terms (WordNet and Cilin synonyms count)")
            st.dataframe(term_match_frame(a, chinese), hide_index=True, width="stretch", key="answerability_terms")
        st.dataframe(feature_frame(a), hide_index=True, width="stretch", key="answerability_features")


def sources(kb: KnowledgeBase, turn: Turn | None, trace: Trace) -> None:
    views = source_views(trace, turn.answer if turn else None, kb.neighbours, term_matches(kb, trace))
    if not views:
        st.info("No evidence was used for this question (see Scores & fallback for why).")
        return
    st.caption("Highlighted: the spans the answer cites · underlined: the question's terms BM25 matched (outside them)")
    focus = st.query_params.get("cite", "")
    for v in views:
        cited = " · cited as " + " ".join(f":blue-badge[{n}]" for n in v.cited_by) if v.cited_by else ""
        star = " · :orange-badge[opened citation]" if focus and focus in map(str, v.cited_by) else ""
        extra = " · neighbour of a kept chunk" if v.neighbour_of else ""
        score = f" · rerank {v.score:.3f}" if v.score is not None else ""
        st.markdown(f":gray-badge[{v.n}] {v.main.where}{score}{cited}{extra}{star}")
        st.html(v.main.html)
        if v.neighbours:
            with st.expander(f"Neighbouring chunks ({len(v.neighbours)})", expanded=bool(star)):
                for nb in v.neighbours:
                    st.caption(nb.where)
                    st.html(nb.html)


def queries(trace: Trace) -> None:
    st.dataframe(query_frame(trace), hide_index=True, width="stretch", key="query_table")
    st.plotly_chart(timings_figure(timings_frame(trace)), key="timings_chart")


def replay_run(kb: KnowledgeBase, trace: Trace) -> None:
    """Replay the trace's question with changed settings and show what moved."""
    with st.form("replay_form"):
        changes = settings_overrides(st, trace.settings, "replay", columns=4)
        go = st.form_submit_button("Replay with these settings", type="primary", key="replay_run")
    if go:
        try:
            with st.spinner("Replaying…"):
                st.session_state["replay"] = (trace.id, replay(kb, trace, changes, llm(), persist=False))
        except Exception as exc:  # shown with its fix
            show_error(exc)
    done = st.session_state.get("replay")
    if done and done[0] == trace.id:
        _diff(done[1])


def _diff(result) -> None:
    d = result.diff
    if d.index_changed:
        st.warning("The index changed since this trace was recorded: differences may come from the data too.")
    st.markdown("  \n".join(diff_summary(d)))
    table = replay_frame(result.old, result.new, d.moved_in, d.moved_out)
    st.dataframe(table, hide_index=True, width="stretch", key="replay_table")
