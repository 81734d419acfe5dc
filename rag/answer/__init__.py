"""Answers with verified citations: generators, validation (fail-closed), spans, streaming.

Entry points: ``answer_question`` (an ``Answer``) and ``stream_answer`` (``AnswerEvent``s).
The LLM hook both stages use lives below them, in ``rag.llm``.
"""

from rag.answer.base import GENERATORS, DraftRequest, Generator, make_generator
from rag.answer.citations import CitationValidator, parse_citations, strip_citations
from rag.answer.pipeline import MAX_CORRECTIONS, answer_question, stream_answer
from rag.answer.result import (
    Answer,
    AnswerEvent,
    AnswerSentence,
    Citation,
    DraftRejection,
    EventKind,
    Issue,
    IssueCode,
    Outcome,
    SentenceKind,
)
from rag.answer.scripted import ScriptedLLM
from rag.answer.spans import render_markdown
from rag.answer.support import Embed, EvidenceIndex, SupportScore, score_support

# the refusal text (weak evidence or failed validation), in the question's language
from rag.retrieval.fallback import REFUSAL_TEXT, REFUSAL_TEXT_ZH, refusal_text

__all__ = [
    "GENERATORS",
    "MAX_CORRECTIONS",
    "REFUSAL_TEXT",
    "REFUSAL_TEXT_ZH",
    "Answer",
    "AnswerEvent",
    "AnswerSentence",
    "Citation",
    "CitationValidator",
    "DraftRejection",
    "DraftRequest",
    "Embed",
    "EventKind",
    "EvidenceIndex",
    "Generator",
    "Issue",
    "IssueCode",
    "Outcome",
    "ScriptedLLM",
    "SentenceKind",
    "SupportScore",
    "answer_question",
    "make_generator",
    "parse_citations",
    "refusal_text",
    "render_markdown",
    "score_support",
    "stream_answer",
    "strip_citations",
]
