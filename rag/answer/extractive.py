"""The default generator: no LLM, the answer is the evidence sentences that best answer the question.

Each evidence sentence is scored against the question (question-term coverage blended
with embedding cosine). The best few, verbatim, each followed by its [n], form the answer
in reading order: documents by relevance, sentences in document order. Nothing is added
but the citation markers and the spaces or line breaks between sentences (line wraps
inside a sentence become single spaces).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from llama_index.core.llms import LLM

from rag.answer import lexical
from rag.answer.base import DraftRequest, Generator, register
from rag.answer.citations import strip_citations
from rag.answer.sentences import CJK_RE, Segment
from rag.answer.support import W_EMBED, W_LEXICAL, Embed, EvidenceIndex
from rag.config import Settings
from rag.retrieval.trace import ModelLabel

MAX_SENTENCES = 3
MIN_SCORE = 0.3  # below this the best sentence does not answer the question: no answer
RELATIVE_CUT = 0.8  # further sentences must score at least this share of the best one
MIN_WORDS, MIN_CJK_CHARS = 4, 6  # shorter pieces are headings or fragments, not answers
_SOURCE_REF_RE = re.compile(r"\[(\s*\d[\d\s,，]*)\]")
_CJK_TERMINAL = ("。", "！", "？", "」", "』", "）")
_TERMINAL = (".", "!", "?", '"', "”", ")", *_CJK_TERMINAL)


@dataclass(frozen=True)
class Pick:
    n: int  # 1-based evidence number
    segment: Segment  # offsets inside the chunk text
    score: float


@register("extractive")
class ExtractiveGenerator(Generator):
    def __init__(self, label: ModelLabel | None = None) -> None:
        super().__init__(label or ModelLabel(backend="extractive", model="evidence-sentences"))

    @classmethod
    def build(cls, settings: Settings, embed: Embed | None, llm: LLM | None) -> Generator:
        model = "evidence-sentences" if embed is not None else "evidence-sentences (lexical only)"
        return cls(ModelLabel(backend="extractive", model=model))

    def draft(self, request: DraftRequest) -> Iterator[str]:
        picks = select_sentences(request)
        if picks:
            yield compose(picks)


def score_sentences(question: str, index: EvidenceIndex) -> list[Pick]:
    """Every usable evidence sentence with its score against the question."""
    q_tokens = lexical.content_tokens(question)
    q_vec = index.vector(question)
    picks = []
    for n, chunk in enumerate(index.chunks, start=1):
        vecs = index.sentence_vectors(n)
        for i, seg in enumerate(chunk.segments):
            lex = lexical.coverage(q_tokens, seg.text, chunk.tokens[i])
            if q_vec is None or vecs is None:
                score = lex
            else:
                score = W_LEXICAL * lex + W_EMBED * max(float(q_vec @ vecs[i]), 0.0)
            picks.append(Pick(n, seg, round(score, 4)))
    return picks


def select_sentences(request: DraftRequest) -> list[Pick]:
    """The best-scoring answer-like sentences, deduplicated, in reading order."""
    rejected = {lexical.normalize(strip_citations(i.sentence)) for _, issues in request.previous for i in issues}
    ranked = sorted(score_sentences(request.question, request.index), key=lambda p: -p.score)
    ranked = [p for p in ranked if _answer_like(p.segment.text) and lexical.normalize(p.segment.text) not in rejected]
    if not ranked or ranked[0].score < MIN_SCORE:
        return []
    cut = max(MIN_SCORE, RELATIVE_CUT * ranked[0].score)
    chosen: list[Pick] = []
    seen: list[str] = []
    for pick in ranked:
        norm = lexical.normalize(pick.segment.text)
        if pick.score < cut or len(chosen) == MAX_SENTENCES:
            break
        if any(norm in s or s in norm for s in seen):  # overlapping chunks repeat sentences
            continue
        chosen.append(pick)
        seen.append(norm)
    return _reading_order(chosen, request)


def _answer_like(text: str) -> bool:
    cjk = len(CJK_RE.findall(text))
    return cjk >= MIN_CJK_CHARS if cjk else len(text.split()) >= MIN_WORDS


def _reading_order(picks: list[Pick], request: DraftRequest) -> list[Pick]:
    """Documents in order of their best sentence; sentences in document order."""
    doc_of = {p.n: request.evidence[p.n - 1].doc_id for p in picks}
    doc_rank: dict[str, int] = {}
    for p in picks:
        doc_rank.setdefault(doc_of[p.n], len(doc_rank))

    def key(p: Pick) -> tuple[int, int]:
        return doc_rank[doc_of[p.n]], request.evidence[p.n - 1].char_start + p.segment.start

    return sorted(picks, key=key)


def compose(picks: list[Pick]) -> str:
    """Sentences verbatim, each followed by its [n], joined by a space (none after CJK) or a line break.

    Line wraps inside a sentence (PDF text) become single spaces, and the source's own
    bracketed numbers ("as shown in [3]") are Markdown-escaped so they are not read as citations.
    """
    out, prev = "", ""
    for pick in picks:
        text = _SOURCE_REF_RE.sub(r"\\[\1\\]", " ".join(pick.segment.text.split()))
        if prev:
            if not prev.endswith(_TERMINAL):
                out += "\n"
            elif not prev.endswith(_CJK_TERMINAL):
                out += " "
        out += text + (f"[{pick.n}]" if text.endswith(_CJK_TERMINAL) else f" [{pick.n}]")
        prev = text
    return out
