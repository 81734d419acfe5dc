"""Export a knowledge base to one file and import it back, equal in content.

The file is a ZIP (format ``ragscope-kb``, version 1):

  manifest.json            format, version, the kb row (embedder, dimension, chunking, index version), counts
  catalog/<table>.jsonl    documents, revisions (with the normalized text), chunks, jobs, traces,
                           chat turns, eval runs: one JSON object per row, columns by name, ``kb`` left out
  vectors/items.jsonl      per vector, in id order: id, text, Chroma metadata
  vectors/embeddings.npy   float32 [n, dim], same order

The BM25 index is not stored: import rebuilds it from the vectors' texts, exactly as an open
would. Export holds the writer lock (and first finishes any crashed write), so the file is one
consistent state. Import refuses an existing knowledge base with documents, writes the vectors,
then every catalog row in one transaction: an interrupted import leaves no knowledge base.
"""

from __future__ import annotations

import io
import json
import os
import uuid
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rag.config import Settings
from rag.errors import KnowledgeBaseNotFound, RagError
from rag.records import ChunkRecord
from rag.store import writer
from rag.store.bm25 import BM25Index
from rag.store.catalog import Catalog, now
from rag.store.vectors import VectorStore

FORMAT, VERSION = "ragscope-kb", 1
# table -> ORDER BY (a stable order, so that two exports of equal content are equal byte for byte)
TABLES = {
    "documents": "id",
    "revisions": "doc_id, revision",
    "chunks": "id",
    "jobs": "started_at, id",
    "traces": "created_at, id",
    "chat_turns": "conversation, seq, id",
    "eval_runs": "created_at, id",
}
GLOBAL_IDS = ("jobs", "traces", "chat_turns", "eval_runs")  # ids unique across knowledge bases
BATCH = 1000


class BackupError(RagError):
    """A backup file is not a Ragscope export, is damaged, or can't be imported here."""

    fix = "Use a file written by `python -m rag export --kb NAME FILE`, unchanged."


@dataclass(frozen=True)
class BackupSummary:
    kb: str
    path: Path
    counts: dict[str, int]

    def line(self) -> str:
        parts = ", ".join(f"{n} {k}" for k, n in self.counts.items())
        return f"'{self.kb}' <-> {self.path}: {parts}"


@dataclass
class _Archive:
    manifest: dict[str, Any]
    tables: dict[str, list[dict[str, Any]]]
    items: list[dict[str, Any]]
    embeddings: np.ndarray


# -- export -----------------------------------------------------------------------------------
def export_kb(settings: Settings, name: str, path: str | Path) -> BackupSummary:
    from rag.kb import catalog_for

    catalog = catalog_for(settings)
    kb_row = catalog.kb(name)
    if kb_row is None:
        raise KnowledgeBaseNotFound(f"There is no knowledge base named '{name}'.")
    vectors = VectorStore(settings, name)
    with writer.write_lock(settings, name):
        writer.finish_interrupted(catalog, vectors, name)
        with catalog.snapshot():
            manifest = {"format": FORMAT, "version": VERSION, "kb": dict(catalog.kb(name)), "exported_at": now()}
            tables = {t: _rows(catalog, t, name) for t in TABLES}
        items, embeddings = _vectors(vectors, tables, int(kb_row["embed_dim"]))
    manifest["counts"] = {t: len(rows) for t, rows in tables.items()} | {"vectors": len(items)}
    _write(Path(path), _Archive(manifest, tables, items, embeddings))
    return BackupSummary(name, Path(path), manifest["counts"])


def _rows(catalog: Catalog, table: str, kb: str) -> list[dict[str, Any]]:
    sql = f"SELECT * FROM {table} WHERE kb=? ORDER BY {TABLES[table]}"  # noqa: S608 - fixed names
    return [{k: r[k] for k in r.keys() if k != "kb"} for r in catalog.q(sql, kb)]


def _vectors(vectors: VectorStore, tables: dict, dim: int) -> tuple[list[dict], np.ndarray]:
    """The vectors of the active revisions (by the catalog), in id order, with their embeddings."""
    active = {f"{d['id']}:{d['active_revision']}" for d in tables["documents"] if d["active_revision"] is not None}
    items = sorted(
        (
            {"id": cid, "text": text, "metadata": meta}
            for cid, text, meta in vectors.all_items()
            if meta.get("rev_key") in active
        ),
        key=lambda item: item["id"],
    )
    rows = [np.zeros((0, dim), dtype=np.float32)]
    for i in range(0, len(items), BATCH):
        ids = [item["id"] for item in items[i : i + BATCH]]
        got = vectors.get_embeddings(ids)
        rows.append(np.stack([got[cid] for cid in ids]).astype(np.float32))
    return items, np.concatenate(rows)


def _write(path: Path, archive: _Archive) -> None:
    """Write to a temporary file beside ``path`` and rename: a crash never leaves half a backup."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("manifest.json", json.dumps(archive.manifest, indent=2, sort_keys=True, ensure_ascii=False))
        for table, rows in archive.tables.items():
            zf.writestr(f"catalog/{table}.jsonl", _jsonl(rows))
        zf.writestr("vectors/items.jsonl", _jsonl(archive.items))
        buf = io.BytesIO()
        np.save(buf, archive.embeddings, allow_pickle=False)
        zf.writestr("vectors/embeddings.npy", buf.getvalue())
    os.replace(tmp, path)


def _jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in rows)


# -- import -----------------------------------------------------------------------------------
def import_kb(settings: Settings, path: str | Path, name: str | None = None) -> BackupSummary:
    from rag.kb import catalog_for, validate_kb_name

    archive = read_archive(Path(path), max_bytes=int(settings.max_backup_mb * 1024 * 1024))
    name = validate_kb_name(name or archive.manifest["kb"]["name"])
    catalog = catalog_for(settings)
    with writer.write_lock(settings, name):
        _make_room(catalog, name)
        vectors = VectorStore(settings, name)
        vectors.reset()  # leftovers of an import that died before its catalog transaction
        _add_vectors(vectors, archive)
        _insert_rows(catalog, name, archive)
    active = {(d["id"], d["active_revision"]) for d in archive.tables["documents"]}
    texts = sorted(
        (it["id"], ChunkRecord.from_metadata(it["id"], it["text"] or "", it["metadata"]).index_text)
        for it in archive.items
        if (it["metadata"]["doc_id"], it["metadata"]["revision"]) in active
    )
    BM25Index.build(texts, int(archive.manifest["kb"]["index_version"])).save(settings.home / "bm25" / name)
    return BackupSummary(name, Path(path), archive.manifest["counts"])


def _make_room(catalog: Catalog, name: str) -> None:
    if catalog.kb(name) is None:
        return
    if catalog.q("SELECT 1 FROM revisions WHERE kb=? LIMIT 1", name):
        raise BackupError(
            f"Knowledge base '{name}' already exists and has documents.",
            fix=f"Import under a new name (`python -m rag import FILE --kb NEW`), or delete the documents of '{name}'.",
        )
    catalog.drop_kb(name)  # created but never used (e.g. opened by the app): safe to replace


def _add_vectors(vectors: VectorStore, archive: _Archive) -> None:
    items = archive.items
    for i in range(0, len(items), BATCH):
        part = items[i : i + BATCH]
        vectors.add_items(
            [it["id"] for it in part],
            archive.embeddings[i : i + len(part)],
            [it["text"] for it in part],
            [it["metadata"] for it in part],
        )


def _insert_rows(catalog: Catalog, name: str, archive: _Archive) -> None:
    tables = _fresh_ids(catalog, name, archive)
    with catalog.tx() as db:
        _insert(db, "kbs", archive.manifest["kb"] | {"name": name})
        for table, rows in tables.items():
            for row in rows:
                _insert(db, table, {"kb": name} | row)


def _insert(db, table: str, row: dict[str, Any]) -> None:
    """INSERT one row; its column names come from the file, so they are checked against the schema."""
    known = {r[1] for r in db.execute(f"PRAGMA table_info({table})")}
    if not row.keys() <= known:
        raise BackupError(f"The backup has unknown columns for {table}: {sorted(row.keys() - known)}.")
    sql = f"INSERT INTO {table} ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})"  # noqa: S608 - checked
    db.execute(sql, list(row.values()))


def _fresh_ids(catalog: Catalog, name: str, archive: _Archive) -> dict[str, list[dict]]:
    """Rows ready to insert under ``name``: ids already used in this catalog (a copy imported beside
    its original) get new ones, and JSON blobs naming the old kb or id are updated to match."""
    old_name = archive.manifest["kb"]["name"]
    tables = {t: [dict(r) for r in rows] for t, rows in archive.tables.items()}
    renamed: dict[str, str] = {}
    for table in GLOBAL_IDS:
        for row in tables[table]:
            if catalog.q(f"SELECT 1 FROM {table} WHERE id=?", row["id"]):  # noqa: S608 - fixed names
                renamed[row["id"]] = uuid.uuid4().hex[: len(row["id"])]
                row["id"] = renamed[row["id"]]
    for row in tables["chat_turns"]:
        row["trace_id"] = renamed.get(row["trace_id"], row["trace_id"])
    if old_name != name or renamed:
        for table in ("traces", "eval_runs"):
            for row in tables[table]:
                row["json"] = _patch_blob(row["json"], old_name, name, row["id"])
    return tables


def _patch_blob(blob: str, old_kb: str, new_kb: str, new_id: str) -> str:
    """``blob`` with its top-level ``kb`` and ``id`` set to the imported ones (unchanged if not JSON)."""
    try:
        data = json.loads(blob)
    except ValueError:
        return blob
    if not isinstance(data, dict) or (data.get("kb") in (None, new_kb) and data.get("id") in (None, new_id)):
        return blob
    if data.get("kb") == old_kb:
        data["kb"] = new_kb
    if "id" in data:
        data["id"] = new_id
    return json.dumps(data, ensure_ascii=False)


# -- reading and checking a file --------------------------------------------------------------
def read_archive(path: Path, max_bytes: int | None = None) -> _Archive:
    """Load and check a backup file; BackupError (naming the problem) when it isn't a sound one.

    ``max_bytes`` caps the unpacked size, checked on the zip's own entry sizes before anything is
    read (zipfile never reads past an entry's declared size, so a zip bomb can't slip under it).
    """
    try:
        with zipfile.ZipFile(path) as zf:
            _check_size(path, zf, max_bytes)
            manifest = json.loads(zf.read("manifest.json"))
            _check_manifest(path, manifest)
            tables = {t: _read_jsonl(zf, f"catalog/{t}.jsonl") for t in TABLES}
            items = _read_jsonl(zf, "vectors/items.jsonl")
            embeddings = np.load(io.BytesIO(zf.read("vectors/embeddings.npy")), allow_pickle=False)
    except FileNotFoundError:
        raise BackupError(f"No such file: {path}.", fix="Check the path.") from None
    except (zipfile.BadZipFile, KeyError, ValueError, OSError) as exc:
        raise BackupError(f"'{path}' is not a readable Ragscope backup ({type(exc).__name__}: {exc}).") from exc
    archive = _Archive(manifest, tables, items, embeddings)
    _check_consistent(path, archive)
    return archive


def _check_size(path: Path, zf: zipfile.ZipFile, max_bytes: int | None) -> None:
    unpacked = sum(info.file_size for info in zf.infolist())
    if max_bytes is not None and unpacked > max_bytes:
        raise BackupError(
            f"'{path}' unpacks to {unpacked / 2**20:.0f} MB; imports are capped at {max_bytes / 2**20:.0f} MB.",
            fix="Raise RAG_MAX_BACKUP_MB if you trust this file and have the memory for it.",
        )


def _read_jsonl(zf: zipfile.ZipFile, member: str) -> list[dict]:
    return [json.loads(line) for line in zf.read(member).decode("utf-8").splitlines() if line.strip()]


def _check_manifest(path: Path, manifest: Any) -> None:
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise BackupError(f"'{path}' is not a Ragscope knowledge-base export.")
    if manifest.get("version") != VERSION:
        raise BackupError(
            f"'{path}' is format version {manifest.get('version')}; this Ragscope reads version {VERSION}.",
            fix="Import it with the Ragscope version that exported it, or export it again with this one.",
        )


def _check_consistent(path: Path, archive: _Archive) -> None:
    counts = archive.manifest.get("counts", {})
    found = {t: len(rows) for t, rows in archive.tables.items()} | {"vectors": len(archive.items)}
    dim = int(archive.manifest["kb"]["embed_dim"])
    problems = [f"{k}: {found[k]} rows, manifest says {counts.get(k)}" for k in found if counts.get(k) != found[k]]
    if archive.embeddings.shape != (len(archive.items), dim) or archive.embeddings.dtype != np.float32:
        problems.append(
            f"embeddings are {archive.embeddings.shape} {archive.embeddings.dtype}, not ({len(archive.items)}, {dim}) float32"
        )
    active = {(d["id"], d["active_revision"]) for d in archive.tables["documents"]}
    chunk_ids = {c["id"] for c in archive.tables["chunks"] if (c["doc_id"], c["revision"]) in active}
    if chunk_ids != {it["id"] for it in archive.items}:
        problems.append("the chunks of the active revisions and the vectors differ")
    if problems:
        raise BackupError(f"'{path}' is damaged: {'; '.join(problems)}.")
