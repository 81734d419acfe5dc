"""Exact dense scores of every active chunk, beyond a search's top k (the why-not probe)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

if TYPE_CHECKING:
    from rag.store.vectors import VectorStore


class DenseScores(NamedTuple):
    """Every active chunk's cosine with one query vector: ``scores[i]`` belongs to ``ids[i]``."""

    ids: list[str]
    scores: np.ndarray


class DenseMatrix:
    """Every active chunk's stored vector, for exact dense ranks beyond the top k (the why-not
    probe). Read from the vector store once per index revision and kept, so a probe after the
    first costs one matrix-vector product rather than a search for every chunk."""

    def __init__(self, store: VectorStore, dim: int, multilingual: bool = False) -> None:
        self.store, self.dim, self.multilingual = store, dim, multilingual
        self._cached: tuple[int, list[str], np.ndarray] | None = None  # (index revision, ids, vectors)
        self._lock = threading.Lock()

    def scores(self, query_vec: np.ndarray, revision: int, active: Callable[[], dict[str, int]]) -> DenseScores:
        """Cosine of ``query_vec`` with each chunk whose revision ``active()`` (doc id -> revision) names."""
        with self._lock:
            cached = self._cached
        if cached is None or cached[0] != revision:
            live = active()
            ids, vecs = [], []
            for cid, meta, vec in self.store.all_embeddings(multilingual=self.multilingual):
                if live.get(str((meta or {}).get("doc_id"))) == (meta or {}).get("revision"):
                    ids.append(cid)
                    vecs.append(vec)
            cached = (revision, ids, np.asarray(vecs, dtype=np.float32).reshape(len(ids), self.dim))
            with self._lock:
                self._cached = cached
        _, ids, matrix = cached
        return DenseScores(ids, matrix @ np.asarray(query_vec, dtype=np.float32))
