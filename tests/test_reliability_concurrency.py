"""Concurrency: ingests and queries at once, in threads and in separate processes, on one data dir.

Readers check every retriever call for torn reads (two revisions of one document, a chunk
without its text, a chunk mixing versions); at the end every document is there at its last
revision and catalog, Chroma and BM25 agree.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

import pytest
from reliability_support import (
    DRIVER,
    ROOT,
    HashEmbedder,
    Lines,
    audit,
    check_hits,
    child_env,
    doc_text,
    marker,
    probe_queries,
    read_json_line,
)

from rag.config import Settings
from rag.ingest.pipeline import UploadItem
from rag.kb import KnowledgeBase

WRITERS, ROUNDS, READERS = 2, 6, 6


def _writer(kb: KnowledgeBase, tag: int, errors: list, counts: dict) -> None:
    try:
        for rnd in range(1, ROUNDS + 1):
            items = [UploadItem(f"w{tag}-{d}.md", doc_text(tag * 10 + d, rnd, sections=2)) for d in range(3)]
            results = kb.ingest(items)
            errors += [f"{r.name}: {r.error}" for r in results if not r.ok]
            counts["ingests"] += 1
            if rnd == ROUNDS // 2:  # a delete and re-add in the middle of the load
                kb.delete(f"w{tag}-0.md")
                kb.ingest_file(f"w{tag}-0.md", doc_text(tag * 10, rnd, sections=2))
                counts["ingests"] += 1
    except Exception as exc:  # noqa: BLE001 - reported to the test thread
        errors.append(f"writer {tag}: {type(exc).__name__}: {exc}")


def _reader(kb: KnowledgeBase, n: int, stop: threading.Event, errors: list, counts: dict) -> None:
    i = n
    while not stop.is_set():
        doc, ver = (1 + i % WRITERS) * 10 + i % 3, 1 + i % ROUNDS
        query = f"{marker(doc, ver)} paragraph section w{i % 97}"
        try:
            errors += check_hits(kb.dense_search(kb.embedder.embed_query(query), 10), "dense")
            errors += check_hits(kb.sparse_search(query, 10), "sparse")
            errors += _unpublished(kb, kb.sparse_search(marker(doc, ver), 10))
        except Exception as exc:  # noqa: BLE001 - reported to the test thread
            errors.append(f"reader {n}: {type(exc).__name__}: {exc}")
        counts["queries"] += 1
        i += READERS


def _unpublished(kb: KnowledgeBase, hits) -> list[str]:
    """Hits from a revision that was never published ('writing' now, or 'failed')."""
    out = []
    for h in hits:
        rows = kb.catalog.q(
            "SELECT state FROM revisions WHERE kb=? AND doc_id=? AND revision=?",
            kb.name,
            h.chunk.doc_id,
            h.chunk.revision,
        )
        if not rows or rows[0][0] in ("writing", "failed"):
            out.append(f"unpublished revision visible: {h.chunk.id}")
    return out


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_threads_ingest_and_query_at_once(make_kb, settings, embedder, capsys):
    """Two writers and six readers in threads, over two KnowledgeBase objects (two app sessions)."""
    sessions = [make_kb("conc"), KnowledgeBase("conc", settings, embedder)]
    errors: list[str] = []
    counts = {"ingests": 0, "queries": 0}
    stop = threading.Event()
    writers = [threading.Thread(target=_writer, args=(sessions[w], w + 1, errors, counts)) for w in range(WRITERS)]
    readers = [
        threading.Thread(target=_reader, args=(sessions[r % 2], r, stop, errors, counts)) for r in range(READERS)
    ]
    start = time.perf_counter()
    for t in writers + readers:
        t.start()
    for t in writers:
        t.join()
    stop.set()
    for t in readers:
        t.join()
    took = time.perf_counter() - start
    assert errors == []
    report = audit(sessions[0])
    assert report["problems"] == [] and probe_queries(sessions[1]) == []
    want = {f"w{w}-{d}.md": doc_text(w * 10 + d, ROUNDS, sections=2) for w in (1, 2) for d in range(3)}
    assert {d.name for d in sessions[1].documents()} == set(want)
    assert all(sessions[0].document_text(d.id) for d in sessions[0].documents())
    assert report["jobs"] == {"done": counts["ingests"]}
    with capsys.disabled():
        print(
            f"\n[concurrency-threads] {WRITERS} writer + {READERS} reader threads, 2 sessions: "
            f"{counts['ingests']} ingests, {counts['queries']} queries (x3 retriever calls) in {took:.1f} s, 0 errors"
        )


def test_chunk_rows_and_text_come_from_one_snapshot(make_kb):
    """A delete committing between reading a chunk's row and its text never yields a chunk without text."""
    kb = make_kb("snap")
    kb.ingest_file("a.md", doc_text(1, 1))
    ids = [c.id for c in kb.chunks("a.md")]
    original = kb.catalog.document_text

    def delete_first(*args, **kwargs):
        deleter = threading.Thread(target=kb.delete, args=("a.md",))
        deleter.start()
        deleter.join()
        return original(*args, **kwargs)

    kb._texts.clear()
    kb.catalog.document_text = delete_first
    try:
        during = kb.get_chunks(ids)
    finally:
        kb.catalog.document_text = original
    assert set(during) == set(ids) and all(c.text.strip() for c in during.values())
    assert kb.get_chunks(ids) == {} and kb.documents() == []


def _driver(mode: str, home, *args: str, **env: str) -> subprocess.Popen:
    cmd = [sys.executable, str(DRIVER), mode, str(home), *args]
    return subprocess.Popen(cmd, env=child_env(**env), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_embedded_store_refuses_a_second_process_clearly(tmp_path):
    """Embedded Chroma is single-process (measured: two writers corrupt HNSW): the second one is told why."""
    home = tmp_path / "home"
    holder = _driver("hold", home, "--seconds", "120")
    try:
        assert Lines(holder).next().startswith("OPEN")
        env = child_env(RAG_HOME=str(home))
        out = subprocess.run(
            [sys.executable, "-m", "rag", "docs", "--kb", "crash"], env=env, cwd=ROOT, capture_output=True, text=True
        )
        assert out.returncode == 2 and "Traceback" not in out.stderr
        assert "open in another process" in out.stderr and "chroma run" in out.stderr
        assert f"pid {holder.pid}" in out.stderr
    finally:
        holder.kill()
        holder.wait(30)
    again = _driver("hold", home, "--seconds", "0")  # the lock died with its process
    assert again.wait(120) == 0, again.stderr.read()[-2000:]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_writer_lock_holds_across_processes_and_open_never_waits(tmp_path):
    """While this process holds the writer lock: another process opens at once, leaves the live
    writer's job alone, and its ingest waits; released, it ingests and fails the orphaned job."""
    from rag.kb import catalog_for
    from rag.store import writer

    settings = Settings.from_env(env={}, home=tmp_path / "home")
    catalog = catalog_for(settings)
    catalog.create_kb("crash", "test-hash-embedder", 32, 800, 120)
    job = catalog.start_job("crash", "ingest", "[]")  # 'running': a writer's job, or a dead writer's
    with writer.write_lock(settings, "crash"):
        proc = _driver("crash", settings.home, "--from", "0", "--to", "1")
        lines = Lines(proc)
        report = read_json_line(lines.next(30), "AUDIT ")
        assert report["jobs"] == {"running": 1}  # open did not wait, and did not touch the live job
        assert lines.next(30).startswith("READY")
        time.sleep(3)
        assert proc.poll() is None and lines.q.empty()  # the ingest is waiting for the lock
    assert lines.next(60).startswith("DONE 0")
    assert proc.wait(60) == 0
    row = catalog.q("SELECT status, error FROM jobs WHERE id=?", job)[0]
    assert tuple(row) == ("failed", writer.INTERRUPTED)


def _overlaps(a: list, b: list) -> list:
    return [(x, y) for x in a for y in b if x[0] < y[1] and y[0] < x[1]]


@pytest.mark.slow
@pytest.mark.server
@pytest.mark.timeout(900)
def test_two_processes_on_one_data_dir_in_server_mode(tmp_path, chroma_server, capsys):
    """Two app instances (processes) sharing a data dir and a `chroma run` server ingest and query at once."""
    home, rounds = tmp_path / "home", 5
    env = {"RAG_CHROMA_HOST": "127.0.0.1", "RAG_CHROMA_PORT": str(chroma_server.port)}
    start = time.perf_counter()
    procs = [_driver("worker", home, "--tag", tag, "--rounds", str(rounds), **env) for tag in ("a", "b")]
    outputs = [p.communicate(timeout=600) for p in procs]
    took = time.perf_counter() - start
    assert [p.returncode for p in procs] == [0, 0], [err[-2000:] for _, err in outputs]
    parsed = [dict(line.split(" ", 1) for line in out.splitlines()) for out, _ in outputs]
    stats = [json.loads(p["STATS"]) for p in parsed]
    assert [s["problems"] for s in stats] == [[], []]
    locks = [json.loads(p["LOCKS"]) for p in parsed]
    assert len(locks[0]) == len(locks[1]) == rounds and _overlaps(locks[0], locks[1]) == []
    settings = Settings.from_env(env={}, home=home, chroma_host="127.0.0.1", chroma_port=chroma_server.port)
    kb = KnowledgeBase("crash", settings, HashEmbedder())
    report = audit(kb)
    assert report["problems"] == [] and probe_queries(kb) == []
    want = {f"{t}{d}.md": doc_text(base + d, rounds) for t, base in (("a", 10), ("b", 20)) for d in range(3)}
    assert {n: h for n, h in report["hashes"].items()} == {n: _sha(b) for n, b in want.items()}
    queries = sum(s["queries"] for s in stats)
    with capsys.disabled():
        print(
            f"\n[concurrency-processes] 2 processes (server mode), {2 * rounds} ingest batches, "
            f"{queries} queries (x2 retriever calls) in {took:.1f} s, writer locks never overlapped, 0 errors"
        )


def _sha(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()
