"""Provenance records shared by ingestion, stores, retrieval and answers.

A parser turns a file into a ``ParsedDocument``: one normalized text plus the page
and heading spans inside it (character offsets into ``text``). The chunker cuts it
into ``ChunkSpan``s; the ingest pipeline stamps them with document id and revision
to make ``ChunkRecord``s, whose id is ``doc:rev:page:idx``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class PageSpan:
    """Page ``page`` (1-based) covers ``text[start:end]``."""

    page: int
    start: int
    end: int


@dataclass(frozen=True)
class Heading:
    """A heading of ``level`` (1 = top) whose title occupies ``text[start:end]``."""

    level: int
    title: str
    start: int
    end: int


@dataclass(frozen=True)
class ParsedDocument:
    text: str
    pages: tuple[PageSpan, ...]
    headings: tuple[Heading, ...]
    parser: str
    parser_version: str

    @property
    def page_count(self) -> int:
        return len(self.pages)


@dataclass(frozen=True)
class ChunkSpan:
    """A chunk before it belongs to a revision: ``text == parsed.text[start:end]``."""

    page: int
    idx: int
    start: int
    end: int
    heading_path: tuple[str, ...]
    text: str


HEADER_MAX_CHARS = 160  # longest heading context indexed with a chunk


def context_header(heading_path: tuple[str, ...], text: str = "") -> str:
    """The heading context a chunk is indexed with ("Policy > Per diem"), capped at
    ``HEADER_MAX_CHARS``; the innermost heading is left out when the chunk's first line already
    carries it (the first chunk of a section)."""
    path = list(heading_path)
    if path and path[-1] in text.split("\n", 1)[0]:
        path.pop()
    return " > ".join(path)[:HEADER_MAX_CHARS]


def index_text(heading_path: tuple[str, ...], text: str) -> str:
    """What the retrievers index for a chunk: its heading context, a blank line, its text.

    Every chunk of a section then matches its section's (and document's) title, not only the
    first one; the stored and displayed text stays ``text``, exactly the source's characters.
    """
    header = context_header(heading_path, text)
    return f"{header}\n\n{text}" if header else text


@dataclass(frozen=True)
class ChunkRecord:
    id: str
    doc_id: str
    revision: int
    page: int
    idx: int
    char_start: int
    char_end: int
    heading_path: tuple[str, ...]
    text: str
    doc_name: str = ""

    @staticmethod
    def make_id(doc_id: str, revision: int, page: int, idx: int) -> str:
        return f"{doc_id}:{revision}:{page}:{idx}"

    @staticmethod
    def doc_of(chunk_id: str) -> str:
        """The document id inside a chunk id (``doc:rev:page:idx``)."""
        return chunk_id.rsplit(":", 3)[0]

    @property
    def index_text(self) -> str:
        """The text embedded and BM25-indexed for this chunk (see :func:`index_text`)."""
        return index_text(self.heading_path, self.text)

    def metadata(self) -> dict[str, Any]:
        """Flat metadata for Chroma (scalars only)."""
        return {
            "doc_id": self.doc_id,
            "revision": self.revision,
            "page": self.page,
            "idx": self.idx,
            "char_start": self.char_start,
            "char_end": self.char_end,
            "heading_path": " > ".join(self.heading_path),
            "doc_name": self.doc_name,
        }

    @classmethod
    def from_metadata(cls, chunk_id: str, text: str, meta: dict[str, Any]) -> ChunkRecord:
        hp = meta.get("heading_path") or ""
        return cls(
            id=chunk_id,
            doc_id=str(meta["doc_id"]),
            revision=int(meta["revision"]),
            page=int(meta["page"]),
            idx=int(meta["idx"]),
            char_start=int(meta["char_start"]),
            char_end=int(meta["char_end"]),
            heading_path=tuple(hp.split(" > ")) if hp else (),
            text=text,
            doc_name=str(meta.get("doc_name", "")),
        )


@dataclass(frozen=True)
class DocumentRecord:
    id: str
    kb: str
    name: str
    content_hash: str
    revision: int
    parser: str
    parser_version: str
    size_bytes: int
    pages: int
    chunks: int
    created_at: str
    embed_model: str
    tags: tuple[str, ...] = field(default_factory=tuple)
    doc_date: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Hit:
    """One retriever result: the chunk and that retriever's own score (higher is better)."""

    chunk: ChunkRecord
    score: float


@dataclass(frozen=True)
class EvidencePassage:
    """One passage of the evidence an answer is drafted from ([n] cites the n-th): what the answer
    stage reads from retrieval, and all it reads. Retrieval makes these from its kept candidates
    (``rag.retrieval.trace.Trace.passages``); the stage scores live in the trace, not here."""

    chunk_id: str
    doc_id: str
    doc_name: str
    page: int
    heading_path: tuple[str, ...]
    text: str
    char_start: int  # the chunk is document_text[char_start:char_end] (normalized text)
    char_end: int
    rerank_score: float | None = None  # shown beside the passage in Chat; no answer rule reads it
    expanded_from: str | None = None  # set for a neighbour chunk added around a kept one
    source_deleted: bool = False  # its document was deleted since: the text is gone, the ids stay


@dataclass
class ModelLabel:
    """Which model produced a score, and whether it is a stand-in for what was configured."""

    backend: str
    model: str
    stand_in: bool = False
    note: str = ""

    def __str__(self) -> str:
        s = f"{self.backend}:{self.model}"
        return f"{s} (stand-in: {self.note})" if self.stand_in else s


@dataclass(frozen=True)
class TermStats:
    """Chunk counts for some BM25 terms within a scope (all chunks, or a filter's documents)."""

    chunks: int  # chunks in the scope
    df: dict[str, int]  # term -> chunks of the scope that contain it
    near: dict[str, str] = field(default_factory=dict)  # absent term -> how it is present after all


@dataclass(frozen=True)
class MultilingualIndex:
    """How far a knowledge base's chunks for the multilingual embedder have its vectors (an index
    built before there was one has none: reindex adds them, nothing else changes)."""

    model: str  # the multilingual embedder
    chunks: int  # active chunks that call for its vector (RAG_MULTILINGUAL_CHUNKS)
    embedded: int  # of those, how many have one

    @property
    def missing(self) -> int:
        return self.chunks - self.embedded

    @property
    def complete(self) -> bool:
        return self.missing == 0
