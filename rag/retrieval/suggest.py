"""For a probed chunk: the first stage that excluded it, why, and the smallest change that would
have let it in.

A change is a set of settings (or, for a filter, other filters) that replay runs as it is, so
the Inspector offers it in one click. The figures it names come from the probe's placement of
the chunk; the replay is the check, since a change also moves every other candidate.

No change answers from evidence the decision judged not to answer: a refused question is not
offered a lower answerability threshold, nor the question with its missing words cut out (a
broken sentence that, replayed, answers another question with the same passages); it is told
what the documents lack. A setting change whose trial still refuses says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

from rag.config import Settings
from rag.retrieval.answerability import refusing
from rag.retrieval.pipeline import RERANK_POOL_FACTOR, rerank_pool, retrieve
from rag.retrieval.trace import Decider, Dropped, FallbackAction, Trace
from rag.source import ProbedSource

if TYPE_CHECKING:
    from rag.retrieval.probe import ProbeResult


class ChangeKind(str, Enum):  # noqa: UP042 (str Enum, as STYLE.md asks)
    RECALL_K = "recall_k"  # a retriever lists it only further down: list more per retriever
    TOP_N = "top_n"  # the reranker placed it below top_n: keep more
    THRESHOLD = "threshold"  # the evidence floor dropped it: lower that floor
    COVERAGE = "coverage"  # the question was refused for what the documents lack: add a document that covers it
    FILTER = "filter"  # the question's filters exclude its document: drop those filters
    BUDGET = "budget"  # the evidence character budget ran out before it: raise the budget
    REVISION = "revision"  # an older revision: its document's active revision replaced it
    REINDEX = "reindex"  # deleted, failed or never ingested: upload the document (again)
    NONE = "none"  # nothing to change (it is evidence, or a duplicate of evidence)


REPLAYABLE = {ChangeKind.RECALL_K, ChangeKind.TOP_N, ChangeKind.THRESHOLD, ChangeKind.FILTER, ChangeKind.BUDGET}


@dataclass(frozen=True)
class Change:
    kind: ChangeKind
    text: str  # what to change, in words
    settings: dict[str, Any] = field(default_factory=dict)  # replay's setting overrides
    filters: dict[str, Any] | None = None  # replay with these filters (None: the trace's own)

    @property
    def replayable(self) -> bool:
        return self.kind in REPLAYABLE


def explain(kb: ProbedSource, trace: Trace, settings: Settings, out: ProbeResult) -> None:
    """Fill ``out.excluded_by``, ``out.reason`` and ``out.changes`` (smallest first)."""
    row = out.candidate
    if not out.active:
        out.excluded_by, out.reason = Dropped.NOT_INDEXED, f"{out.state}, so no retriever could list it."
        out.changes = [_not_indexed(kb, out)]
    elif out.filtered:
        out.excluded_by = Dropped.FILTER
        shown = ", ".join(f"{k}={trace.filters[k]}" for k in out.filtered)
        out.reason = f"Its document is outside the question's filters ({shown}); its ranks are given as without them."
        rest = {k: v for k, v in trace.filters.items() if k not in out.filtered}
        out.changes = [Change(ChangeKind.FILTER, f"drop the filter {shown}", filters=rest)]
    elif row is not None and row.kept:
        out.excluded_by, out.reason = None, f"It is evidence [{row.final_rank}]."
    else:
        out.excluded_by = row.dropped_by if row is not None else Dropped.RECALL_CUT
        _STAGES.get(out.excluded_by, _recall)(kb, trace, settings, out)


def _recall(kb: ProbedSource, trace: Trace, settings: Settings, out: ProbeResult) -> None:
    ranks = [p.rank for p in (out.dense, out.bm25) if p is not None and p.rank is not None]
    out.reason = f"Outside recall_k {out.recall_k} of both retrievers: {_places(out)}."
    if out.candidate is not None:  # listed, but only by the wider retry
        out.reason = (
            f"Beyond recall_k {settings.recall_k} of both retrievers, listed only by the wider retry: {_places(out)}."
        )
    changes = []
    if ranks:
        needed, note = _after_recall(kb, trace, settings, out, min(ranks))
        changes.append(Change(ChangeKind.RECALL_K, _say(needed, settings) + note, needed))
    else:
        out.reason = f"No retriever lists it: {_places(out)}."
    out.changes = changes or [Change(ChangeKind.NONE, "no setting lets it in: it shares no term with the question")]


def _fusion(kb: ProbedSource, trace: Trace, settings: Settings, out: ProbeResult) -> None:
    pool = rerank_pool(out.recall_k)
    rank = out.candidate.fused_rank or 0
    out.reason = f"Recalled, but fused at RRF #{rank}: the reranker scores only the top {pool} fused candidates."
    k = math.ceil(rank / RERANK_POOL_FACTOR)
    needed, note = _after_recall(kb, trace, settings, out, max(k, settings.recall_k + 1))
    out.changes = [Change(ChangeKind.RECALL_K, _say(needed, settings) + note, needed)]


def _rerank(kb: ProbedSource, trace: Trace, settings: Settings, out: ProbeResult) -> None:
    out.reason = f"Reranked #{out.rerank_rank} (score {out.rerank_score:.3f}); top_n {settings.top_n} keeps the first {settings.top_n}."
    needed = {"top_n": out.rerank_rank} | _min_score(settings, out) | _budget_need(trace, settings, out)
    out.changes = [Change(ChangeKind.TOP_N, _say(needed, settings) + _still_refused(trace), needed)]


def _threshold(kb: ProbedSource, trace: Trace, settings: Settings, out: ProbeResult) -> None:
    fb = trace.fallback
    if fb is not None and fb.action is not FallbackAction.ANSWER:
        score = f" (score {out.rerank_score:.3f})" if out.rerank_score is not None else ""
        out.reason = (
            f"It was reranked #{out.rerank_rank}{score}; the decision ({fb.action.value}) kept every passage out."
        )
        out.changes = [_coverage(trace)]
        return
    floor = _below(out.rerank_score or 0.0)
    out.reason = (
        f"Its rerank score {out.rerank_score:.3f} is under evidence_min_score {settings.evidence_min_score:g}, "
        "below which a kept candidate is not evidence."
    )
    needed = {"evidence_min_score": floor}
    out.changes = [Change(ChangeKind.THRESHOLD, _say(needed, settings), needed)]


def _dedupe(kb: ProbedSource, trace: Trace, settings: Settings, out: ProbeResult) -> None:
    out.reason = "Its text is already in the evidence (the same chunk or the same text in another one)."
    out.changes = [Change(ChangeKind.NONE, "nothing: its text is already evidence")]


def _budget(kb: ProbedSource, trace: Trace, settings: Settings, out: ProbeResult) -> None:
    out.reason = f"The evidence budget of {settings.evidence_budget_chars} characters ran out before it."
    needed = {"evidence_budget_chars": settings.evidence_budget_chars + len(out.text)}
    out.changes = [Change(ChangeKind.BUDGET, _say(needed, settings), needed)]


_STAGES = {
    Dropped.RECALL_CUT: _recall,
    Dropped.FUSION_CUT: _fusion,
    Dropped.RERANK_CUT: _rerank,
    Dropped.THRESHOLD: _threshold,
    Dropped.DEDUPE: _dedupe,
    Dropped.BUDGET: _budget,
}


def _after_recall(
    kb: ProbedSource, trace: Trace, settings: Settings, out: ProbeResult, recall_k: int
) -> tuple[dict[str, Any], str]:
    """``recall_k``, and what else would stop the chunk once recalled that wide. A wider recall
    brings other candidates too, so the question is retrieved once more with it (not saved) and
    the chunk's rerank place and the evidence budget are read from that trial; the note says when
    the trial still refuses the question."""
    needed: dict[str, Any] = {"recall_k": recall_k}
    trial = retrieve(kb, trace.question, settings.replace(recall_k=recall_k), trace.filters or None, persist=False)
    row = trial.by_id().get(out.chunk_id)
    if row is None or row.rerank_rank is None:
        return needed, _still_refused(trial)
    out.rerank_rank, out.rerank_score, out.pool = (
        row.rerank_rank,
        row.rerank_score,
        sum(1 for c in trial.candidates if c.rerank_rank is not None),
    )
    if row.rerank_rank > settings.top_n:
        needed["top_n"] = row.rerank_rank
    return needed | _min_score(settings, out) | _budget_need(trial, settings, out), _still_refused(trial)


def _budget_need(trace: Trace, settings: Settings, out: ProbeResult) -> dict[str, Any]:
    """The evidence budget that fits every candidate reranked up to the chunk (duplicates aside)."""
    ahead = [c for c in trace.candidates if c.rerank_rank is not None and c.rerank_rank <= (out.rerank_rank or 0)]
    used = sum(len(c.text) for c in ahead if c.dropped_by is not Dropped.DEDUPE)
    return {"evidence_budget_chars": used} if used > settings.evidence_budget_chars else {}


def _min_score(settings: Settings, out: ProbeResult) -> dict[str, Any]:
    """The evidence floor change a calibrated score under it needs (the best candidate always stays)."""
    score = out.rerank_score
    if not out.calibrated or score is None or out.rerank_rank == 1 or score >= settings.evidence_min_score:
        return {}
    return {"evidence_min_score": _below(score)}


def _refused(trace: Trace) -> bool:
    return trace.fallback is not None and trace.fallback.action is not FallbackAction.ANSWER


def _still_refused(trace: Trace) -> str:
    """A note for a setting change that leaves the question's refusal as it is."""
    return " (the question is still refused: no passage is evidence then)" if _refused(trace) else ""


def _absent(trace: Trace) -> list[str]:
    """The question's words that refused it on their own (found in no searched chunk)."""
    fb, a = trace.fallback, trace.answerability
    if fb is not None and fb.decided_by is not None:
        return list(fb.vetoed_terms) if fb.decided_by is Decider.ABSENT_TERMS else []
    return refusing(a, trace.question) if a is not None else []


def _coverage(trace: Trace) -> Change:
    """What a refused question needs: documents that cover it (the Upload page), never a setting
    that answers from the passages judged not to answer it."""
    terms = _absent(trace)
    if terms:
        words = ", ".join(repr(t) for t in terms)
        return Change(
            ChangeKind.COVERAGE, f"upload a document that covers {words} (Upload page): no searched chunk has it"
        )
    a = trace.answerability
    lack = f": {a.missing}" if a is not None and a.missing else ""
    return Change(ChangeKind.COVERAGE, f"upload a document that answers it (Upload page){lack}")


def _not_indexed(kb: ProbedSource, out: ProbeResult) -> Change:
    if out.state.startswith("not active") and "replaced by revision" in out.state:
        active = kb.catalog.active_revisions(kb.name, [out.doc_id]).get(out.doc_id)
        return Change(
            ChangeKind.REVISION,
            f"probe revision {active} of {out.doc_name or out.doc_id} instead: it replaced this one",
        )
    name = out.doc_name or out.doc_id
    return Change(
        ChangeKind.REINDEX, f"upload '{name}' again (Upload page, or `python -m rag ingest FILE --kb {kb.name}`)"
    )


def _places(out: ProbeResult) -> str:
    dense = (
        "dense not used for this question (English-only embedder, CJK question)" if out.dense_note
        else f"dense #{out.dense.rank} of {out.dense.listed} (cosine {out.dense.score:.3f})" if out.dense and out.dense.rank
        else "dense: not listed"
    )  # fmt: skip
    b = out.bm25
    sparse = f"BM25 #{b.rank} of {b.listed} (score {b.score:.2f})" if b and b.rank else "BM25: matches no query term"
    return f"{dense}, {sparse}"


def _below(value: float) -> float:
    """A threshold that ``value`` passes (``>=``): ``value`` rounded down to 3 decimals."""
    return math.floor(value * 1000) / 1000


def _say(needed: dict[str, Any], settings: Settings) -> str:
    return "; ".join(f"{k} {getattr(settings, k)} → {v}" for k, v in needed.items())
