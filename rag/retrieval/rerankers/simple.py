"""Backends that need no extra model: ``none`` (keep the RRF order) and ``dense`` (embedder cosine)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rag.retrieval.fusion import Fused
from rag.retrieval.rerankers.base import Reranker, VectorSource, query_cosines
from rag.retrieval.rerankers.calibration import Calibration
from rag.retrieval.trace import ModelLabel


class NoReranker(Reranker):
    """Keeps the fused order; the score is the RRF score, which is not comparable across queries."""

    name = "none"
    calibrated = False

    def __init__(self) -> None:
        super().__init__(ModelLabel(backend=self.name, model="rrf", note="fused RRF order, no reranking"))

    def _score(self, query: str, candidates: Sequence[Fused]) -> np.ndarray:
        return np.array([c.fused_score for c in candidates])


class DenseReranker(Reranker):
    """Cosine between the question and each candidate under the knowledge base's embedder,
    mapped to a probability by a sigmoid fitted on SciFact train (see calibration.json)."""

    name = "dense"

    def __init__(self, vectors: VectorSource, embedder_id: str, calibration: Calibration) -> None:
        note = calibration.note_for(embedder_id)
        super().__init__(ModelLabel(backend=self.name, model=embedder_id, note=note))
        self.vectors = vectors
        self.a, self.b = calibration.dense_platt

    def _score(self, query: str, candidates: Sequence[Fused]) -> np.ndarray:
        cos = query_cosines(self.vectors, query, candidates)
        return 1.0 / (1.0 + np.exp(-(self.a * cos + self.b)))
