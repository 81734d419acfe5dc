"""Conversations stay apart: each gets its own id with its first turn, and two browsers never share one.

Streamlit's AppTest runs the real Chat page (``app.py``) on a small real knowledge base; each
``AppTest`` is a separate browser session. The Chromium version with two browser contexts is in
``tests/test_browser_journeys.py``.
"""

from __future__ import annotations

import pytest
from app_support import ANSWERABLE, ROOT, ZEBRA_QUESTION, app_home, build_kb, texts
from streamlit.testing.v1 import AppTest

from rag import ask
from rag.config import Settings
from rag.views.conversations import (
    NEW_CONVERSATION,
    NEW_CONVERSATION_LABEL,
    conversation_choices,
    conversation_labels,
    new_conversation_id,
)
from rag.views.highlight import md_escape

pytestmark = pytest.mark.slow
TIMEOUT = 240
SICK_QUESTION = "How many sick days can employees take?"


class _Turn:
    def __init__(self, conv: str, seq: int, question: str, created_at: str = "2025-01-02T03:04:05") -> None:
        self.conversation, self.seq, self.question, self.created_at = conv, seq, question, created_at


def test_new_conversation_ids_are_unique_and_never_the_label():
    ids = {new_conversation_id() for _ in range(1000)}
    assert len(ids) == 1000
    assert NEW_CONVERSATION not in ids and NEW_CONVERSATION_LABEL not in ids


def test_conversation_labels_are_unique_so_the_picker_maps_each_back_to_its_id():
    turns = [_Turn("c-aaaaaa111111", 1, "same question"), _Turn("c-bbbbbb222222", 1, "same question")]
    labels = conversation_labels(["c-aaaaaa111111", "c-bbbbbb222222"], turns)
    assert len(set(labels.values())) == 2
    assert labels["c-bbbbbb222222"].endswith("222222")


def test_the_unsaved_new_conversation_is_offered_only_while_it_is_current():
    turns = [_Turn("c-1", 1, "first")]
    assert list(conversation_choices(NEW_CONVERSATION, ["c-1"], turns)) == [NEW_CONVERSATION, "c-1"]
    assert list(conversation_choices("c-1", ["c-1"], turns)) == ["c-1"]


# -- the Chat page, two browser sessions ----------------------------------------------
@pytest.fixture(scope="module")
def chat_kb(tmp_path_factory, embedder):
    with app_home(tmp_path_factory.mktemp("conversations") / "home"):
        yield build_kb(Settings.from_env(), embedder)


def run(at: AppTest) -> AppTest:
    at = at.run(timeout=TIMEOUT)
    assert not at.exception, [e.value for e in at.exception]
    return at


def browser(**params: str) -> AppTest:
    """A fresh browser session on the Chat page (``params``: the URL's query)."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.query_params.update(params)
    return run(at)


def send(at: AppTest, question: str) -> AppTest:
    return run(at.chat_input(key="chat_input").set_value(question))


def shown_questions(at: AppTest) -> list[str]:
    return [texts(m.markdown) for m in at.chat_message if m.name == "user"]


def test_two_browsers_keep_their_histories_apart(chat_kb):
    a, b = browser(), browser()
    assert a.selectbox(key="conversation").value == NEW_CONVERSATION
    send(a, ANSWERABLE)
    send(b, ZEBRA_QUESTION)
    conv_a, conv_b = a.query_params["c"], b.query_params["c"]
    assert conv_a != conv_b and conv_a.startswith("c-") and conv_b.startswith("c-")
    assert [t.question for t in ask.history(chat_kb, conv_a)] == [ANSWERABLE]
    assert [t.question for t in ask.history(chat_kb, conv_b)] == [ZEBRA_QUESTION]

    send(a, SICK_QUESTION)  # the second question joins the first; the first stays on screen
    assert a.query_params["c"] == conv_a and a.selectbox(key="conversation").value == conv_a
    assert shown_questions(a) == [md_escape(ANSWERABLE), md_escape(SICK_QUESTION)]
    assert [t.question for t in ask.history(chat_kb, conv_a)] == [ANSWERABLE, SICK_QUESTION]
    assert shown_questions(b) == [md_escape(ZEBRA_QUESTION)]
    assert NEW_CONVERSATION_LABEL not in ask.conversations(chat_kb)


def test_new_conversation_button_starts_one_that_shares_nothing(chat_kb):
    a = browser()
    send(a, ANSWERABLE)
    first = a.query_params["c"]
    run(a.button(key="new_conversation").click())
    assert a.selectbox(key="conversation").value == NEW_CONVERSATION
    assert "c" not in a.query_params and len(a.chat_message) == 0
    send(a, ZEBRA_QUESTION)
    second = a.query_params["c"]
    assert second not in (first, NEW_CONVERSATION)
    assert [t.question for t in ask.history(chat_kb, second)] == [ZEBRA_QUESTION]


def test_a_link_reopens_its_conversation_and_a_fresh_visit_starts_a_new_one(chat_kb):
    conv = next(c for c in ask.conversations(chat_kb) if ask.history(chat_kb, c))
    linked = browser(c=conv)
    assert linked.selectbox(key="conversation").value == conv
    assert shown_questions(linked) == [md_escape(t.question) for t in ask.history(chat_kb, conv)]

    fresh = browser()  # no ?c=: a new conversation, never another browser's latest one
    assert fresh.selectbox(key="conversation").value == NEW_CONVERSATION and len(fresh.chat_message) == 0
    first_question = ask.history(chat_kb, conv)[0].question
    assert any(o.startswith(first_question[:40]) for o in fresh.selectbox(key="conversation").options)
    run(fresh.selectbox(key="conversation").set_value(conv))  # the picker opens a past one
    assert fresh.query_params["c"] == conv and len(fresh.chat_message) == 2 * len(ask.history(chat_kb, conv))


def test_a_link_to_the_old_shared_label_opens_a_new_conversation(chat_kb):
    at = browser(c=NEW_CONVERSATION_LABEL)
    assert at.selectbox(key="conversation").value == NEW_CONVERSATION
    send(at, ANSWERABLE)
    assert at.query_params["c"].startswith("c-")
