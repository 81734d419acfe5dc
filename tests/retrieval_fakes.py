"""An in-memory ``KnowledgeSource`` (rag.source): the retrieval side of ``rag.kb.KnowledgeBase``.

Dense search is exact cosine over numpy vectors from a real ``Embedder`` (or the hashing
embedder below); sparse search is the project's real ``BM25Index``. Used by unit tests and
by the benchmark harness where building a Chroma collection would only add noise.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

import numpy as np

from rag.config import Settings
from rag.records import ChunkRecord, Hit, MultilingualIndex, TermStats
from rag.retrieval.trace import ModelLabel, Trace
from rag.source import SparseIndex, TextEmbedder
from rag.store.bm25 import BM25Index


class HashEmbedder:
    """Deterministic bag-of-words embedder: shared words give high cosine. For fast unit tests."""

    model_id = "test:hash-64"
    dim = 64
    max_tokens = 256

    @property
    def label(self) -> ModelLabel:
        return ModelLabel(backend="test", model=self.model_id)

    def embed_texts(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                h = int(hashlib.md5(word.encode()).hexdigest(), 16)
                out[row, h % self.dim] += 1.0 if (h >> 8) % 2 else -1.0
            norm = np.linalg.norm(out[row])
            out[row] = out[row] / norm if norm else out[row]
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_texts([text])[0]


@dataclass
class FakeDoc:
    doc_id: str
    chunks: list[str]
    tags: tuple[str, ...] = ()
    date: str = ""
    name: str = ""


class FakeCatalog:
    def __init__(self) -> None:
        self.traces: dict[str, tuple[str, str]] = {}

    def save_trace(self, kb: str, trace_json: str, trace_id: str, question: str, created_at: str) -> None:
        self.traces[trace_id] = (kb, trace_json)

    def load_trace_json(self, trace_id: str, kb: str | None = None) -> str | None:
        entry = self.traces.get(trace_id)
        return entry[1] if entry and kb in (None, entry[0]) else None

    def load_trace(self, trace_id: str) -> Trace:
        return Trace.from_json(self.traces[trace_id][1])


@dataclass
class FakeKB:
    name: str
    docs: list[FakeDoc]
    embedder: TextEmbedder
    settings: Settings = field(default_factory=Settings)
    catalog: FakeCatalog = field(default_factory=FakeCatalog)
    index_revision: int = 1
    vectors: np.ndarray | None = None
    retrieval_cache: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.records: list[ChunkRecord] = []
        self.meta: dict[str, FakeDoc] = {d.doc_id: d for d in self.docs}
        for doc in self.docs:
            pos = 0
            for idx, text in enumerate(doc.chunks):
                cid = ChunkRecord.make_id(doc.doc_id, 1, 1, idx)
                rec = ChunkRecord(cid, doc.doc_id, 1, 1, idx, pos, pos + len(text), (), text, doc.name or doc.doc_id)
                self.records.append(rec)
                pos += len(text) + 1
        self.by_id = {r.id: r for r in self.records}
        if self.vectors is None:
            self.vectors = self.embedder.embed_texts([r.index_text for r in self.records])
        self.index = BM25Index.build(((r.id, r.index_text) for r in self.records), version=1)

    def bm25(self) -> SparseIndex:
        return self.index

    def multilingual_index(self) -> MultilingualIndex | None:
        return None  # no multilingual collection: dense recall for CJK stays with BM25

    def multilingual_reindex_fix(self) -> str:
        return "FakeKB has no multilingual collection"

    def dense_search(
        self, query_vec: np.ndarray, k: int, doc_ids: set[str] | None = None, multilingual: bool = False
    ) -> list[Hit]:
        if multilingual:
            raise AssertionError("FakeKB has no multilingual collection: retrieval must not search it")
        sims = self.vectors @ np.asarray(query_vec, dtype=np.float32)
        if doc_ids is not None:
            keep = np.array([r.doc_id in doc_ids for r in self.records], dtype=bool)
            sims = np.where(keep, sims, -np.inf)
        k = min(k, int(np.isfinite(sims).sum()))
        if k <= 0:
            return []
        top = np.argpartition(-sims, k - 1)[:k]
        top = top[np.argsort(-sims[top], kind="stable")]
        return [Hit(self.records[i], float(sims[i])) for i in top]

    def sparse_search(self, query: str, k: int, doc_ids: set[str] | None = None) -> list[Hit]:
        return [
            Hit(self.by_id[h.chunk_id], h.score)
            for h in self.index.search(query, k, doc_ids, self.settings.bm25_doc_weight)
        ]

    def term_stats(self, terms: list[str], doc_ids: set[str] | None = None, near: bool = True) -> TermStats:
        return self.index.term_stats(terms, doc_ids, near)

    def filter_doc_ids(self, doc_ids=None, tags=None, date_from=None, date_to=None) -> set[str] | None:
        if not (doc_ids or tags or date_from or date_to):
            return None
        out = set()
        for d in self.docs:
            if doc_ids and d.doc_id not in doc_ids:
                continue
            if tags and not set(tags) & set(d.tags):
                continue
            if (date_from and (not d.date or d.date < date_from)) or (date_to and (not d.date or d.date > date_to)):
                continue
            out.add(d.doc_id)
        return out

    def get_chunks(self, ids: list[str]) -> dict[str, ChunkRecord]:
        return {i: self.by_id[i] for i in ids if i in self.by_id}

    def get_embeddings(self, ids: list[str], multilingual: bool = False) -> dict[str, np.ndarray]:
        if multilingual:
            return {}  # no multilingual vectors stored
        pos = {r.id: i for i, r in enumerate(self.records)}
        return {i: self.vectors[pos[i]] for i in ids if i in pos}

    def get_sentence_embeddings(self, ids: list[str]) -> dict[str, np.ndarray]:
        return {}  # no multilingual vectors stored

    def neighbours(self, chunk_id: str, before: int = 1, after: int = 1) -> list[ChunkRecord]:
        rec = self.by_id[chunk_id]
        same = [r for r in self.records if r.doc_id == rec.doc_id and r.revision == rec.revision]
        return [r for r in same if rec.idx - before <= r.idx <= rec.idx + after and r.id != rec.id]

    def all_texts(self) -> list[str]:
        return [r.text for r in self.records]
