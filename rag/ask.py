"""Ask: retrieve (traced) -> answer (validated) -> persist the chat turn linked to its trace.

Chat, the Inspector, the CLI and evaluation all go through here, so the Inspector
reproduces exactly what Chat did: same settings, same code path, same trace.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from rag.answer import Answer, AnswerEvent, EventKind, Outcome, stream_answer
from rag.answer.meaning import MeaningSource
from rag.config import Settings
from rag.embedder import load_multilingual
from rag.kb import KnowledgeBase
from rag.limits import check_query
from rag.records import ModelLabel
from rag.retrieval.pipeline import retrieve
from rag.retrieval.trace import FallbackAction, Trace
from rag.source import KnowledgeSource
from rag.store import audit
from rag.store.access import LOCAL_OWNER, Action, Principal, require
from rag.store.catalog import now
from rag.text.question import analyse


@dataclass
class Turn:
    """One question and what the app showed for it."""

    kb: str
    conversation: str
    question: str
    answer: Answer
    trace_id: str
    seq: int = 0
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:16])
    created_at: str = field(default_factory=now)
    user: str = LOCAL_OWNER.id  # whose chat it is (Principal.id)

    @property
    def outcome(self) -> Outcome:
        return self.answer.outcome


@dataclass(frozen=True)
class TraceReady:
    """Retrieval is done: the trace (already stored) and the evidence it kept."""

    trace: Trace


@dataclass(frozen=True)
class Answering:
    """One event of the answer stream (evidence, draft, validated sentence, rejection, final)."""

    event: AnswerEvent


@dataclass(frozen=True)
class TurnDone:
    """The question is answered (or refused, or asked back); ``persisted``: saved to the chat history."""

    turn: Turn
    persisted: bool


AskEvent = TraceReady | Answering | TurnDone


def _no_generation_answer(question: str, trace: Trace) -> Answer:
    """The fallback decided not to answer: show its message (question back or refusal) and reason."""
    fb = trace.fallback
    return Answer(
        question=question,
        text=fb.message,
        generator=ModelLabel("fallback", fb.judged_by),
        outcome=Outcome.CLARIFY if fb.action is FallbackAction.CLARIFY else Outcome.REFUSAL,
        refusal_reason=fb.reason,
    )


def stream_ask(
    kb: KnowledgeSource,
    question: str,
    settings: Settings | None = None,
    llm: object | None = None,
    conversation: str = "default",
    filters: Mapping[str, Any] | None = None,
    persist: bool = True,
    principal: Principal = LOCAL_OWNER,
) -> Iterator[AskEvent]:
    """Yields ``TraceReady``, then ``Answering`` events, then ``TurnDone``.

    ``principal`` must be a reader of ``kb`` (PermissionDenied before anything is read); a saved
    turn is theirs and an audit entry. ``persist=False`` leaves the chat history alone
    (evaluation, which audits the run instead); the trace is stored either way."""
    require(kb.catalog, kb.name, principal, Action.ASK)
    settings = settings or kb.settings
    analysis = analyse(check_query((question or "").strip(), settings))  # read once, for both stages
    trace = retrieve(kb, analysis.text, settings, filters=filters, llm=llm, analysis=analysis)
    yield TraceReady(trace)
    fb = trace.fallback
    if fb is not None and fb.action in (FallbackAction.CLARIFY, FallbackAction.REJECT):
        answer = _no_generation_answer(question, trace)
        yield Answering(AnswerEvent(EventKind.FINAL, answer=answer))
    else:
        answer = None
        meaning = MeaningSource(lambda: load_multilingual(kb.settings), kb.get_sentence_embeddings)
        for event in stream_answer(
            analysis.text, trace.passages(), settings, kb.embedder.embed_texts, llm, analysis=analysis, meaning=meaning
        ):
            if event.kind is EventKind.FINAL:
                answer = event.answer
            yield Answering(event)
    turn = Turn(kb.name, conversation, question, answer, trace.id, user=principal.id)
    if persist:
        save_turn(kb, turn, principal)
    yield TurnDone(turn, persist)


def ask(
    kb: KnowledgeSource,
    question: str,
    settings: Settings | None = None,
    llm: object | None = None,
    conversation: str = "default",
    filters: Mapping[str, Any] | None = None,
    persist: bool = True,
    principal: Principal = LOCAL_OWNER,
) -> tuple[Turn, Trace]:
    """The whole ask at once: the turn (saved unless ``persist=False``) and its trace."""
    trace = turn = None
    for event in stream_ask(kb, question, settings, llm, conversation, filters, persist, principal):
        if isinstance(event, TraceReady):
            trace = event.trace
        elif isinstance(event, TurnDone):
            turn = event.turn
    return turn, trace


# -- history ------------------------------------------------------------------------
def save_turn(kb: KnowledgeBase, turn: Turn, principal: Principal = LOCAL_OWNER) -> None:
    """Append ``turn`` to its conversation (``turn.user``'s) with its audit entry, in one transaction."""
    with kb.catalog.tx() as db:
        row = db.execute(
            "SELECT COALESCE(MAX(seq), 0) + 1 FROM chat_turns WHERE kb=? AND conversation=? AND user_id=?",
            (turn.kb, turn.conversation, turn.user),
        ).fetchone()
        turn.seq = int(row[0])
        db.execute(
            "INSERT INTO chat_turns (id, kb, conversation, seq, question, answer_json, trace_id, created_at, user_id)"
            " VALUES (?,?,?,?,?,?,?,?,?)",
            (
                turn.id,
                turn.kb,
                turn.conversation,
                turn.seq,
                turn.question,
                turn.answer.to_json(),
                turn.trace_id,
                turn.created_at,
                turn.user,
            ),
        )
        detail = {"question": turn.question, "outcome": turn.outcome.value, "conversation": turn.conversation}
        audit.record(db, principal, "ask", turn.kb, turn.trace_id, detail)


def history(kb: KnowledgeBase, conversation: str = "default", principal: Principal = LOCAL_OWNER) -> list[Turn]:
    """``principal``'s turns in ``conversation`` (every user has their own chats)."""
    require(kb.catalog, kb.name, principal, Action.READ)
    rows = kb.catalog.q(
        "SELECT * FROM chat_turns WHERE kb=? AND conversation=? AND user_id=? ORDER BY seq",
        kb.name,
        conversation,
        principal.id,
    )
    return [_turn(r) for r in rows]


def get_turn(kb: KnowledgeBase, turn_id: str, principal: Principal = LOCAL_OWNER) -> Turn | None:
    """The turn, when it is ``principal``'s and in ``kb`` (an id from elsewhere finds nothing)."""
    require(kb.catalog, kb.name, principal, Action.INSPECT)
    rows = kb.catalog.q("SELECT * FROM chat_turns WHERE id=? AND kb=? AND user_id=?", turn_id, kb.name, principal.id)
    return _turn(rows[0]) if rows else None


def recent_turns(kb: KnowledgeBase, limit: int = 100, principal: Principal = LOCAL_OWNER) -> list[Turn]:
    require(kb.catalog, kb.name, principal, Action.READ)
    rows = kb.catalog.q(
        "SELECT * FROM chat_turns WHERE kb=? AND user_id=? ORDER BY created_at DESC, seq DESC LIMIT ?",
        kb.name,
        principal.id,
        limit,
    )
    return [_turn(r) for r in rows]


def conversations(kb: KnowledgeBase, principal: Principal = LOCAL_OWNER) -> list[str]:
    require(kb.catalog, kb.name, principal, Action.READ)
    rows = kb.catalog.q(
        "SELECT conversation, MAX(created_at) AS last FROM chat_turns WHERE kb=? AND user_id=? "
        "GROUP BY conversation ORDER BY last DESC",
        kb.name,
        principal.id,
    )
    return [r[0] for r in rows]


def clear_conversation(kb: KnowledgeBase, conversation: str, principal: Principal = LOCAL_OWNER) -> None:
    require(kb.catalog, kb.name, principal, Action.READ)
    with kb.catalog.tx() as db:
        db.execute(
            "DELETE FROM chat_turns WHERE kb=? AND conversation=? AND user_id=?", (kb.name, conversation, principal.id)
        )


def load_trace(kb: KnowledgeBase, trace_id: str, principal: Principal = LOCAL_OWNER) -> Trace | None:
    """The stored trace, when it is ``kb``'s (a trace id from another knowledge base finds nothing)."""
    require(kb.catalog, kb.name, principal, Action.INSPECT)
    blob = kb.catalog.load_trace_json(trace_id, kb.name)
    return Trace.from_json(blob) if blob else None


def _turn(r) -> Turn:
    return Turn(
        r["kb"],
        r["conversation"],
        r["question"],
        Answer.from_dict(json.loads(r["answer_json"])),
        r["trace_id"],
        r["seq"],
        r["id"],
        r["created_at"],
        r["user_id"],
    )
