"""What retrieval and the ask path need from a knowledge base: the ``KnowledgeSource`` protocol.

``rag.kb.KnowledgeBase`` (Chroma + BM25 + SQLite) satisfies it, and so does the in-memory
``FakeKB`` of the tests; functions that only retrieve take a ``KnowledgeSource``, and retrieval
calls nothing it does not declare. The why-not probe reads a little more (documents, revisions,
every chunk's dense score): ``ProbedSource``. Managing documents (ingest, delete, chat history)
needs the real ``KnowledgeBase``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol, runtime_checkable

import numpy as np

from rag.config import Settings
from rag.records import ChunkRecord, DocumentRecord, Hit, ModelLabel, MultilingualIndex, TermStats


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
class SparseIndex(Protocol):
    """The BM25 index as the Inspector reads it (``rag.store.bm25.BM25Index``): where one chunk
    stands, each chunk's score, each query term's share of it."""

    def has(self, chunk_id: str) -> bool: ...

    def probe(self, query: str, chunk_id: str, doc_ids: set[str] | None = None, doc_weight: float = 0.0) -> Any:
        """A ``rag.store.bm25.SparseProbe`` (rank, score, scored, terms)."""
        ...

    def scores_of(self, query: str, chunk_ids: list[str], doc_weight: float = 0.0) -> np.ndarray: ...

    def term_scores(
        self, query: str, chunk_ids: Iterable[str], doc_weight: float = 0.0
    ) -> dict[str, dict[str, float]]: ...


@runtime_checkable
class KnowledgeSource(Protocol):
    """A searchable knowledge base: dense and BM25 search, chunks by id and neighbourhood, filters,
    the stored vectors, the multilingual collection's state, and a cache retrieval keeps on it."""

    name: str
    settings: Settings
    embedder: TextEmbedder
    catalog: TraceStore
    # What retrieval reuses across questions on this source (reranker contexts, mined acronyms),
    # keyed by retrieval: it lives and dies with the source.
    retrieval_cache: dict[Any, Any]

    @property
    def index_revision(self) -> int: ...

    def multilingual_index(self) -> MultilingualIndex | None:
        """How many chunks that call for a multilingual vector have one; None: the source has no
        multilingual collection (dense recall for CJK then stays with BM25)."""
        ...

    def multilingual_reindex_fix(self) -> str:
        """What to run to give the chunks their multilingual vectors."""
        ...

    def dense_search(
        self, query_vec: np.ndarray, k: int, doc_ids: set[str] | None = None, multilingual: bool = False
    ) -> list[Hit]: ...

    def get_embeddings(self, ids: list[str], multilingual: bool = False) -> dict[str, np.ndarray]:
        """The stored vectors of ``ids`` (the embedder's, or the multilingual embedder's), the
        ones there are: nothing stored is embedded again."""
        ...

    def get_sentence_embeddings(self, ids: list[str]) -> dict[str, np.ndarray]:
        """The multilingual embedder's stored vectors of the sentences of chunks ``ids``, by their
        texts' keys (``embedder.passage_key`` of ``embedder.sentence_texts``); {} for chunks stored
        without them."""
        ...

    def bm25(self) -> SparseIndex: ...

    def sparse_search(self, query: str, k: int, doc_ids: set[str] | None = None) -> list[Hit]: ...

    def filter_doc_ids(self, doc_ids=None, tags=None, date_from=None, date_to=None) -> set[str] | None: ...

    def get_chunks(self, ids: list[str]) -> dict[str, ChunkRecord]: ...

    def neighbours(self, chunk_id: str, before: int = 1, after: int = 1) -> list[ChunkRecord]: ...

    def all_texts(self) -> list[str]: ...

    def term_stats(self, terms: list[str], doc_ids: set[str] | None = None, near: bool = True) -> TermStats: ...


@runtime_checkable
class ProbeCatalog(TraceStore, Protocol):
    """The catalog as the why-not probe reads it: which revision is active, documents' names."""

    def active_revisions(self, kb: str, doc_ids: Iterable[str] | None = None) -> dict[str, int]: ...

    def document_names(self, kb: str, doc_ids: Iterable[str]) -> dict[str, str]: ...


@runtime_checkable
class ProbedSource(KnowledgeSource, Protocol):
    """A ``KnowledgeSource`` the why-not probe can place any chunk in: its documents and their
    revisions (a deleted or failed upload is still a target), and every active chunk's cosine."""

    catalog: ProbeCatalog

    def documents(self) -> list[DocumentRecord]: ...

    def chunks(self, doc: str) -> list[ChunkRecord]: ...

    def revisions(self, doc_id: str) -> list[tuple[int, str]]: ...

    def dense_scores(self, query_vec: np.ndarray, multilingual: bool = False) -> Any:
        """A ``rag.store.dense.DenseScores``: ``ids`` and their ``scores``, every active chunk."""
        ...
