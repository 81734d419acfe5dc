"""The pipeline's stages: one name each, wherever a stage is named.

Trace timings, the Inspector's ledger and charts, evaluation metrics per stage and the benchmarks
all use ``Stage``. ``label`` is how the app shows a stage; the value is what is stored.
"""

from __future__ import annotations

from enum import StrEnum


class Stage(StrEnum):
    """In pipeline order."""

    EMBED = "embed"  # the query embedding
    DENSE = "dense"  # nearest neighbours in Chroma (cosine)
    BM25 = "bm25"  # BM25 keyword search, the sparse retriever
    RRF = "rrf"  # Reciprocal Rank Fusion of dense and BM25
    RERANK = "rerank"  # the reranker's order of the fused candidates
    ANSWERABILITY = "answerability"  # does the evidence answer the question (features, model, verdict)
    FALLBACK = "fallback"  # the weak-evidence decision (answer, wider retry, question back, refusal)
    EVIDENCE = "evidence"  # the kept, ordered chunks the answer is written from (final rank)

    @property
    def label(self) -> str:
        return _LABELS.get(self, self.value)


_LABELS = {Stage.BM25: "BM25", Stage.RRF: "RRF", Stage.EVIDENCE: "final"}

RANKED_STAGES = (Stage.DENSE, Stage.BM25, Stage.RRF, Stage.RERANK, Stage.EVIDENCE)  # each a ranked list
TIMED_STAGES = (
    Stage.EMBED,
    Stage.DENSE,
    Stage.BM25,
    Stage.RRF,
    Stage.RERANK,
    Stage.ANSWERABILITY,
    Stage.FALLBACK,
    Stage.EVIDENCE,
)
TOTAL = "total"  # the timing of the whole retrieval, beside the stages'

# Timing keys stored before Stage existed (traces and evaluation runs saved by earlier versions).
LEGACY_TIMING_KEYS = {"sparse": Stage.BM25.value, "fusion": Stage.RRF.value}


def current_timings(timings: dict[str, float]) -> dict[str, float]:
    """``timings`` with stage names from earlier versions renamed to ``Stage`` values."""
    return {LEGACY_TIMING_KEYS.get(k, k): v for k, v in timings.items()}
