"""Sign-in and permissions through the real pages (AppTest over app.py, real knowledge bases).

Off by default: the app opens with no sign-in, as the local owner. With ``RAG_AUTH=users``: the
sign-in form, a picker holding only the knowledge bases one is a member of, a reader refused an
upload, and each crafted request (a page URL, a session-state value, a chunk or trace id from
another knowledge base, a replayed Inspector link) opening nothing outside the membership.
"""

from __future__ import annotations

import pytest
from app_support import ANSWERABLE, ROOT, app_home, build_kb, texts
from streamlit.testing.v1 import AppTest

from rag import ask
from rag.config import Settings
from rag.ingest.pipeline import UploadItem
from rag.kb import KnowledgeBase
from rag.store import access, users
from rag.store.access import Role

pytestmark = pytest.mark.slow
TIMEOUT = 240
SECRET = "# Merger\n\nThe merger with Heron Ltd closes on 3 March. Codename: bluefin.\n"
PASSWORD = "reader password 1"


@pytest.fixture(scope="module")
def two_kbs(tmp_path_factory, embedder):
    """'demo' (bob reads it) and 'legal' (bob is not a member; it holds a secret and a trace of it)."""
    with app_home(tmp_path_factory.mktemp("access") / "home"):
        settings = Settings.from_env()
        demo = build_kb(settings, embedder)
        legal = KnowledgeBase("legal", settings, embedder)
        legal.ingest([UploadItem("merger.md", SECRET.encode())])
        _, secret_trace = ask.ask(legal, "When does the merger close?")
        access.set_member(demo.catalog, "demo", "bob", Role.READER)
        users.add_user(demo.catalog, "bob", PASSWORD, "Bob")
        yield demo, legal, secret_trace


def run(at: AppTest) -> AppTest:
    at = at.run(timeout=TIMEOUT)
    assert not at.exception, [e.value for e in at.exception]
    return at


def signed_in(monkeypatch, page: str = "", **params: str) -> AppTest:
    monkeypatch.setenv("RAG_AUTH", "users")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.query_params.update(params)
    run(at)
    at.text_input(key="sign_in_name").input("bob")
    at.text_input(key="sign_in_password").input(PASSWORD)
    run(at.button(key="sign_in_go").click())
    if page:
        at.switch_page(f"pages/{page}.py")
        at.query_params.update(params)
        run(at)
    return at


def everything_shown(at: AppTest) -> str:
    parts = [texts(at.markdown), texts(at.caption), texts(at.info), texts(at.error), texts(at.text)]
    parts += [str(d.value) for d in at.dataframe] + [str(s.options) for s in at.selectbox]
    return "\n".join(parts)


def test_sign_in_is_off_by_default(two_kbs, monkeypatch):
    monkeypatch.delenv("RAG_AUTH", raising=False)
    at = run(AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT))
    assert not [t for t in at.text_input if t.key == "sign_in_name"]
    assert at.selectbox(key="kb").options == ["demo", "legal"]  # the local owner sees everything


def test_the_sign_in_gate_refuses_a_wrong_password(two_kbs, monkeypatch):
    monkeypatch.setenv("RAG_AUTH", "users")
    at = run(AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT))
    assert not [s for s in at.selectbox if s.key == "kb"]  # nothing but the form
    at.text_input(key="sign_in_name").input("bob")
    at.text_input(key="sign_in_password").input("wrong password")
    run(at.button(key="sign_in_go").click())
    assert "Wrong user name or password" in texts(at.error)
    assert not [s for s in at.selectbox if s.key == "kb"]


def test_a_reader_sees_only_their_knowledge_bases_and_may_not_upload(two_kbs, monkeypatch):
    at = signed_in(monkeypatch)
    assert at.selectbox(key="kb").options == ["demo"]
    assert "Signed in as **Bob**" in texts(at.sidebar.caption)
    at = signed_in(monkeypatch, "upload")
    shown = texts(at.info).replace("\\", "")  # markdown-escaped
    assert "'bob' may not upload in knowledge base 'demo': that needs the editor role" in shown
    assert not at.get("file_uploader") and not [b for b in at.button if b.key == "delete_button"]


def test_a_crafted_url_or_session_value_opens_nothing_outside_the_membership(two_kbs, monkeypatch):
    at = signed_in(monkeypatch, "upload", kb="legal")  # a page URL naming another knowledge base
    assert at.selectbox(key="kb").value == "demo"
    assert "merger.md" not in everything_shown(at)
    at.session_state["kb_choice"] = "legal"  # a session value set behind the picker's back
    run(at)
    assert at.selectbox(key="kb").value == "demo"
    assert "merger.md" not in everything_shown(at) and "bluefin" not in everything_shown(at)


def test_a_replayed_inspector_link_or_foreign_chunk_id_reads_nothing(two_kbs, monkeypatch):
    demo, legal, secret_trace = two_kbs
    at = signed_in(monkeypatch, "inspector", kb="legal", trace=secret_trace.id)
    shown = everything_shown(at)
    assert "bluefin" not in shown and "Heron" not in shown and "merger" not in shown.lower()
    at = signed_in(monkeypatch, "inspector", kb="demo", trace=secret_trace.id)  # its own kb, a foreign trace
    shown = everything_shown(at)
    assert "bluefin" not in shown and "Heron" not in shown
    foreign = [c.chunk_id for c in secret_trace.candidates]
    assert foreign and demo.get_chunks(foreign) == {}  # a chunk id of 'legal' reads nothing in 'demo'
    bob = access.Principal("bob")
    turn, _ = ask.ask(demo, ANSWERABLE, principal=bob)
    access.set_member(demo.catalog, "demo", "carol", Role.READER)
    assert ask.get_turn(demo, turn.id, principal=access.Principal("carol")) is None  # bob's, not hers
