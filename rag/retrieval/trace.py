"""The retrieval trace: one row per candidate ever seen, with every stage's rank and score.

Nothing here overwrites an upstream score: each stage writes its own fields
(``dense_*``, ``sparse_*``, ``fused_*``, ``rerank_*``) beside the others.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime
from enum import Enum
from typing import Any

from rag.records import EvidencePassage, ModelLabel
from rag.stages import current_timings

CLOSEST_PASSAGES = 3  # reranked passages shown under a refusal (Chat) and counted by eval


class Dropped(str, Enum):  # noqa: UP042 (str Enum, as STYLE.md asks)
    """Why a candidate is not in the final evidence."""

    RECALL_CUT = "recall_cut"  # below recall_k in every retriever (only seen on a wider retry)
    FUSION_CUT = "fusion_cut"  # fused rank beyond what the reranker looks at
    RERANK_CUT = "rerank_cut"  # reranked below top_n
    THRESHOLD = "threshold"  # rerank score under the threshold
    DEDUPE = "dedupe"  # same chunk (or same text) already in the evidence
    BUDGET = "budget"  # evidence character budget exhausted
    FILTER = "filter"  # excluded by a document/tag/date filter
    NOT_INDEXED = "not_indexed"  # no active chunk: an older revision, a deleted document or a failed upload


class FallbackAction(str, Enum):  # noqa: UP042
    ANSWER = "answer"  # evidence is strong enough
    RETRY_WIDER = "retry_wider"
    CLARIFY = "clarify"
    REJECT = "reject"


class Decider(str, Enum):  # noqa: UP042
    """What decided whether the evidence answers the question: the rule or threshold a decision names."""

    NOTHING_RECALLED = "nothing_recalled"  # no candidate to judge
    ABSENT_TERMS = "absent_terms"  # a question word in no searched chunk refuses on its own
    ANSWERABILITY = "answerability"  # the fitted model's P(answerable) against answerable_threshold
    TOP_SCORE_RULE = "top_score_rule"  # no fitted model: best rerank score against rerank_threshold
    RERANK_THRESHOLD = "rerank_threshold"  # no answerability stage: best rerank score against rerank_threshold
    UNCALIBRATED = "uncalibrated"  # scores not calibrated: no threshold applied


class ActionCause(str, Enum):  # noqa: UP042
    """Why the decision took its action once the evidence was judged."""

    ANSWERS = "answers"  # the evidence answers
    WIDEN = "widen"  # weak on the first attempt: recall widened once
    RETRIED = "retried"  # still weak after the wider retry
    SPECIFIC = "specific"  # weak, and the question is specific: refused
    VAGUE = "vague"  # weak, and the question is too vague to search well: asked back
    POLICY = "policy"  # the fallback policy (clarify or reject) chose the action
    LLM = "llm"  # the LLM judge chose the action


@dataclass
class Candidate:
    chunk_id: str
    doc_id: str
    doc_name: str
    page: int
    heading_path: tuple[str, ...]
    text: str
    char_start: int
    char_end: int
    dense_rank: int | None = None
    dense_score: float | None = None
    dense_model: str = ""  # the embedder whose list gave dense_rank (str of its ModelLabel)
    sparse_rank: int | None = None
    sparse_score: float | None = None
    fused_rank: int | None = None
    fused_score: float | None = None
    rerank_rank: int | None = None
    rerank_score: float | None = None
    final_rank: int | None = None
    dropped_by: Dropped | None = None
    found_by: list[int] = field(default_factory=list)  # indexes into Trace.queries
    expanded_from: str | None = None  # set for neighbour chunks added during expansion
    source_deleted: bool = False  # its document was deleted: the text is gone, the ids stay

    @classmethod
    def from_chunk(cls, chunk: Any, **stages: Any) -> Candidate:
        """A trace row for ``chunk`` (a ChunkRecord), with any stage fields given."""
        return cls(
            chunk_id=chunk.id,
            doc_id=chunk.doc_id,
            doc_name=chunk.doc_name,
            page=chunk.page,
            heading_path=tuple(chunk.heading_path),
            text=chunk.text,
            char_start=chunk.char_start,
            char_end=chunk.char_end,
            **stages,
        )

    @property
    def kept(self) -> bool:
        return self.final_rank is not None

    def passage(self) -> EvidencePassage:
        """This candidate as the answer stage reads it: every field the record has, copied (a trace
        read back from JSON holds its heading path as a list)."""
        values = {f.name: getattr(self, f.name) for f in fields(EvidencePassage)}
        return EvidencePassage(**values | {"heading_path": tuple(self.heading_path)})


@dataclass
class QueryRun:
    """One query sent to the retrievers (the original, a rewrite, or a HyDE passage)."""

    text: str
    kind: str  # original | rewrite | hyde | wider
    reason: str = ""
    dense_ids: list[str] = field(default_factory=list)
    sparse_ids: list[str] = field(default_factory=list)
    multilingual_ids: list[str] = field(default_factory=list)  # the multilingual embedder's hits, when both ran


@dataclass
class FallbackDecision:
    action: FallbackAction
    reason: str
    best_score: float | None
    threshold: float
    judged_by: str = "rules"  # rules | llm
    message: str = ""  # the clarifying question or refusal text shown to the user
    decided_by: Decider | None = None  # the rule or threshold that decided (None: stored before it was recorded)
    vetoed_terms: list[str] = field(default_factory=list)  # the absent-term rule's words, when it refused
    cause: ActionCause | None = None  # why this action once the evidence was judged
    cause_detail: str = ""  # the vagueness found, or the LLM's reason

    @property
    def margin(self) -> float | None:
        return None if self.best_score is None else self.best_score - self.threshold


@dataclass
class TermMatch:
    """How the searched documents say one salient question term."""

    term: str  # as the user wrote it
    found: (
        str  # as written | spelling (a typo, a jieba cut, a figure in digits) | synonym | close phrase | range | absent
    )
    via: str = ""  # the spelling or synonyms found, with the resource that gave them
    in_best_sentence: bool = False  # whether the best evidence sentence holds it (any of those ways)


@dataclass
class Answerability:
    """The answerability stage's verdict: does the evidence answer the question (see
    ``rag.retrieval.answerability``)? Every feature, its contribution to the logit, and why."""

    model: str  # which model decided, e.g. logreg[...]@weights.json:cjk, or the p_top rule
    script: str  # latin | cjk: which model applies
    features: dict[str, float]
    weights: dict[str, float]  # the model's weight per feature (empty for the rule)
    contributions: dict[str, float]  # weight x value per feature (empty for the rule)
    bias: float
    probability: float
    threshold: float
    answerable: bool
    asks_for: str  # date | number | person | '' (what the question's wording asks for)
    absent_terms: list[str]  # salient question terms found in no searched chunk
    unheld_terms: list[str]  # salient terms the best evidence sentence lacks
    best_sentence: str
    reason: str  # the comparison, e.g. "P(answerable) 0.214 < 0.500"
    missing: str = ""  # what was missing, for the user ("The documents don't mention 'x'.")
    reader: str = ""  # the readers behind the ``reader`` / ``reader_sentence`` features, or why none was used
    reader_window: str = ""  # the evidence window the reader rated highest
    reader_question: str = ""  # the question as the readers read it: in the best chunk's words (its synonyms)
    term_matches: list[TermMatch] = field(default_factory=list)  # each salient term: how it was found


@dataclass
class Trace:
    question: str
    kb: str
    config_fingerprint: str
    index_revision: int
    embedder: ModelLabel
    reranker: ModelLabel
    settings: dict[str, Any] = field(default_factory=dict)
    dense_models: list[ModelLabel] = field(default_factory=list)  # the dense retrievers that ran, in list order
    queries: list[QueryRun] = field(default_factory=list)
    candidates: list[Candidate] = field(default_factory=list)
    fallback: FallbackDecision | None = None
    answerability: Answerability | None = None
    timings_ms: dict[str, float] = field(default_factory=dict)
    filters: dict[str, Any] = field(default_factory=dict)
    attempts: int = 1  # 2 when retry_wider ran
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:16])
    created_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))

    def evidence(self) -> list[Candidate]:
        """Kept candidates in final order."""
        return sorted((c for c in self.candidates if c.kept), key=lambda c: c.final_rank or 0)

    def passages(self) -> list[EvidencePassage]:
        """The evidence in final order, as the answer stage reads it (``[n]`` cites the n-th)."""
        return [c.passage() for c in self.evidence()]

    def closest(self, k: int = CLOSEST_PASSAGES) -> list[Candidate]:
        """The best ``k`` reranked candidates when no evidence was kept (a refusal or a question
        back at the retrieval stage): what Chat shows under the refusal, for the user to judge
        it by. Empty when there is evidence (that is what is shown) or nothing was reranked."""
        return [] if self.evidence() else self._reranked(k)

    def on_screen(self) -> list[Candidate]:
        """The passages a user sees for this question: the evidence, or else :meth:`closest`."""
        return self.evidence() or self._reranked(CLOSEST_PASSAGES)

    def _reranked(self, k: int) -> list[Candidate]:
        ranked = sorted((c for c in self.candidates if c.rerank_rank is not None), key=lambda c: c.rerank_rank)
        return ranked[:k]

    def by_id(self) -> dict[str, Candidate]:
        return {c.chunk_id: c for c in self.candidates}

    def to_json(self) -> str:
        return json.dumps(asdict(self), default=_enum_value, ensure_ascii=False)

    @classmethod
    def from_json(cls, blob: str) -> Trace:
        d = json.loads(blob)
        d["embedder"] = ModelLabel(**d["embedder"])
        d["reranker"] = ModelLabel(**d["reranker"])
        d["dense_models"] = [ModelLabel(**m) for m in d.get("dense_models", [])]
        d["queries"] = [QueryRun(**q) for q in d["queries"]]
        d["timings_ms"] = current_timings(d.get("timings_ms", {}))
        cands = []
        for c in d["candidates"]:
            c["heading_path"] = tuple(c["heading_path"])
            c["dropped_by"] = Dropped(c["dropped_by"]) if c["dropped_by"] else None
            cands.append(Candidate(**c))
        d["candidates"] = cands
        if d.get("fallback"):
            fb = d["fallback"]
            fb["action"] = FallbackAction(fb["action"])
            fb["decided_by"] = Decider(fb["decided_by"]) if fb.get("decided_by") else None
            fb["cause"] = ActionCause(fb["cause"]) if fb.get("cause") else None
            d["fallback"] = FallbackDecision(**fb)
        if d.get("answerability"):
            a = d["answerability"]
            a["term_matches"] = [TermMatch(**m) for m in a.get("term_matches", [])]
            d["answerability"] = Answerability(**a)
        return cls(**d)


def _enum_value(obj: Any) -> Any:
    if isinstance(obj, Enum):
        return obj.value
    raise TypeError(f"not JSON serializable: {type(obj).__name__}")
