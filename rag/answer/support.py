"""Support score: how well a chunk backs a claim, and which span of the chunk does.

``similarity = W_LEXICAL * lexical + W_EMBED * cosine`` over the chunk's best sentence (or
pair of adjacent sentences), where ``lexical`` is the share of the claim's content tokens
found in that span and ``cosine`` comes from the injected embedder (normalized vectors).
A claim also fails outright when it holds a number the chunk does not ("30 days" against
"7 days") or flips a negation. Instruction-like sentences in the chunk (see
``injection.py``) are never used as support.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from rag.answer.injection import looks_like_instruction
from rag.answer.sentences import Segment, split_sentences
from rag.text import lexical

if TYPE_CHECKING:
    from rag.answer.meaning import SentenceMeaning

Embed = Callable[[list[str]], np.ndarray]

W_LEXICAL = 0.5  # weights chosen so a verbatim sentence scores 1.0 and a paraphrase ~0.7
W_EMBED = 0.5
PAIR_PENALTY = 0.05  # prefer a single sentence as the span unless a pair is clearly better


@dataclass(frozen=True)
class SupportScore:
    similarity: float  # lexical/embedding blend in [0, 1]
    lexical: float
    cosine: float | None  # None when no embedder was given
    missing_numbers: tuple[str, ...]
    negation_ok: bool
    start: int  # best supporting span, offsets into the chunk text
    end: int

    @property
    def numbers_ok(self) -> bool:
        return not self.missing_numbers

    @property
    def score(self) -> float:
        """The similarity, or 0 when a number is missing or a negation is flipped."""
        return self.similarity if self.numbers_ok and self.negation_ok else 0.0


@dataclass
class IndexedChunk:
    text: str
    segments: list[Segment]  # usable sentences (instruction-like ones removed)
    tokens: list[set[str]]
    numbers: set[str]
    flagged: bool  # some sentence looked like an instruction to the model
    topic: str = ""  # what every sentence of the chunk is about: its heading path ("Title Section")
    topic_tokens: set[str] = field(default_factory=set)


class EvidenceIndex:
    """Sentences, tokens and vectors of each evidence chunk, computed once per answer.

    ``headings[i]`` is chunk i's heading path as one string (the document title and section
    headings it sits under): the topic its sentences take for granted ("It ships in 7 days"
    under "Contoso Returns"; "本鱼分布于……" under "黄鳍紫鱼").

    Sentence vectors are embedded when first asked for, a chunk at a time (``ensure_vectors``
    batches several): the extractive answerer reads every chunk's vectors for an English
    question, but for a language the embedder can't read it reads none, and the validator only
    those of the chunks a sentence cites.
    """

    def __init__(self, texts: Sequence[str], embed: Embed | None, headings: Sequence[str] = ()) -> None:
        self.embed = embed
        self.chunks = [_index_chunk(t, h) for t, h in zip(texts, headings or [""] * len(texts), strict=True)]
        self._vectors: dict[int, np.ndarray] = {}  # 1-based chunk number -> its sentences' unit vectors
        self._claim_cache: dict[str, np.ndarray | None] = {}
        self.meaning: SentenceMeaning | None = None  # e5 closeness of sentences to a Chinese part (the pipeline's)

    def __len__(self) -> int:
        return len(self.chunks)

    def flagged(self) -> list[int]:
        """1-based numbers of chunks holding instruction-like text."""
        return [i + 1 for i, c in enumerate(self.chunks) if c.flagged]

    def ensure_vectors(self, numbers: Iterable[int]) -> None:
        """Embed, in one batch, the sentences of the chunks (1-based) not embedded yet."""
        todo = sorted({n for n in numbers if n not in self._vectors})
        if self.embed is None or not todo:
            return
        flat = [s.text for n in todo for s in self.chunks[n - 1].segments]
        vectors = _embed(self.embed, flat)
        assert vectors is not None
        offsets = np.cumsum([0] + [len(self.chunks[n - 1].segments) for n in todo])
        for k, n in enumerate(todo):
            self._vectors[n] = vectors[offsets[k] : offsets[k + 1]]
        for text, vec in zip(flat, vectors, strict=True):  # a claim copied from the evidence needs no new embedding
            self._claim_cache.setdefault(text, vec)

    def sentence_vectors(self, n: int) -> np.ndarray | None:
        if self.embed is None:
            return None
        self.ensure_vectors([n])
        return self._vectors[n]

    def vector(self, text: str) -> np.ndarray | None:
        if text not in self._claim_cache:
            out = _embed(self.embed, [text])
            self._claim_cache[text] = None if out is None else out[0]
        return self._claim_cache[text]

    def score(self, claim: str, n: int) -> SupportScore:
        """Support of chunk ``n`` (1-based) for ``claim``."""
        chunk = self.chunks[n - 1]
        claim_tokens = lexical.content_tokens(claim)
        missing = tuple(sorted(lexical.numbers(claim) - chunk.numbers))
        if not chunk.segments:
            return SupportScore(0.0, 0.0, None, missing, True, 0, 0)
        best = max(self._spans(claim, claim_tokens, n), key=lambda s: s[0])
        _, sim, lex, cos, start, end = best
        negation_ok = lexical.negation_count(claim) == lexical.negation_count(chunk.text[start:end])
        return SupportScore(round(sim, 4), round(lex, 4), cos, missing, negation_ok, start, end)

    def _spans(self, claim: str, claim_tokens: set[str], n: int):
        chunk = self.chunks[n - 1]
        vecs = self.sentence_vectors(n)  # first: a claim copied from this chunk is then embedded already
        claim_vec = self.vector(claim)
        segs = chunk.segments
        for i in range(len(segs)):
            for j in (i, i + 1):
                if j >= len(segs):
                    continue
                start, end = segs[i].start, segs[j].end
                tokens = chunk.tokens[i] | chunk.tokens[j]
                lex = lexical.coverage(claim_tokens, chunk.text[start:end], tokens)
                cos = _cosine(claim_vec, vecs, i, j)
                sim = lex if cos is None else W_LEXICAL * lex + W_EMBED * max(cos, 0.0)
                yield (sim - PAIR_PENALTY * (j > i), sim, lex, cos, start, end)


def _index_chunk(text: str, heading: str = "") -> IndexedChunk:
    usable, flagged = [], False
    for seg in split_sentences(text):
        if looks_like_instruction(seg.text):
            flagged = True
        else:
            usable.append(seg)
    numbers: set[str] = set()
    for seg in usable:
        numbers |= lexical.numbers(seg.text)
    tokens = [lexical.content_tokens(s.text) for s in usable]
    return IndexedChunk(text, usable, tokens, numbers, flagged, heading, lexical.content_tokens(heading))


def _embed(embed: Embed | None, texts: list[str]) -> np.ndarray | None:
    if embed is None:
        return None
    if not texts:
        return np.zeros((0, 1), dtype=np.float32)
    vectors = np.asarray(embed(texts), dtype=np.float32)
    if vectors.ndim != 2 or vectors.shape[0] != len(texts):
        raise ValueError(f"embed returned shape {vectors.shape} for {len(texts)} texts")
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)  # cosine needs unit vectors


def _cosine(claim_vec: np.ndarray | None, vecs: np.ndarray | None, i: int, j: int) -> float | None:
    if claim_vec is None or vecs is None:
        return None
    span = vecs[i] if i == j else vecs[i] + vecs[j]
    norm = float(np.linalg.norm(span))
    return round(float(claim_vec @ span) / norm, 4) if norm else 0.0


def score_support(claims: Sequence[str], chunks: Sequence[str], embed: Embed | None) -> list[SupportScore]:
    """Score ``claims[i]`` against ``chunks[i]`` — for calibrating ``support_threshold``."""
    if len(claims) != len(chunks):
        raise ValueError(f"{len(claims)} claims but {len(chunks)} chunks")
    index = EvidenceIndex(chunks, embed)
    return [index.score(claim, i + 1) for i, claim in enumerate(claims)]
