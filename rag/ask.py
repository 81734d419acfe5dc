"""Ask: retrieve (traced) -> answer (validated) -> persist the chat turn linked to its trace.

Chat, the Inspector, the CLI and evaluation all go through here, so the Inspector
reproduces exactly what Chat did: same settings, same code path, same trace.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

from rag.answer import Answer, AnswerEvent, EventKind, stream_answer
from rag.config import Settings
from rag.retrieval.pipeline import retrieve
from rag.retrieval.trace import FallbackAction, ModelLabel, Trace
from rag.store.catalog import now


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

    @property
    def kind(self) -> str:
        """answer | refusal | clarify"""
        if self.answer.refusal_reason.startswith("clarify:"):
            return "clarify"
        return "refusal" if self.answer.refused else "answer"


def _no_generation_answer(question: str, trace: Trace) -> Answer:
    """The fallback decided not to answer: show its message (question back or refusal) and reason."""
    fb = trace.fallback
    prefix = "clarify: " if fb.action is FallbackAction.CLARIFY else "fallback: "
    return Answer(
        question=question,
        text=fb.message,
        generator=ModelLabel("fallback", fb.judged_by),
        refused=True,
        refusal_reason=prefix + fb.reason,
    )


def stream_ask(
    kb, question: str, settings: Settings | None = None, llm=None, conversation: str = "default", filters=None
) -> Iterator[tuple[str, object]]:
    """Yields ("trace", Trace), then ("event", AnswerEvent)…, then ("turn", Turn) once persisted."""
    settings = settings or kb.settings
    trace = retrieve(kb, question, settings, filters=filters, llm=llm)
    yield "trace", trace
    fb = trace.fallback
    if fb is not None and fb.action in (FallbackAction.CLARIFY, FallbackAction.REJECT):
        answer = _no_generation_answer(question, trace)
        yield "event", AnswerEvent(EventKind.FINAL, answer=answer)
    else:
        answer = None
        for event in stream_answer(question, trace.evidence(), settings, kb.embedder.embed_texts, llm):
            if event.kind is EventKind.FINAL:
                answer = event.answer
            yield "event", event
    turn = Turn(kb.name, conversation, question, answer, trace.id)
    save_turn(kb, turn)
    yield "turn", turn


def ask(
    kb, question: str, settings: Settings | None = None, llm=None, conversation: str = "default", filters=None
) -> tuple[Turn, Trace]:
    trace = turn = None
    for kind, payload in stream_ask(kb, question, settings, llm, conversation, filters):
        if kind == "trace":
            trace = payload
        elif kind == "turn":
            turn = payload
    return turn, trace


# -- history ------------------------------------------------------------------------
def save_turn(kb, turn: Turn) -> None:
    with kb.catalog.tx() as db:
        row = db.execute(
            "SELECT COALESCE(MAX(seq), 0) + 1 FROM chat_turns WHERE kb=? AND conversation=?",
            (turn.kb, turn.conversation),
        ).fetchone()
        turn.seq = int(row[0])
        db.execute(
            "INSERT INTO chat_turns VALUES (?,?,?,?,?,?,?,?)",
            (
                turn.id,
                turn.kb,
                turn.conversation,
                turn.seq,
                turn.question,
                turn.answer.to_json(),
                turn.trace_id,
                turn.created_at,
            ),
        )


def history(kb, conversation: str = "default") -> list[Turn]:
    rows = kb.catalog.q("SELECT * FROM chat_turns WHERE kb=? AND conversation=? ORDER BY seq", kb.name, conversation)
    return [_turn(r) for r in rows]


def get_turn(kb, turn_id: str) -> Turn | None:
    rows = kb.catalog.q("SELECT * FROM chat_turns WHERE id=?", turn_id)
    return _turn(rows[0]) if rows else None


def recent_turns(kb, limit: int = 100) -> list[Turn]:
    rows = kb.catalog.q(
        "SELECT * FROM chat_turns WHERE kb=? ORDER BY created_at DESC, seq DESC LIMIT ?", kb.name, limit
    )
    return [_turn(r) for r in rows]


def conversations(kb) -> list[str]:
    rows = kb.catalog.q(
        "SELECT conversation, MAX(created_at) AS last FROM chat_turns WHERE kb=? "
        "GROUP BY conversation ORDER BY last DESC",
        kb.name,
    )
    return [r[0] for r in rows]


def clear_conversation(kb, conversation: str) -> None:
    with kb.catalog.tx() as db:
        db.execute("DELETE FROM chat_turns WHERE kb=? AND conversation=?", (kb.name, conversation))


def load_trace(kb, trace_id: str) -> Trace | None:
    blob = kb.catalog.load_trace_json(trace_id)
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
    )
