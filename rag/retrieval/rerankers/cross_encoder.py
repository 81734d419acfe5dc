"""Cross-encoder backends: ``flag`` (FlagEmbeddingReranker, bge-reranker) and ``cross-encoder``
(sentence-transformers ``CrossEncoder``). Both load a model by local path or hub id, once per
process, and map the model's logit to a probability with a sigmoid, the same function the models
are trained with, so ``rerank_threshold`` applies to them as to the default.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence

import numpy as np

from rag.embedder import resolve_model_path
from rag.retrieval.fusion import Fused
from rag.retrieval.rerankers.base import Reranker
from rag.retrieval.trace import ModelLabel

log = logging.getLogger(__name__)

_lock = threading.Lock()
_models: dict[tuple[str, str, str], object] = {}


def _cached(kind: str, name: str, device: str, build) -> object:
    key = (kind, name, device)
    with _lock:
        if key not in _models:
            path, local = resolve_model_path(name)
            if local:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
            _models[key] = build(path)
            log.info("loaded %s reranker %s", kind, name)
        return _models[key]


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(x, -50, 50)))


class FlagReranker(Reranker):
    """bge-reranker models through LlamaIndex's ``FlagEmbeddingReranker`` postprocessor."""

    name = "flag"

    def __init__(self, model: str, device: str = "cpu") -> None:
        from llama_index.postprocessor.flag_embedding_reranker import FlagEmbeddingReranker

        super().__init__(ModelLabel(backend=self.name, model=model))
        self.post = _cached(self.name, model, device, lambda p: FlagEmbeddingReranker(model=p, top_n=1))

    def _score(self, query: str, candidates: Sequence[Fused]) -> np.ndarray:
        from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

        # The postprocessor writes its score over node.score: hand it fresh nodes, read them back.
        nodes = [NodeWithScore(node=TextNode(id_=c.chunk_id, text=c.chunk.index_text), score=None) for c in candidates]
        self.post.top_n = len(nodes)
        out = self.post.postprocess_nodes(nodes, query_bundle=QueryBundle(query_str=query))
        logits = {n.node.node_id: float(n.score or 0.0) for n in out}
        return _sigmoid(np.array([logits[c.chunk_id] for c in candidates]))


class CrossEncoderReranker(Reranker):
    """Any sentence-transformers ``CrossEncoder`` with one output logit."""

    name = "cross-encoder"

    def __init__(self, model: str, device: str = "cpu") -> None:
        from sentence_transformers import CrossEncoder

        super().__init__(ModelLabel(backend=self.name, model=model))
        self.model = _cached(self.name, model, device, lambda p: CrossEncoder(p, device=device))

    def _score(self, query: str, candidates: Sequence[Fused]) -> np.ndarray:
        import torch

        pairs = [(query, c.chunk.index_text) for c in candidates]
        logits = self.model.predict(pairs, activation_fn=torch.nn.Identity(), show_progress_bar=False)
        return _sigmoid(np.asarray(logits, dtype=np.float64).reshape(len(candidates), -1)[:, 0])
