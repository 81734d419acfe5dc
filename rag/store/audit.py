"""The audit trail: who asked, uploaded, deleted, changed members or settings, and when.

Append-only: the catalog's triggers refuse to update or delete an ``audit`` row, and deleting a
document or a whole knowledge base leaves its entries. An entry names what was acted on (a
document's id and file name, a member's id), never a document's text; a question asked is kept,
because who asked what is what the trail is for.
"""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from rag.store.catalog import Catalog, now

if TYPE_CHECKING:
    from rag.store.access import Principal

COLUMNS = ("seq", "at", "user_id", "user_name", "action", "kb", "target", "detail")


@dataclass(frozen=True)
class AuditEntry:
    seq: int
    at: str
    user_id: str
    user_name: str
    action: str  # ask, doc.upload, doc.delete, member.set, member.remove, kb.create, kb.reindex, kb.delete, ...
    kb: str
    target: str  # a document id and name, a member, a trace id: what was acted on
    detail: dict[str, Any]


def record(db: sqlite3.Connection, who: Principal, action: str, kb: str, target: str, detail: dict[str, Any]) -> None:
    """Inside the transaction ``db`` (so the entry commits with the action, or neither does)."""
    db.execute(
        "INSERT INTO audit (at, user_id, user_name, action, kb, target, detail) VALUES (?,?,?,?,?,?,?)",
        (now(), who.id, who.label, action, kb, target, json.dumps(detail, ensure_ascii=False, sort_keys=True)),
    )


def append(catalog: Catalog, who: Principal, action: str, kb: str, target: str, detail: dict[str, Any]) -> None:
    """One entry in its own transaction (for actions whose work commits elsewhere)."""
    with catalog.tx() as db:
        record(db, who, action, kb, target, detail)


def entries(catalog: Catalog, kb: str, limit: int | None = None) -> list[AuditEntry]:
    """``kb``'s entries, oldest first (the newest ``limit`` of them when given)."""
    sql = "SELECT * FROM audit WHERE kb=? ORDER BY seq"
    rows = catalog.q(sql, kb)
    if limit is not None:
        rows = rows[-limit:]
    return [
        AuditEntry(
            r["seq"], r["at"], r["user_id"], r["user_name"], r["action"], r["kb"], r["target"], json.loads(r["detail"])
        )
        for r in rows
    ]


def to_jsonl(items: list[AuditEntry]) -> str:
    return "".join(json.dumps(asdict(e), ensure_ascii=False) + "\n" for e in items)


def to_csv(items: list[AuditEntry]) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(COLUMNS)
    for e in items:
        w.writerow([*(getattr(e, c) for c in COLUMNS[:-1]), json.dumps(e.detail, ensure_ascii=False, sort_keys=True)])
    return out.getvalue()
