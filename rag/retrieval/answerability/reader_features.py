"""What the readers read for the decision (Chinese questions): the answer reader's P(the best
chunk's focus window holds the answer), that window found by shared characters and, with a
``Locator``, by closeness in meaning; and the sentence reader's P(some sentence of the best chunk
answers).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from rag.readers.reader import focus, shipped_reader
from rag.readers.sentence_reader import shipped_sentence_reader
from rag.retrieval.answerability.terms import sentences

if TYPE_CHECKING:
    from rag.retrieval.answerability import EvidenceChunk

# the readers read the best reranked chunk: the window reader its focus window, the sentence reader all of it
READ_CHUNKS = 1


@dataclass(frozen=True)
class Locator:
    """Each sentence's embedding cosine to the question: where the answer reader's window is
    looked for besides the question's own characters (``focus``). ``label`` names the embedder."""

    label: str
    query: Callable[[str], np.ndarray]  # the question's unit vector
    texts: Callable[[list[str]], np.ndarray]  # the sentences' unit vectors, one row each

    def __call__(self, question: str, sents: Sequence[str]) -> list[float]:
        return (self.texts(list(sents)) @ self.query(question)).tolist() if sents else []


def read_window(
    reader, question: str, top: Sequence[EvidenceChunk], locate: Locator | None = None
) -> tuple[float, str]:
    """The reader's probability for the best chunk's window, and that window. One window, not
    one per top chunk: on CMRC trial folds 3-4 the model separates as well with it, and it costs
    a third (docs/BENCHMARKS.md, "Reader precision and the cost of a Chinese question").
    ``locate``: each sentence's closeness in meaning to the question, for ``focus``."""
    read = top[:READ_CHUNKS]
    windows = [
        focus(question, c.text, c.heading, locate(question, sentences(c.text)) if locate else None) for c in read
    ]
    probs = reader.probabilities(question, windows, [c.heading for c in read])
    if not probs:
        return 0.0, ""
    i = max(range(len(probs)), key=probs.__getitem__)
    return probs[i], windows[i]


def read_sentences(reader, question: str, top: Sequence[EvidenceChunk]) -> float:
    """The sentence reader's P(some sentence holds the answer) for the best chunk, read whole
    (1 - P(none); a chunk longer than one window counts its best window). The best chunk alone
    separates better than the best of the top 3 (CMRC trial folds 3-4, docs/BENCHMARKS.md) and
    costs a third."""
    passages = [(sentences(c.text), c.heading) for c in top[:READ_CHUNKS]]
    return max(reader.windows_for(question, passages), default=0.0)


def shipped_readers(precision: str):
    """(answer reader, sentence reader) when both load, else (None, None): the ``<script>/reader``
    twin reads both features, so one reader alone would be computed for nothing (and the
    sentence reader, without the answer reader's e5 base, would load one of its own)."""
    reader = shipped_reader(precision)
    sreader = shipped_sentence_reader(precision) if reader is not None else None
    return (reader, sreader) if sreader is not None else (None, None)
