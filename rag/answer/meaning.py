"""How close in meaning each evidence sentence is to a Chinese question part: multilingual e5's
cosine, which the extractive answerer adds to each sentence's score, both to choose the sentence
and to judge whether it answers (``extractive.W_MEANING``; the judgement weighs it more,
``extractive.W_MEANING_JUDGED`` and ``MEANING_AT_FLOOR``).

A question asked in a user's own words shares few words with its answer, so term coverage often
prefers a sentence of the same section that repeats the question's words ("酒店" asked, the meal
allowance's line chosen), and a sentence that answers in other words falls under its floor.
The English answerer blends MiniLM's cosine into every sentence's score; MiniLM cannot read
Chinese, and e5 can.

The sentences' vectors come from the knowledge base, which stores e5's vector of every sentence
of a Chinese chunk at ingest (``store.vectors``, under ``embedder.passage_key`` of the sentence
read under its heading path). The answerer cuts sentences its own way (``answer.sentences``: list
items, table rows), so the few it cuts differently are embedded here, once per answer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from rag.embedder import MultilingualEmbedder, passage_key, under_headings
from rag.errors import ModelUnavailable, StoreUnavailable
from rag.records import EvidencePassage

log = logging.getLogger(__name__)
MEANING_LOW, MEANING_HIGH = 0.75, 0.92  # e5 cosines (same-topic sentences read high) scaled to 0 and 1
StoredSentences = Callable[[list[str]], dict[str, np.ndarray]]  # chunk ids -> {passage key: vector}


@dataclass(frozen=True)
class MeaningSource:
    """Where an answer's meaning vectors come from: the multilingual embedder (loaded on first
    use: a Chinese part scored) and the knowledge base's stored sentence vectors."""

    embedder: Callable[[], MultilingualEmbedder]
    stored: StoredSentences | None = None


@dataclass
class SentenceMeaning:
    """e5 cosines of one answer's evidence sentences to its question parts."""

    source: MeaningSource
    evidence: Sequence[EvidencePassage]
    missing: str = ""  # why meaning is not read ('' while it is, or before the first Chinese part)
    used: bool = False  # a part was scored with it
    _model: MultilingualEmbedder | None = field(default=None, repr=False)
    _vectors: list[np.ndarray] | None = field(default=None, repr=False)
    _queries: dict[str, np.ndarray] = field(default_factory=dict, repr=False)  # each part's e5 query vector

    @property
    def label(self) -> str:
        return self._model.label.model if self._model is not None else ""

    def closeness(self, part: str, segments: Sequence[Sequence[str]]) -> list[list[float]] | None:
        """Per evidence chunk, each of its sentences' (the answerer's ``segments``) closeness in
        meaning to ``part``: e5's cosine scaled from ``MEANING_LOW`` -> 0 to ``MEANING_HIGH`` -> 1;
        None when the multilingual model is unavailable."""
        model = self._load()
        if model is None:
            return None
        if self._vectors is None:
            self._vectors = self._sentence_vectors(model, segments)
        if part not in self._queries:  # a correction attempt scores the same part again
            self._queries[part] = model.embed_queries([part])[0]
        self.used = True
        q, span = self._queries[part], MEANING_HIGH - MEANING_LOW
        return [np.clip((v @ q - MEANING_LOW) / span, 0.0, 1.0).tolist() if len(v) else [] for v in self._vectors]

    def _load(self) -> MultilingualEmbedder | None:
        if self._model is None and not self.missing:
            try:
                self._model = self.source.embedder()
            except ModelUnavailable as exc:
                self.missing = str(exc)
        return self._model

    def _stored(self) -> dict[str, np.ndarray]:
        """The evidence's stored sentence vectors by key; none when the source keeps none, or when
        the vector store went away after retrieval (then every sentence is embedded here: the
        answer does not fail for vectors it can compute)."""
        if self.source.stored is None:
            return {}
        try:
            return self.source.stored([c.chunk_id for c in self.evidence])
        except StoreUnavailable as exc:
            log.warning("stored sentence vectors unavailable (%s): embedding the evidence's sentences", exc)
            return {}

    def _sentence_vectors(self, model: MultilingualEmbedder, segments: Sequence[Sequence[str]]) -> list[np.ndarray]:
        """Each chunk's sentences' e5 vectors, read under the chunk's heading path as ingest reads
        them (``embedder.sentence_texts``): stored ones by key, the others embedded in one batch."""
        texts = [
            [under_headings(c.heading_path, s) for s in segs] for c, segs in zip(self.evidence, segments, strict=True)
        ]
        keys = [[passage_key(t) for t in chunk] for chunk in texts]
        stored = self._stored()
        vecs = {k: stored[k] for chunk in keys for k in chunk if k in stored}
        todo = {k: t for ks, ts in zip(keys, texts, strict=True) for k, t in zip(ks, ts, strict=True) if k not in vecs}
        if todo:
            vecs |= dict(zip(todo, model.embed_texts(list(todo.values())), strict=True))
        return [np.array([vecs[k] for k in chunk]).reshape(len(chunk), model.dim) for chunk in keys]
