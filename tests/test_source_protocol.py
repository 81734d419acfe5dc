"""Retrieval reads a knowledge base only through what ``rag.source`` declares: every ``kb.X``
in ``rag/retrieval`` is a member of ``KnowledgeSource`` (the why-not probe's modules: of
``ProbedSource``), and the tests' in-memory ``FakeKB`` fits the protocol it stands in for."""

from __future__ import annotations

import ast
from pathlib import Path

from retrieval_fakes import FakeDoc, FakeKB, HashEmbedder

from rag.retrieval.pipeline import context, retrieve
from rag.source import KnowledgeSource, ProbedSource

ROOT = Path(__file__).resolve().parents[1]
PROBE_MODULES = {"probe.py", "targets.py", "suggest.py"}  # they take a ProbedSource


def members(protocol: type) -> set[str]:
    out: set[str] = set()
    for klass in protocol.__mro__:
        if klass.__module__ == "rag.source":
            out |= {n for n in vars(klass) if not n.startswith("_")} | set(getattr(klass, "__annotations__", {}))
    return out


def kb_uses(path: Path) -> list[tuple[int, str]]:
    """(line, attribute) of every ``kb.X`` and ``self.kb.X`` in ``path``; a ``getattr(kb, ...)``
    or ``kb.__dict__`` counts too, as the attribute it names."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            base = node.value
            is_kb = (isinstance(base, ast.Name) and base.id == "kb") or (
                isinstance(base, ast.Attribute) and base.attr == "kb"
            )
            if is_kb:
                found.append((node.lineno, node.attr))
        elif isinstance(node, ast.Call) and getattr(node.func, "id", "") in ("getattr", "hasattr") and node.args:
            if isinstance(node.args[0], ast.Name) and node.args[0].id == "kb":
                found.append((node.lineno, f"{node.func.id}(kb, ...)"))
    return found


def test_retrieval_calls_only_what_the_protocol_declares():
    plain, probed = members(KnowledgeSource), members(ProbedSource)
    undeclared = [
        f"rag/retrieval/{path.relative_to(ROOT / 'rag/retrieval')}:{line} kb.{attr}"
        for path in sorted((ROOT / "rag/retrieval").rglob("*.py"))
        for line, attr in kb_uses(path)
        if attr not in (probed if path.name in PROBE_MODULES else plain)
    ]
    assert undeclared == []


def test_the_protocol_declares_the_vectors_the_bm25_index_and_the_retrieval_cache():
    assert {"get_embeddings", "bm25", "retrieval_cache", "multilingual_index", "settings"} <= members(KnowledgeSource)
    assert {"documents", "revisions", "dense_scores", "chunks"} <= members(ProbedSource) - members(KnowledgeSource)


def test_the_fake_knowledge_base_fits_and_retrieval_keeps_its_cache_on_it():
    kb = FakeKB("tiny", [FakeDoc("d1", ["Employees get 25 days of annual leave."])], HashEmbedder())
    assert isinstance(kb, KnowledgeSource) and not isinstance(kb, ProbedSource)
    assert context(kb, kb.settings) is context(kb, kb.settings)  # built once, kept in kb.retrieval_cache
    assert kb.retrieval_cache and "_retrieval_cache" not in vars(kb)
    trace = retrieve(kb, "How many days of annual leave?", persist=False)
    assert trace.candidates and trace.candidates[0].chunk_id.startswith("d1:")
    other = FakeKB("other", [FakeDoc("d2", ["x"])], HashEmbedder())
    assert context(other, other.settings) is not context(kb, kb.settings)  # one cache per source
