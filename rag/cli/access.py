"""`python -m rag [--user NAME] members|audit|users ...`: who may do what, and who did what.

The CLI acts as the local owner (owner of every knowledge base, as a single-user install always
has) unless ``--user NAME`` or ``RAG_USER`` names someone; then every command obeys that user's
roles exactly as the pages do (:data:`ACTIONS` is the gate each command passes first, and the
library checks again where the action happens). Whoever has a shell on the server can read the
data directory anyway: ``--user`` is for acting as a user, not for proving who one is.
"""

from __future__ import annotations

import argparse
import getpass
import os
import sys

from rag.config import Settings
from rag.errors import RagError
from rag.store.access import LOCAL_OWNER, Action, Principal

# command (or "eval <sub>") -> what it does to its --kb (checked before it runs)
ACTIONS: dict[str, Action] = {
    "ingest": Action.UPLOAD,
    "docs": Action.READ,
    "delete": Action.DELETE_DOCUMENT,
    "search": Action.READ,
    "reindex": Action.REINDEX,
    "delete-kb": Action.DELETE_KB,
    "ask": Action.ASK,
    "why": Action.INSPECT,
    "eval run": Action.EVALUATE,
    "eval compare": Action.EVALUATE,
    "eval list": Action.EVALUATE,
    "eval import-beir": Action.UPLOAD,
    "export": Action.AUDIT,  # the file holds every user's chats and runs: owners only
    "members": Action.READ,  # add/remove need owner: checked by rag.store.access
    "audit": Action.AUDIT,
}
CREATES = {"ingest", "eval import-beir"}  # may name a knowledge base that does not exist yet
LOCAL_ONLY = {"demo", "bench", "report", "calibrate-support", "import", "users", "eval report"}


def add_user_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--user",
        default=os.environ.get("RAG_USER") or None,
        help="act as this user (their roles apply; default RAG_USER, else the local owner of everything)",
    )


def principal(args) -> Principal:
    return Principal(args.user.strip()) if getattr(args, "user", None) else LOCAL_OWNER


def gate(args) -> None:
    """Refuse a command the principal's role does not allow, before anything loads."""
    from rag.kb import catalog_for
    from rag.store.access import require

    args.principal = who = principal(args)
    command = f"{args.cmd} {args.eval}" if args.cmd == "eval" else args.cmd
    if who.local:
        return
    if command in LOCAL_ONLY or args.cmd in LOCAL_ONLY:
        raise RagError(f"`{command}` runs as the local owner only.", fix="Run it without --user (and unset RAG_USER).")
    action = ACTIONS.get(command)
    catalog = catalog_for(Settings.from_env())
    if action is None or (command in CREATES and catalog.kb(args.kb) is None):
        return
    require(catalog, args.kb, who, action)


# -- members ----------------------------------------------------------------------------------
def cmd_members(args) -> int:
    from rag.kb import catalog_for
    from rag.store import access

    _check_members_args(args)
    catalog = catalog_for(Settings.from_env())
    if catalog.kb(args.kb) is None:
        from rag.errors import KnowledgeBaseNotFound

        raise KnowledgeBaseNotFound(f"There is no knowledge base named '{args.kb}'.")
    if args.op == "add":
        role = access.parse_role(args.role or "")
        access.set_member(catalog, args.kb, args.name, role, args.principal)
        print(f"'{args.name}' is {role.value} of '{args.kb}'")
    elif args.op == "remove":
        access.remove_member(catalog, args.kb, args.name, args.principal)
        print(f"'{args.name}' is no longer a member of '{args.kb}'")
    for m in access.members(catalog, args.kb, args.principal):
        print(f"{m.user_id:30} {m.role.value:7} added by {m.added_by} {m.added_at}")
    return 0


def _check_members_args(args) -> None:
    if args.op in ("add", "remove") and not args.name:
        raise RagError(f"`members {args.op}` needs a user name.", fix="e.g. `members --kb NAME add alice reader`.")
    if args.op == "add" and not args.role:
        raise RagError("`members add` needs a role.", fix="Add one of: reader, editor, owner.")


# -- audit ------------------------------------------------------------------------------------
def cmd_audit(args) -> int:
    from rag.kb import catalog_for
    from rag.store import audit

    entries = audit.entries(catalog_for(Settings.from_env()), args.kb, args.limit)
    text = audit.to_csv(entries) if args.format == "csv" else audit.to_jsonl(entries)
    if args.out:
        with open(args.out, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        print(f"{len(entries)} audit entries of '{args.kb}' -> {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


# -- users ------------------------------------------------------------------------------------
def cmd_users(args) -> int:
    from rag.kb import catalog_for
    from rag.store import users

    catalog = catalog_for(Settings.from_env())
    if args.op in ("add", "remove") and not args.name:
        raise RagError(f"`users {args.op}` needs a user name.", fix="e.g. `python -m rag users add alice`.")
    if args.op == "add":
        password = os.environ.get("RAG_NEW_PASSWORD") or _ask_password(args.name)
        users.add_user(catalog, args.name, password, args.display_name or "")
        print(f"user '{args.name}' saved (password hashed with argon2id)")
    elif args.op == "remove":
        users.remove_user(catalog, args.name)
        print(f"user '{args.name}' removed")
    for u in users.list_users(catalog):
        print(f"{u.id:30} {u.name:30} since {u.created_at}")
    return 0


def _ask_password(name: str) -> str:
    first = getpass.getpass(f"password for {name}: ")
    if getpass.getpass("again: ") != first:
        raise RagError("The two passwords differ.", fix="Type the same password twice.")
    return first


def add_parsers(sub) -> None:
    s = sub.add_parser("members", help="list, add or remove members of a knowledge base (owners change them)")
    s.add_argument("--kb", required=True)
    s.add_argument("op", nargs="?", choices=("list", "add", "remove"), default="list")
    s.add_argument("name", nargs="?", help="user name (or the e-mail an identity provider signs in with)")
    s.add_argument("role", nargs="?", help="reader | editor | owner (with add)")
    s.set_defaults(func=cmd_members)

    s = sub.add_parser("audit", help="export a knowledge base's audit trail (owners)")
    s.add_argument("--kb", required=True)
    s.add_argument("--format", choices=("jsonl", "csv"), default="jsonl")
    s.add_argument("--out", help="write to this file instead of standard output")
    s.add_argument("--limit", type=int, help="only the newest N entries")
    s.set_defaults(func=cmd_audit)

    s = sub.add_parser("users", help="the built-in user list for RAG_AUTH=users (local owner only)")
    s.add_argument("op", nargs="?", choices=("list", "add", "remove"), default="list")
    s.add_argument("name", nargs="?")
    s.add_argument("--display-name", help="name shown in the app (default: the user name)")
    s.set_defaults(func=cmd_users)
