"""One writer per knowledge base, and finishing what a writer that died mid-job left behind.

The writer lock is a thread lock (writers in this process) plus an ``flock`` on
``<home>/locks/<kb>.lock`` (writers in other processes). The kernel releases an ``flock`` when
its process dies, so a lock that is free means no live writer: revisions still 'writing' and
jobs still 'running' are then leftovers of a crash, and are finished here (revisions -> failed
or dropped, their vectors and chunk rows removed; jobs -> failed). Recovery runs on open (only
when the lock is free: an open never waits for a writer) and at the start of every write.
"""

from __future__ import annotations

import fcntl
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rag.config import Settings

log = logging.getLogger(__name__)
INTERRUPTED = "interrupted (process ended during the job)"
_thread_locks: dict[tuple[Path, str], threading.Lock] = {}
_guard = threading.Lock()


@contextmanager
def write_lock(settings: Settings, kb: str, blocking: bool = True) -> Iterator[bool]:
    """Hold ``kb``'s writer lock. With ``blocking=False`` yields False (holding nothing) when taken."""
    home = Path(settings.home)
    with _guard:
        lock = _thread_locks.setdefault((home.resolve(), kb), threading.Lock())
    if not lock.acquire(blocking=blocking):
        yield False
        return
    try:
        path = home / "locks" / f"{kb}.lock"
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a") as fh:
            held = _flock(fh, blocking)
            try:
                yield held
            finally:
                if held:
                    fcntl.flock(fh, fcntl.LOCK_UN)
    finally:
        lock.release()


def _flock(fh, blocking: bool) -> bool:
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
    except BlockingIOError:
        return False
    return True


def has_leftovers(catalog, kb: str) -> bool:
    """Unfinished revisions or jobs exist (a live writer's, or a dead one's: only the lock tells)."""
    return bool(
        catalog.q("SELECT 1 FROM revisions WHERE kb=? AND state IN ('writing','retired') LIMIT 1", kb)
        or catalog.q("SELECT 1 FROM jobs WHERE kb=? AND status='running' LIMIT 1", kb)
    )


def finish_interrupted(catalog, vectors, kb: str) -> None:
    """With the writer lock held: drop unfinished revisions, mark running jobs failed."""
    if not has_leftovers(catalog, kb):
        return
    log.warning("knowledge base '%s': finishing the work of an interrupted writer", kb)
    drop_inactive(catalog, vectors, kb)
    with catalog.tx() as db:
        db.execute("UPDATE jobs SET status='failed', error=? WHERE kb=? AND status='running'", (INTERRUPTED, kb))


def drop_inactive(catalog, vectors, kb: str) -> None:
    """Remove the vectors and chunk rows of 'writing' and 'retired' revisions; record their end state.

    Vectors go first, so a crash in between leaves the revision marked unfinished and this runs again.
    """
    rows = catalog.q("SELECT doc_id, revision, state FROM revisions WHERE kb=? AND state IN ('writing','retired')", kb)
    for r in rows:
        doc_id, revision = r["doc_id"], r["revision"]
        vectors.delete_revision(doc_id, revision)
        with catalog.tx() as db:
            db.execute("DELETE FROM chunks WHERE kb=? AND doc_id=? AND revision=?", (kb, doc_id, revision))
            db.execute(
                "UPDATE revisions SET state=?, text=NULL WHERE kb=? AND doc_id=? AND revision=?",
                ("failed" if r["state"] == "writing" else "dropped", kb, doc_id, revision),
            )
            db.execute("DELETE FROM documents WHERE kb=? AND id=? AND active_revision IS NULL", (kb, doc_id))
