"""Replay a stored trace with the same or changed settings, and diff the two.

The stored trace carries the settings that shaped it (``Trace.settings``, the fingerprinted
fields) and its filters; replay re-runs ``retrieve`` with those, overridden by ``changes``.
The diff names the evidence that moved in or out, rank changes of evidence kept by both,
the fallback change, the settings that differ, and whether the index changed in between
(then differences may come from the data, not the settings).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, fields
from typing import Any

from rag.config import Settings
from rag.errors import RagError
from rag.retrieval.pipeline import retrieve
from rag.retrieval.trace import Trace
from rag.source import KnowledgeSource

log = logging.getLogger(__name__)


class TraceNotFound(RagError):
    fix = "Pick a trace from the list of recent questions (it may belong to a deleted knowledge base)."


@dataclass(frozen=True)
class RankChange:
    chunk_id: str
    old_rank: int
    new_rank: int

    @property
    def delta(self) -> int:
        return self.new_rank - self.old_rank


@dataclass
class TraceDiff:
    moved_in: list[str] = field(default_factory=list)  # evidence now, not before
    moved_out: list[str] = field(default_factory=list)  # evidence before, not now
    rank_changes: list[RankChange] = field(default_factory=list)  # kept by both, final rank moved
    rerank_changes: list[RankChange] = field(default_factory=list)  # reranked by both, rerank rank moved
    fallback: tuple[str, str] | None = None  # (old action, new action) when it changed
    settings_changed: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    index_changed: bool = False

    @property
    def same_evidence(self) -> bool:
        return not (self.moved_in or self.moved_out or self.rank_changes)


@dataclass
class Replay:
    old: Trace
    new: Trace
    diff: TraceDiff


def load_trace(kb: KnowledgeSource, trace_id: str) -> Trace:
    blob = kb.catalog.load_trace_json(trace_id, kb.name)  # a trace of another knowledge base: not found
    if not blob:
        raise TraceNotFound(f"No stored trace with id '{trace_id}'.")
    return Trace.from_json(blob)


def settings_for(trace: Trace, base: Settings, changes: dict[str, Any] | None = None) -> Settings:
    """``base`` with the trace's recorded result fields, then ``changes``, applied."""
    known = {f.name for f in fields(Settings)}
    recorded = {k: v for k, v in trace.settings.items() if k in known}
    unknown = set(changes or {}) - known
    if unknown:
        raise ValueError(f"unknown settings {sorted(unknown)}")
    return base.replace(**{**recorded, **(changes or {})})


def replay(
    kb: KnowledgeSource,
    trace: Trace | str,
    changes: dict[str, Any] | None = None,
    llm=None,
    persist: bool = True,
    filters: dict[str, Any] | None = None,
    question: str = "",
) -> Replay:
    """Re-run a stored trace's question (by ``Trace`` or id) and diff the result against it.

    ``filters`` (when not None) replace the trace's filters and ``question`` (when given) its
    question: the why-not probe's suggestions change those too."""
    old = load_trace(kb, trace) if isinstance(trace, str) else trace
    settings = settings_for(old, kb.settings, changes)
    scope = old.filters if filters is None else filters
    new = retrieve(kb, question or old.question, settings, filters=scope or None, llm=llm, persist=persist)
    return Replay(old, new, diff_traces(old, new))


def _ranks(trace: Trace, attr: str) -> dict[str, int]:
    return {c.chunk_id: getattr(c, attr) for c in trace.candidates if getattr(c, attr) is not None}


def _changes(old: dict[str, int], new: dict[str, int]) -> list[RankChange]:
    both = sorted(set(old) & set(new), key=lambda cid: new[cid])
    return [RankChange(cid, old[cid], new[cid]) for cid in both if old[cid] != new[cid]]


def diff_traces(old: Trace, new: Trace) -> TraceDiff:
    old_final, new_final = _ranks(old, "final_rank"), _ranks(new, "final_rank")
    keys = set(old.settings) | set(new.settings)
    old_action = old.fallback.action.value if old.fallback else ""
    new_action = new.fallback.action.value if new.fallback else ""
    return TraceDiff(
        moved_in=sorted(set(new_final) - set(old_final), key=lambda cid: new_final[cid]),
        moved_out=sorted(set(old_final) - set(new_final), key=lambda cid: old_final[cid]),
        rank_changes=_changes(old_final, new_final),
        rerank_changes=_changes(_ranks(old, "rerank_rank"), _ranks(new, "rerank_rank")),
        fallback=(old_action, new_action) if old_action != new_action else None,
        settings_changed={
            k: (old.settings.get(k), new.settings.get(k))
            for k in sorted(keys)
            if old.settings.get(k) != new.settings.get(k)
        },
        index_changed=old.index_revision != new.index_revision,
    )
