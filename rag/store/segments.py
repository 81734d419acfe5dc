"""BM25 segments on disk: one immutable segment per ingest batch, a manifest naming the live ones.

A knowledge base's BM25 directory holds segment folders and ``manifest.json``: the catalog
``index_version`` the segments stand for, the segments in order, and the revisions (``doc:rev``)
masked since they were written (replaced or deleted documents; a merge drops their rows).

Crash safety is the order of the writes. A segment is written to a temporary folder and renamed
into place; only then does a new manifest (written beside, then renamed over the old) name it; only
after that are the folders it no longer names removed. A kill at any point leaves the old manifest
with every folder it names, or the new one with every folder it names; what is left over is
garbage the next write removes. Readers take the directory's lock shared, writers exclusive.
"""

from __future__ import annotations

import fcntl
import json
import logging
import math
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np

from rag.records import ChunkRecord
from rag.store.postings import Postings
from rag.store.tokenize import tokenize

log = logging.getLogger(__name__)
FORMAT = 4  # 4: segments + manifest (3 was one bm25s index with the document index beside it)
MANIFEST = "manifest.json"


def revision_key(chunk_id: str) -> str:
    """``doc:rev`` of a chunk id ``doc:rev:page:idx``: the unit a replace or delete masks."""
    return chunk_id.rsplit(":", 2)[0]


@dataclass(frozen=True, eq=False)
class Segment:
    """Chunks indexed together, and their documents (one row per revision, its chunks' tokens
    together). A revision's chunks are all in one segment: a batch adds whole revisions, a merge
    keeps or drops whole revisions."""

    name: str
    ids: list[str]
    texts: list[str]  # the indexed text of each chunk
    rev_keys: list[str]  # document row -> ``doc:rev``
    chunk_rev: np.ndarray  # chunk row -> document row
    chunks: Postings
    docs: Postings

    @classmethod
    def build(cls, name: str, items: Iterable[tuple[str, str]]) -> Segment:
        ids, texts = [], []
        for chunk_id, text in items:
            ids.append(chunk_id)
            texts.append(text)
        keys = list(dict.fromkeys(revision_key(c) for c in ids))
        row_of = {k: i for i, k in enumerate(keys)}
        chunk_rev = np.array([row_of[revision_key(c)] for c in ids], dtype=np.int64)
        chunks = Postings.from_tokens(tokenize(t) for t in texts)
        return cls(name, ids, texts, keys, chunk_rev, chunks, chunks.grouped(chunk_rev, len(keys)))

    @classmethod
    def merge(cls, name: str, parts: list[Segment], dead: frozenset[str]) -> Segment:
        """One segment of the live rows of ``parts``, in order (masked revisions dropped)."""
        ids, texts, keys, revs = [], [], [], []
        chunk_parts, doc_parts = [], []
        for seg in parts:
            live_docs = np.array([k not in dead for k in seg.rev_keys], dtype=bool)
            live = live_docs[seg.chunk_rev] if len(seg.ids) else np.zeros(0, bool)
            doc_row = np.cumsum(live_docs) - 1 + len(keys)
            ids += [c for c, keep in zip(seg.ids, live, strict=True) if keep]
            texts += [t for t, keep in zip(seg.texts, live, strict=True) if keep]
            keys += [k for k, keep in zip(seg.rev_keys, live_docs, strict=True) if keep]
            revs.append(doc_row[seg.chunk_rev[live]])
            chunk_parts.append((seg.chunks, live))
            doc_parts.append((seg.docs, live_docs))
        chunk_rev = np.concatenate(revs) if revs else np.zeros(0, np.int64)
        return cls(name, ids, texts, keys, chunk_rev, Postings.merged(chunk_parts), Postings.merged(doc_parts))

    def live(self, dead: frozenset[str]) -> tuple[np.ndarray | None, np.ndarray | None]:
        """(chunk rows, document rows) not masked by ``dead``; (None, None) when all are live."""
        if not dead or dead.isdisjoint(self.rev_keys):
            return None, None
        docs = np.array([k not in dead for k in self.rev_keys], dtype=bool)
        return docs[self.chunk_rev], docs

    @cached_property
    def row_of(self) -> dict[str, int]:
        return {c: i for i, c in enumerate(self.ids)}

    @cached_property
    def doc_chunk_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """(indptr, rows): document row ``d``'s chunk rows are ``rows[indptr[d]:indptr[d+1]]``."""
        rows = np.argsort(self.chunk_rev, kind="stable")
        indptr = np.zeros(len(self.rev_keys) + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.chunk_rev, minlength=len(self.rev_keys)), out=indptr[1:])
        return indptr, rows

    @cached_property
    def rows_by_doc(self) -> dict[str, np.ndarray]:
        rows: dict[str, list[int]] = {}
        for i, c in enumerate(self.ids):
            rows.setdefault(ChunkRecord.doc_of(c), []).append(i)
        return {d: np.array(r, dtype=np.int64) for d, r in rows.items()}

    # -- files -------------------------------------------------------------------
    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True)
        arrays = self.chunks.arrays("chunks") | self.docs.arrays("docs") | {"chunk_rev": self.chunk_rev}
        _write_arrays(folder / "postings.npz", arrays)
        meta = {
            "format": FORMAT,
            "ids": self.ids,
            "texts": self.texts,
            "rev_keys": self.rev_keys,
            "chunk_terms": self.chunks.terms,
            "doc_terms": self.docs.terms,
        }
        (folder / "segment.json").write_text(json.dumps(meta, ensure_ascii=False))

    @classmethod
    def load(cls, name: str, folder: Path) -> Segment:
        meta = json.loads((folder / "segment.json").read_text())
        if meta.get("format") != FORMAT:
            raise ValueError(f"segment {name} is format {meta.get('format')}, not {FORMAT}")
        with np.load(folder / "postings.npz") as arrays:
            chunks = Postings.from_arrays(meta["chunk_terms"], arrays, "chunks")
            docs = Postings.from_arrays(meta["doc_terms"], arrays, "docs")
            chunk_rev = arrays["chunk_rev"].astype(np.int64)
        if not (len(meta["ids"]) == len(meta["texts"]) == chunks.n_rows == len(chunk_rev)):
            raise ValueError(f"segment {name} has {len(meta['ids'])} ids for {chunks.n_rows} rows")
        return cls(name, meta["ids"], meta["texts"], meta["rev_keys"], chunk_rev, chunks, docs)


def _write_arrays(path: Path, arrays: dict[str, np.ndarray]) -> None:
    np.savez(path, **arrays)


@dataclass(frozen=True)
class Manifest:
    version: int  # the catalog index_version the segments stand for
    segments: tuple[str, ...] = ()
    dead: frozenset[str] = frozenset()  # masked revisions (``doc:rev``)
    next_id: int = 1  # the number in the next segment's name

    def named(self) -> tuple[Manifest, str]:
        """A new segment's name, and the manifest that has used it up."""
        return Manifest(self.version, self.segments, self.dead, self.next_id + 1), f"seg-{self.next_id:06d}"

    def to_json(self) -> str:
        body = {"format": FORMAT, "version": self.version, "segments": list(self.segments)}
        return json.dumps(body | {"dead": sorted(self.dead), "next_id": self.next_id})

    @classmethod
    def from_json(cls, text: str) -> Manifest:
        data = json.loads(text)
        if data.get("format") != FORMAT:
            raise ValueError(f"BM25 manifest is format {data.get('format')}, not {FORMAT}")
        return cls(int(data["version"]), tuple(data["segments"]), frozenset(data["dead"]), int(data["next_id"]))


@dataclass
class SegmentStore:
    """One BM25 directory: its manifest, its segment folders, its lock; loaded segments cached by name."""

    directory: Path
    cache: dict[str, Segment] = field(default_factory=dict)

    @contextmanager
    def lock(self, mode: int) -> Iterator[None]:
        """An advisory lock beside the directory (exclusive to write, shared to read), across processes."""
        self.directory.parent.mkdir(parents=True, exist_ok=True)
        with open(self.directory.with_name(f".{self.directory.name}.lock"), "a") as fh:
            fcntl.flock(fh, mode)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def read(self) -> Manifest | None:
        """The manifest, or None when missing or unreadable (an older format included: rebuilt)."""
        path = self.directory / MANIFEST
        if not path.exists():
            return None
        try:
            return Manifest.from_json(path.read_text())
        except (OSError, ValueError, KeyError) as exc:
            log.warning("BM25 manifest at %s unreadable (%s); the index will be rebuilt", path, exc)
            return None

    def segments(self, manifest: Manifest) -> list[Segment]:
        """The manifest's segments (OSError / ValueError when one is missing or unreadable)."""
        out = []
        for name in manifest.segments:
            if name not in self.cache:
                self.cache[name] = Segment.load(name, self.directory / name)
            out.append(self.cache[name])
        return out

    def write(self, segment: Segment) -> None:
        """Put ``segment`` in place under its name (not yet named by the manifest)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=self.directory))
        segment.save(tmp / "s")
        target = self.directory / segment.name
        if target.exists():  # a leftover of a write that died before its manifest named it
            _remove(target)
        os.replace(tmp / "s", target)
        _remove(tmp)
        self.cache[segment.name] = segment

    def commit(self, manifest: Manifest, reason: str) -> None:
        """Make ``manifest`` the index (``reason``: 'catch-up' or 'merge', for the log and crash tests)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        tmp = self.directory / f".{MANIFEST}.tmp"
        tmp.write_text(manifest.to_json())
        os.replace(tmp, self.directory / MANIFEST)
        log.debug("BM25 %s: %s committed %s", self.directory.name, reason, manifest.segments)

    def collect_garbage(self, manifest: Manifest) -> None:
        """Remove what ``manifest`` doesn't name: merged-away segments, leftovers of a killed write,
        an older format's files. Call with the exclusive lock held."""
        keep = set(manifest.segments) | {MANIFEST}
        for path in sorted(self.directory.iterdir()):
            if path.name not in keep:
                _remove(path)
        for name in set(self.cache) - set(manifest.segments):
            del self.cache[name]


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def merge_plan(segments: list[Segment], dead: frozenset[str], factor: int) -> list[Segment]:
    """The segments to merge now ([] for none): ``factor`` or more of about the same size (a tier:
    live rows within one power of ``factor``) merge into one, so a chunk is rewritten about
    log_factor(N) times; a segment more than half masked joins that merge, or is merged on its own."""
    if factor < 2:
        raise ValueError(f"merge factor {factor} must be at least 2")
    tiers: dict[int, list[Segment]] = {}
    stale = []
    for seg in segments:
        chunks, _ = seg.live(dead)
        alive = len(seg.ids) if chunks is None else int(chunks.sum())
        if 2 * alive < len(seg.ids):
            stale.append(seg)
        tiers.setdefault(int(math.log(max(alive, 1), factor)), []).append(seg)
    full = [group for _, group in sorted(tiers.items()) if len(group) >= factor]
    chosen = {s.name for s in (full[0] if full else [])} | {s.name for s in stale}
    return [s for s in segments if s.name in chosen]
