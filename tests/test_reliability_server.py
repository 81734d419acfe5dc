"""Server-mode faults with a real `chroma run`: down at start, killed and restarted mid-session, auth token."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest
from conftest import ROOT, ChromaServer, free_port
from reliability_proxy import AuthProxy
from reliability_support import audit, doc_text, probe_queries

from rag.errors import StoreUnavailable
from rag.ingest.pipeline import UploadItem
from rag.kb import KnowledgeBase

pytestmark = pytest.mark.server
TOKEN = "s3cret-token-for-tests"


def _server_settings(settings, port: int, token: str = ""):
    return settings.replace(chroma_host="127.0.0.1", chroma_port=port, chroma_token=token)


def _quick(fn, *args):
    """Run ``fn``, expecting StoreUnavailable; returns (error, seconds) - an outage must not hang."""
    start = time.perf_counter()
    with pytest.raises(StoreUnavailable) as err:
        fn(*args)
    return err.value, time.perf_counter() - start


@pytest.mark.timeout(300)
def test_server_down_at_start_is_a_clear_error_and_nothing_else_breaks(settings, embedder, tmp_path, make_kb):
    port = free_port()
    err, took = _quick(KnowledgeBase, "remote", _server_settings(settings, port), embedder)
    assert f"Cannot reach the Chroma server at 127.0.0.1:{port}" in str(err) and "chroma run" in str(err)
    assert took < 15
    local = make_kb("local")  # the same process and data dir keep working in embedded mode
    assert local.ingest_file("a.md", doc_text(1, 1)).ok and local.sparse_search("d1v1marker", 3)
    assert local.catalog.kb("remote") is None  # the failed open created nothing
    server = ChromaServer(tmp_path / "late-server", port)
    server.start()
    try:  # the server comes up: the same process connects, no restart needed
        kb = KnowledgeBase("remote", _server_settings(settings, port), embedder)
        assert kb.ingest_file("b.md", doc_text(2, 1)).ok and kb.vectors.count() > 0
    finally:
        server.stop()


@pytest.mark.timeout(300)
def test_a_server_still_restarting_when_a_process_starts_is_waited_for(settings, embedder, chroma_server):
    """A command started while the server restarts (refusing connections for a second or two)
    waits for it (``START_GRACE_S``) instead of failing: the soak's CLI loop met exactly this."""
    port = free_port()
    late: list[AuthProxy] = []
    timer = threading.Timer(1.5, lambda: late.append(AuthProxy(chroma_server.port, port=port).__enter__()))
    timer.start()
    try:
        start = time.perf_counter()
        kb = KnowledgeBase("late", _server_settings(settings, port), embedder)
        assert time.perf_counter() - start >= 1.0  # it waited for the server rather than failing
        assert kb.ingest_file("a.md", doc_text(1, 1)).ok and kb.vectors.count() > 0
    finally:
        timer.join()
        for proxy in late:
            proxy.__exit__()


@pytest.mark.timeout(300)
def test_cli_with_server_down_prints_the_fix(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_")}
    env |= {"RAG_HOME": str(tmp_path / "home"), "RAG_CHROMA_HOST": "127.0.0.1", "RAG_CHROMA_PORT": str(free_port())}
    env |= {"PYTHONPATH": str(ROOT)}
    (tmp_path / "a.md").write_bytes(doc_text(1, 1))
    cmd = [sys.executable, "-m", "rag", "ingest", str(tmp_path / "a.md"), "--kb", "x"]
    out = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.startswith("error: Cannot reach the Chroma server") and "chroma run" in out.stderr


@pytest.mark.timeout(300)
def test_a_wedged_server_times_out_instead_of_hanging(settings, embedder, chroma_server, caplog):
    """A server that accepts a request and never answers: the query gives up after
    ``chroma_timeout_s``, retries once on a fresh connection, and answers; two hangs in a row
    are a StoreUnavailable after about twice the timeout, not a frozen app."""
    with AuthProxy(chroma_server.port) as proxy:
        kb = KnowledgeBase("wedged", _server_settings(settings, proxy.port).replace(chroma_timeout_s=2.0), embedder)
        kb.ingest_file("a.md", doc_text(1, 1))
        query = kb.embedder.embed_query("d1v1marker")
        proxy.hang(1, 30)
        start = time.perf_counter()
        hits = kb.dense_search(query, 3)
        assert hits[0].chunk.doc_name == "a.md" and time.perf_counter() - start < 10
        assert "reconnecting once" in caplog.text and "Timeout" in caplog.text
        proxy.hang(2, 30)
        err, took = _quick(kb.dense_search, query, 3)
        assert "Chroma server" in str(err) and took < 15
        assert kb.dense_search(query, 3)  # and it serves again once the server does


@pytest.mark.timeout(600)
def test_server_killed_mid_session_then_restarted_recovers_in_process(settings, embedder, chroma_server, capsys):
    kb = KnowledgeBase("remote", _server_settings(settings, chroma_server.port), embedder)
    kb.ingest([UploadItem(f"doc{d}.md", doc_text(d, 1)) for d in range(3)])
    chroma_server.stop()  # SIGKILL
    query = kb.embedder.embed_query("d1v1marker paragraph")
    timings = {}
    err, timings["query"] = _quick(kb.dense_search, query, 5)
    assert "Cannot reach the Chroma server" in str(err) and "chroma run" in str(err)
    err, timings["ingest"] = _quick(kb.ingest_file, "doc1.md", doc_text(1, 2))
    job = kb.catalog.jobs(kb.name)[0]
    assert job["status"] == "failed" and "StoreUnavailable" in job["error"]
    assert [(d.name, d.revision) for d in kb.documents()] == [("doc0.md", 1), ("doc1.md", 1), ("doc2.md", 1)]
    chroma_server.start()  # same port, same path
    hits = kb.dense_search(query, 5)  # reconnects and retries, same KnowledgeBase, same process
    assert hits and {h.chunk.revision for h in hits} == {1}
    assert kb.sparse_search("d1v1marker", 5)
    assert kb.ingest_file("doc1.md", doc_text(1, 2)).status == "updated"
    report = audit(kb)  # the outage's unfinished revision was cleaned up by the next write
    assert report["problems"] == [] and probe_queries(kb) == []
    with capsys.disabled():
        shown = ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in timings.items())
        print(f"\n[server] killed mid-session: errors in {shown}; restarted: same process recovered, audit clean")


@pytest.mark.timeout(300)
def test_connection_lost_mid_request_is_retried_once(settings, embedder, chroma_server, caplog):
    """The server hangs up on a request (as when killed mid-request): one reconnect and retry, then
    success; a second hang-up in a row (the server is really gone) is StoreUnavailable, not a raw error."""
    with AuthProxy(chroma_server.port) as proxy:
        kb = KnowledgeBase("flaky", _server_settings(settings, proxy.port), embedder)
        kb.ingest_file("a.md", doc_text(1, 1))
        query = kb.embedder.embed_query("d1v1marker")
        proxy.drop(1)
        assert kb.dense_search(query, 3)
        assert "reconnecting once" in caplog.text and proxy.counts["dropped"] == 1
        proxy.drop(1)
        assert kb.ingest_file("a.md", doc_text(1, 2)).status == "updated"  # a write retried the same way
        proxy.drop(1, after=True)  # the add is done but its answer lost: the retry must be harmless
        assert kb.ingest_file("b.md", doc_text(2, 1)).status == "added"
        assert audit(kb)["problems"] == []
        proxy.drop(3)
        err, took = _quick(kb.dense_search, query, 3)
        assert "Chroma server" in str(err) and took < 15
        assert kb.dense_search(query, 3)[0].chunk.revision == 2


@pytest.mark.timeout(600)
def test_bearer_token_is_sent_and_checked(settings, embedder, chroma_server, capsys):
    """Token auth through a bearer-checking proxy in front of the real server (see reliability_proxy)."""
    with AuthProxy(chroma_server.port, TOKEN) as proxy:
        err, _ = _quick(KnowledgeBase, "secure", _server_settings(settings, proxy.port), embedder)
        assert "requires authentication (HTTP 401): no token was sent" in str(err)
        assert "RAG_CHROMA_TOKEN" in str(err)
        err, _ = _quick(KnowledgeBase, "secure", _server_settings(settings, proxy.port, "wrong"), embedder)
        assert "the token in RAG_CHROMA_TOKEN was refused" in str(err) and "wrong" not in str(err)
        refused = proxy.counts["rejected"]
        kb = KnowledgeBase("secure", _server_settings(settings, proxy.port, TOKEN), embedder)
        kb.ingest([UploadItem("a.md", doc_text(1, 1)), UploadItem("b.md", doc_text(2, 1))])
        assert kb.dense_search(kb.embedder.embed_query("d2v1marker"), 3)[0].chunk.doc_name == "b.md"
        assert kb.sparse_search("d1v1marker", 3)[0].chunk.doc_name == "a.md"
        counts = proxy.counts
    assert counts["rejected"] == refused and counts["accepted"] > 5  # every request with the token
    assert TOKEN not in str(kb.settings.public_dict())
    with capsys.disabled():
        print(f"\n[server-auth] through a bearer proxy: {counts['accepted']} requests accepted, {refused} refused")
