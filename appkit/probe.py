"""The Inspector's "Why not" tab: pick a document or chunk (search, gold label, or id), see where
it stood at every stage and what excluded it, and replay the suggested change in one click."""

from __future__ import annotations

import streamlit as st

from appkit import llm, settings, show_error
from rag.kb import KnowledgeBase
from rag.retrieval.pipeline import context
from rag.retrieval.probe import ProbeResult, let_in, probe, replay_change
from rag.retrieval.targets import ProbeTarget, chunk_target, document_target, search_targets
from rag.retrieval.trace import Trace
from rag.views.highlight import md_escape
from rag.views.ledger import diff_summary, preview, replay_frame
from rag.views.probe import change_lines, gold_labels, probe_html, stage_frame, verdict


def why_not(kb: KnowledgeBase, trace: Trace) -> None:
    st.caption(
        "Pick the document or chunk you expected: where it stood in the full dense and BM25 lists, where it "
        "would have entered RRF, its rerank score had it been a candidate, and the smallest change that lets it in."
    )
    golds = gold_labels(kb, trace.question)
    if golds:
        st.caption("Gold labels for this question:")
        cols = st.columns(3)
        for i, g in enumerate(golds):
            if cols[i % 3].button(md_escape(g.label), key=f"probe_gold_{i}", icon=":material/star:"):
                _run(kb, trace, lambda g=g: _gold_target(kb, trace, g))
    options = _options(kb, st.text_input("Find a document or chunk: a name or a phrase in it", key="probe_search"))
    cols = st.columns([3, 2, 1], vertical_alignment="bottom")
    picked = cols[0].selectbox("Document or chunk", list(options), format_func=options.get, key="probe_target")
    typed = cols[1].text_input("…or a chunk id (any revision)", key="probe_chunk")
    if cols[2].button("Why not?", type="primary", key="probe_run", width="stretch"):
        _run(kb, trace, lambda: _target(kb, trace, typed.strip() or picked or ""))
    done = st.session_state.get("probe_result")
    if done and done[0] == trace.id:
        _show(kb, trace, done[1])


def _options(kb: KnowledgeBase, phrase: str) -> dict[str, str]:
    if phrase.strip():
        found = search_targets(kb, phrase)
        return {f"chunk:{t.chunk_id}": f"{t.label} · {preview(t.text, 70)}" for t in found} or {"": "nothing found"}
    return {f"doc:{d.name}": f"{d.name} (its best chunk for this question)" for d in kb.documents()}


def _target(kb: KnowledgeBase, trace: Trace, choice: str) -> ProbeTarget:
    kind, _, ident = choice.partition(":") if choice.startswith(("doc:", "chunk:")) else ("chunk", "", choice)
    if kind == "doc":
        return document_target(kb, ident, trace.question, context(kb, settings()).vectors)
    return chunk_target(kb, ident)


def _gold_target(kb: KnowledgeBase, trace: Trace, gold) -> ProbeTarget:
    if gold.chunk_id:
        return chunk_target(kb, gold.chunk_id)
    quoted = [t for t in search_targets(kb, gold.quote[:80]) if t.doc_name == gold.doc] if gold.quote else []
    return quoted[0] if quoted else document_target(kb, gold.doc, trace.question, context(kb, settings()).vectors)


def _run(kb: KnowledgeBase, trace: Trace, target) -> None:
    try:
        with st.spinner("Placing it in every stage…"):
            st.session_state["probe_result"] = (trace.id, probe(kb, trace, target()))
        st.session_state.pop("probe_replay", None)
    except Exception as exc:  # shown with its fix
        show_error(exc)


def _show(kb: KnowledgeBase, trace: Trace, r: ProbeResult) -> None:
    st.markdown(
        f"#### {md_escape(r.doc_name or r.doc_id)} · `{r.chunk_id or 'no active chunk'}` · {md_escape(r.state)}"
    )
    (st.success if r.excluded_by is None else st.warning)(md_escape(verdict(r)))
    st.dataframe(stage_frame(r), hide_index=True, width="stretch", key="probe_stages")
    if r.rewrite_terms:
        st.caption("Terms the rewrite added: " + md_escape(", ".join(r.rewrite_terms)))
    if r.text:
        st.html(probe_html(r))
    for i, (line, change) in enumerate(zip(change_lines(r), r.changes, strict=True)):
        cols = st.columns([4, 1], vertical_alignment="center")
        cols[0].markdown(md_escape(line))
        if change.replayable and cols[1].button("Replay with this change", key=f"probe_replay_{i}"):
            try:
                with st.spinner("Replaying…"):
                    st.session_state["probe_replay"] = (
                        trace.id,
                        r.chunk_id,
                        i,
                        replay_change(kb, trace, change, llm()),
                    )
            except Exception as exc:  # shown with its fix
                show_error(exc)
    _replayed(trace, r)


def _replayed(trace: Trace, r: ProbeResult) -> None:
    done = st.session_state.get("probe_replay")
    if not done or done[:2] != (trace.id, r.chunk_id):
        return
    result = done[3]
    row = result.new.by_id().get(r.chunk_id)
    if let_in(result, r.chunk_id):
        st.success(f"With change {done[2] + 1} it is evidence [{row.final_rank}].")
    else:
        why = row.dropped_by.value if row is not None and row.dropped_by else "not recalled"
        st.warning(f"With change {done[2] + 1} it is still not evidence ({md_escape(why)}).")
    if result.new.question != result.old.question:
        st.caption(f"Replayed question: {md_escape(result.new.question)}")
    if result.new.filters != result.old.filters:
        st.caption(f"Replayed filters: {md_escape(str(result.new.filters or 'none'))}")
    st.markdown("  \n".join(diff_summary(result.diff)))
    table = replay_frame(result.old, result.new, result.diff.moved_in, result.diff.moved_out)
    st.dataframe(table, hide_index=True, width="stretch", key="probe_replay_table")
