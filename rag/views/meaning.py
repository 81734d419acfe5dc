"""How the documents say each of the question's salient terms: the table the Inspector shows
under the answerability verdict (as written, another spelling, a synonym, or not at all)."""

from __future__ import annotations

import pandas as pd

from rag.retrieval.trace import Answerability

FOUND_LABELS = {
    "as written": "as written",
    "spelling": "as another spelling",
    "synonym": "as a synonym",
    "close phrase": "as a phrase close in meaning",
    "range": "in a rule's range (an amount, a duration or a count)",
    "absent": "not at all",
}
FOUND_LABELS_ZH = {
    "as written": "原词",
    "spelling": "其他写法",
    "synonym": "同义词",
    "close phrase": "意思相近的说法",
    "range": "在规定的范围内（金额、时长或数量）",
    "absent": "没有找到",
}


def term_match_frame(a: Answerability, chinese: bool = False) -> pd.DataFrame:
    """One row per salient term: how the searched documents hold it, through what, and whether
    the best evidence sentence does."""
    labels = FOUND_LABELS_ZH if chinese else FOUND_LABELS
    rows = [
        {
            "term": m.term,
            "found": labels.get(m.found, m.found),
            "via": m.via or "—",
            "in best sentence": "✓" if m.in_best_sentence else "—",
        }
        for m in a.term_matches
    ]
    return pd.DataFrame(rows, columns=["term", "found", "via", "in best sentence"])
