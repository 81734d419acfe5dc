"""Limits: file size, pages, chunks per document, query length. Each cap gives a typed error that says
which limit and how to raise it, leaves the knowledge base as it was, and comes back quickly."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time

import pytest
from reliability_support import doc_text

from rag.errors import InvalidQuery, LimitExceeded
from rag.ingest.pipeline import UploadItem
from rag.limits import check_query

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _pdf(pages: int) -> bytes:
    from reportlab.pdfgen import canvas

    buf = io.BytesIO()
    pdf = canvas.Canvas(buf)
    for n in range(pages):
        pdf.drawString(72, 720, f"Page {n + 1}: the travel allowance is 40 euros per day.")
        pdf.showPage()
    pdf.save()
    return buf.getvalue()


def _state(kb) -> tuple:
    return kb.index_revision, kb.vectors.count(), [(d.name, d.revision) for d in kb.documents()]


def _rejected(kb, item: UploadItem, limit_words: str, env_var: str) -> str:
    before = _state(kb)
    start = time.perf_counter()
    [result] = kb.ingest([item])
    took = time.perf_counter() - start
    assert result.status == "failed" and result.error_type == "LimitExceeded", result
    assert limit_words in result.error and env_var in result.error
    assert _state(kb) == before
    assert not kb.catalog.q("SELECT 1 FROM jobs WHERE kb=? AND status='running'", kb.name)
    return f"{took * 1000:.0f} ms"


@pytest.mark.timeout(120)
def test_file_size_cap(make_kb):
    kb = make_kb("limits", max_file_mb=0.01)
    kb.ingest_file("keep.md", doc_text(1, 1))
    big = UploadItem("big.txt", b"0123456789 " * 2000)  # 22 KB > 10 KB
    _rejected(kb, big, "MB upload limit", "RAG_MAX_FILE_MB")


@pytest.mark.timeout(120)
def test_page_cap(make_kb):
    kb = make_kb("limits", max_pages=2)
    assert kb.ingest_file("two.pdf", _pdf(2)).ok
    _rejected(kb, UploadItem("three.pdf", _pdf(3)), "over the limit of 2", "limit")


@pytest.mark.timeout(120)
def test_chunk_cap(make_kb):
    kb = make_kb("limits", max_chunks_per_doc=4)
    kb.ingest_file("keep.md", doc_text(1, 1, sections=1))
    _rejected(kb, UploadItem("long.md", doc_text(2, 1, sections=8)), "the limit is 4", "RAG_MAX_CHUNKS_PER_DOC")


@pytest.mark.timeout(120)
def test_chunk_cap_refuses_a_huge_text_without_chunking_it(make_kb, capsys):
    """A 20 MB text under the size cap but far over the chunk cap is refused before chunking."""
    kb = make_kb("limits", max_chunks_per_doc=100)
    huge = UploadItem("huge.txt", b"The allowance is forty euros per day for every traveller.\n" * 350_000)
    took = _rejected(kb, huge, "at least", "RAG_MAX_CHUNKS_PER_DOC")
    with capsys.disabled():
        print(f"\n[limits] 20 MB text over the chunk cap refused in {took}")


@pytest.mark.timeout(60)
def test_query_length_cap(make_kb, capsys):
    kb = make_kb("limits", max_query_chars=200)
    kb.ingest_file("keep.md", doc_text(1, 1))
    huge = "leave days " * 10_000  # 110 KB
    start = time.perf_counter()
    with pytest.raises(LimitExceeded, match="110,000 characters long; the limit is 200") as err:
        kb.sparse_search(huge, 5)
    assert "shorter question" in str(err.value) and "RAG_" not in str(err.value)
    took = (time.perf_counter() - start) * 1000
    assert kb.sparse_search("x" * 200, 5) == []  # at the cap is fine
    assert kb.sparse_search("", 5) == []  # an empty sparse query is no error, just no hits
    with pytest.raises(InvalidQuery, match="empty"):
        check_query("   ", kb.settings)
    with capsys.disabled():
        print(f"\n[limits] 110 KB query refused in {took:.1f} ms")


@pytest.mark.timeout(120)
def test_cli_query_cap_is_one_line_not_a_traceback(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_")}
    env |= {"RAG_HOME": str(tmp_path / "home"), "PYTHONPATH": ROOT}
    out = subprocess.run(
        [sys.executable, "-m", "rag", "search", "q" * 100_000, "--kb", "none"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=100,
    )
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.startswith("error: The question is 100,000 characters long; the limit is 2,000.")
