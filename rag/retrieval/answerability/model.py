"""Answerability: does the retrieved evidence *answer* the question, not only match its topic?

A logistic model over features that generalise across corpora and languages (see
``FEATURES``): the best calibrated rerank probability, whether the question's salient terms occur
in the searched scope at all, how much of the question the best chunk and the best single
sentence hold, whether that sentence carries the kind of answer asked for (a date for "when", a
number for "how many"), and, for Chinese, what the two readers read. One model per script
(``latin``, ``cjk``): Chinese questions are scored by another reranker and written differently.
Weights are fit on training data only (SciFact train, CMRC 2018 trial) by ``python -m rag bench
refusal --dump`` then ``python -m rag.bench.fit_answerability``; each model's bias is shifted so
that its operating point chosen on train is probability 0.5 (``RAG_ANSWERABLE_THRESHOLD``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

WEIGHTS_FILE = Path(__file__).with_name("weights.json")

# name -> what it measures (shown beside its value and weight in the Inspector)
FEATURES: dict[str, str] = {
    "p_top": "best calibrated rerank probability",
    "missing_share": "share of the question's term weight (idf) absent from every searched chunk",
    "cover_chunk": "share of the question's term weight held by the best chunk",
    "cover_sentence": "share of the question's term weight held by the best single evidence sentence",
    "kind_missing": "the question asks for a date / number / name and the best sentence holds none",
    "absent_word": "an ordinary word of the question is in no searched chunk, in no spelling, synonym or close phrase",
    "reader": "the answer reader's probability that the best chunk's focus window holds the answer",
    "reader_sentence": "the sentence reader's P(some sentence holds the answer) for the best chunk, read whole",
}


@dataclass(frozen=True)
class AnswerabilityModel:
    """Logistic weights for one script; ``rule`` models (no weights) compare ``p_top`` alone."""

    name: str
    features: tuple[str, ...] = ()
    weights: tuple[float, ...] = ()
    bias: float = 0.0
    provenance: dict[str, Any] = field(default_factory=dict)

    @property
    def is_rule(self) -> bool:
        return not self.features

    def probability(self, x: dict[str, float]) -> float:
        z = self.bias + sum(w * x[f] for f, w in zip(self.features, self.weights, strict=True))
        return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))

    def contributions(self, x: dict[str, float]) -> dict[str, float]:
        """Each feature's share of the logit (weight x value): what the Inspector shows."""
        return {f: round(w * x[f], 4) for f, w in zip(self.features, self.weights, strict=True)}

    def as_dict(self) -> dict[str, Any]:
        return {
            "features": list(self.features),
            "weights": list(self.weights),
            "bias": self.bias,
            "provenance": self.provenance,
        }


@lru_cache(maxsize=4)
def load_models(path: str = str(WEIGHTS_FILE)) -> dict[str, AnswerabilityModel]:
    """script -> model from the shipped weights; a missing file or script means the rule."""
    p = Path(path)
    if not p.exists():
        return {}
    raw = json.loads(p.read_text(encoding="utf-8"))
    models = {}
    for script, m in raw.get("models", {}).items():
        unknown = [f for f in m["features"] if f not in FEATURES]
        if unknown:
            raise ValueError(f"{p}: model '{script}' uses unknown features {unknown}; known: {sorted(FEATURES)}")
        models[script] = AnswerabilityModel(
            name=f"logreg[{'+'.join(m['features'])}]@{p.name}:{script}",
            features=tuple(m["features"]),
            weights=tuple(float(w) for w in m["weights"]),
            bias=float(m["bias"]),
            provenance=dict(m.get("provenance", {})),
        )
    return models


def model_for(script: str, path: str = str(WEIGHTS_FILE), features: Collection[str] = ()) -> AnswerabilityModel:
    """The model of ``script``: its twin fit with the readers' features (stored as
    ``<script>/reader``) when every feature that twin reads is among ``features`` (the readers
    are on and available), else the plain model when its features are (or ``features`` is not
    given), else the rule: no model reads a feature that was not computed."""
    models = load_models(path)
    for model in (models.get(f"{script}/reader"), models.get(script)):
        if model is not None and (not features or set(model.features) <= set(features)):
            return model
    return AnswerabilityModel(name="rule[p_top >= rerank_threshold]")
