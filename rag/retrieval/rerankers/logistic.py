"""The offline default reranker: a logistic regression over signals the pipeline already has.

No cross-encoder weights install offline, so the default combines what recall produced: the
embedder's cosine for every candidate (from the vector store, re-embedded only when missing), the
BM25 score relative to the best one for the query, and each retriever's reciprocal rank. The
weights were fit on SciFact *train* qrels (see ``calibration.json`` and ``rag.bench.fit_reranker``), so the output
is a probability of relevance comparable across queries, which is what ``rerank_threshold`` needs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from rag.retrieval.fusion import Fused
from rag.retrieval.rerankers.base import Reranker, VectorSource, query_cosines
from rag.retrieval.rerankers.calibration import Calibration
from rag.retrieval.trace import ModelLabel

Feature = Callable[[Sequence[Fused], np.ndarray], np.ndarray]


def _sparse(cands: Sequence[Fused]) -> np.ndarray:
    return np.array([c.sparse_score or 0.0 for c in cands], dtype=np.float64)


def _recip(ranks: list[int | None]) -> np.ndarray:
    return np.array([1.0 / r if r else 0.0 for r in ranks], dtype=np.float64)


def _per_doc(cands: Sequence[Fused], values: np.ndarray, how) -> np.ndarray:
    """``how`` (max, len) of ``values`` over the candidates of each candidate's document."""
    groups: dict[str, list[float]] = {}
    for c, v in zip(cands, values, strict=True):
        groups.setdefault(c.chunk.doc_id, []).append(float(v))
    return np.array([how(groups[c.chunk.doc_id]) for c in cands], dtype=np.float64)


def _zscore(values: np.ndarray, present: np.ndarray) -> np.ndarray:
    """(v - mean) / std over the present values; absent ones get the lowest present z."""
    if not present.any():
        return np.zeros_like(values)
    mu, sd = values[present].mean(), values[present].std() or 1.0
    z = (values - mu) / sd
    return np.where(present, z, z[present].min())


FEATURES: dict[str, Feature] = {
    "cos": lambda c, cos: cos,
    "cos_gap": lambda c, cos: cos - cos.max(),
    "bm25_rel": lambda c, cos: _sparse(c) / max(_sparse(c).max(), 1e-9),
    "log_bm25": lambda c, cos: np.log1p(_sparse(c)),
    "in_sparse": lambda c, cos: (_sparse(c) > 0).astype(np.float64),
    "rr_dense": lambda c, cos: _recip([x.dense_rank for x in c]),
    "rr_sparse": lambda c, cos: _recip([x.sparse_rank for x in c]),
    "cos_z": lambda c, cos: _zscore(cos, np.ones(len(c), dtype=bool)),
    "bm25_z": lambda c, cos: _zscore(_sparse(c), _sparse(c) > 0),
    "doc_max_cos": lambda c, cos: _per_doc(c, cos, max),
    "doc_bm25_rel": lambda c, cos: _per_doc(c, _sparse(c) / max(_sparse(c).max(), 1e-9), max),
    "doc_hits": lambda c, cos: np.log(_per_doc(c, cos, len)),
    "doc_bm25_sum": lambda c, cos: _per_doc(c, _sparse(c) / max(_sparse(c).max(), 1e-9), sum),
}


COSINE_FEATURES = frozenset({"cos", "cos_gap", "cos_z", "doc_max_cos"})  # read the embedder's cosine


def _reciprocal_rank(values: np.ndarray) -> np.ndarray:
    order = np.argsort(-values, kind="stable")
    ranks = np.empty(len(values), dtype=np.float64)
    ranks[order] = np.arange(1, len(values) + 1)
    return 1.0 / ranks


# Features over a second model's cosines (``extra["e5"]``, the `e5` backend).
EXTRA_FEATURES: dict[str, Callable[[dict[str, np.ndarray]], np.ndarray]] = {
    "e5_cos": lambda x: x["e5"],
    "e5_gap": lambda x: x["e5"] - x["e5"].max(),
    "rr_e5": lambda x: _reciprocal_rank(x["e5"]),
    # e5's cosines sit in a narrow band (~0.75-0.9) whose position moves from query to query;
    # the z-score says how far a candidate stands out from this query's pool.
    "e5_z": lambda x: _zscore(x["e5"], np.ones(len(x["e5"]), dtype=bool)),
    # the same over each candidate's best sentence (``extra["e5_sent"]``, ``e5.sentence_cosines``)
    "e5_sent": lambda x: x["e5_sent"],
    "e5_sent_z": lambda x: _zscore(x["e5_sent"], np.ones(len(x["e5_sent"]), dtype=bool)),
    "rr_e5_sent": lambda x: _reciprocal_rank(x["e5_sent"]),
}
CHUNK_FEATURES = frozenset({"e5_cos", "e5_gap", "rr_e5", "e5_z"})  # read e5's cosines to whole chunks
SENTENCE_FEATURES = frozenset({"e5_sent", "e5_sent_z", "rr_e5_sent"})  # read e5's sentence cosines


def feature_matrix(
    names: Sequence[str], cands: Sequence[Fused], cos: np.ndarray, extra: dict[str, np.ndarray] | None = None
) -> np.ndarray:
    unknown = [n for n in names if n not in FEATURES and n not in EXTRA_FEATURES]
    if unknown:
        raise ValueError(f"unknown reranker features {unknown}; known: {sorted(FEATURES) + sorted(EXTRA_FEATURES)}")
    cos = np.asarray(cos, dtype=np.float64)
    extra = {k: np.asarray(v, dtype=np.float64) for k, v in (extra or {}).items()}
    return np.stack([FEATURES[n](cands, cos) if n in FEATURES else EXTRA_FEATURES[n](extra) for n in names], axis=1)


def probability(cal: Calibration, x: np.ndarray) -> np.ndarray:
    z = x @ np.asarray(cal.weights) + cal.bias
    return 1.0 / (1.0 + np.exp(-np.clip(z, -50, 50)))


class CalibratedReranker(Reranker):
    """``default``: calibrated probability from cosine, BM25 and rank features."""

    name = "default"

    def __init__(self, vectors: VectorSource, embedder_id: str, calibration: Calibration, also_uses: str = "") -> None:
        note = calibration.note_for(embedder_id)
        model = f"logreg[{'+'.join(calibration.features)}]@{embedder_id}" + (f"+{also_uses}" if also_uses else "")
        super().__init__(ModelLabel(backend=self.name, model=model, note=note))
        self.vectors = vectors
        self.cal = calibration

    def _extra(self, query: str, candidates: Sequence[Fused]) -> dict[str, np.ndarray] | None:
        """Signals beyond the knowledge base's own (a subclass's second model); none here."""
        return None

    def _score(self, query: str, candidates: Sequence[Fused]) -> np.ndarray:
        if COSINE_FEATURES & set(self.cal.features):
            cos = query_cosines(self.vectors, query, candidates)
        else:  # e.g. the CJK model: the English-only embedder's cosine is not used
            cos = np.zeros(len(candidates), dtype=np.float64)
        x = feature_matrix(self.cal.features, candidates, cos, self._extra(query, candidates))
        return probability(self.cal, x)
