"""Subprocess driver for the crash and multi-process tests (run: python tests/reliability_driver.py ...).

Modes:
  crash HOME --from N --to M   open the KB (recovery runs), print AUDIT, then ingest batches N..M-1,
                               printing DONE n after each; RAG_TEST_CRASH_AT=<point> SIGKILLs itself
                               at that point (see ``CRASH_POINTS``).
  worker HOME --tag T --rounds R   ingest T's documents R times (new revisions each round) while a
                               thread queries; print LOCK intervals, PROBLEMS and STATS as JSON.
  hold HOME --seconds S        open the KB, print OPEN, sleep (keeps the embedded store open).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from contextlib import contextmanager

from reliability_support import HashEmbedder, audit, check_hits, doc_text, marker, probe_queries

from rag.config import Settings
from rag.ingest.pipeline import UploadItem
from rag.kb import KnowledgeBase

DOCS = 6


def version(doc: int, step: int) -> int:
    """How many times ``doc`` changed up to ``step``: every step changes two or three documents."""
    return sum(1 for s in range(1, step + 1) if (s * 5 + doc) % 3 == 0)


def batch(step: int) -> list[UploadItem]:
    return [UploadItem(f"doc{d}.md", doc_text(d, version(d, step))) for d in range(DOCS)]


def emit(kind: str, payload) -> None:
    sys.stdout.write(f"{kind} {json.dumps(payload) if not isinstance(payload, str) else payload}\n")
    sys.stdout.flush()


def die() -> None:
    emit("KILL", os.environ.get("RAG_TEST_CRASH_AT", "?"))
    os.kill(os.getpid(), signal.SIGKILL)


def _after(obj, name: str, nth: int = 1, before: bool = False) -> None:
    """Patch ``obj.name`` so the process SIGKILLs itself around its ``nth`` call."""
    original, calls = getattr(obj, name), [0]

    def wrapper(*args, **kwargs):
        calls[0] += 1
        if before and calls[0] == nth:
            die()
        out = original(*args, **kwargs)
        if calls[0] == nth:
            die()
        return out

    setattr(obj, name, wrapper)


def _at(obj, name: str, when=lambda *args, **kwargs: True, before: bool = False) -> None:
    """Patch ``obj.name`` so the process SIGKILLs itself around the first call ``when`` accepts."""
    original = getattr(obj, name)

    def wrapper(*args, **kwargs):
        hit = when(*args, **kwargs)
        if hit and before:
            die()
        out = original(*args, **kwargs)
        if hit:
            die()
        return out

    setattr(obj, name, wrapper)


def _after_a_merge(obj, name: str) -> None:
    """Patch ``obj.name`` so the process SIGKILLs itself at its first call after a merge began."""
    from rag.store import segments

    merging = [False]
    merge = segments.Segment.merge.__func__

    def flagged(cls, *args, **kwargs):
        merging[0] = True
        return merge(cls, *args, **kwargs)

    segments.Segment.merge = classmethod(flagged)
    _at(obj, name, when=lambda *args, **kwargs: merging[0])


def _merge_commit(store, manifest, reason) -> bool:
    return reason == "merge"


def _kill_before_manifest_rename(os_module) -> None:
    original = os_module.replace

    def replace(src, dst, *args, **kwargs):
        if str(dst).endswith("manifest.json"):
            die()
        return original(src, dst, *args, **kwargs)

    os_module.replace = replace


def install_crash_point(point: str, kb: KnowledgeBase | None) -> None:
    """Crash points inside the write path; ``recover-*`` ones are installed before the KB opens."""
    from rag.store import segments, vectors

    store = segments.SegmentStore
    if point == "recover-mid-drop":
        _after(vectors.VectorStore, "delete_revision")
    elif point == "job-started":
        _after(kb.catalog, "start_job")
    elif point == "vectors-added":
        _after(kb.vectors, "add")
    elif point == "publish-uncommitted":
        _after(kb.catalog, "finish_job", before=True)  # called inside publish's transaction
    elif point == "published":
        _after(kb, "_drop_inactive", before=True)
    elif point == "mid-drop":
        _after(kb.vectors, "delete_revision")
    elif point == "bm25-segment-tmp":
        _at(segments, "_write_arrays")
    elif point == "bm25-segment-written":
        _at(store, "commit", before=True)
    elif point == "bm25-manifest-tmp":
        _kill_before_manifest_rename(segments.os)
    elif point == "recover-bm25-catch-up":
        _at(store, "write")
    elif point == "bm25-caught-up":
        _at(store, "commit", when=lambda store, manifest, reason: reason == "catch-up")
    elif point == "bm25-merge-tmp":
        _after_a_merge(segments, "_write_arrays")
    elif point == "bm25-merge-written":
        _at(store, "commit", when=_merge_commit, before=True)
    elif point == "bm25-merged":
        _at(store, "commit", when=_merge_commit)
    elif point == "bm25-mid-garbage":
        _after_a_merge(segments, "_remove")
    elif point:
        raise SystemExit(f"unknown crash point {point}")


CRASH_POINTS = [
    "job-started",  # a job row 'running', no revision yet
    "vectors-added",  # revisions 'writing' with all their vectors in Chroma, nothing published
    "recover-mid-drop",  # the next open dies while recovering the above (after deleting some vectors)
    "publish-uncommitted",  # inside the publish transaction, before COMMIT
    "published",  # committed; the replaced revisions still 'retired' with their vectors
    "mid-drop",  # a replaced revision's vectors deleted, its catalog rows not yet
    "bm25-segment-tmp",  # the batch's BM25 segment half written in its temporary folder
    "bm25-segment-written",  # the segment in place, no manifest naming it yet
    "bm25-manifest-tmp",  # the new manifest written beside the live one, not yet renamed over it
    "recover-bm25-catch-up",  # the next open dies while bringing BM25 up to the catalog (its segment written)
    "bm25-caught-up",  # the manifest names the batch's segment and masks what it replaced; no merge yet
    "bm25-merge-tmp",  # a merged segment half written
    "bm25-merge-written",  # the merged segment in place; the manifest still names its inputs
    "bm25-merged",  # the manifest names the merged segment; its inputs not yet removed
    "bm25-mid-garbage",  # a merged-away segment removed, the rest not yet
]
MERGE_FACTOR = 2  # BM25 segments merge often here, so that kills land in merges too


def settings_for(home: str) -> Settings:
    return Settings.from_env(home=home, bm25_merge_factor=MERGE_FACTOR)


def run_crash(args) -> None:
    point = os.environ.get("RAG_TEST_CRASH_AT", "")
    if point.startswith("recover-"):
        install_crash_point(point, None)
    kb = KnowledgeBase(args.kb, settings_for(args.home), HashEmbedder())
    emit("AUDIT", audit(kb) | {"query_problems": probe_queries(kb)})
    if not point.startswith("recover-"):
        install_crash_point(point, kb)
    emit("READY", str(time.time()))
    for step in range(args.start, args.stop):
        results = kb.ingest(batch(step))
        bad = [r.error for r in results if not r.ok]
        if bad:
            raise SystemExit(f"ingest failed: {bad}")
        emit("DONE", f"{step} {time.time()}")


# -- worker: a second app instance ingesting and querying at once ---------------------------------
@contextmanager
def _timed_lock(original, intervals):
    with original():
        start = time.time()
        try:
            yield
        finally:
            intervals.append((start, time.time()))


def run_worker(args) -> None:
    kb = KnowledgeBase(args.kb, settings_for(args.home), HashEmbedder())
    intervals: list[tuple[float, float]] = []
    original = kb.write_lock
    kb.write_lock = lambda: _timed_lock(original, intervals)
    problems, queries, stop = [], [0], threading.Event()
    reader = threading.Thread(target=_query_loop, args=(kb, stop, problems, queries))
    reader.start()
    base = 10 if args.tag == "a" else 20
    try:
        for rnd in range(1, args.rounds + 1):
            items = [UploadItem(f"{args.tag}{d}.md", doc_text(base + d, rnd)) for d in range(3)]
            results = kb.ingest(items)
            problems += [f"ingest {r.name}: {r.error}" for r in results if not r.ok]
    finally:
        stop.set()
        reader.join()
    emit("LOCKS", intervals)
    emit("STATS", {"queries": queries[0], "ingests": args.rounds, "problems": problems})


def _query_loop(kb: KnowledgeBase, stop: threading.Event, problems: list, queries: list) -> None:
    n = 0
    while not stop.is_set():
        doc, ver = 10 + n % 3 if n % 2 else 20 + n % 3, 1 + n % 4
        text = f"{marker(doc, ver)} Paragraph section"
        try:
            problems += check_hits(kb.dense_search(kb.embedder.embed_query(text), 8), "dense")
            problems += check_hits(kb.sparse_search(text, 8), "sparse")
        except Exception as exc:  # noqa: BLE001 - any error is a finding, reported to the test
            problems.append(f"query raised {type(exc).__name__}: {exc}")
        n += 1
        queries[0] = n


def run_hold(args) -> None:
    KnowledgeBase(args.kb, settings_for(args.home), HashEmbedder())
    emit("OPEN", str(os.getpid()))
    time.sleep(args.seconds)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["crash", "worker", "hold"])
    p.add_argument("home")
    p.add_argument("--kb", default="crash")
    p.add_argument("--from", dest="start", type=int, default=0)
    p.add_argument("--to", dest="stop", type=int, default=1)
    p.add_argument("--tag", default="a")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=float, default=30)
    args = p.parse_args()
    {"crash": run_crash, "worker": run_worker, "hold": run_hold}[args.mode](args)


if __name__ == "__main__":
    main()
