"""Map accepted citations to source-document spans, and render answers with Markdown footnotes.

A chunk's text is ``document_text[chunk.char_start:chunk.char_end]``, so the supporting
sentence found inside the chunk moves to document offsets by adding ``char_start``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rag.answer.citations import CITATION_RE, SentenceCheck
from rag.answer.result import Answer, Citation
from rag.answer.support import SupportScore
from rag.records import EvidencePassage

_QUOTE_CHARS = 160  # footnotes show at most this much of the supporting span


def citation_for(n: int, sentence: int, score: SupportScore, chunk: EvidencePassage) -> Citation:
    """The document span of chunk ``n`` that supports sentence ``sentence``."""
    return Citation(
        n=n,
        sentence=sentence,
        chunk_id=chunk.chunk_id,
        doc_id=chunk.doc_id,
        doc_name=chunk.doc_name,
        page=chunk.page,
        heading_path=tuple(chunk.heading_path),
        start=chunk.char_start + score.start,
        end=chunk.char_start + score.end,
        chunk_char_start=chunk.char_start,
        quote=chunk.text[score.start : score.end],
        support=score.similarity,
        valid=True,
    )


def citations_for(checks: Sequence[SentenceCheck], evidence: Sequence[EvidencePassage]) -> list[Citation]:
    """One Citation per accepted [n] per sentence, in reading order."""
    out = []
    for i, check in enumerate(checks):
        for n in check.sentence.citations:
            if n in check.best:
                out.append(citation_for(n, i, check.best[n], evidence[n - 1]))
    return out


def render_markdown(answer: Answer) -> str:
    """The answer with [n] turned into Markdown footnotes naming document, page, section and quote."""
    if answer.refused:
        return answer.text
    body = answer.text.replace("![", "!\\[")  # no remote images from model output
    body = CITATION_RE.sub(lambda m: "".join(f"[^{n.strip()}]" for n in re.split(r"[,，]", m.group(1))), body)
    notes = []
    for n in sorted({c.n for c in answer.citations}):
        notes.append(f"[^{n}]: {_footnote(answer.citations_for(n))}")
    return body + ("\n\n" + "\n".join(notes) if notes else "")


def _footnote(cites: list[Citation]) -> str:
    first = cites[0]
    where = f"**{_escape(first.doc_name or first.doc_id)}**, p. {first.page}"
    if first.heading_path:
        where += " — " + " › ".join(_escape(h) for h in first.heading_path)
    quotes = dict.fromkeys(_shorten(c.quote) for c in cites)
    return where + ": " + " … ".join(f"“{q}”" for q in quotes)


def _shorten(text: str) -> str:
    text = " ".join(text.split())
    return _escape(text if len(text) <= _QUOTE_CHARS else text[: _QUOTE_CHARS - 1].rstrip() + "…")


def _escape(text: str) -> str:
    """Keep evidence text from being read as Markdown markup inside a footnote."""
    return re.sub(r"([\\`*_\[\]<>#|])", r"\\\1", text)
