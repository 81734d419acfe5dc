"""The settings a user may change for an evaluation run or a replay, defined once from ``Settings``.

The Evaluation page and the Inspector's replay both render ``override_fields``: the label and
help come from the ``Settings`` field, the value from the active settings or a stored trace's
(falling back to the ``Settings`` default), never from a number written in a page.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from rag.config import Settings
from rag.retrieval.rerankers import REGISTRY


@dataclass(frozen=True)
class OverrideField:
    name: str  # the Settings field
    key: str  # widget key suffix (``<prefix>_<key>``)
    label: str
    help: str
    value: Any
    low: float | None = None  # number inputs: bounds and step
    high: float | None = None
    step: float | None = None
    options: tuple[str, ...] = ()  # choice inputs

    @property
    def is_choice(self) -> bool:
        return bool(self.options)


# name -> (key, label, low, high, step); reranker is a choice among the registered backends
_NUMBERS = {
    "recall_k": ("recall_k", "recall_k", 1, 500, 1),
    "top_n": ("top_n", "top_n", 1, 100, 1),
    "rrf_k": ("rrf_k", "RRF k", 1, 1000, 1),
    # the threshold that decides: P(answerable) of the question's fitted model (0 = never refuse)
    "answerable_threshold": ("threshold", "answerability threshold", 0.0, 1.0, 0.01),
}
OVERRIDABLE = (*_NUMBERS, "reranker")


def override_fields(values: Settings | Mapping[str, Any] | None = None) -> list[OverrideField]:
    """One field per overridable setting, valued from ``values`` (Settings or a trace's settings dict)."""
    spec = {f.name: f for f in fields(Settings)}
    given = values.public_dict() if isinstance(values, Settings) else dict(values or {})
    out = []
    for name in OVERRIDABLE:
        f = spec[name]
        value = given.get(name, f.default)
        if name == "reranker":
            names = tuple(sorted(REGISTRY))
            value = value if value in names else f.default
            out.append(OverrideField(name, name, name, f.metadata["doc"], value, options=names))
            continue
        key, label, low, high, step = _NUMBERS[name]
        kind = type(f.default)
        out.append(OverrideField(name, key, label, f.metadata["doc"], kind(value), low, high, step))
    return out
