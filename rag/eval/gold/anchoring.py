"""Anchor gold-set evidence to character spans, and map spans onto whatever chunks exist now.

Labels are stored as quotes or character spans of a document's normalized text, not as
chunk ids, so they survive re-chunking. The rule that turns a span into relevant chunks:

    a chunk [cs, ce) of document D is relevant to a labelled span [s, e) of D when
    overlap = min(e, ce) - max(s, cs) > 0 and either
      overlap >= min(MIN_OVERLAP_FRACTION * (e - s), MIN_OVERLAP_CHARS)   (enough of the span)
      or overlap >= MIN_OVERLAP_FRACTION * (ce - cs)                      (mostly the span)

i.e. the chunk holds at least half of a short span, or at least 100 characters of a long
one, or is itself mostly made of the span (small chunks inside a long labelled section).
So whenever chunks cover the text, every span has at least one relevant chunk, whatever
the chunk size and overlap. A chunk matching several passages takes the highest grade. A whole-document label makes
every chunk of that document relevant; a ``chunk_id`` label is taken as is.

Quotes are found by whitespace-normalized search (:func:`find_quote`).
"""

from __future__ import annotations

import logging
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import NamedTuple, Protocol

from rag.errors import GoldSetError
from rag.eval.gold.goldset import GoldItem, GoldSet, Passage
from rag.records import ChunkRecord, ParsedDocument

log = logging.getLogger(__name__)

MIN_OVERLAP_FRACTION = 0.5
MIN_OVERLAP_CHARS = 100

_TYPOGRAPHY = str.maketrans(
    {"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-", "\u2014": "-", "\u00ad": ""}
)


class Span(NamedTuple):
    start: int
    end: int


class ChunkLike(Protocol):
    """What span matching needs from a chunk. ``ChunkRecord`` (id in ``id``) and the trace's
    ``Candidate`` (id in ``chunk_id``) both fit."""

    @property
    def doc_id(self) -> str: ...
    @property
    def doc_name(self) -> str: ...
    @property
    def char_start(self) -> int: ...
    @property
    def char_end(self) -> int: ...
    @property
    def text(self) -> str: ...


Documents = Mapping[str, str | ParsedDocument]


def normalize_for_match(text: str, keep_spaces: bool = True) -> tuple[str, list[int]]:
    """NFKC-normalize, unify typographic quotes and dashes, collapse whitespace runs to one space
    (or drop whitespace when ``keep_spaces`` is false). Returns the string and, for each of its
    characters, the index in ``text`` it came from."""
    chars: list[str] = []
    origin: list[int] = []
    gap_at = -1
    for i, ch in enumerate(text):
        if ch.isspace():
            gap_at = i if gap_at < 0 else gap_at
            continue
        if gap_at >= 0 and chars and keep_spaces:
            chars.append(" ")
            origin.append(gap_at)
        gap_at = -1
        for out in unicodedata.normalize("NFKC", ch).translate(_TYPOGRAPHY):
            chars.append(" " if out.isspace() else out)
            origin.append(i)
    return "".join(chars), origin


def find_quote(text: str, quote: str) -> Span | None:
    """The first span of ``text`` matching ``quote`` up to whitespace and typography, or None.

    Whitespace runs match any whitespace run; failing that, whitespace is ignored altogether
    (PDF extraction may break lines inside words or between CJK characters)."""
    for keep_spaces in (True, False):
        hay, origin = normalize_for_match(text, keep_spaces)
        needle, _ = normalize_for_match(quote, keep_spaces)
        if not needle:
            return None
        at = hay.find(needle)
        if at >= 0:
            if hay.find(needle, at + 1) >= 0:
                log.info("quote %r occurs more than once; using the first occurrence", quote[:40])
            return Span(origin[at], origin[at + len(needle) - 1] + 1)
    return None


def span_matches_chunk(span: Span, chunk_start: int, chunk_end: int) -> bool:
    """The overlap rule of this module's docstring."""
    overlap = min(span.end, chunk_end) - max(span.start, chunk_start)
    if overlap <= 0:
        return False
    enough_of_span = overlap >= min(MIN_OVERLAP_FRACTION * (span.end - span.start), MIN_OVERLAP_CHARS)
    return enough_of_span or overlap >= MIN_OVERLAP_FRACTION * (chunk_end - chunk_start)


def relevant_chunk_ids(
    item: GoldItem, chunks: Iterable[ChunkLike], documents: Documents | None = None
) -> dict[str, int]:
    """``{chunk_id: grade}`` for the chunks that the item's relevant passages point at.

    Unanchored quotes are resolved against ``documents[doc]`` when given, else against the
    text rebuilt from ``chunks`` (pass every chunk of the document, or anchor the gold set
    first with :func:`anchor_goldset` and then any subset of chunks will do)."""
    return passage_chunk_ids(item.relevant, chunks, documents, item)


def passage_chunk_ids(
    passages: Iterable[Passage],
    chunks: Iterable[ChunkLike],
    documents: Documents | None = None,
    item: GoldItem | None = None,
) -> dict[str, int]:
    """``{chunk_id: grade}`` for any passages (e.g. ``item.hard_negatives``)."""
    by_doc = _group_by_doc(chunks)
    grades: dict[str, int] = {}
    for passage in passages:
        for chunk_id in _matching_chunks(passage, by_doc, documents, item):
            grades[chunk_id] = max(grades.get(chunk_id, 0), passage.grade)
    return grades


def relevant_doc_grades(item: GoldItem, aliases: Mapping[str, str] | None = None) -> dict[str, int]:
    """``{document: grade}`` from ``expected_docs`` (grade 1) and the relevant passages.

    ``aliases`` maps document names to ids, so labels written with names and with ids meet;
    a chunk label counts for the document id at the front of its ``doc:rev:page:idx`` id."""
    aliases = aliases or {}
    grades: dict[str, int] = {}
    pairs = [(doc, 1) for doc in item.expected_docs]
    pairs += [(p.doc or ChunkRecord.doc_of(p.chunk_id), p.grade) for p in item.relevant]
    for doc, grade in pairs:
        key = aliases.get(doc, doc)
        grades[key] = max(grades.get(key, 0), grade)
    return grades


def ranked_doc_ids(chunks: Iterable[ChunkLike]) -> list[str]:
    """Document ids in order of their first chunk in a ranked chunk list."""
    return list(dict.fromkeys(chunk.doc_id for chunk in chunks))


def anchor_goldset(gold: GoldSet, documents: Documents) -> GoldSet:
    """Resolve every quote to a span of its document's text and check every label against
    ``documents`` (name or id -> normalized text or ``ParsedDocument``). Raises
    ``GoldSetError`` naming the item when a document is missing or a quote is not found."""
    return gold.with_items(anchor_item(item, documents) for item in gold.items)


def anchor_item(item: GoldItem, documents: Documents) -> GoldItem:
    for doc in item.expected_docs:
        _document(doc, documents, item)
    return replace(
        item,
        relevant=tuple(_anchor(p, documents, item) for p in item.relevant),
        hard_negatives=tuple(_anchor(p, documents, item) for p in item.hard_negatives),
    )


def _anchor(passage: Passage, documents: Documents, item: GoldItem) -> Passage:
    if passage.kind in ("chunk", "document"):
        if passage.doc:
            _document(passage.doc, documents, item)
        return passage
    doc = _document(passage.doc, documents, item)
    text = doc.text if isinstance(doc, ParsedDocument) else doc
    span = _resolve(passage, text, item)
    if passage.page is not None and isinstance(doc, ParsedDocument):
        _check_page(passage, span, doc, item)
    return replace(passage, start=span.start, end=span.end)


def _resolve(passage: Passage, text: str, item: GoldItem) -> Span:
    if passage.start is not None and passage.end is not None:
        span = Span(passage.start, passage.end)
        if span.end > len(text):
            raise _label_error(item, passage, f"span ends at {span.end}, past the end of the text ({len(text)})")
        if passage.quote and find_quote(text[span.start : span.end], passage.quote) is None:
            raise _label_error(item, passage, f"text[{span.start}:{span.end}] does not contain the quote")
        return span
    found = find_quote(text, passage.quote)
    if found is None:
        raise _label_error(item, passage, f"quote {passage.quote[:60]!r} is not in the document's text")
    return found


def _check_page(passage: Passage, span: Span, doc: ParsedDocument, item: GoldItem) -> None:
    pages = [p.page for p in doc.pages if min(p.end, span.end) > max(p.start, span.start)]
    if passage.page not in pages:
        raise _label_error(item, passage, f"the passage is on page(s) {pages}, not page {passage.page}")


def _document(name: str, documents: Documents, item: GoldItem) -> str | ParsedDocument:
    if name not in documents:
        raise GoldSetError(
            f"{_item_where(item)}: document '{name}' is not in the knowledge base.",
            fix="Ingest it, or correct the document name in the gold set (see docs/GOLDSETS.md).",
        )
    return documents[name]


def _label_error(item: GoldItem, passage: Passage, what: str) -> GoldSetError:
    return GoldSetError(
        f"{_item_where(item)}: passage in '{passage.doc}': {what}.",
        fix="Copy the quote verbatim from the document as the app shows it, or fix the offsets.",
    )


def _item_where(item: GoldItem | None) -> str:
    if item is None:
        return "gold set"
    return f"question '{item.id}'" + (f" (line {item.line})" if item.line else "")


def _group_by_doc(chunks: Iterable[ChunkLike]) -> dict[str, list[ChunkLike]]:
    """Chunks keyed by document id and by document name."""
    by_doc: dict[str, list[ChunkLike]] = {}
    for chunk in chunks:
        for key in {chunk.doc_id, chunk.doc_name} - {""}:
            by_doc.setdefault(key, []).append(chunk)
    return by_doc


def _matching_chunks(
    passage: Passage, by_doc: dict[str, list[ChunkLike]], documents: Documents | None, item: GoldItem | None
) -> list[str]:
    if passage.kind == "chunk":
        return [passage.chunk_id]
    chunks = by_doc.get(passage.doc, [])
    if passage.kind == "document":
        return [chunk_id_of(c) for c in chunks]
    span = _passage_span(passage, chunks, documents, item)
    return [chunk_id_of(c) for c in chunks if span_matches_chunk(span, c.char_start, c.char_end)]


def _passage_span(
    passage: Passage, chunks: Sequence[ChunkLike], documents: Documents | None, item: GoldItem | None
) -> Span:
    if passage.start is not None and passage.end is not None:
        return Span(passage.start, passage.end)
    if documents is not None and passage.doc in documents:
        doc = documents[passage.doc]
        text = doc.text if isinstance(doc, ParsedDocument) else doc
    else:
        text = rebuild_text(chunks)
    found = find_quote(text, passage.quote)
    if found is None:
        raise GoldSetError(
            f"{_item_where(item)}: quote {passage.quote[:60]!r} was not found in document '{passage.doc}'.",
            fix="Anchor the gold set against the documents first (anchor_goldset), or pass all of its chunks.",
        )
    return found


def chunk_id_of(chunk: ChunkLike) -> str:
    """The chunk's id, whether it is a ``ChunkRecord`` (``id``) or a ``Candidate`` (``chunk_id``)."""
    chunk_id = getattr(chunk, "chunk_id", None) or getattr(chunk, "id", None)
    if not isinstance(chunk_id, str):
        raise ValueError(f"chunk {chunk!r} has neither an 'id' nor a 'chunk_id' string")
    return chunk_id


def rebuild_text(chunks: Iterable[ChunkLike]) -> str:
    """A document's text from its chunks, placed at their offsets (gaps become spaces)."""
    chunks = list(chunks)
    buf = [" "] * max((c.char_end for c in chunks), default=0)
    for chunk in chunks:
        if len(chunk.text) == chunk.char_end - chunk.char_start:
            buf[chunk.char_start : chunk.char_end] = list(chunk.text)
    return "".join(buf)
