"""The Inspector's source view: each evidence chunk with its cited spans highlighted, and its neighbours.

Citation spans are document offsets, so the same span highlights correctly in the chunk and in
an overlapping neighbour. All text is escaped by ``rag.views.highlight`` before any markup is added.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from rag.answer import Answer, Citation
from rag.records import ChunkRecord
from rag.retrieval.matches import TermMatch
from rag.retrieval.trace import Trace
from rag.views.highlight import Span, breadcrumb, deleted_html, passage_html, term_spans


@dataclass
class Passage:
    chunk_id: str
    where: str  # Markdown breadcrumb (escaped)
    html: str  # escaped text with <mark> spans
    marks: int  # how many highlighted spans


@dataclass
class SourceView:
    n: int  # evidence number [n]
    main: Passage
    cited_by: list[int]  # citation numbers that point here
    score: float | None
    neighbour_of: str | None  # set when expansion added this chunk
    neighbours: list[Passage] = field(default_factory=list)


def local_spans(cites: Sequence[Citation], start: int, end: int) -> list[Span]:
    """Citation spans (document offsets) that fall in ``[start, end)``, moved to chunk offsets."""
    out = []
    for c in cites:
        lo, hi = max(c.start, start), min(c.end, end)
        if hi > lo:
            out.append(Span(lo - start, hi - start, str(c.n)))
    return out


def _passage(chunk_id: str, doc: str, page: int, heading, text: str, start: int, cites, dim=False, terms=()) -> Passage:
    spans = local_spans(cites, start, start + len(text))
    html = passage_html(text, spans, dim=dim, terms=term_spans(text, terms))
    return Passage(chunk_id, breadcrumb(doc, page, heading), html, len(spans))


def source_views(
    trace: Trace,
    answer: Answer | None,
    neighbours: Callable[[str], list[ChunkRecord]] | None = None,
    matches: Mapping[str, TermMatch] | None = None,
) -> list[SourceView]:
    """One view per evidence chunk in [n] order; neighbours not already in the evidence are added dimmed.
    With ``matches`` the query terms BM25 matched in each chunk are marked beside the cited spans."""
    evidence = trace.evidence()
    cites = list(answer.citations) if answer and not answer.refused else []
    in_evidence = {c.chunk_id for c in evidence}
    views = []
    for n, c in enumerate(evidence, start=1):
        mine = [x for x in cites if x.doc_id == c.doc_id]
        terms = matches[c.chunk_id].terms if matches and c.chunk_id in matches else ()
        main = _passage(
            c.chunk_id, c.doc_name or c.doc_id, c.page, c.heading_path, c.text, c.char_start, mine, False, terms
        )
        if c.source_deleted:
            main = Passage(c.chunk_id, main.where, deleted_html(), 0)
        near = []
        for nb in neighbours(c.chunk_id) if neighbours and not c.expanded_from else []:
            if nb.id not in in_evidence:
                doc = nb.doc_name or nb.doc_id
                near.append(_passage(nb.id, doc, nb.page, nb.heading_path, nb.text, nb.char_start, mine, dim=True))
        cited_by = sorted({x.n for x in cites if x.chunk_id == c.chunk_id})
        views.append(SourceView(n, main, cited_by, c.rerank_score, c.expanded_from, near))
    return views
