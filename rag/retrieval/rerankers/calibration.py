"""Learned parameters of the offline rerankers, read from ``calibration.json`` beside this file.

The JSON says how it was fit (data, split, embedder, command); ``rag.bench.fit_reranker``
regenerates it: ``python -m rag.bench.fit_reranker scifact``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

CALIBRATION_FILE = "calibration.json"


@dataclass(frozen=True)
class Calibration:
    embedder: str  # the embedder the parameters were fit with
    features: tuple[str, ...]  # names of the default reranker's features, in order
    weights: tuple[float, ...]  # logistic-regression weights, one per feature
    bias: float
    dense_platt: tuple[float, float]  # sigmoid(a * cosine + b) for the dense backend
    threshold: float  # suggested rerank_threshold (chosen on train)
    fit: dict[str, Any]  # how the parameters were obtained

    def note_for(self, embedder_id: str) -> str:
        """Empty when the parameters match the embedder in use, else a plain warning."""
        if embedder_id == self.embedder:
            return ""
        return f"calibrated for {self.embedder}; scores with {embedder_id} are approximate"

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Calibration:
        return cls(
            embedder=d["embedder"],
            features=tuple(d["features"]),
            weights=tuple(float(w) for w in d["weights"]),
            bias=float(d["bias"]),
            dense_platt=(float(d["dense_platt"][0]), float(d["dense_platt"][1])),
            threshold=float(d["threshold"]),
            fit=dict(d.get("fit", {})),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "embedder": self.embedder,
            "features": list(self.features),
            "weights": list(self.weights),
            "bias": self.bias,
            "dense_platt": list(self.dense_platt),
            "threshold": self.threshold,
            "fit": self.fit,
        }


E5_CALIBRATION_FILE = "calibration-e5.json"  # the `e5` backend (fit with --backend e5)
E5_CJK_CALIBRATION_FILE = "calibration-e5-zh.json"  # CJK questions on an English-only embedder (CMRC trial)


@lru_cache(maxsize=4)
def load_calibration(file: str = CALIBRATION_FILE) -> Calibration:
    text = resources.files("rag.retrieval.rerankers").joinpath(file).read_text()
    return Calibration.from_dict(json.loads(text))


def save_calibration(cal: Calibration, path: Path | None = None, file: str = CALIBRATION_FILE) -> Path:
    path = path or Path(str(resources.files("rag.retrieval.rerankers").joinpath(file)))
    path.write_text(json.dumps(cal.to_dict(), indent=2) + "\n")
    load_calibration.cache_clear()
    return path
