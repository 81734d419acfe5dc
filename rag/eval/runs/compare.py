"""Compare two evaluation runs: metric deltas per stage, per-question wins and losses, and
which chunks moved into or out of the evidence.

Deltas are ``b - a``: run ``b`` is the change being judged against the baseline ``a``. A
question is a ``win`` when ``b`` scores higher on the chosen metric, a ``loss`` when lower, a
``tie`` when equal and ``n/a`` when the metric is undefined in either run (no labels at that
level, an error, or a question that should be refused). Questions are matched by gold id.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rag.eval.runs.results import LEVELS, STAGES, EvalRun, QuestionResult
from rag.records import ChunkRecord

TIE_TOLERANCE = 1e-9


@dataclass(frozen=True)
class MetricDelta:
    level: str
    stage: str
    metric: str
    a: float | None
    b: float | None

    @property
    def delta(self) -> float | None:
        return None if self.a is None or self.b is None else self.b - self.a


@dataclass
class QuestionDelta:
    id: str
    question: str
    a: float | None
    b: float | None
    outcome: str  # win | loss | tie | n/a (from b's side)
    entered: list[str] = field(default_factory=list)  # evidence chunk ids in b, not in a
    left: list[str] = field(default_factory=list)  # evidence chunk ids in a, not in b
    entered_relevant: list[str] = field(default_factory=list)  # of ``entered``, labelled relevant
    left_relevant: list[str] = field(default_factory=list)
    refused_a: bool = False
    refused_b: bool = False
    should_refuse: bool = False

    @property
    def delta(self) -> float | None:
        return None if self.a is None or self.b is None else self.b - self.a

    @property
    def refusal_changed(self) -> bool:
        return self.refused_a != self.refused_b


@dataclass
class RunComparison:
    a: str  # run ids
    b: str
    metric: str
    stage: str
    level: str
    same_goldset: bool
    index_changed: bool
    settings_changed: dict[str, tuple[Any, Any]]
    deltas: list[MetricDelta]
    questions: list[QuestionDelta]
    refusal: dict[str, tuple[Any, Any]]  # refusal summary figure -> (a, b)
    only_in_a: list[str] = field(default_factory=list)
    only_in_b: list[str] = field(default_factory=list)
    answers: tuple[bool, bool] = (True, True)  # whether each run generated answers

    def outcomes(self, outcome: str) -> list[QuestionDelta]:
        return [q for q in self.questions if q.outcome == outcome]

    @property
    def wins(self) -> list[QuestionDelta]:
        return self.outcomes("win")

    @property
    def losses(self) -> list[QuestionDelta]:
        return self.outcomes("loss")

    @property
    def ties(self) -> list[QuestionDelta]:
        return self.outcomes("tie")

    def delta(self, metric: str, stage: str, level: str) -> MetricDelta | None:
        for d in self.deltas:
            if (d.metric, d.stage, d.level) == (metric, stage, level):
                return d
        return None


def compare_runs(
    a: EvalRun, b: EvalRun, metric: str = "ndcg@10", stage: str = "evidence", level: str = "auto"
) -> RunComparison:
    """Compare run ``b`` against baseline ``a`` (``level`` ``auto``: chunk when both runs have
    chunk-level figures, else doc)."""
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}; use one of {STAGES}")
    level = _pick_level(a, b) if level == "auto" else level
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r}; use one of {LEVELS} or 'auto'")
    qa, qb = a.by_id(), b.by_id()
    keys = set(a.settings) | set(b.settings)
    return RunComparison(
        a=a.id,
        b=b.id,
        metric=metric,
        stage=stage,
        level=level,
        same_goldset=a.goldset_hash == b.goldset_hash,
        index_changed=a.index_revision != b.index_revision,
        settings_changed={k: (a.settings.get(k), b.settings.get(k)) for k in sorted(keys) if a.settings.get(k) != b.settings.get(k)},
        deltas=metric_deltas(a, b),
        questions=[question_delta(qa[i], qb[i], metric, stage, level) for i in qa if i in qb],
        refusal=_refusal(a, b),
        only_in_a=[i for i in qa if i not in qb],
        only_in_b=[i for i in qb if i not in qa],
        answers=(a.answers, b.answers),
    )  # fmt: skip


def metric_deltas(a: EvalRun, b: EvalRun) -> list[MetricDelta]:
    """Every summary metric of either run, per level and stage, with both values."""
    ra, rb = a.summary.get("retrieval", {}), b.summary.get("retrieval", {})
    out = []
    for level in LEVELS:
        for stage in STAGES:
            fa, fb = ra.get(level, {}).get(stage, {}), rb.get(level, {}).get(stage, {})
            for name in dict.fromkeys([*fa, *fb]):
                if name != "n":
                    out.append(MetricDelta(level, stage, name, fa.get(name), fb.get(name)))
    return out


def question_delta(qa: QuestionResult, qb: QuestionResult, metric: str, stage: str, level: str) -> QuestionDelta:
    va, vb = qa.metric(metric, stage, level), qb.metric(metric, stage, level)
    ea, eb = qa.chunks.get("evidence", []), qb.chunks.get("evidence", [])
    entered = [c for c in eb if c not in set(ea)]  # small lists (top_n plus neighbours)
    left = [c for c in ea if c not in set(eb)]
    return QuestionDelta(
        id=qb.id,
        question=qb.question,
        a=va,
        b=vb,
        outcome=_outcome(va, vb),
        entered=entered,
        left=left,
        entered_relevant=[c for c in entered if _is_relevant(qb, c)],
        left_relevant=[c for c in left if _is_relevant(qa, c)],
        refused_a=qa.refused,
        refused_b=qb.refused,
        should_refuse=qb.should_refuse,
    )


def _outcome(a: float | None, b: float | None) -> str:
    if a is None or b is None:
        return "n/a"
    if abs(b - a) <= TIE_TOLERANCE:
        return "tie"
    return "win" if b > a else "loss"


def _is_relevant(result: QuestionResult, chunk_id: str) -> bool:
    """Labelled relevant at chunk level, or (without chunk labels) from a relevant document."""
    if result.relevant_chunks:
        return result.relevant_chunks.get(chunk_id, 0) > 0
    ids, names = _doc_keys(result.chunks.get("evidence", [])), result.docs.get("evidence", [])
    # documents are listed in order of their first chunk, so first-seen doc ids pair with names
    doc_of = dict(zip(ids, names, strict=True)) if len(ids) == len(names) else {}
    return result.relevant_docs.get(doc_of.get(ChunkRecord.doc_of(chunk_id), ""), 0) > 0


def _doc_keys(chunk_ids: list[str]) -> list[str]:
    return list(dict.fromkeys(ChunkRecord.doc_of(c) for c in chunk_ids))


def _pick_level(a: EvalRun, b: EvalRun) -> str:
    both = all("chunk" in run.summary.get("retrieval", {}) for run in (a, b))
    return "chunk" if both else "doc"


def _refusal(a: EvalRun, b: EvalRun) -> dict[str, tuple[Any, Any]]:
    fa, fb = a.summary.get("refusal", {}), b.summary.get("refusal", {})
    return {k: (fa.get(k), fb.get(k)) for k in dict.fromkeys([*fa, *fb])}
