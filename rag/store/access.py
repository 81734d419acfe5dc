"""Who may do what in a knowledge base: principals, roles, the action each role allows, members.

Every knowledge-base operation that reads or changes a knowledge base takes a ``Principal``
(default :data:`LOCAL_OWNER`, the single user of a local install, owner of everything) and calls
:func:`require` before doing anything, so the CLI, the pages and any later API obey one rule set.
Members live in the catalog's ``members`` table; a change of members is one transaction with
its audit entry (``rag.store.audit``).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from enum import StrEnum

from rag.errors import PermissionDenied, RagError
from rag.store import audit
from rag.store.catalog import Catalog, now


class Role(StrEnum):
    READER = "reader"  # ask, inspect, evaluate
    EDITOR = "editor"  # + upload, delete documents, re-index
    OWNER = "owner"  # + members, audit trail, delete the knowledge base

    @property
    def rank(self) -> int:
        return ROLE_ORDER.index(self)


ROLE_ORDER = (Role.READER, Role.EDITOR, Role.OWNER)


class Action(StrEnum):
    ASK = "ask"
    INSPECT = "inspect"
    EVALUATE = "evaluate"
    READ = "read"  # open it, list its documents, search it
    UPLOAD = "upload"
    DELETE_DOCUMENT = "delete documents"
    REINDEX = "re-index"
    MEMBERS = "change members"
    AUDIT = "read the audit trail"
    DELETE_KB = "delete the knowledge base"


NEEDS: dict[Action, Role] = {
    Action.ASK: Role.READER,
    Action.INSPECT: Role.READER,
    Action.EVALUATE: Role.READER,
    Action.READ: Role.READER,
    Action.UPLOAD: Role.EDITOR,
    Action.DELETE_DOCUMENT: Role.EDITOR,
    Action.REINDEX: Role.EDITOR,
    Action.MEMBERS: Role.OWNER,
    Action.AUDIT: Role.OWNER,
    Action.DELETE_KB: Role.OWNER,
}


@dataclass(frozen=True)
class Principal:
    """Someone acting on knowledge bases: ``id`` is what members are keyed by (a user name, or the
    e-mail an identity provider vouches for); ``name`` is for display."""

    id: str
    name: str = ""
    local: bool = False  # the single user of a local install: owner of every knowledge base

    def __post_init__(self) -> None:
        if not self.id.strip():
            raise ValueError("a principal needs a non-empty id")

    @property
    def label(self) -> str:
        return self.name or self.id


LOCAL_OWNER = Principal("local", "local owner", local=True)


def parse_role(raw: str) -> Role:
    try:
        return Role(raw.strip().lower())
    except ValueError:
        raise RagError(f"'{raw}' is not a role.", fix="Use one of: reader, editor, owner.") from None


def role_of(catalog: Catalog, kb: str, principal: Principal) -> Role | None:
    """The role ``principal`` holds in ``kb`` (None: not a member)."""
    if principal.local:
        return Role.OWNER
    rows = catalog.q("SELECT role FROM members WHERE kb=? AND user_id=?", kb, principal.id)
    return Role(rows[0][0]) if rows else None


def allowed(role: Role | None, action: Action) -> bool:
    return role is not None and role.rank >= NEEDS[action].rank


def require(catalog: Catalog, kb: str, principal: Principal, action: Action) -> Role:
    """The role ``principal`` holds in ``kb``, or PermissionDenied naming the role ``action`` needs."""
    role = role_of(catalog, kb, principal)
    if not allowed(role, action):
        raise PermissionDenied(principal.id, action.value, kb, NEEDS[action].value, role.value if role else None)
    return role


def readable_kbs(catalog: Catalog, principal: Principal) -> list[str]:
    """The knowledge bases ``principal`` may read, by name."""
    if principal.local:
        return catalog.kb_names()
    rows = catalog.q(
        "SELECT k.name FROM kbs k JOIN members m ON m.kb=k.name WHERE m.user_id=? ORDER BY k.name", principal.id
    )
    return [r[0] for r in rows]


@dataclass(frozen=True)
class Member:
    user_id: str
    role: Role
    added_by: str
    added_at: str


def members(catalog: Catalog, kb: str, principal: Principal = LOCAL_OWNER) -> list[Member]:
    """The members of ``kb`` (any member may see who else is one)."""
    require(catalog, kb, principal, Action.READ)
    rows = catalog.q("SELECT user_id, role, added_by, added_at FROM members WHERE kb=? ORDER BY user_id", kb)
    return [Member(r[0], Role(r[1]), r[2], r[3]) for r in rows]


def set_member(catalog: Catalog, kb: str, user_id: str, role: Role, principal: Principal = LOCAL_OWNER) -> None:
    """Give ``user_id`` ``role`` in ``kb`` (owners only); audited."""
    require(catalog, kb, principal, Action.MEMBERS)
    if not user_id.strip():
        raise RagError("A member needs a user name.", fix="Give the user's name or e-mail, e.g. `add alice reader`.")
    with catalog.tx() as db:
        _write_member(db, kb, user_id, role, principal)
        audit.record(db, principal, "member.set", kb, user_id, {"role": role.value})


def remove_member(catalog: Catalog, kb: str, user_id: str, principal: Principal = LOCAL_OWNER) -> None:
    """Take ``user_id`` out of ``kb`` (owners only); the last owner stays, so someone can manage it."""
    require(catalog, kb, principal, Action.MEMBERS)
    with catalog.tx() as db:
        owners = [r[0] for r in db.execute("SELECT user_id FROM members WHERE kb=? AND role='owner'", (kb,))]
        if owners == [user_id]:
            raise RagError(
                f"'{user_id}' is the last owner of '{kb}'.", fix="Make someone else owner first, then remove them."
            )
        gone = db.execute("DELETE FROM members WHERE kb=? AND user_id=?", (kb, user_id)).rowcount
        if not gone:
            raise RagError(f"'{user_id}' is not a member of '{kb}'.", fix=f"`python -m rag members --kb {kb} list`.")
        audit.record(db, principal, "member.remove", kb, user_id, {})


def claim_new_kb(db: sqlite3.Connection, kb: str, principal: Principal) -> None:
    """Inside the transaction that created ``kb``: its creator becomes its owner (the local owner
    owns everything already, so needs no row)."""
    if not principal.local:
        _write_member(db, kb, principal.id, Role.OWNER, principal)
    audit.record(db, principal, "kb.create", kb, kb, {})


def _write_member(db: sqlite3.Connection, kb: str, user_id: str, role: Role, by: Principal) -> None:
    db.execute(
        "INSERT INTO members VALUES (?,?,?,?,?) ON CONFLICT(kb, user_id) DO UPDATE SET role=excluded.role",
        (kb, user_id.strip(), role.value, by.id, now()),
    )
