"""Chat: questions answered only from retrieved evidence, every sentence with a checked citation."""

import streamlit as st

import appkit
from rag import ask
from rag.answer import EventKind
from rag.demo import DEMO_KB, example_questions
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
from rag.views.conversations import NEW_CONVERSATION, asked_in, conversation_picker
from rag.views.highlight import md_escape

appkit.page_setup()

st.title("Chat")
kb = appkit.require_kb("Add some on the Upload page.")


def _new_conversation() -> None:
    st.session_state["_conversation"] = NEW_CONVERSATION


def _picked_conversation() -> None:
    st.session_state["_conversation"] = st.session_state["conversation"]


def _conversation_options() -> dict[str, str]:
    """The picker's options; the current conversation (kept in a plain key: the widget's state is
    dropped on other pages) comes from the URL on a fresh visit, else it is a new one."""
    wanted = st.session_state.get("_conversation", st.query_params.get("c", NEW_CONVERSATION))
    picker = conversation_picker(kb, appkit.user(), wanted)
    st.session_state["conversation"] = st.session_state["_conversation"] = picker.current
    return picker.options


def _cards(evidence, expanded: bool = False) -> None:
    """The numbered evidence as one Markdown block (every piece of text escaped)."""
    with st.expander(f"Evidence ({len(evidence)} chunks)", expanded=expanded):
        st.markdown(evidence_markdown(evidence))


def _sources(turn) -> None:
    notes = footnotes(turn.answer, kb.document_text)
    for note in notes:
        with st.container(border=True):
            left, right = st.columns([5, 1], vertical_alignment="center")
            left.markdown(note.label)
            right.page_link(
                appkit.INSPECTOR,
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
    st.session_state["_ask_again"] = question


def _changed_sources(turn, trace) -> None:
    """Say when a document the turn read was deleted or re-uploaded since, with one click to ask again."""
    sources = changed_sources(kb, turn, trace)
    for note in sources_notes(sources):
        st.warning(md_escape(note), icon=":material/update:")
    if sources.stale:
        st.button(
            "Ask again", key=f"again_{turn.id}", on_click=_ask_again, args=(turn.question,), icon=":material/refresh:"
        )


def _turn(turn) -> None:
    with st.chat_message("user"):
        st.markdown(md_escape(turn.question))
    with st.chat_message("assistant"):
        trace = ask.load_trace(kb, turn.trace_id, appkit.user())
        _changed_sources(turn, trace)
        if trace is not None and trace.evidence():
            _cards(trace.evidence())
        _outcome(turn.answer, trace)
        for note in turn_notes(trace, turn.answer):
            st.caption(md_escape(note))
        if not turn.answer.refused:
            _sources(turn)
        elif closest := closest_markdown(trace):
            with st.expander("Closest passages found: not enough to answer, judge for yourself"):
                st.markdown(closest)
        st.page_link(
            appkit.INSPECTOR,
            label="Open this turn in the Inspector",
            icon=":material/troubleshoot:",
            query_params={"kb": kb.name, "turn": turn.id},
        )


def _ask(question: str, conversation: str) -> bool:
    """Stream one turn: evidence first, then only verified sentences; False when it failed."""
    with st.chat_message("user"):
        st.markdown(md_escape(question))
    with st.chat_message("assistant"):
        view = AnswerStream()
        status = st.status(view.status_label, expanded=False)
        cards, answer_box, draft_box = st.container(), st.empty(), st.empty()
        try:
            for event in ask.stream_ask(
                kb, question, appkit.settings(), appkit.llm(), conversation, principal=appkit.user()
            ):
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
            appkit.show_error(exc)
            return False
    return True


options = _conversation_options()
top = st.columns([4, 1], vertical_alignment="bottom")
top[0].selectbox(
    "Conversation", list(options), format_func=options.get, key="conversation", on_change=_picked_conversation
)
top[1].button("New conversation", key="new_conversation", on_click=_new_conversation, icon=":material/add_comment:")
conversation = st.session_state["_conversation"]
if conversation:
    st.query_params["c"] = conversation  # a reload or a shared link reopens it
else:
    st.query_params.pop("c", None)

history = ask.history(kb, conversation, appkit.user()) if conversation else []
for past in history:
    _turn(past)

question = st.chat_input("Ask a question about your documents", key="chat_input") or st.session_state.pop(
    "_ask_again", None
)
if not history:
    with (examples := st.empty()).container():
        st.caption("Ask anything about the documents in this knowledge base.")
        if kb.name == DEMO_KB:
            cols = st.columns(2)
            for i, q in enumerate(example_questions()):
                if cols[i % 2].button(q, key=f"example_{i}", width="stretch"):
                    question = q
    if question:
        examples.empty()
if question:
    target = asked_in(conversation)
    if _ask(question, target):
        st.session_state["_conversation"] = target
        st.rerun()
