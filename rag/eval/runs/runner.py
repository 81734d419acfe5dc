"""Evaluation runs: a gold set against a knowledge base under one configuration, stored and compared.

The API the Evaluation page and the CLI use::

    run = run_goldset(kb, "data/demo/gold-tune.jsonl", settings, progress=lambda done, total, q: ...)
    list_runs(kb) -> [RunInfo, ...]                  # newest first
    load_run(kb, run_id) -> EvalRun                  # id or unique prefix
    compare_runs(a, b, metric="ndcg@10", stage="evidence", level="auto") -> RunComparison
    to_csv(run) -> str;  to_json(run) -> str

Every question goes through the same code path as Chat (``rag.ask.stream_ask``): retrieval
with a persisted trace, then the validated answer or the fallback's refusal / question back.
The chat turn itself is not stored, so evaluation does not fill the chat history; each
result keeps its trace id for the Inspector. With ``answers=False`` only retrieval runs and
the refusal outcome is the fallback decision.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag.answer.result import Answer
from rag.ask import ask as ask_question
from rag.config import Settings
from rag.errors import RagError
from rag.eval.gold.anchoring import anchor_goldset
from rag.eval.gold.goldset import GoldItem, GoldSet, load_goldset
from rag.eval.gold.labels import KBDocuments, Labels
from rag.eval.metrics import DEFAULT_KS
from rag.eval.runs.results import EvalRun, QuestionResult
from rag.eval.runs.scoring import score_question
from rag.eval.runs.store import save_run
from rag.eval.runs.summary import summarize
from rag.kb import KnowledgeBase
from rag.retrieval.pipeline import retrieve
from rag.retrieval.trace import Trace
from rag.store.access import LOCAL_OWNER, Action, Principal, require
from rag.store.catalog import now

__all__ = ["goldset_hash", "run_goldset"]

Progress = Callable[[int, int, str], None]
Filters = Mapping[str, Any] | Callable[[GoldItem], Mapping[str, Any] | None] | None
EVAL_CONVERSATION = "eval"


def run_goldset(
    kb: KnowledgeBase,
    gold: GoldSet | str | Path,
    settings: Settings | None = None,
    llm=None,
    progress: Progress | None = None,
    answers: bool = True,
    *,
    filters: Filters = None,
    ks: Sequence[int] = DEFAULT_KS,
    note: str = "",
    principal: Principal = LOCAL_OWNER,
) -> EvalRun:
    """Run every question of ``gold`` (a ``GoldSet`` or a JSONL path) against ``kb``, score it,
    store the run in the catalog and return it.

    ``progress(done, total, question)`` is called after each question. ``filters`` (the
    ``retrieve`` filters, or a function of the gold item returning them) restrict recall,
    e.g. to remove a question's own positives. Raises ``GoldSetError`` when a label names a
    document that is not in ``kb`` or a quote that is not in its document."""
    require(kb.catalog, kb.name, principal, Action.EVALUATE)
    gold = load_goldset(gold) if isinstance(gold, (str, Path)) else gold
    settings = settings or kb.settings
    labels = Labels(kb, KBDocuments(kb))
    anchored = anchor_goldset(gold, labels.documents)
    run = _new_run(kb, gold, settings, answers, ks, note)
    runner = _Runner(kb, settings, llm, labels, run)
    t0 = time.perf_counter()
    total = len(anchored.items)
    for done, item in enumerate(anchored.items, start=1):
        run.questions.append(runner.evaluate(item, filters(item) if callable(filters) else filters))
        if progress is not None:
            progress(done, total, item.question)
    run.duration_s = round(time.perf_counter() - t0, 3)
    run.summary = summarize(run.questions)
    save_run(kb, run, principal)  # the run is theirs, and an audit entry
    return run


def goldset_hash(gold: GoldSet) -> str:
    """sha256 of the gold set's canonical JSONL: equal hashes mean equal questions and labels."""
    lines = (json.dumps(item.to_dict(), sort_keys=True, ensure_ascii=False) for item in gold.items)
    return hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()


def _new_run(
    kb: KnowledgeBase, gold: GoldSet, settings: Settings, answers: bool, ks: Sequence[int], note: str
) -> EvalRun:
    return EvalRun(
        id=uuid.uuid4().hex[:12],
        kb=kb.name,
        goldset=gold.name,
        goldset_hash=goldset_hash(gold),
        settings=settings.result_fields(),
        config_fingerprint=settings.fingerprint(),
        index_revision=int(kb.index_revision),
        created_at=now(),
        answers=answers,
        ks=list(ks),
        embedder=str(kb.embedder.label),
        note=note,
    )


@dataclass
class _Runner:
    """Asks one question after another the way Chat does, and scores each."""

    kb: Any
    settings: Settings
    llm: Any
    labels: Labels
    run: EvalRun

    def evaluate(self, item: GoldItem, filters: Mapping[str, Any] | None) -> QuestionResult:
        t0 = time.perf_counter()
        try:
            trace, answer, kind = self.ask(item.question, filters)
        except RagError as exc:
            return QuestionResult(
                id=item.id, question=item.question, should_refuse=item.should_refuse, tags=list(item.tags),
                kind="error", error=str(exc),
            )  # fmt: skip
        wall = (time.perf_counter() - t0) * 1000
        self.run.reranker = self.run.reranker or str(trace.reranker)
        result = score_question(item, trace, answer, kind, self.labels, self.run.ks)
        result.latency_ms["wall"] = round(wall, 3)
        if answer is not None:
            result.latency_ms["answer"] = round(max(0.0, wall - trace.timings_ms.get("total", 0.0)), 3)
        return result

    def ask(self, question: str, filters: Mapping[str, Any] | None) -> tuple[Trace, Answer | None, str]:
        """The trace, the final answer (None when answers are off) and the chat turn's kind."""
        kb, settings, llm = self.kb, self.settings, self.llm
        if not self.run.answers:
            return retrieve(kb, question, settings, filters=filters, llm=llm, persist=True), None, "retrieval"
        turn, trace = ask_question(
            kb, question, settings, llm, conversation=EVAL_CONVERSATION, filters=filters, persist=False
        )
        return trace, turn.answer, turn.outcome.value
