"""Evaluation runs in the catalog's ``eval_runs`` table: save, list, load (by id or unique prefix)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rag.errors import RagError
from rag.eval.runs.results import EvalRun

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


def save_run(kb: KnowledgeBase, run: EvalRun) -> None:
    with kb.catalog.tx() as db:
        db.execute(
            "INSERT OR REPLACE INTO eval_runs VALUES (?,?,?,?,?,?,?)",
            (
                run.id,
                run.kb,
                run.goldset,
                run.config_fingerprint,
                run.index_revision,
                run.created_at,
                json.dumps(run.to_dict(), ensure_ascii=False),
            ),
        )


def list_runs(kb: KnowledgeBase) -> list[RunInfo]:
    """The knowledge base's runs, newest first."""
    rows = kb.catalog.q(
        "SELECT id, kb, goldset, config_fingerprint, index_revision, created_at, "
        "json_extract(json, '$.summary') AS summary, json_extract(json, '$.answers') AS answers "
        "FROM eval_runs WHERE kb=? ORDER BY created_at DESC, rowid DESC",
        kb.name,
    )
    return [_info(r) for r in rows]


def load_run(kb: KnowledgeBase, run_id: str) -> EvalRun:
    """The stored run with this id (or the only one whose id starts with it)."""
    rows = kb.catalog.q("SELECT json FROM eval_runs WHERE kb=? AND id=?", kb.name, run_id)
    if not rows and run_id:
        rows = kb.catalog.q(
            "SELECT json FROM eval_runs WHERE kb=? AND substr(id, 1, ?)=?", kb.name, len(run_id), run_id
        )
        if len(rows) > 1:
            raise RunNotFound(f"Run id '{run_id}' is ambiguous in '{kb.name}': {len(rows)} runs start with it.")
    if not rows:
        raise RunNotFound(f"No evaluation run '{run_id}' in knowledge base '{kb.name}'.")
    return EvalRun.from_dict(json.loads(rows[0][0]))


def delete_run(kb: KnowledgeBase, run_id: str) -> None:
    run = load_run(kb, run_id)
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
