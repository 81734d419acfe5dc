"""Ingest: file -> parse -> chunk -> embed -> write revision -> publish atomically -> drop old.

Files in one batch are embedded together (big batches keep the encoder busy) and
published in one catalog transaction; each file fails or succeeds on its own.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from rag.embedder import passage_key, sentence_texts
from rag.errors import LimitExceeded, RagError
from rag.ingest.chunking import chunk_document
from rag.ingest.parsers import current_parser, parse_file
from rag.ingest.safety import check_upload, file_kind, safe_name
from rag.records import ChunkRecord, ParsedDocument
from rag.store.catalog import now

WRITE_BATCH = 4096  # vectors per vector-store add (bounded request size in server mode)

log = logging.getLogger(__name__)

Progress = Callable[[str, str, float], None]  # (file name, stage, fraction of that stage done)


@dataclass
class UploadItem:
    name: str
    data: bytes
    tags: tuple[str, ...] = ()
    doc_date: str = ""


@dataclass
class IngestResult:
    name: str
    status: str  # added | updated | unchanged | failed
    doc_id: str = ""
    revision: int = 0
    pages: int = 0
    chunks: int = 0
    error: str = ""
    error_type: str = ""
    timings_ms: dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status != "failed"


@dataclass
class _Prepared:
    item: UploadItem
    result: IngestResult
    content_hash: str
    parsed: ParsedDocument
    chunks: list[ChunkRecord]
    previous: int | None  # active revision being replaced


def doc_id_for(name: str) -> str:
    return hashlib.sha1(name.encode("utf-8")).hexdigest()[:12]


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def prepare(kb, item: UploadItem, progress: Progress) -> _Prepared | IngestResult:
    """Validate, parse and chunk one file. Returns an IngestResult when there is nothing to write."""
    t0 = time.perf_counter()
    try:
        item.name = safe_name(item.name)
        check_upload(item.name, item.data, kb.settings.max_file_mb)
    except RagError as exc:
        return IngestResult(item.name, "failed", error=str(exc), error_type=type(exc).__name__)
    doc_id, digest = doc_id_for(item.name), content_hash(item.data)
    existing = kb.catalog.find_document(kb.name, item.name)
    previous = existing["active_revision"] if existing else None
    if previous is not None and kb.active_hash(doc_id) == digest and not _parser_changed(kb, doc_id, item.name):
        return IngestResult(item.name, "unchanged", doc_id=doc_id, revision=previous)
    try:
        progress(item.name, "parse", 0.0)
        parsed = parse_file(item.name, item.data, max_pages=kb.settings.max_pages)
        _check_chunk_floor(item.name, parsed.text, kb.settings)
        progress(item.name, "chunk", 0.0)
        spans = chunk_document(
            parsed,
            chunk_size=kb.settings.chunk_size,
            overlap=kb.settings.chunk_overlap,
            max_tokens=kb.embedder.max_tokens,
            token_len=kb.embedder.token_len,
        )
        if len(spans) > kb.settings.max_chunks_per_doc:
            raise LimitExceeded(
                f"'{item.name}' would make {len(spans)} chunks; the limit is {kb.settings.max_chunks_per_doc}.",
                fix="Split the document into smaller files, or raise RAG_MAX_CHUNKS_PER_DOC if you trust it.",
            )
    except RagError as exc:
        return IngestResult(item.name, "failed", doc_id=doc_id, error=str(exc), error_type=type(exc).__name__)
    revision = kb.next_revision(doc_id)
    chunks = [
        ChunkRecord(
            ChunkRecord.make_id(doc_id, revision, s.page, s.idx),
            doc_id,
            revision,
            s.page,
            s.idx,
            s.start,
            s.end,
            s.heading_path,
            s.text,
            item.name,
        )
        for s in spans
    ]
    status = "updated" if previous is not None else "added"
    result = IngestResult(item.name, status, doc_id, revision, parsed.page_count, len(chunks))
    result.timings_ms["parse_chunk"] = (time.perf_counter() - t0) * 1000
    return _Prepared(item, result, digest, parsed, chunks, previous)


def _parser_changed(kb, doc_id: str, name: str) -> bool:
    """The same bytes were parsed by another parser (a PDF read by pypdf before issue 15): re-parse."""
    current = current_parser(file_kind(name))
    return current is not None and kb.active_parser(doc_id) != current


def _check_chunk_floor(name: str, text: str, settings) -> None:
    """Refuse at once a text that can't fit ``max_chunks_per_doc`` (instead of chunking it all first).

    No chunk is longer than ``chunk_size`` and together they cover every non-space character, so
    ``non-space chars / chunk_size`` is a floor; halved for margin, it never refuses a text that fits.
    """
    floor = len("".join(text.split())) // (2 * settings.chunk_size)
    if floor > settings.max_chunks_per_doc:
        raise LimitExceeded(
            f"'{name}' would make at least {floor} chunks; the limit is {settings.max_chunks_per_doc}.",
            fix="Split the document into smaller files, or raise RAG_MAX_CHUNKS_PER_DOC if you trust it.",
        )


def register_writing(kb, preps: list[_Prepared]) -> str:
    """Record the new revisions as 'writing' (invisible to queries) and open the job."""
    job_id = kb.catalog.start_job(kb.name, "ingest", json.dumps([p.item.name for p in preps]))
    with kb.catalog.tx() as db:
        for p in preps:
            db.execute(
                "INSERT OR IGNORE INTO documents (kb,id,name,tags,doc_date,active_revision,created_at) VALUES (?,?,?,?,?,NULL,?)",
                (kb.name, p.result.doc_id, p.item.name, json.dumps(list(p.item.tags)), p.item.doc_date, now()),
            )
            db.execute(
                "INSERT INTO revisions VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    kb.name,
                    p.result.doc_id,
                    p.result.revision,
                    p.content_hash,
                    p.parsed.parser,
                    p.parsed.parser_version,
                    len(p.item.data),
                    p.parsed.page_count,
                    len(p.chunks),
                    kb.embedder.model_id,
                    "writing",
                    p.parsed.text,
                    json.dumps([[s.page, s.start, s.end] for s in p.parsed.pages]),
                    now(),
                ),
            )
    return job_id


def embed_and_write(kb, preps: list[_Prepared], progress: Progress) -> None:
    """Embed every chunk of the batch, then add them all to the vector store.

    Chunks go longest first, so each encoder batch holds texts of about one length and pads
    little, and the biggest buffers are allocated first and then reused (the order one big
    sentence-transformers ``encode`` call uses; shortest first measured slower), while
    progress still moves step by step. The chunks the multilingual embedder is for
    (``kb.wants_multilingual``) are embedded by it as well, into the second collection, and so are
    their sentences, into the third (``embed_sentences``).
    The store is written after the encoders are done: Chroma's indexing work after an add would
    otherwise compete with the encoder for the CPU (the vectors of even a large batch are a
    few MB)."""
    chunks = sorted((c for p in preps for c in p.chunks), key=lambda c: -len(c.index_text))
    extra = [c for c in chunks if kb.wants_multilingual(c)]
    owner = {c.id: p.item.name for p in preps for c in p.chunks}
    total = max(len(chunks) + 2 * len(extra), 1)  # the multilingual passes: chunks, then their sentences
    matrix = _embed(
        kb.embedder,
        chunks,
        kb.settings.embed_batch_size,
        lambda part, done: _report(progress, owner, part, done / total),
    )
    ml_matrix = None
    if extra:
        ml = kb.multilingual_embedder
        ml_matrix = _embed(
            ml, extra, ml.batch_size, lambda part, done: _report(progress, owner, part, (len(chunks) + done) / total)
        )
        sent_keys, sent_matrix = embed_sentences(
            ml,
            extra,
            lambda part, done: _report(progress, owner, part, (len(chunks) + len(extra) + done) / total),
        )
    for i in range(0, len(chunks), WRITE_BATCH):
        kb.vectors.add(chunks[i : i + WRITE_BATCH], matrix[i : i + WRITE_BATCH])
        _report(progress, owner, chunks[i : i + WRITE_BATCH], min(i + WRITE_BATCH, len(chunks)) / len(chunks), "write")
    for i in range(0, len(extra), WRITE_BATCH):
        kb.vectors.add_multilingual(extra[i : i + WRITE_BATCH], ml_matrix[i : i + WRITE_BATCH])
    if extra:
        write_sentences(kb.vectors, extra, sent_keys, sent_matrix)


def embed_sentences(ml, chunks: list[ChunkRecord], report: Callable) -> tuple[list[list[str]], np.ndarray]:
    """The multilingual embedder's vectors of each chunk's sentences (``embedder.sentence_texts``),
    a step of chunks at a time, reporting each: each chunk's sentence keys, and one row per
    sentence, in order."""
    step = max(ml.batch_size * 8, 256)
    keys, vecs = [], []
    for i in range(0, len(chunks), step):
        part = chunks[i : i + step]
        texts = [sentence_texts(c) for c in part]
        keys += [[passage_key(t) for t in ts] for ts in texts]
        vecs.append(ml.embed_texts([t for ts in texts for t in ts], batch_size=ml.batch_size))
        report(part, min(i + step, len(chunks)))
    return keys, (np.concatenate(vecs) if vecs else np.zeros((0, ml.dim), np.float32))


def write_sentences(vectors, chunks: list[ChunkRecord], keys: list[list[str]], matrix: np.ndarray) -> None:
    """Write ``embed_sentences``'s vectors, whole chunks at a time, at most about ``WRITE_BATCH``
    sentences an add."""
    start = at = n = 0
    for end, chunk_keys in enumerate(keys, 1):
        n += len(chunk_keys)
        if end == len(keys) or n + len(keys[end]) > WRITE_BATCH:
            vectors.add_sentences(chunks[start:end], keys[start:end], matrix[at : at + n])
            start, at, n = end, at + n, 0


def _embed(embedder, chunks: list[ChunkRecord], batch_size: int, report: Callable) -> np.ndarray:
    """``embedder``'s vectors of ``chunks`` (index texts), a step of batches at a time, reporting each."""
    step = max(batch_size * 8, 256)
    vecs = []
    for i in range(0, len(chunks), step):
        part = chunks[i : i + step]
        vecs.append(embedder.embed_texts([c.index_text for c in part], batch_size=batch_size))
        report(part, min(i + step, len(chunks)))
    return np.concatenate(vecs) if vecs else np.zeros((0, embedder.dim), np.float32)


def _report(
    progress: Progress, owner: dict[str, str], part: list[ChunkRecord], done: float, stage: str = "embed"
) -> None:
    for name in {owner[c.id] for c in part}:
        progress(name, stage, done)


def publish(kb, preps: list[_Prepared], job_id: str) -> None:
    """Switch every prepared document to its new revision in one transaction."""
    with kb.catalog.tx() as db:
        for p in preps:
            db.executemany(
                "INSERT INTO chunks VALUES (?,?,?,?,?,?,?,?,?)",
                [
                    (
                        kb.name,
                        c.id,
                        c.doc_id,
                        c.revision,
                        c.page,
                        c.idx,
                        c.char_start,
                        c.char_end,
                        " > ".join(c.heading_path),
                    )
                    for c in p.chunks
                ],
            )
            if p.previous is not None:
                db.execute(
                    "UPDATE revisions SET state='retired' WHERE kb=? AND doc_id=? AND revision=?",
                    (kb.name, p.result.doc_id, p.previous),
                )
            db.execute(
                "UPDATE revisions SET state='active' WHERE kb=? AND doc_id=? AND revision=?",
                (kb.name, p.result.doc_id, p.result.revision),
            )
            db.execute(
                "UPDATE documents SET active_revision=?, tags=?, doc_date=? WHERE kb=? AND id=?",
                (p.result.revision, json.dumps(list(p.item.tags)), p.item.doc_date, kb.name, p.result.doc_id),
            )
        db.execute("UPDATE kbs SET index_version=index_version+1 WHERE name=?", (kb.name,))
        kb.catalog.finish_job(job_id, db=db)
