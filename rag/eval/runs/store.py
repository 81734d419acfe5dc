"""Evaluation runs in the catalog's ``eval_runs`` table: save, list, load (by id or unique prefix).

Runs are per user: each call takes the ``Principal`` (default the local owner) whose runs it sees."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rag.errors import RagError
from rag.eval.runs.results import EvalRun
from rag.store import audit
from rag.store.access import LOCAL_OWNER, Action, Principal, require

if TYPE_CHECKING:
    from rag.kb import KnowledgeBase


class RunNotFound(RagError):
    fix = "List the runs with `python -m rag eval list --kb NAME` and use one of those ids."


@dataclass(frozen=True)
class RunInfo:
    """One stored run, without its per-question results."""

    id: str
    kb: str
    goldset: str
    config_fingerprint: str
    index_revision: int
    created_at: str
    questions: int
    answers: bool
    headline: dict[str, float | None]


def save_run(kb: KnowledgeBase, run: EvalRun, principal: Principal = LOCAL_OWNER) -> None:
    """Store ``run`` as ``principal``'s, with its audit entry (a new run; re-saving one, e.g. a
    judgement added, is not audited again)."""
    require(kb.catalog, kb.name, principal, Action.EVALUATE)
    with kb.catalog.tx() as db:
        new = not db.execute("SELECT 1 FROM eval_runs WHERE id=?", (run.id,)).fetchone()
        db.execute(
            "INSERT OR REPLACE INTO eval_runs"
            " (id, kb, goldset, config_fingerprint, index_revision, created_at, json, user_id)"
            " VALUES (?,?,?,?,?,?,?,?)",
            (
                run.id,
                run.kb,
                run.goldset,
                run.config_fingerprint,
                run.index_revision,
                run.created_at,
                json.dumps(run.to_dict(), ensure_ascii=False),
                principal.id,
            ),
        )
        if new:
            detail = {"goldset": run.goldset, "questions": len(run.questions)}
            audit.record(db, principal, "evaluate", run.kb, run.id, detail)


def list_runs(kb: KnowledgeBase, principal: Principal = LOCAL_OWNER) -> list[RunInfo]:
    """``principal``'s runs in the knowledge base, newest first."""
    require(kb.catalog, kb.name, principal, Action.EVALUATE)
    rows = kb.catalog.q(
        "SELECT id, kb, goldset, config_fingerprint, index_revision, created_at, "
        "json_extract(json, '$.summary') AS summary, json_extract(json, '$.answers') AS answers "
        "FROM eval_runs WHERE kb=? AND user_id=? ORDER BY created_at DESC, rowid DESC",
        kb.name,
        principal.id,
    )
    return [_info(r) for r in rows]


def load_run(kb: KnowledgeBase, run_id: str, principal: Principal = LOCAL_OWNER) -> EvalRun:
    """``principal``'s stored run with this id (or the only one whose id starts with it)."""
    require(kb.catalog, kb.name, principal, Action.EVALUATE)
    mine = "SELECT json FROM eval_runs WHERE kb=? AND user_id=?"
    rows = kb.catalog.q(mine + " AND id=?", kb.name, principal.id, run_id)
    if not rows and run_id:
        rows = kb.catalog.q(mine + " AND substr(id, 1, ?)=?", kb.name, principal.id, len(run_id), run_id)
        if len(rows) > 1:
            raise RunNotFound(f"Run id '{run_id}' is ambiguous in '{kb.name}': {len(rows)} runs start with it.")
    if not rows:
        raise RunNotFound(f"No evaluation run '{run_id}' in knowledge base '{kb.name}'.")
    return EvalRun.from_dict(json.loads(rows[0][0]))


def delete_run(kb: KnowledgeBase, run_id: str, principal: Principal = LOCAL_OWNER) -> None:
    run = load_run(kb, run_id, principal)
    with kb.catalog.tx() as db:
        db.execute("DELETE FROM eval_runs WHERE kb=? AND id=?", (kb.name, run.id))


def _info(row: Any) -> RunInfo:
    summary = json.loads(row["summary"] or "{}")
    stub = EvalRun(
        id=row["id"],
        kb=row["kb"],
        goldset=row["goldset"],
        goldset_hash="",
        settings={},
        config_fingerprint=row["config_fingerprint"],
        index_revision=int(row["index_revision"]),
        created_at=row["created_at"],
        summary=summary,
    )
    return RunInfo(
        id=stub.id,
        kb=stub.kb,
        goldset=stub.goldset,
        config_fingerprint=stub.config_fingerprint,
        index_revision=stub.index_revision,
        created_at=stub.created_at,
        questions=int(summary.get("questions", 0)),
        answers=bool(row["answers"]),
        headline=stub.headline(),
    )
