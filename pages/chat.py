"""Chat: questions answered only from retrieved evidence, every sentence with a checked citation."""

import streamlit as st

import appkit
from appkit.chat import ASK_AGAIN, past_turn, stream_turn
from rag import ask
from rag.demo import DEMO_KB, example_questions
from rag.views.conversations import NEW_CONVERSATION, asked_in, conversation_picker

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
    past_turn(kb, past)

question = st.chat_input("Ask a question about your documents", key="chat_input") or st.session_state.pop(
    ASK_AGAIN, None
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
    if stream_turn(kb, question, target):
        st.session_state["_conversation"] = target
        st.rerun()
