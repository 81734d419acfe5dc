"""Bring a knowledge base's BM25 index up to the catalog: add what was published, mask what went.

``sync`` compares the revisions the manifest holds with the catalog's active ones. Revisions
published since get one new segment (a batch's upload costs its own chunks, not the corpus);
revisions replaced or deleted are masked (``Manifest.dead``) until a merge drops their rows. Then,
when segments pile up (``segments.merge_plan``), one merge runs, as its own commit, so a kill in it
leaves the index as the catch-up left it. Whoever finds the index stale runs this: the writer after
publishing, or any reader (another process, or the next open after a crash), under the directory's
exclusive lock; a missing or unreadable index is rebuilt the same way, from nothing.
"""

from __future__ import annotations

import fcntl
import logging
from collections.abc import Callable, Iterable
from pathlib import Path

from rag.store.bm25 import BM25Index
from rag.store.segments import Manifest, Segment, SegmentStore, merge_plan

log = logging.getLogger(__name__)

# (doc id, revision) pairs -> their chunks' (chunk id, indexed text)
ItemsOf = Callable[[list[tuple[str, int]]], Iterable[tuple[str, str]]]


def sync(
    directory: Path,
    current: BM25Index | None,
    version: int,
    active: Callable[[], dict[str, int]],
    items_of: ItemsOf,
    merge_factor: int,
) -> BM25Index:
    """The index for catalog ``version``: ``active()`` (doc id -> active revision, read after
    ``version``) says what it must hold, ``items_of`` reads the chunks of revisions it lacks.
    ``current``'s segments are reused rather than read again."""
    store = SegmentStore(directory, {s.name: s for s in current.segments} if current else {})
    with store.lock(fcntl.LOCK_EX):
        manifest, segments = _read(store)
        if manifest.version != version:
            manifest, segments = _catch_up(store, manifest, segments, version, active(), items_of)
        if parts := merge_plan(segments, manifest.dead, merge_factor):
            manifest, segments = _merge(store, manifest, segments, parts)
        store.collect_garbage(manifest)
    return BM25Index(segments, manifest.version, manifest.dead)


def _read(store: SegmentStore) -> tuple[Manifest, list[Segment]]:
    manifest = store.read()
    if manifest is None:
        return Manifest(-1), []
    try:
        return manifest, store.segments(manifest)
    except (OSError, ValueError, KeyError) as exc:
        log.warning("BM25 index at %s unreadable (%s); it will be rebuilt", store.directory, exc)
        return Manifest(-1, next_id=manifest.next_id), []


def _catch_up(
    store: SegmentStore,
    manifest: Manifest,
    segments: list[Segment],
    version: int,
    active: dict[str, int],
    items_of: ItemsOf,
) -> tuple[Manifest, list[Segment]]:
    held = {k for s in segments for k in s.rev_keys}
    want = {f"{doc}:{rev}": (doc, rev) for doc, rev in active.items()}
    dead = frozenset(held - want.keys())  # a masked revision made active again is unmasked
    add = sorted(want[k] for k in want.keys() - held)
    if add:
        manifest, name = manifest.named()
        segment = Segment.build(name, sorted(items_of(add)))
        store.write(segment)
        segments = [*segments, segment]
    manifest = Manifest(version, tuple(s.name for s in segments), dead, manifest.next_id)
    store.commit(manifest, "catch-up")
    log.info("BM25 %s at version %d: %d revisions added, %d masked", store.directory.name, version, len(add), len(dead))
    return manifest, segments


def _merge(
    store: SegmentStore, manifest: Manifest, segments: list[Segment], parts: list[Segment]
) -> tuple[Manifest, list[Segment]]:
    """Replace ``parts`` by one segment of their live rows, where the first of them stood."""
    manifest, name = manifest.named()
    merged = Segment.merge(name, parts, manifest.dead)
    gone = {s.name for s in parts}
    keep = [merged] if merged.ids else []
    at = next(i for i, s in enumerate(segments) if s.name in gone)
    out = [s for s in segments[:at] if s.name not in gone] + keep + [s for s in segments[at:] if s.name not in gone]
    if keep:
        store.write(merged)
    held = {k for s in out for k in s.rev_keys}
    manifest = Manifest(manifest.version, tuple(s.name for s in out), manifest.dead & held, manifest.next_id)
    store.commit(manifest, "merge")
    log.info("BM25 %s: merged %d segments into %s (%d chunks)", store.directory.name, len(parts), name, len(merged.ids))
    return manifest, out
