"""Retrieval Inspector: every candidate, every stage's rank and score, the fallback, the cited spans."""

import streamlit as st

import appkit
from rag import ask
from rag.answer import Outcome
from rag.views.charts import rank_flow_figure, score_figure, timings_figure
from rag.views.chat import INSPECTOR_CONVERSATION, answer_markdown
from rag.views.highlight import md_escape
from rag.views.ledger import (
    bm25_label,
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
from rag.views.sources import source_views

appkit.page_setup()

TABS = ["Candidates", "Scores & fallback", "Sources", "Queries & timings", "Replay"]

st.title("Retrieval Inspector")
kb = appkit.require_kb()


def _targets() -> dict[str, str]:
    """Picker options: recent chat turns (and a trace opened by link), newest first."""
    options = {}
    trace_id = st.query_params.get("trace")
    if trace_id and not st.query_params.get("turn"):
        options[f"trace:{trace_id}"] = f"Trace {trace_id} (opened from a link)"
    for t in ask.recent_turns(kb, 200):
        where = "Inspector" if t.conversation == INSPECTOR_CONVERSATION else "Chat"
        options[f"turn:{t.id}"] = f"{t.question[:90]} · {t.outcome.value} · {where} · {t.created_at[:16].replace('T', ' ')}"
    return options


def _apply_link(options: dict[str, str]) -> None:
    """A link (?turn= / ?trace=) or a fresh question picks the target once; later the picker rules."""
    wanted = st.session_state.pop("_want_target", None)
    link = st.query_params.get("turn") or st.query_params.get("trace")
    if wanted is None and link and st.session_state.get("_link_applied") != link:
        wanted = f"turn:{link}" if st.query_params.get("turn") else f"trace:{link}"
        st.session_state["_link_applied"] = link
    if wanted in options:
        st.session_state["inspect_target"] = wanted


def _ask_new() -> None:
    with st.form("inspect_new", border=False):
        cols = st.columns([5, 1], vertical_alignment="bottom")
        question = cols[0].text_input("Inspect a new question", key="inspect_question")
        go = cols[1].form_submit_button("Run", type="primary", width="stretch", key="inspect_run")
    if go and question.strip():
        try:
            with st.spinner("Retrieving and answering…"):
                turn, _ = ask.ask(kb, question, appkit.settings(), appkit.llm(), INSPECTOR_CONVERSATION)
        except Exception as exc:  # shown with its fix
            appkit.show_error(exc)
            return
        st.session_state["_want_target"] = f"turn:{turn.id}"
        st.query_params.update({"turn": turn.id})
        st.session_state["_link_applied"] = turn.id
        st.rerun()


def _follow_in_url(target: str) -> None:
    """Keep ?turn= / ?trace= on what the picker shows, so a reload or a shared link opens the same."""
    kind, _, ident = target.partition(":")
    if st.query_params.get(kind) != ident:
        for stale in ("cite", "trace" if kind == "turn" else "turn"):
            st.query_params.pop(stale, None)
        st.query_params[kind] = ident
        st.session_state["_link_applied"] = ident


def _load(target: str):
    kind, _, ident = target.partition(":")
    turn = ask.get_turn(kb, ident) if kind == "turn" else None
    trace = ask.load_trace(kb, turn.trace_id if turn else ident)
    return turn, trace


def _header(turn, trace) -> None:
    st.markdown(f"### {md_escape(trace.question)}")
    s = appkit.settings()
    same = trace.config_fingerprint == s.fingerprint()
    st.caption(
        f"Trace `{trace.id}` · fingerprint `{trace.config_fingerprint}`"
        + ("" if same else f" (current settings: `{s.fingerprint()}` — replay to compare)")
        + f" · index revision {trace.index_revision} · {trace.created_at}"
    )
    rr = trace.reranker
    lines = [
        f"dense score: cosine from `{trace.embedder.model}`",
        f"BM25 score: {bm25_label(trace.settings)}",
        f"RRF score: reciprocal rank fusion, k = {trace.settings.get('rrf_k', '?')}",
        f"rerank score: `{rr.backend}:{rr.model}`",
    ]
    if turn is not None:
        gen = turn.answer.generator
        lines.append(f"answer: `{gen.backend}:{gen.model}`" + (" (stand-in)" if gen.stand_in else ""))
    st.caption(" · ".join(lines))
    if rr.stand_in:
        st.warning(f"The rerank scores come from a **stand-in**: {md_escape(rr.note)}", icon=":material/warning:")
    if turn is not None:
        answer = turn.answer
        if answer.outcome is Outcome.ANSWER:
            st.markdown(answer_markdown(answer.text))
        else:
            st.warning(
                f"**{'Clarifying question' if answer.outcome is Outcome.CLARIFY else 'Not answered'}** — "
                f"{md_escape(answer.text)}  \nWhy: {md_escape(answer.refusal_reason)}"
            )


def _ledger(trace) -> None:
    df = ledger_frame(trace)
    cols = st.columns([2, 2, 2])
    statuses = cols[0].multiselect("Status / dropped by", status_options(df), key="ledger_status")
    docs = cols[1].multiselect("Document", sorted(df["doc"].unique()), key="ledger_docs")
    text = cols[2].text_input("Contains", key="ledger_search")
    shown = filter_ledger(df, statuses, docs, text)
    st.caption(f"{len(shown)} of {len(df)} candidates · click a column header to sort · select rows to label them")
    event = st.dataframe(
        shown,
        hide_index=True,
        width="stretch",
        key="ledger",
        on_select="rerun",
        selection_mode="multi-row",
        column_config=_ledger_columns(trace),
    )
    rows = event.selection.rows if event else []
    _judge(trace, shown.iloc[rows] if rows else shown.iloc[0:0])


def _ledger_columns(trace) -> dict:
    """Column headers, number formats and help (naming the model behind each score) from rag.views.ledger."""
    out = {}
    for col, (label, fmt, help_text) in ledger_columns(trace).items():
        kind = st.column_config.NumberColumn if fmt else st.column_config.TextColumn
        out[col] = kind(label, help=help_text or None, **({"format": fmt} if fmt and fmt != "int" else {}))
    return out


def _judge(trace, selected) -> None:
    """Label selected candidates relevant / irrelevant into a gold set."""
    try:
        from rag.eval.runs import add_judgement, goldset_paths
    except ImportError:
        return
    if selected.empty:
        return
    paths = goldset_paths(kb)
    cols = st.columns([3, 1, 1], vertical_alignment="bottom")
    path = cols[0].selectbox("Gold set", paths, format_func=lambda p: p.name, key="judge_goldset")
    verdict = None
    if cols[1].button("Mark relevant", key="judge_relevant", icon=":material/check_circle:"):
        verdict = True
    if cols[2].button("Mark irrelevant", key="judge_irrelevant", icon=":material/cancel:"):
        verdict = False
    if verdict is not None:
        by_id = trace.by_id()
        try:
            for cid in selected["chunk_id"]:
                add_judgement(path, trace.question, by_id[cid], verdict)
            st.success(f"Labelled {len(selected)} candidate(s) in {md_escape(path.name)}.")
        except Exception as exc:  # shown with its fix
            appkit.show_error(exc)


def _scores(trace) -> None:
    fb = trace.fallback
    if fb is not None:
        c = st.columns(4)
        c[0].metric("Decision", fb.action.value.replace("_", " "))
        c[1].metric("Best rerank score", "—" if fb.best_score is None else f"{fb.best_score:.3f}")
        c[2].metric("Threshold", f"{fb.threshold:.3f}")
        c[3].metric("Margin", "—" if fb.margin is None else f"{fb.margin:+.3f}")
        st.caption(f"Judged by {fb.judged_by} · attempts {trace.attempts} · {md_escape(fb.reason)}")
    scores = score_frame(trace)
    if scores.empty:
        st.info("No candidate reached the reranker.")
    else:
        best = fb.best_score if fb else None
        st.plotly_chart(score_figure(scores, trace.settings.get("rerank_threshold", 0.0), best), key="score_chart")
    flow = rank_flow(trace)
    if not flow.empty:
        st.plotly_chart(rank_flow_figure(flow), key="rank_flow_chart")


def _sources(turn, trace) -> None:
    views = source_views(trace, turn.answer if turn else None, kb.neighbours)
    if not views:
        st.info("No evidence was used for this question (see Scores & fallback for why).")
        return
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


def _queries(trace) -> None:
    st.dataframe(query_frame(trace), hide_index=True, width="stretch", key="query_table")
    st.plotly_chart(timings_figure(timings_frame(trace)), key="timings_chart")


def _replay(trace) -> None:
    from rag.retrieval.replay import replay
    from rag.retrieval.rerankers import REGISTRY

    s = trace.settings
    with st.form("replay_form"):
        c = st.columns(4)
        recall_k = c[0].number_input("recall_k", 1, 500, int(s.get("recall_k", 20)), key="replay_recall_k")
        top_n = c[1].number_input("top_n", 1, 100, int(s.get("top_n", 5)), key="replay_top_n")
        rrf_k = c[2].number_input("RRF k (fusion)", 1, 1000, int(s.get("rrf_k", 60)), key="replay_rrf_k")
        threshold = c[3].number_input(
            "rerank threshold", 0.0, 1.0, float(s.get("rerank_threshold", 0.35)), 0.01, key="replay_threshold"
        )
        names = sorted(REGISTRY)
        current = s.get("reranker", "default")
        reranker = st.selectbox(
            "reranker", names, names.index(current) if current in names else 0, key="replay_reranker"
        )
        go = st.form_submit_button("Replay with these settings", type="primary", key="replay_run")
    if go:
        changes = {
            "recall_k": recall_k,
            "top_n": top_n,
            "rrf_k": rrf_k,
            "rerank_threshold": threshold,
            "reranker": reranker,
        }
        try:
            with st.spinner("Replaying…"):
                st.session_state["replay"] = (trace.id, replay(kb, trace, changes, appkit.llm(), persist=False))
        except Exception as exc:  # shown with its fix
            appkit.show_error(exc)
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


_ask_new()
options = _targets()
if not options:
    st.info("No questions yet. Ask one above, or in Chat, then inspect it here.")
    st.stop()
_apply_link(options)
if st.session_state.get("inspect_target") not in options:
    st.session_state["inspect_target"] = next(iter(options))
target = st.selectbox("Or open a past question", list(options), format_func=options.get, key="inspect_target")
_follow_in_url(target)
turn, trace = _load(target)
if trace is None:
    st.info("That trace is no longer stored (its knowledge base may have been reset). Pick another question.")
    st.stop()
_header(turn, trace)
default_tab = "Sources" if st.query_params.get("cite") else TABS[0]
tabs = st.tabs(TABS, key="tab", bind="query-params", default=default_tab)
renderers = [
    lambda: _ledger(trace),
    lambda: _scores(trace),
    lambda: _sources(turn, trace),
    lambda: _queries(trace),
    lambda: _replay(trace),
]
for tab, render in zip(tabs, renderers, strict=True):
    if tab.open is not False:
        with tab:
            render()
