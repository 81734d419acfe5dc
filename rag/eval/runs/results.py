"""What an evaluation run records: one ``QuestionResult`` per gold question and the ``EvalRun``.

Both round-trip through plain JSON (``to_dict`` / ``from_dict``), which is how runs are stored
in the catalog's ``eval_runs`` table and exported.

Stages (``STAGES``), in pipeline order, each a ranked list of chunk ids taken from the trace:

* ``dense``    candidates by dense rank (Chroma cosine), best first;
* ``bm25``     candidates by BM25 rank;
* ``rrf``      candidates by Reciprocal Rank Fusion rank;
* ``rerank``   the candidates the reranker scored, by rerank rank;
* ``evidence`` the chunks handed to the generator, in strength order: each kept candidate by
  rerank rank, followed by the neighbours added for it; the order the generator sees and the
  evidence is numbered in (``QuestionResult.presented``). Empty when the fallback refused or
  asked back.

Levels (``LEVELS``): ``chunk`` scores the chunk ids against the chunks that the gold labels'
character spans point at (:func:`rag.eval.gold.anchoring.relevant_chunk_ids`; only for questions
with span, quote or chunk labels); ``doc`` scores the documents in order of their first chunk
against the labelled documents.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

from rag.stages import RANKED_STAGES, current_timings

STAGES = RANKED_STAGES
LEVELS = ("chunk", "doc")

Metrics = dict[str, dict[str, dict[str, float | None]]]  # level -> stage -> metric -> value


@dataclass
class QuestionResult:
    """How the pipeline did on one gold question."""

    id: str
    question: str
    should_refuse: bool = False
    tags: list[str] = field(default_factory=list)
    trace_id: str = ""
    kind: str = ""  # answer | refusal | clarify (the chat turn's kind) | retrieval (answers off) | error
    refused: bool = False  # the user got no answer (refusal or a question back)
    fallback: str = ""  # the fallback action: answer | reject | clarify (retry_wider resolves to one)
    fallback_reason: str = ""
    best_score: float | None = None  # the score the fallback compared (P(answerable) when that stage ran)
    answerable_p: float | None = None  # the answerability stage's probability (the refusal trade-off curve)
    chunks: dict[str, list[str]] = field(default_factory=dict)  # stage -> ranked chunk ids
    docs: dict[str, list[str]] = field(default_factory=dict)  # stage -> ranked document names
    presented: list[str] = field(default_factory=list)  # evidence chunk ids in the generator's order
    on_screen: list[str] = field(
        default_factory=list
    )  # chunk ids the user sees: the evidence, or the closest under a refusal
    gold_on_screen: bool | None = None  # a relevant passage is among them (None: to refuse, or no labels)
    relevant_chunks: dict[str, int] = field(default_factory=dict)  # chunk id -> grade
    relevant_docs: dict[str, int] = field(default_factory=dict)  # document name -> grade
    hard_negatives_in_evidence: list[str] = field(default_factory=list)  # chunk ids
    metrics: Metrics = field(default_factory=dict)
    answer: str = ""
    citations_shown: int = 0
    citations_valid: int = 0
    contained: bool | None = None  # reference answer contained in the answer (None: no reference)
    token_recall: float | None = None
    latency_ms: dict[str, float] = field(default_factory=dict)  # per stage, plus "answer" and "wall"
    error: str = ""
    # answer metrics that can fail (rag.eval.runs.answer_quality): None where the labels cannot say
    key_facts: int = 0  # key facts the gold item lists
    key_facts_found: int = 0  # ... of which the shown answer holds
    citations_on_gold: int | None = None  # shown citations falling on a relevant gold span
    sentences_shown: int = 0  # claim sentences shown
    sentences_off_topic: int | None = None  # ... citing no relevant gold span
    gold_spans: int | None = None  # grade-2 relevant spans
    gold_spans_cited: int | None = None  # ... cited by the shown answer
    drafts: int = 0  # drafts the generator made
    drafts_rejected: int = 0  # ... the validator rejected
    rejection_reasons: dict[str, int] = field(default_factory=dict)  # issue code -> failed checks, rejected drafts

    @property
    def refusal_correct(self) -> bool:
        return self.refused == self.should_refuse

    def metric(self, name: str, stage: str = "evidence", level: str = "doc") -> float | None:
        return self.metrics.get(level, {}).get(stage, {}).get(name)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> QuestionResult:
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in d.items() if k in known}
        values["latency_ms"] = current_timings(values.get("latency_ms", {}))
        return cls(**values)


@dataclass
class EvalRun:
    """One gold set run against one knowledge base under one configuration."""

    id: str
    kb: str
    goldset: str  # gold set name
    goldset_hash: str  # sha256 of its canonical JSONL (same hash = same questions and labels)
    settings: dict[str, Any]  # Settings.result_fields(): everything that changes results
    config_fingerprint: str
    index_revision: int
    created_at: str
    answers: bool = True  # False: retrieval only, refusal read from the fallback decision
    ks: list[int] = field(default_factory=lambda: [1, 3, 5, 10])
    embedder: str = ""
    reranker: str = ""  # the label of the reranker that produced the scores (names a stand-in)
    duration_s: float = 0.0
    note: str = ""
    questions: list[QuestionResult] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)

    def by_id(self) -> dict[str, QuestionResult]:
        return {q.id: q for q in self.questions}

    def headline(self) -> dict[str, float | None]:
        """A few figures for lists: doc- and chunk-level nDCG@10 / Recall@5 of the evidence, refusal accuracy."""
        retrieval = self.summary.get("retrieval", {})
        out: dict[str, float | None] = {}
        for level in LEVELS:
            stage = retrieval.get(level, {}).get("evidence", {})
            for name in ("ndcg@10", "recall@5"):
                out[f"{level} {name}"] = stage.get(name)
        out["refusal accuracy"] = self.summary.get("refusal", {}).get("accuracy")
        return out

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["questions"] = [q.to_dict() for q in self.questions]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> EvalRun:
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in d.items() if k in known}
        values["questions"] = [QuestionResult.from_dict(q) for q in d.get("questions", [])]
        return cls(**values)
