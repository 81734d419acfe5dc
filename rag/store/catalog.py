"""SQLite catalog: knowledge bases, documents, revisions, chunk offsets, jobs, traces, chat.

The catalog is the source of truth for which revision of each document is active.
Publishing a revision is one transaction, so a query sees either the old revision
or the new one, never a mix. WAL mode lets readers run while one writer writes.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path

from rag.records import ChunkRecord, DocumentRecord
from rag.store.scrub import deleted_documents, scrub_stored


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


WAL_TRIES = 60  # ~10 s in all
# PRAGMA user_version of a catalog that is up to date. 1: the text of documents deleted before
# deletes scrubbed stored traces, chat turns and runs is scrubbed from them (rag.store.scrub).
# 2: chat turns and eval runs say whose they are (``user_id``; earlier rows: the local owner).
SCHEMA_VERSION = 2
OWNED_TABLES = ("chat_turns", "eval_runs")  # rows that belong to one user (rag.store.access)


def _wal(conn: sqlite3.Connection) -> None:
    """Switch to WAL. Two processes opening a new data dir at once can get "database is locked"
    here at once, without the busy handler (SQLite returns BUSY rather than risk a deadlock while
    the other holds the schema write): wait and try again; WAL, once set, is kept in the file."""
    for attempt in range(WAL_TRIES):
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or attempt == WAL_TRIES - 1:
                raise
            time.sleep(min(0.02 * (attempt + 1), 0.3))


def _add_user_columns(db: sqlite3.Connection) -> None:
    """Version 2: a ``user_id`` on chat turns and eval runs, where schema.sql (a catalog created
    before it had one) did not add it; every earlier row is the local owner's."""
    for table in OWNED_TABLES:
        columns = {r[1] for r in db.execute(f"PRAGMA table_info({table})")}  # noqa: S608 (fixed names)
        if "user_id" not in columns:
            db.execute(f"ALTER TABLE {table} ADD COLUMN user_id TEXT NOT NULL DEFAULT 'local'")  # noqa: S608
        db.execute(f"CREATE INDEX IF NOT EXISTS {table}_by_user ON {table} (kb, user_id)")  # noqa: S608


class Catalog:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._conn().executescript(resources.files("rag.store").joinpath("schema.sql").read_text())
        self._migrate()

    def _migrate(self) -> None:
        """Bring a catalog written by an earlier version up to :data:`SCHEMA_VERSION`, once, in one
        transaction (a second process opening it at once finds the work done)."""
        if self._conn().execute("PRAGMA user_version").fetchone()[0] >= SCHEMA_VERSION:
            return
        with self.tx() as db:
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version >= SCHEMA_VERSION:
                return
            if version < 1:
                for kb, doc_ids in deleted_documents(db).items():
                    scrub_stored(db, kb, doc_ids)
            if version < 2:
                _add_user_columns(db)
            db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    # -- connections ---------------------------------------------------------
    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA busy_timeout=30000")
            _wal(conn)
            conn.execute("PRAGMA synchronous=NORMAL")
            self._local.conn = conn
        return conn

    @contextmanager
    def tx(self) -> Iterator[sqlite3.Connection]:
        """A write transaction (BEGIN IMMEDIATE: one writer at a time, readers unaffected)."""
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:  # also when COMMIT itself failed (e.g. busy): never leave it open
                conn.execute("ROLLBACK")
            raise

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Reads inside see one committed state (a read transaction; WAL keeps writers unblocked)."""
        conn = self._conn()
        if conn.in_transaction:
            yield
            return
        conn.execute("BEGIN")
        try:
            yield
        finally:
            if conn.in_transaction:
                conn.execute("COMMIT")

    def q(self, sql: str, *args) -> list[sqlite3.Row]:
        return self._conn().execute(sql, args).fetchall()

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    # -- knowledge bases -----------------------------------------------------
    def kb(self, name: str) -> sqlite3.Row | None:
        rows = self.q("SELECT * FROM kbs WHERE name=?", name)
        return rows[0] if rows else None

    def kb_names(self) -> list[str]:
        return [r["name"] for r in self.q("SELECT name FROM kbs ORDER BY name")]

    def create_kb(
        self,
        name: str,
        embed_model: str,
        embed_dim: int,
        chunk_size: int,
        overlap: int,
        on_create: Callable[[sqlite3.Connection], None] | None = None,
    ) -> bool:
        """Create ``name`` unless it exists; ``on_create(db)`` runs in the same transaction when it
        did not (its creator's membership). True when it was created now."""
        if self.kb(name) is not None:
            return False
        with self.tx() as db:
            created = db.execute(
                "INSERT OR IGNORE INTO kbs VALUES (?,?,?,?,?,?,0)",
                (name, now(), embed_model, embed_dim, chunk_size, overlap),
            ).rowcount
            if created and on_create is not None:
                on_create(db)
        return bool(created)

    def set_kb_model(self, name: str, embed_model: str, embed_dim: int) -> None:
        with self.tx() as db:
            db.execute("UPDATE kbs SET embed_model=?, embed_dim=? WHERE name=?", (embed_model, embed_dim, name))

    def scrub_documents(self, db: sqlite3.Connection, kb: str, doc_ids: Iterable[str]) -> int:
        """Inside the transaction ``db``: the text of ``doc_ids`` out of the stored traces, chat
        turns and runs of ``kb`` (see ``rag.store.scrub``); the number of rows rewritten."""
        return scrub_stored(db, kb, set(doc_ids))

    def drop_kb(self, name: str) -> None:
        with self.tx() as db:
            for table in ("documents", "revisions", "chunks", "jobs", "traces", "chat_turns", "eval_runs", "members"):
                db.execute(f"DELETE FROM {table} WHERE kb=?", (name,))  # noqa: S608 (fixed table names)
            db.execute("DELETE FROM kbs WHERE name=?", (name,))

    def index_version(self, kb: str) -> int:
        rows = self.q("SELECT index_version FROM kbs WHERE name=?", kb)
        return int(rows[0][0]) if rows else 0

    # -- documents -----------------------------------------------------------
    def find_document(self, kb: str, name: str) -> sqlite3.Row | None:
        rows = self.q("SELECT * FROM documents WHERE kb=? AND name=?", kb, name)
        return rows[0] if rows else None

    def documents(self, kb: str, ref: str | None = None) -> list[DocumentRecord]:
        """The active documents, by name; with ``ref``, only the one whose id (else name) it is,
        looked up by index, not found among all of them."""
        sql = """SELECT d.*, r.content_hash, r.parser, r.parser_version, r.size_bytes, r.pages, r.chunks,
                        r.embed_model, r.created_at AS rev_created
                 FROM documents d JOIN revisions r
                   ON r.kb=d.kb AND r.doc_id=d.id AND r.revision=d.active_revision
                 WHERE d.kb=?"""
        if ref is None:
            rows = self.q(sql + " ORDER BY d.name", kb)
        else:
            rows = self.q(sql + " AND d.id=?", kb, ref) or self.q(sql + " AND d.name=?", kb, ref)
        return [_doc_record(r) for r in rows]

    def active_revisions(self, kb: str, doc_ids: Iterable[str] | None = None) -> dict[str, int]:
        """``doc id -> active revision``, for every document or only ``doc_ids`` (indexed lookups)."""
        sql = "SELECT id, active_revision FROM documents WHERE kb=? AND active_revision IS NOT NULL"
        if doc_ids is None:
            return {r[0]: r[1] for r in self.q(sql, kb)}
        return {r[0]: r[1] for r in self._by_ids(sql + " AND id IN ({})", kb, doc_ids)}

    def document_names(self, kb: str, doc_ids: Iterable[str]) -> dict[str, str]:
        return {
            r[0]: r[1] for r in self._by_ids("SELECT id, name FROM documents WHERE kb=? AND id IN ({})", kb, doc_ids)
        }

    def _by_ids(self, sql: str, kb: str, ids: Iterable[str]) -> list[sqlite3.Row]:
        """``sql`` (with one ``IN ({})``) over ``ids`` in batches of 500 parameters."""
        unique = list(dict.fromkeys(ids))
        out: list[sqlite3.Row] = []
        for i in range(0, len(unique), 500):
            part = unique[i : i + 500]
            out += self.q(sql.format(",".join("?" * len(part))), kb, *part)
        return out

    def inactive_rev_keys(self, kb: str) -> list[str]:
        """``doc:rev`` keys still in the vector store but not active (being written or dropped)."""
        rows = self.q("SELECT doc_id, revision FROM revisions WHERE kb=? AND state IN ('writing','retired')", kb)
        return [f"{r[0]}:{r[1]}" for r in rows]

    def document_text(self, kb: str, doc_id: str, revision: int | None = None) -> str:
        sql = (
            "SELECT r.text FROM revisions r JOIN documents d ON d.kb=r.kb AND d.id=r.doc_id WHERE r.kb=? AND r.doc_id=?"
        )
        args: list = [kb, doc_id]
        if revision is None:
            sql += " AND r.revision=d.active_revision"
        else:
            sql += " AND r.revision=?"
            args.append(revision)
        rows = self.q(sql, *args)
        return rows[0][0] or "" if rows else ""

    def filter_docs(self, kb: str, doc_ids=None, tags=None, date_from=None, date_to=None) -> set[str]:
        out = set()
        for r in self.q("SELECT id, name, tags, doc_date FROM documents WHERE kb=?", kb):
            if doc_ids and r["id"] not in doc_ids and r["name"] not in doc_ids:
                continue
            if tags and not set(tags) & set(json.loads(r["tags"])):
                continue
            if date_from and (not r["doc_date"] or r["doc_date"] < date_from):
                continue
            if date_to and (not r["doc_date"] or r["doc_date"] > date_to):
                continue
            out.add(r["id"])
        return out

    # -- chunks --------------------------------------------------------------
    def chunk_rows(self, kb: str, ids: list[str]) -> list[sqlite3.Row]:
        return self._by_ids("SELECT * FROM chunks WHERE kb=? AND id IN ({})", kb, ids)

    def doc_chunks(self, kb: str, doc_id: str, revision: int) -> list[sqlite3.Row]:
        return self.q("SELECT * FROM chunks WHERE kb=? AND doc_id=? AND revision=? ORDER BY idx", kb, doc_id, revision)

    def active_chunk_rows(self, kb: str) -> Iterator[sqlite3.Row]:
        yield from self._conn().execute(
            """SELECT c.* FROM chunks c JOIN documents d
                 ON d.kb=c.kb AND d.id=c.doc_id AND d.active_revision=c.revision
               WHERE c.kb=? ORDER BY c.doc_id, c.idx""",
            (kb,),
        )

    def active_chunk_count(self, kb: str) -> int:
        row = (
            self._conn()
            .execute(
                """SELECT COUNT(*) FROM chunks c JOIN documents d
                 ON d.kb=c.kb AND d.id=c.doc_id AND d.active_revision=c.revision
               WHERE c.kb=?""",
                (kb,),
            )
            .fetchone()
        )
        return int(row[0])

    # -- jobs ----------------------------------------------------------------
    def start_job(self, kb: str, kind: str, target: str) -> str:
        job_id = uuid.uuid4().hex[:12]
        with self.tx() as db:
            db.execute(
                "INSERT INTO jobs VALUES (?,?,?,?,?,?,?,?)", (job_id, kb, kind, target, "running", now(), None, None)
            )
        return job_id

    def finish_job(self, job_id: str, error: str | None = None, db: sqlite3.Connection | None = None) -> None:
        sql, args = (
            "UPDATE jobs SET status=?, finished_at=?, error=? WHERE id=?",
            ("failed" if error else "done", now(), error, job_id),
        )
        if db is not None:
            db.execute(sql, args)
            return
        with self.tx() as conn:
            conn.execute(sql, args)

    def jobs(self, kb: str, limit: int = 50) -> list[sqlite3.Row]:
        """The newest first (two started in the same second: the later-inserted first)."""
        return self.q("SELECT * FROM jobs WHERE kb=? ORDER BY started_at DESC, rowid DESC LIMIT ?", kb, limit)

    # -- traces --------------------------------------------------------------
    def save_trace(self, kb: str, trace_json: str, trace_id: str, question: str, created_at: str) -> None:
        with self.tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO traces VALUES (?,?,?,?,?)", (trace_id, kb, question, created_at, trace_json)
            )

    def load_trace_json(self, trace_id: str, kb: str | None = None) -> str | None:
        """The stored trace; with ``kb``, only when it is that knowledge base's (a trace id from
        another knowledge base, e.g. in a replayed link, finds nothing)."""
        if kb is not None:
            rows = self.q("SELECT json FROM traces WHERE id=? AND kb=?", trace_id, kb)
            return rows[0][0] if rows else None
        rows = self.q("SELECT json FROM traces WHERE id=?", trace_id)
        return rows[0][0] if rows else None

    def list_traces(self, kb: str, limit: int = 50) -> list[sqlite3.Row]:
        return self.q(
            "SELECT id, question, created_at FROM traces WHERE kb=? ORDER BY created_at DESC LIMIT ?", kb, limit
        )


def chunk_from_row(row: sqlite3.Row, doc_text: str, doc_name: str = "") -> ChunkRecord:
    return ChunkRecord(
        id=row["id"],
        doc_id=row["doc_id"],
        revision=row["revision"],
        page=row["page"],
        idx=row["idx"],
        char_start=row["char_start"],
        char_end=row["char_end"],
        heading_path=tuple(row["heading_path"].split(" > ")) if row["heading_path"] else (),
        text=doc_text[row["char_start"] : row["char_end"]],
        doc_name=doc_name,
    )


def _doc_record(r: sqlite3.Row) -> DocumentRecord:
    return DocumentRecord(
        id=r["id"],
        kb=r["kb"],
        name=r["name"],
        content_hash=r["content_hash"],
        revision=r["active_revision"],
        parser=r["parser"],
        parser_version=r["parser_version"],
        size_bytes=r["size_bytes"],
        pages=r["pages"],
        chunks=r["chunks"],
        created_at=r["rev_created"],
        embed_model=r["embed_model"],
        tags=tuple(json.loads(r["tags"])),
        doc_date=r["doc_date"],
    )
