"""The one-method reranker contract and the vectors some backends need.

``Reranker.rank`` does the common work once (empty input, ordering, ranks, the label);
a backend only implements ``_score``. Every backend's score is meant as a probability of
relevance in [0, 1] (``calibrated = True``) so that ``rerank_threshold`` means the same thing
whichever backend produced it; a backend whose scores are not comparable across queries says
so with ``calibrated = False`` and the fallback then does not apply the threshold.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Protocol

import numpy as np

from rag.records import ChunkRecord
from rag.retrieval.fusion import Fused
from rag.retrieval.trace import ModelLabel


@dataclass(frozen=True)
class Scored:
    chunk_id: str
    score: float
    rank: int  # 1-based


@dataclass(frozen=True)
class RankedResults:
    """A reranker's verdict on every candidate it was given, best first."""

    results: tuple[Scored, ...]
    label: ModelLabel
    calibrated: bool

    @property
    def best_score(self) -> float | None:
        return self.results[0].score if self.results else None

    def by_id(self) -> dict[str, Scored]:
        return {s.chunk_id: s for s in self.results}


class VectorSource(Protocol):
    """Query and chunk vectors from the knowledge base's embedder (normalized)."""

    def query_vector(self, text: str) -> np.ndarray: ...

    def chunk_vectors(self, chunks: Sequence[ChunkRecord]) -> np.ndarray: ...


def query_cosines(vectors: VectorSource, query: str, candidates: Sequence[Fused]) -> np.ndarray:
    """Cosine of ``query`` (the original question, query 0) with each candidate.

    The dense retriever already scored its own hits for query 0; only the others need vectors."""
    known = {i: c.dense_by_query[0] for i, c in enumerate(candidates) if 0 in c.dense_by_query}
    cos = np.zeros(len(candidates), dtype=np.float64)
    missing = [i for i in range(len(candidates)) if i not in known]
    if missing:
        vecs = vectors.chunk_vectors([candidates[i].chunk for i in missing])
        cos[missing] = vecs @ vectors.query_vector(query)
    for i, value in known.items():
        cos[i] = value
    return cos


class Reranker(ABC):
    """Scores fused candidates for a query. Subclasses implement ``_score`` only."""

    name: ClassVar[str] = ""
    calibrated: ClassVar[bool] = True

    def __init__(self, label: ModelLabel) -> None:
        self.label = label

    def rank(self, query: str, candidates: Sequence[Fused]) -> RankedResults:
        if not candidates:
            return RankedResults((), self.label, self.calibrated)
        scores = np.asarray(self._score(query, candidates), dtype=np.float64)
        if scores.shape != (len(candidates),):
            raise ValueError(f"{self.name} returned {scores.shape} scores for {len(candidates)} candidates")
        # ties keep the fused order (stable sort on the fused rank order given)
        order = sorted(range(len(candidates)), key=lambda i: (-scores[i], candidates[i].fused_rank))
        results = tuple(Scored(candidates[i].chunk_id, float(scores[i]), r) for r, i in enumerate(order, 1))
        return RankedResults(results, self.label, self.calibrated)

    @abstractmethod
    def _score(self, query: str, candidates: Sequence[Fused]) -> np.ndarray:
        """One score per candidate, in the order given."""


class EmbedderVectors:
    """A ``VectorSource`` over an embedder, with small LRU caches (thread-safe).

    ``lookup`` (e.g. the knowledge base's stored embeddings) is tried first for chunks, so
    nothing is re-embedded that the vector store already holds.
    """

    def __init__(self, embedder, lookup=None, cache_size: int = 4096) -> None:
        self.embedder = embedder
        self.lookup = lookup
        self._queries: OrderedDict[str, np.ndarray] = OrderedDict()
        self._chunks: OrderedDict[str, np.ndarray] = OrderedDict()
        self._size = cache_size
        self._lock = threading.Lock()

    def query_vector(self, text: str) -> np.ndarray:
        with self._lock:
            if text in self._queries:
                self._queries.move_to_end(text)
                return self._queries[text]
        vec = np.asarray(self.embedder.embed_query(text), dtype=np.float32)
        self._put(self._queries, text, vec)
        return vec

    def query_vectors(self, texts: list[str]) -> list[np.ndarray]:
        """Embed several queries in one batch (cheaper than one at a time), caching each."""
        missing = [t for t in dict.fromkeys(texts) if t not in self._queries]
        if missing:
            for text, vec in zip(missing, self.embedder.embed_texts(missing), strict=True):
                self._put(self._queries, text, np.asarray(vec, dtype=np.float32))
        return [self.query_vector(t) for t in texts]

    def chunk_vectors(self, chunks: Sequence[ChunkRecord]) -> np.ndarray:
        found: dict[str, np.ndarray] = {c.id: self._chunks[c.id] for c in chunks if c.id in self._chunks}
        missing = [c for c in chunks if c.id not in found]
        if missing and self.lookup is not None:
            found.update(self.lookup([c.id for c in missing]))
            missing = [c for c in missing if c.id not in found]
        if missing:
            found.update(
                zip((c.id for c in missing), self.embedder.embed_texts([c.index_text for c in missing]), strict=True)
            )
        vecs = [np.asarray(found[c.id], dtype=np.float32) for c in chunks]
        for c, vec in zip(chunks, vecs, strict=True):
            self._put(self._chunks, c.id, vec)
        return np.stack(vecs) if vecs else np.zeros((0, 0), np.float32)

    def _put(self, cache: OrderedDict, key: str, vec: np.ndarray) -> None:
        with self._lock:
            cache[key] = vec
            cache.move_to_end(key)
            while len(cache) > self._size:
                cache.popitem(last=False)
