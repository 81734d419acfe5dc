"""What retrieval and the ask path need from a knowledge base: the ``KnowledgeSource`` protocol.

``rag.kb.KnowledgeBase`` (Chroma + BM25 + SQLite) satisfies it, and so does the in-memory
``FakeKB`` of the tests; functions that only retrieve take a ``KnowledgeSource``. Managing
documents (ingest, delete, chat history) needs the real ``KnowledgeBase``.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from rag.config import Settings
from rag.records import ChunkRecord, Hit, ModelLabel, TermStats


@runtime_checkable
class TextEmbedder(Protocol):
    """Normalized sentence vectors; ``model_id`` is what the index was built with."""

    model_id: str
    dim: int

    @property
    def label(self) -> ModelLabel: ...

    def embed_texts(self, texts: list[str], batch_size: int = 64) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...


@runtime_checkable
class TraceStore(Protocol):
    """Where traces are kept so a chat turn can be reopened in the Inspector."""

    def save_trace(self, kb: str, trace_json: str, trace_id: str, question: str, created_at: str) -> None: ...

    def load_trace_json(self, trace_id: str, kb: str | None = None) -> str | None: ...


@runtime_checkable
class KnowledgeSource(Protocol):
    """A searchable knowledge base: dense and BM25 search, chunks by id and neighbourhood, filters."""

    name: str
    settings: Settings
    embedder: TextEmbedder
    catalog: TraceStore

    @property
    def index_revision(self) -> int: ...

    def dense_search(self, query_vec: np.ndarray, k: int, doc_ids: set[str] | None = None) -> list[Hit]: ...

    def sparse_search(self, query: str, k: int, doc_ids: set[str] | None = None) -> list[Hit]: ...

    def filter_doc_ids(self, doc_ids=None, tags=None, date_from=None, date_to=None) -> set[str] | None: ...

    def get_chunks(self, ids: list[str]) -> dict[str, ChunkRecord]: ...

    def neighbours(self, chunk_id: str, before: int = 1, after: int = 1) -> list[ChunkRecord]: ...

    def all_texts(self) -> list[str]: ...

    def term_stats(self, terms: list[str], doc_ids: set[str] | None = None, near: bool = True) -> TermStats: ...
