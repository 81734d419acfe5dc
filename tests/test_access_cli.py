"""The CLI obeys the same roles as the library: ``--user`` / ``RAG_USER``, ``members``, ``audit``,
``users`` (the real ``main`` in this process, real embedder and Chroma in a fresh data dir; one
subprocess checks that a refusal is one line on stderr with exit status 2)."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys

import pytest

from rag.cli import main
from rag.config import Settings
from rag.kb import catalog_for
from rag.store import users
from rag.store.access import Principal, Role, role_of
from tests.conftest import ROOT

pytestmark = pytest.mark.slow
POLICY = "# Policy\n\nVisitors must sign in at the front desk and wear a badge.\n"


@pytest.fixture
def cli(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RAG_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("RAG_USER", raising=False)
    (tmp_path / "policy.md").write_text(POLICY)
    (tmp_path / "memo.md").write_text("# Memo\n\nThe board meets on Fridays.\n")

    def run(*argv: str) -> tuple[int, str, str]:
        code = main([*argv])
        out = capsys.readouterr()
        return code, out.out, out.err

    run.dir = tmp_path
    return run


def test_roles_on_the_command_line(cli):
    policy, memo = str(cli.dir / "policy.md"), str(cli.dir / "memo.md")
    assert cli("--user", "alice", "ingest", policy, "--kb", "ops")[0] == 0  # a new kb: alice owns it
    catalog = catalog_for(Settings.from_env())
    assert role_of(catalog, "ops", Principal("alice")) is Role.OWNER

    code, _, err = cli("--user", "bob", "docs", "--kb", "ops")
    assert code == 2 and "'bob' may not read in knowledge base 'ops'" in err and "is not a member" in err
    assert cli("--user", "alice", "members", "--kb", "ops", "add", "bob", "reader")[0] == 0

    code, out, _ = cli("--user", "bob", "ask", "Where do visitors sign in?", "--kb", "ops")
    assert code == 0 and "front desk" in out
    assert "policy.md" in cli("--user", "bob", "docs", "--kb", "ops")[1]
    for argv in (("ingest", memo), ("delete", "policy.md"), ("reindex",)):
        code, _, err = cli("--user", "bob", *argv, "--kb", "ops")
        assert code == 2 and "needs the editor role, and 'bob' is reader" in err, argv
    code, _, err = cli("--user", "bob", "members", "--kb", "ops", "add", "bob", "owner")
    assert code == 2 and "needs the owner role" in err
    code, _, err = cli("--user", "bob", "audit", "--kb", "ops")
    assert code == 2 and "read the audit trail" in err and "needs the owner role" in err

    assert cli("--user", "alice", "members", "--kb", "ops", "add", "bob", "editor")[0] == 0
    assert cli("--user", "bob", "ingest", memo, "--kb", "ops")[0] == 0
    assert cli("--user", "bob", "delete", "memo.md", "--kb", "ops")[0] == 0
    code, out, _ = cli("--user", "alice", "members", "--kb", "ops", "remove", "bob")
    assert code == 0 and "bob" not in out.split("\n", 1)[1]
    assert cli("--user", "bob", "docs", "--kb", "ops")[0] == 2  # removed: nothing any more

    code, out, _ = cli("--user", "alice", "audit", "--kb", "ops")
    trail = [json.loads(line) for line in out.splitlines()]
    assert [(e["user_id"], e["action"]) for e in trail] == [
        ("alice", "kb.create"),
        ("alice", "doc.upload"),
        ("alice", "member.set"),
        ("bob", "ask"),
        ("alice", "member.set"),
        ("bob", "doc.upload"),
        ("bob", "doc.delete"),
        ("alice", "member.remove"),
    ]
    assert trail[3]["detail"]["question"] == "Where do visitors sign in?"
    code, out, _ = cli("audit", "--kb", "ops", "--format", "csv")  # the local owner reads it too
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == len(trail) and rows[-1]["action"] == "member.remove"
    assert "board meets" not in out  # the deleted memo's text is in no entry


def test_local_only_commands_and_rag_user(cli, monkeypatch):
    code, _, err = cli("--user", "alice", "users", "list")
    assert code == 2 and "local owner only" in err
    monkeypatch.setenv("RAG_NEW_PASSWORD", "correct horse battery")
    assert cli("users", "add", "carol", "--display-name", "Carol C")[0] == 0
    catalog = catalog_for(Settings.from_env())
    stored = catalog.q("SELECT password_hash FROM users WHERE id='carol'")[0][0]
    assert stored.startswith("$argon2id$") and "correct horse" not in stored
    assert users.sign_in(catalog, "carol", "correct horse battery").name == "Carol C"
    with pytest.raises(users.SignInFailed):
        users.sign_in(catalog, "carol", "wrong password!")
    with pytest.raises(users.SignInFailed):
        users.sign_in(catalog, "nobody", "correct horse battery")
    monkeypatch.setenv("RAG_NEW_PASSWORD", "short")
    code, _, err = cli("users", "add", "dave")
    assert code == 2 and "shorter than 8" in err
    monkeypatch.setenv("RAG_USER", "carol")  # RAG_USER acts like --user
    code, _, err = cli("members", "--kb", "nowhere", "list")
    assert code == 2 and "'carol' may not read in knowledge base 'nowhere'" in err


def test_a_refusal_is_one_line_and_exit_status_2(tmp_path):
    env = os.environ | {"RAG_HOME": str(tmp_path / "home"), "HF_HUB_OFFLINE": "1", "RAG_USER": "mallory"}
    (tmp_path / "policy.md").write_text(POLICY)
    local = {k: v for k, v in env.items() if k != "RAG_USER"}
    subprocess.run(
        [sys.executable, "-m", "rag", "ingest", str(tmp_path / "policy.md"), "--kb", "ops"],
        env=local,
        cwd=ROOT,
        check=True,
        capture_output=True,
        timeout=300,
    )
    out = subprocess.run(
        [sys.executable, "-m", "rag", "delete", "policy.md", "--kb", "ops"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.strip().splitlines() == [
        "error: 'mallory' may not delete documents in knowledge base 'ops': that needs the editor role, and "
        "'mallory' is not a member. Ask an owner of 'ops' to run `python -m rag members --kb ops add mallory editor`."
    ]


def test_delete_kb_is_for_owners_asks_for_yes_and_keeps_the_audit_trail(cli):
    policy = str(cli.dir / "policy.md")
    assert cli("--user", "alice", "ingest", policy, "--kb", "ops")[0] == 0
    assert cli("--user", "alice", "members", "--kb", "ops", "add", "bob", "editor")[0] == 0
    code, _, err = cli("--user", "bob", "delete-kb", "--kb", "ops", "--yes")
    assert code == 2 and "may not delete the knowledge base in knowledge base 'ops'" in err
    assert "needs the owner role, and 'bob' is editor" in err
    code, _, err = cli("--user", "alice", "delete-kb", "--kb", "ops")  # no --yes: nothing happens
    assert code == 2 and "python -m rag delete-kb --kb ops --yes" in err
    assert "policy.md" in cli("--user", "alice", "docs", "--kb", "ops")[1]

    code, out, _ = cli("--user", "alice", "delete-kb", "--kb", "ops", "--yes")
    assert code == 0 and "deleted knowledge base 'ops' (1 documents)" in out
    settings = Settings.from_env()
    catalog = catalog_for(settings)
    assert catalog.kb("ops") is None and catalog.documents("ops") == []
    assert catalog.q("SELECT count(*) FROM members WHERE kb='ops'")[0][0] == 0
    from rag.store.vectors import VectorStore

    assert VectorStore(settings, "ops").count() == 0  # its vectors are gone too
    code, _, err = cli("docs", "--kb", "ops")
    assert code == 2 and "There is no knowledge base named 'ops'" in err
    code, _, err = cli("delete-kb", "--kb", "ops", "--yes")
    assert code == 2 and "There is no knowledge base named 'ops'" in err

    code, out, _ = cli("audit", "--kb", "ops")  # the trail outlives the knowledge base, without its text
    trail = [json.loads(line) for line in out.splitlines()]
    assert [(e["user_id"], e["action"]) for e in trail][-1] == ("alice", "kb.delete")
    assert "front desk" not in out
