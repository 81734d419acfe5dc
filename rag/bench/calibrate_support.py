"""Choose ``support_threshold`` on a gold set: separate supported claims from unsupported ones.

Positives: each answerable item's reference answer against the chunk holding its first
relevant passage (a paraphrase the chunk does support). Negatives: the same reference
answer against the relevant chunk of a different question (fluent, on-topic, unsupported).
The threshold that maximizes balanced accuracy (the middle of the strictest such plateau,
failing closed) is reported with both score distributions: `python -m rag calibrate-support`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rag.answer.support import Embed, score_support


@dataclass(frozen=True)
class Calibration:
    threshold: float
    balanced_accuracy: float
    positives: list[float]
    negatives: list[float]


def claim_pairs(gold, kb) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(claim, chunk text) pairs that should pass and that should fail."""
    from rag.eval.gold.anchoring import find_quote

    contexts = []
    for item in gold.answerable():
        if not item.reference_answer or not item.relevant:
            continue
        passage = item.relevant[0]
        doc = next((d for d in kb.documents() if d.name == passage.doc), None)
        if doc is None or not passage.quote:
            continue
        span = find_quote(kb.document_text(doc.id), passage.quote)
        chunk = next((c for c in kb.chunks(doc.id) if span and c.char_start <= span.start < c.char_end), None)
        if chunk is not None:
            contexts.append((item.reference_answer, chunk.text))
    positives = list(contexts)
    negatives = [(claim, contexts[(i + 1) % len(contexts)][1]) for i, (claim, _) in enumerate(contexts)]
    return positives, negatives


def calibrate(positives, negatives, embed: Embed | None) -> Calibration:
    pos = [s.score for s in score_support([c for c, _ in positives], [t for _, t in positives], embed)]
    neg = [s.score for s in score_support([c for c, _ in negatives], [t for _, t in negatives], embed)]
    grid = [round(float(t), 2) for t in np.arange(0.05, 0.95, 0.01)]
    bal = [(np.mean([p >= t for p in pos]) + np.mean([n < t for n in neg])) / 2 for t in grid]
    top = max(bal)
    # Fail closed: among equally good thresholds take the strictest plateau, and its middle.
    hi = max(i for i, b in enumerate(bal) if b == top)
    lo = hi
    while lo > 0 and bal[lo - 1] == top:
        lo -= 1
    return Calibration(round((grid[lo] + grid[hi]) / 2, 2), float(top), pos, neg)
