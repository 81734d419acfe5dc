"""The answerability verdict as the Inspector shows it: each feature with its value, weight and
share of the decision, the model that decided, and what was missing."""

from __future__ import annotations

import pandas as pd

from rag.retrieval.answerability import compared
from rag.retrieval.answerability.model import FEATURES
from rag.retrieval.trace import Answerability


def feature_frame(a: Answerability) -> pd.DataFrame:
    """One row per feature: value, weight, contribution to the logit (weight x value), meaning.
    Under the rule (no fitted model) only ``p_top`` decides; weights and contributions are blank."""
    rows = [
        {
            "feature": name,
            "value": value,
            "weight": a.weights.get(name),
            "contribution": a.contributions.get(name),
            "what it measures": FEATURES.get(name, ""),
        }
        for name, value in a.features.items()
    ]
    if a.weights:
        rows.append(
            {"feature": "bias", "value": None, "weight": None, "contribution": a.bias, "what it measures": "intercept"}
        )
    return pd.DataFrame(rows, columns=["feature", "value", "weight", "contribution", "what it measures"])


def verdict_lines(a: Answerability) -> list[str]:
    """Plain sentences: the model and its comparison, what the question asks for and what is missing
    (which rule decided is ``rag.views.decision``'s to say)."""
    lines = [f"Model {a.model} ({a.script} script): P(answerable) {compared(a.probability, a.threshold, '≥')}."]
    if a.asks_for:
        lines.append(f"The question asks for a {'name' if a.asks_for == 'person' else a.asks_for}.")
    if a.absent_terms:
        lines.append("Found in no searched chunk: " + ", ".join(f"'{t}'" for t in a.absent_terms) + ".")
    if a.unheld_terms:
        lines.append("Not in the best evidence sentence: " + ", ".join(f"'{t}'" for t in a.unheld_terms) + ".")
    if a.best_sentence:
        lines.append(f"Best evidence sentence: “{a.best_sentence}”")
    if a.reader:
        lines.append(f"Readers: {a.reader}.")
    if a.reader_question:
        lines.append(f"The readers read the question in the best chunk's words: “{a.reader_question}”")
    if a.reader_window:
        lines.append(f"Window the reader rated highest: “{a.reader_window}”")
    if a.missing:
        lines.append(f"Shown to the user: {a.missing}")
    return lines
