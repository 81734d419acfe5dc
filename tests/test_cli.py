"""The CLI end to end in real subprocesses (real embedder, embedded Chroma)."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import ROOT


def run(home, *args):
    env = os.environ | {"RAG_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "rag", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )


def test_ingest_docs_search_delete(tmp_path):
    doc = tmp_path / "policy.md"
    doc.write_text("# Policy\n\nVisitors must sign in at the front desk and wear a badge.\n")
    bad = tmp_path / "empty.txt"
    bad.write_bytes(b"")
    out = run(tmp_path / "home", "ingest", str(doc), str(bad), "--kb", "cli")
    assert out.returncode == 1, out.stderr
    assert "added" in out.stdout and "policy.md" in out.stdout
    assert "failed" in out.stdout and "empty.txt" in out.stdout
    listing = run(tmp_path / "home", "docs", "--kb", "cli")
    assert "policy.md" in listing.stdout and "1 documents" in listing.stdout
    found = run(tmp_path / "home", "search", "where do visitors sign in", "--kb", "cli")
    assert "== dense ==" in found.stdout and "== bm25 ==" in found.stdout and "front desk" in found.stdout
    gone = run(tmp_path / "home", "delete", "policy.md", "--kb", "cli")
    assert gone.returncode == 0 and "deleted" in gone.stdout
    missing = run(tmp_path / "home", "delete", "policy.md", "--kb", "cli")
    assert missing.returncode == 2 and "python -m rag docs" in missing.stderr and "Traceback" not in missing.stderr


def test_kb_defaults_to_the_knowledge_base_the_app_opens(monkeypatch):
    from rag.cli import build_parser
    from rag.cli.kb import resolve_kb

    monkeypatch.setenv("RAG_DEFAULT_KB", "handbook")
    for argv in (["ask", "q"], ["docs"], ["search", "q"], ["export", "out.zip"]):
        args = build_parser().parse_args(argv)
        resolve_kb(args)
        assert args.kb == "handbook", argv
    monkeypatch.delenv("RAG_DEFAULT_KB")
    args = build_parser().parse_args(["ask", "q"])
    resolve_kb(args)
    assert args.kb == "demo"
    args = build_parser().parse_args(["ask", "q", "--kb", "other"])
    resolve_kb(args)
    assert args.kb == "other"
    args = build_parser().parse_args(["import", "in.zip"])  # import keeps the exported name
    resolve_kb(args)
    assert args.kb is None


def test_why_names_the_stage_and_the_change_and_replays_it(tmp_path):
    from probe_support import BICYCLE_NAME, RECALL_QUESTION, write_corpus

    corpus = write_corpus(tmp_path / "corpus")
    assert run(tmp_path / "home", "ingest", str(corpus), "--kb", "why").returncode == 0
    out = run(tmp_path / "home", "why", RECALL_QUESTION, "--kb", "why", "--doc", BICYCLE_NAME, "--replay")
    assert out.returncode == 0, out.stderr
    assert "Excluded by recall_cut" in out.stdout and "suggested: recall_k 20 → " in out.stdout
    assert "had it been a candidate" in out.stdout and "permit" in out.stdout
    assert "replay lets it in: yes" in out.stdout
    zh = run(tmp_path / "home", "why", "员工出差住宿标准是多少？", "--kb", "why", "--doc", "expense_policy_zh.md")
    assert zh.returncode == 0 and "住宿" in zh.stdout and "It is evidence [1]." in zh.stdout
    bad = run(tmp_path / "home", "why", RECALL_QUESTION, "--kb", "why", "--doc", "bicycle.md")
    assert bad.returncode == 2 and "Did you mean 'bicycles.md'" in bad.stderr and "Traceback" not in bad.stderr
    chunk = run(tmp_path / "home", "why", RECALL_QUESTION, "--kb", "why", "--chunk", "bicycles")
    assert chunk.returncode == 2 and "not a chunk id" in chunk.stderr
