"""Permissions in the library: every role against every action, per-user history and runs, the
audit trail, and a catalog from before members keeps working.

Rules are checked on a bare catalog (exact role x action table); the knowledge-base operations on
a real knowledge base (real embedder, real Chroma) in a fresh data dir.
"""

from __future__ import annotations

import json
import sqlite3

import pytest

from rag import ask
from rag.errors import PermissionDenied, RagError
from rag.eval.runs import list_runs, load_run
from rag.eval.runs.results import EvalRun
from rag.eval.runs.store import RunNotFound, save_run
from rag.ingest.pipeline import UploadItem
from rag.kb import KnowledgeBase
from rag.store import access, audit
from rag.store.access import LOCAL_OWNER, NEEDS, Action, Principal, Role
from rag.store.catalog import Catalog

ALICE, BOB, EVE = Principal("alice", "Alice"), Principal("bob", "Bob"), Principal("eve", "Eve")
LEAVE = b"# Leave\n\nFull-time employees get 27 days of paid annual leave. The zebra code is Z-41.\n"
SECRET = "The merger closes on 3 March; codename heron."


# -- the rules ---------------------------------------------------------------------------------
ALLOWED = {
    Role.READER: {Action.ASK, Action.INSPECT, Action.EVALUATE, Action.READ},
    Role.EDITOR: {Action.ASK, Action.INSPECT, Action.EVALUATE, Action.READ, Action.UPLOAD, Action.DELETE_DOCUMENT}
    | {Action.REINDEX},
    Role.OWNER: set(Action),
}


@pytest.fixture
def catalog(tmp_path) -> Catalog:
    cat = Catalog(tmp_path / "catalog.sqlite")
    cat.create_kb("hr", "m", 3, 800, 120)
    return cat


@pytest.mark.parametrize("role", list(Role))
@pytest.mark.parametrize("action", list(Action))
def test_each_role_may_do_exactly_its_actions(catalog, role, action):
    access.set_member(catalog, "hr", "alice", role)
    if action in ALLOWED[role]:
        assert access.require(catalog, "hr", ALICE, action) is role
        return
    with pytest.raises(PermissionDenied) as err:
        access.require(catalog, "hr", ALICE, action)
    message = str(err.value)
    assert f"may not {action.value} in knowledge base 'hr'" in message
    assert f"needs the {NEEDS[action].value} role, and 'alice' is {role.value}" in message
    assert f"members --kb hr add alice {NEEDS[action].value}" in message


@pytest.mark.parametrize("action", list(Action))
def test_a_stranger_may_do_nothing_and_the_local_owner_everything(catalog, action):
    with pytest.raises(PermissionDenied, match="'eve' is not a member"):
        access.require(catalog, "hr", EVE, action)
    assert access.require(catalog, "hr", LOCAL_OWNER, action) is Role.OWNER


def test_members_are_changed_by_owners_only_and_the_last_owner_stays(catalog):
    access.set_member(catalog, "hr", "alice", Role.OWNER)
    access.set_member(catalog, "hr", "bob", Role.EDITOR, principal=ALICE)
    with pytest.raises(PermissionDenied, match="needs the owner role, and 'bob' is editor"):
        access.set_member(catalog, "hr", "eve", Role.READER, principal=BOB)
    with pytest.raises(PermissionDenied):
        access.remove_member(catalog, "hr", "alice", principal=BOB)
    with pytest.raises(RagError, match="last owner"):
        access.remove_member(catalog, "hr", "alice", principal=ALICE)
    access.remove_member(catalog, "hr", "bob", principal=ALICE)
    assert [(m.user_id, m.role) for m in access.members(catalog, "hr")] == [("alice", Role.OWNER)]
    with pytest.raises(RagError, match="not a role"):
        access.parse_role("admin")


def test_the_picker_lists_only_what_a_principal_may_read(catalog):
    catalog.create_kb("legal", "m", 3, 800, 120)
    access.set_member(catalog, "legal", "alice", Role.READER)
    assert access.readable_kbs(catalog, ALICE) == ["legal"]
    assert access.readable_kbs(catalog, EVE) == []
    assert access.readable_kbs(catalog, LOCAL_OWNER) == ["hr", "legal"]


def test_the_audit_trail_refuses_to_be_changed(catalog):
    access.set_member(catalog, "hr", "alice", Role.READER)
    with catalog.tx() as db, pytest.raises(sqlite3.IntegrityError, match="append-only"):
        db.execute("UPDATE audit SET user_id='nobody'")
    with catalog.tx() as db, pytest.raises(sqlite3.IntegrityError, match="append-only"):
        db.execute("DELETE FROM audit")
    assert [(e.action, e.target, e.detail) for e in audit.entries(catalog, "hr")] == [
        ("member.set", "alice", {"role": "reader"})
    ]


def test_a_catalog_from_before_members_opens_and_its_history_is_the_local_owners(tmp_path):
    path = tmp_path / "catalog.sqlite"
    old = sqlite3.connect(path)
    old.executescript(
        """CREATE TABLE chat_turns (id TEXT PRIMARY KEY, kb TEXT NOT NULL, conversation TEXT NOT NULL,
             seq INTEGER NOT NULL, question TEXT NOT NULL, answer_json TEXT NOT NULL, trace_id TEXT,
             created_at TEXT NOT NULL);
           CREATE TABLE eval_runs (id TEXT PRIMARY KEY, kb TEXT NOT NULL, goldset TEXT NOT NULL,
             config_fingerprint TEXT NOT NULL, index_revision INTEGER NOT NULL, created_at TEXT NOT NULL,
             json TEXT NOT NULL);
           INSERT INTO chat_turns VALUES ('t1', 'hr', 'c1', 1, 'old question?', '{}', 'tr1', '2025-01-01');
           PRAGMA user_version=1;"""
    )
    old.close()
    cat = Catalog(path)
    assert cat.q("PRAGMA user_version")[0][0] == 2
    assert [tuple(r) for r in cat.q("SELECT id, user_id FROM chat_turns")] == [("t1", "local")]
    Catalog(path)  # opening it again changes nothing
    assert "user_id" in {r[1] for r in cat.q("PRAGMA table_info(eval_runs)")}


# -- the knowledge-base operations ---------------------------------------------------------
@pytest.fixture
def hr(settings, embedder) -> KnowledgeBase:
    kb = KnowledgeBase("hr", settings, embedder, creator=ALICE)  # alice created it: its owner
    kb.ingest([UploadItem("leave.md", LEAVE)], principal=ALICE)
    access.set_member(kb.catalog, "hr", "bob", Role.READER, principal=ALICE)
    return kb


def test_the_creator_owns_a_new_knowledge_base(hr):
    assert access.role_of(hr.catalog, "hr", ALICE) is Role.OWNER
    assert [e.action for e in audit.entries(hr.catalog, "hr")][:2] == ["kb.create", "doc.upload"]


def test_a_reader_asks_but_may_not_upload_delete_or_manage(hr):
    turn, trace = ask.ask(hr, "How many days of paid annual leave?", principal=BOB)
    assert turn.user == "bob" and trace.kb == "hr"
    with pytest.raises(PermissionDenied, match="may not upload .* needs the editor role, and 'bob' is reader"):
        hr.ingest([UploadItem("secret.md", SECRET.encode())], principal=BOB)
    with pytest.raises(PermissionDenied, match="needs the editor role"):
        hr.delete("leave.md", principal=BOB)
    with pytest.raises(PermissionDenied, match="needs the owner role"):
        hr.drop(principal=BOB)
    assert [d.name for d in hr.documents()] == ["leave.md"]


def test_a_stranger_may_not_even_ask(hr):
    with pytest.raises(PermissionDenied, match="'eve' may not ask in knowledge base 'hr'"):
        ask.ask(hr, "How many days of paid annual leave?", principal=EVE)
    for read in (ask.history, ask.recent_turns, ask.conversations):
        with pytest.raises(PermissionDenied):
            read(hr, principal=EVE)
    with pytest.raises(PermissionDenied):
        list_runs(hr, principal=EVE)


def test_an_editor_uploads_and_deletes_and_the_audit_keeps_who_but_not_the_text(hr):
    access.set_member(hr.catalog, "hr", "bob", Role.EDITOR, principal=ALICE)
    hr.ingest([UploadItem("secret.md", SECRET.encode())], principal=BOB)
    ask.ask(hr, "When does the merger close?", principal=BOB)
    record = hr.delete("secret.md", principal=BOB)
    trail = audit.entries(hr.catalog, "hr")
    assert [(e.user_id, e.action) for e in trail] == [
        ("alice", "kb.create"),
        ("alice", "doc.upload"),
        ("alice", "member.set"),
        ("alice", "member.set"),
        ("bob", "doc.upload"),
        ("bob", "ask"),
        ("bob", "doc.delete"),
    ]
    assert trail[-1].target == f"{record.id} secret.md" and trail[4].target == f"{record.id} secret.md"
    exported = audit.to_jsonl(trail) + audit.to_csv(trail)
    assert "When does the merger close?" in exported  # who asked what is the trail's point
    assert "heron" not in exported and "3 March" not in exported  # the document's text is not


def test_chat_history_is_per_user(hr):
    mine, _ = ask.ask(hr, "How many days of paid annual leave?", conversation="c1", principal=ALICE)
    theirs, _ = ask.ask(hr, "What is the zebra code?", conversation="c1", principal=BOB)
    assert [t.id for t in ask.history(hr, "c1", principal=ALICE)] == [mine.id]
    assert [t.id for t in ask.history(hr, "c1", principal=BOB)] == [theirs.id]
    assert theirs.seq == 1  # each user's conversation counts its own turns
    assert ask.get_turn(hr, mine.id, principal=BOB) is None  # a crafted turn id finds nothing
    assert ask.get_turn(hr, mine.id, principal=ALICE).question == mine.question
    ask.clear_conversation(hr, "c1", principal=BOB)
    assert [t.id for t in ask.history(hr, "c1", principal=ALICE)] == [mine.id]


def test_evaluation_runs_are_per_user(hr):
    run = EvalRun("run-alice-1", "hr", "gold", "", {}, "fp", hr.index_revision, "2026-01-01T00:00:00+00:00")
    save_run(hr, run, principal=ALICE)
    assert [r.id for r in list_runs(hr, principal=ALICE)] == ["run-alice-1"]
    assert list_runs(hr, principal=BOB) == []
    with pytest.raises(RunNotFound):
        load_run(hr, "run-alice", principal=BOB)
    assert load_run(hr, "run-alice", principal=ALICE).id == "run-alice-1"
    assert audit.entries(hr.catalog, "hr")[-1].action == "evaluate"


def test_a_trace_from_another_knowledge_base_is_not_found_here(hr, settings, embedder):
    legal = KnowledgeBase("legal", settings, embedder)  # the local owner's; bob is not a member
    legal.ingest([UploadItem("secret.md", SECRET.encode())])
    _, secret_trace = ask.ask(legal, "When does the merger close?")
    assert secret_trace.candidates
    assert ask.load_trace(hr, secret_trace.id, principal=BOB) is None
    with pytest.raises(PermissionDenied):
        ask.load_trace(legal, secret_trace.id, principal=BOB)
    leaked = hr.get_chunks([c.chunk_id for c in secret_trace.candidates])
    assert leaked == {}  # chunk ids of another knowledge base read nothing here


def test_the_owner_deletes_the_knowledge_base_and_its_audit_stays(hr):
    hr.drop(principal=ALICE)
    assert hr.catalog.kb("hr") is None
    assert access.readable_kbs(hr.catalog, ALICE) == []
    trail = audit.entries(hr.catalog, "hr")
    assert trail[-1].action == "kb.delete" and trail[-1].user_id == "alice"
    assert json.loads(audit.to_jsonl(trail).splitlines()[0])["action"] == "kb.create"
