"""Chat's turns on screen: a past turn (its evidence, outcome, sources and what changed since)
and a new one streamed as it is answered. Each renders what rag.views.chat computes."""

from __future__ import annotations

import streamlit as st

from appkit import INSPECTOR, llm, settings, show_error, user
from rag import ask
from rag.answer import EventKind
from rag.kb import KnowledgeBase
from rag.views.chat import (
    AnswerStream,
    changed_sources,
    closest_markdown,
    evidence_markdown,
    footnotes,
    outcome_box,
    sources_notes,
    turn_notes,
)
from rag.views.highlight import md_escape

ASK_AGAIN = "_ask_again"  # session key: a question to ask once more (set by "Ask again")


def _cards(evidence, expanded: bool = False) -> None:
    """The numbered evidence as one Markdown block (every piece of text escaped)."""
    with st.expander(f"Evidence ({len(evidence)} chunks)", expanded=expanded):
        st.markdown(evidence_markdown(evidence))


def _sources(kb: KnowledgeBase, turn) -> None:
    notes = footnotes(turn.answer, kb.document_text)
    for note in notes:
        with st.container(border=True):
            left, right = st.columns([5, 1], vertical_alignment="center")
            left.markdown(note.label)
            right.page_link(
                INSPECTOR,
                label="Inspect",
                icon=":material/troubleshoot:",
                query_params={"kb": kb.name, "turn": turn.id, "cite": str(note.n)},
            )
            st.html(note.html)


def _outcome(answer, trace) -> None:
    box = outcome_box(answer, trace)
    if box.tone == "answer":
        st.markdown(box.markdown)
        return
    (st.info if box.tone == "info" else st.warning)(box.markdown, icon=box.icon)
    st.caption(box.caption)


def _ask_again(question: str) -> None:
    st.session_state[ASK_AGAIN] = question


def _changed_sources(kb: KnowledgeBase, turn, trace) -> None:
    """Say when a document the turn read was deleted or re-uploaded since, with one click to ask again."""
    sources = changed_sources(kb, turn, trace)
    for note in sources_notes(sources):
        st.warning(md_escape(note), icon=":material/update:")
    if sources.stale:
        st.button(
            "Ask again", key=f"again_{turn.id}", on_click=_ask_again, args=(turn.question,), icon=":material/refresh:"
        )


def past_turn(kb: KnowledgeBase, turn) -> None:
    """One turn of the conversation as it was answered, with what changed since."""
    with st.chat_message("user"):
        st.markdown(md_escape(turn.question))
    with st.chat_message("assistant"):
        trace = ask.load_trace(kb, turn.trace_id, user())
        _changed_sources(kb, turn, trace)
        if trace is not None and trace.evidence():
            _cards(trace.evidence())
        _outcome(turn.answer, trace)
        for note in turn_notes(trace, turn.answer):
            st.caption(md_escape(note))
        if not turn.answer.refused:
            _sources(kb, turn)
        elif closest := closest_markdown(trace):
            with st.expander("Closest passages found: not enough to answer, judge for yourself"):
                st.markdown(closest)
        st.page_link(
            INSPECTOR,
            label="Open this turn in the Inspector",
            icon=":material/troubleshoot:",
            query_params={"kb": kb.name, "turn": turn.id},
        )


def stream_turn(kb: KnowledgeBase, question: str, conversation: str) -> bool:
    """Stream one turn: evidence first, then only verified sentences; False when it failed."""
    with st.chat_message("user"):
        st.markdown(md_escape(question))
    with st.chat_message("assistant"):
        view = AnswerStream()
        status = st.status(view.status_label, expanded=False)
        cards, answer_box, draft_box = st.container(), st.empty(), st.empty()
        try:
            for event in ask.stream_ask(kb, question, settings(), llm(), conversation, principal=user()):
                kind = view.take(event)
                if kind is None:
                    status.update(label=view.status_label, state="complete")
                    continue
                if kind is EventKind.EVIDENCE and view.evidence:
                    with cards:
                        _cards(view.evidence, expanded=True)
                answer_box.markdown(view.verified_markdown)
                draft_box.caption(view.draft_caption)
        except Exception as exc:  # shown with its fix; the conversation is unchanged
            status.update(label="Failed", state="error")
            show_error(exc)
            return False
    return True
