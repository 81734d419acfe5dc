"""A user's conversations in one knowledge base, for the Chat page's picker, computed without
Streamlit: which one to show, and a unique readable label for each."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from rag import ask
from rag.kb import KnowledgeBase
from rag.store.access import Principal
from rag.views.ledger import preview

INSPECTOR_CONVERSATION = "inspector"  # questions asked from the Inspector are kept out of Chat's list
# The picker's entry for a conversation with no turn yet. It is never an id: a conversation gets
# its own id (new_conversation_id) when its first question is asked, so two never share one.
NEW_CONVERSATION = ""
NEW_CONVERSATION_LABEL = "New conversation"


def new_conversation_id() -> str:
    """A fresh conversation id, unique across browsers and restarts."""
    return f"c-{uuid.uuid4().hex}"


def asked_in(conversation: str) -> str:
    """The conversation a question goes to: the one shown, or a new id for a new one (a
    conversation gets its id with its first turn)."""
    return conversation or new_conversation_id()


def conversation_labels(order: list[str], turns) -> dict[str, str]:
    """A readable label per conversation id (its first question seen, and when), in ``order``.
    Labels are unique (the picker maps a label back to its id): a repeated one gets the id's end."""
    first: dict[str, object] = {}
    for t in sorted(turns, key=lambda t: (t.conversation, t.seq)):
        first.setdefault(t.conversation, t)
    labels: dict[str, str] = {}
    for conv in order:
        if conv in (INSPECTOR_CONVERSATION, NEW_CONVERSATION):
            continue
        t = first.get(conv)
        label = f"{preview(t.question, 60)} · {t.created_at[:16].replace('T', ' ')}" if t else conv
        if label in labels.values() or label == NEW_CONVERSATION_LABEL:
            label = f"{label} · {conv[-6:]}"
        labels[conv] = label
    return labels


def current_conversation(wanted: str, saved: list[str]) -> str:
    """The conversation to show: ``wanted`` (from the URL or this browser's session) when it is a
    saved conversation of this knowledge base, else a new one (an unknown or stale link never
    opens someone else's or creates a shared id)."""
    return wanted if wanted in saved else NEW_CONVERSATION


def conversation_choices(current: str, order: list[str], turns) -> dict[str, str]:
    """The picker's options, id -> label: the saved conversations, with the unsaved new one first
    when it is the current one."""
    labels = conversation_labels(order, turns)
    return {NEW_CONVERSATION: NEW_CONVERSATION_LABEL, **labels} if current not in labels else labels


@dataclass(frozen=True)
class Picker:
    current: str  # the conversation shown (NEW_CONVERSATION when none is saved under ``wanted``)
    options: dict[str, str]  # id -> label, in the picker's order


def conversation_picker(kb: KnowledgeBase, principal: Principal, wanted: str) -> Picker:
    """The picker for ``principal`` in ``kb``: their Chat conversations (never the Inspector's),
    newest first, and ``wanted`` (from the URL or the browser's session) when it is one of them."""
    order = [c for c in ask.conversations(kb, principal) if c != INSPECTOR_CONVERSATION]
    current = current_conversation(wanted, order)
    return Picker(current, conversation_choices(current, order, ask.recent_turns(kb, 500, principal)))
