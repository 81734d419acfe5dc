"""Retrieval Inspector: every candidate, every stage's rank and score, the fallback, the cited spans, why not."""

import streamlit as st

import appkit
from appkit import inspector as tab
from appkit.probe import why_not
from rag import ask
from rag.answer import Outcome
from rag.views.chat import answer_markdown
from rag.views.conversations import INSPECTOR_CONVERSATION
from rag.views.decision import turn_note
from rag.views.highlight import md_escape
from rag.views.ledger import bm25_label

appkit.page_setup()

TABS = ["Candidates", "Scores & fallback", "Sources", "Queries & timings", "Replay", "Why not"]

st.title("Retrieval Inspector")
kb = appkit.require_kb()


def _targets() -> dict[str, str]:
    """Picker options: recent chat turns (and a trace opened by link), newest first."""
    options = {}
    trace_id = st.query_params.get("trace")
    if trace_id and not st.query_params.get("turn"):
        options[f"trace:{trace_id}"] = f"Trace {trace_id} (opened from a link)"
    for t in ask.recent_turns(kb, 200, appkit.user()):
        where = "Inspector" if t.conversation == INSPECTOR_CONVERSATION else "Chat"
        options[f"turn:{t.id}"] = (
            f"{t.question[:90]} · {t.outcome.value} · {where} · {t.created_at[:16].replace('T', ' ')}"
        )
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
                turn, _ = ask.ask(
                    kb, question, appkit.settings(), appkit.llm(), INSPECTOR_CONVERSATION, principal=appkit.user()
                )
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
    turn = ask.get_turn(kb, ident, appkit.user()) if kind == "turn" else None
    trace = ask.load_trace(kb, turn.trace_id if turn else ident, appkit.user())
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
            note = turn_note(answer, trace)
            st.warning(f"**{note.title}** — {md_escape(answer.text)}  \n{md_escape(note.why)}")


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
    lambda: tab.candidates(kb, trace),
    lambda: tab.scores(trace),
    lambda: tab.sources(kb, turn, trace),
    lambda: tab.queries(trace),
    lambda: tab.replay_run(kb, trace),
    lambda: why_not(kb, trace),
]
for shown, render in zip(tabs, renderers, strict=True):
    if shown.open is not False:
        with shown:
            render()
