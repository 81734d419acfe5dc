"""Segmented BM25: several segments, masks and merges score exactly as one index over the live chunks."""

from __future__ import annotations

import json

import bm25s
import numpy as np
import pytest

from rag.store import bm25_sync
from rag.store.bm25 import BM25Index
from rag.store.segments import Segment, SegmentStore, merge_plan
from rag.store.tokenize import tokenize

DOCS = {
    "solar": [
        "Solar panels convert sunlight into electricity for the house.",
        "Panels face south; solar output peaks at noon in summer.",
        "The inverter warranty lasts ten years.",
    ],
    "kitchen": [
        "Recipes for bread, soup and cakes from the family kitchen.",
        "Oven inverter warranty: the inverter warranty lasts ten years.",
        "Knead the dough for ten minutes before baking.",
    ],
    "travel": [
        "员工出差的住宿标准为每晚五百元。",
        "报销需要在三十天内提交发票，出差补贴另计。",
        "一线城市住宿费每晚不超过 600 元。",
    ],
    "leave": [
        "员工每年享有十五天带薪年假。",
        "Annual leave: employees get fifteen paid days; the warranty of rest.",
    ],
    "grid": ["The grid buys surplus solar electricity at noon.", "Batteries store electricity for the night."],
}
QUERIES = [
    "solar inverter warranty",
    "electricity at noon",
    "recipes",
    "出差住宿标准是多少",
    "带薪年假 annual leave",
    "warranty warranty solar",  # a repeated term counts twice
    "zzzz qqqq",
]


def items(doc: str, rev: int = 1, docs: dict | None = None) -> list[tuple[str, str]]:
    return [(f"{doc}:{rev}:1:{i}", t) for i, t in enumerate((docs or DOCS)[doc])]


def assert_same(segmented: BM25Index, flat: BM25Index) -> None:
    """Every query API answers the same for both (scores to float tolerance)."""
    assert segmented.ids == flat.ids and segmented.texts == flat.texts
    for query in QUERIES:
        for weight in (0.0, 1.0):
            for scope in (None, {"solar", "travel"}):
                got, want = segmented.search(query, 20, scope, weight), flat.search(query, 20, scope, weight)
                assert [h.chunk_id for h in got] == [h.chunk_id for h in want], (query, weight, scope)
                assert [h.score for h in got] == pytest.approx([h.score for h in want], rel=1e-9)
                assert segmented.search(query, 20, scope, weight, prune=True) == got  # rag.store.topk: the same
            for cid in flat.ids:
                a, b = segmented.probe(query, cid, doc_weight=weight), flat.probe(query, cid, doc_weight=weight)
                assert (a.rank, a.scored, a.missing) == (b.rank, b.scored, b.missing)
                assert a.score == pytest.approx(b.score) and a.terms == pytest.approx(b.terms)
            assert segmented.scores_of(query, flat.ids, weight) == pytest.approx(
                flat.scores_of(query, flat.ids, weight)
            )
        terms = tokenize(query) + ["warrenty", "住宿费", "六百元"]  # a typo, a CJK word cut otherwise, a number
        for scope in (None, {"travel", "kitchen"}):
            assert segmented.term_stats(terms, scope) == flat.term_stats(terms, scope)


def test_segments_with_masks_score_as_one_index_in_english_and_chinese():
    old_solar = [(f"solar:1:1:{i}", t) for i, t in enumerate(["Solar solar solar warranty.", "Bread recipes."])]
    first = Segment.build("seg-000001", old_solar + items("kitchen") + items("travel"))
    second = Segment.build("seg-000002", items("solar", 2) + items("leave"))
    third = Segment.build("seg-000003", items("grid"))
    segmented = BM25Index([first, second, third], 3, dead=frozenset({"solar:1"}))  # solar replaced by revision 2
    live = items("kitchen") + items("travel") + items("solar", 2) + items("leave") + items("grid")
    flat = BM25Index.build(sorted(live), 3)
    assert len(segmented) == len(live) and not segmented.has("solar:1:1:0") and segmented.has("solar:2:1:0")
    assert_same(segmented, flat)


def test_scores_are_bm25s_lucene_scores_for_chunks_and_documents():
    live = items("kitchen") + items("travel") + items("solar", 2) + items("leave")
    index = BM25Index([Segment.build("a", live[:6]), Segment.build("b", live[6:])], 1)  # whole revisions each
    chunks = bm25s.BM25()
    chunks.index([tokenize(t) for _, t in live], show_progress=False)
    by_doc: dict[str, list[str]] = {}
    for cid, text in live:
        by_doc.setdefault(cid.split(":")[0], []).extend(tokenize(text))
    docs = bm25s.BM25()
    docs.index(list(by_doc.values()), show_progress=False)
    doc_row = {d: i for i, d in enumerate(by_doc)}
    for query in QUERIES[:-1]:
        q = tokenize(query)
        chunk_scores = chunks.get_scores(q)
        doc_scores = docs.get_scores(q)
        for i, (cid, _) in enumerate(live):
            expected = chunk_scores[i]
            if expected > 0:
                expected += doc_scores[doc_row[cid.split(":")[0]]]
            assert index.scores_of(query, [cid], 1.0)[0] == pytest.approx(expected, rel=1e-5, abs=1e-6)


class Catalog:
    """What the sync reads of a catalog: an index version and each document's active revision."""

    def __init__(self) -> None:
        self.version, self.active, self.texts = 0, {}, {}

    def publish(self, *docs: tuple[str, list[str]]) -> None:
        for doc, texts in docs:
            rev = self.active.get(doc, 0) + 1
            self.active[doc], self.texts[(doc, rev)] = rev, texts
        self.version += 1

    def delete(self, doc: str) -> None:
        del self.active[doc]
        self.version += 1

    def items_of(self, revisions):
        return [(f"{d}:{r}:1:{i}", t) for d, r in revisions for i, t in enumerate(self.texts[(d, r)])]

    def flat(self) -> BM25Index:
        return BM25Index.build(sorted(self.items_of(sorted(self.active.items()))), self.version)


def sync(directory, catalog: Catalog, current=None, factor: int = 8) -> BM25Index:
    return bm25_sync.sync(directory, current, catalog.version, lambda: dict(catalog.active), catalog.items_of, factor)


def test_each_upload_adds_a_segment_deletes_mask_and_a_reload_agrees(tmp_path):
    cat, directory = Catalog(), tmp_path / "bm25"
    cat.publish(*((d, DOCS[d]) for d in ("solar", "kitchen", "travel", "grid")))
    index = sync(directory, cat)
    cat.publish(("leave", DOCS["leave"]))
    index = sync(directory, cat, index)
    cat.publish(("solar", ["Solar shingles replace the roof tiles.", "Warranty: twenty years."]))
    cat.delete("grid")
    index = sync(directory, cat, index)
    assert [s.name for s in index.segments] == ["seg-000001", "seg-000002", "seg-000003"]
    assert index.dead == {"solar:1", "grid:1"}  # masked: 5 of the first segment's 11 rows
    assert index.version == cat.version and not index.has("grid:1:1:0") and index.has("solar:2:1:1")
    assert_same(index, cat.flat())
    reloaded = BM25Index.load(directory)
    assert reloaded is not None and reloaded.dead == index.dead
    assert_same(reloaded, cat.flat())
    cat.delete("kitchen")  # now more than half of the first segment is masked: it is rewritten
    index = sync(directory, cat, index)
    assert [s.name for s in index.segments] == ["seg-000004", "seg-000002", "seg-000003"] and not index.dead
    assert_same(index, cat.flat())
    assert sorted(p.name for p in directory.iterdir()) == ["manifest.json", "seg-000002", "seg-000003", "seg-000004"]


def test_merges_drop_masked_rows_and_keep_the_scores(tmp_path):
    cat, directory, index = Catalog(), tmp_path / "bm25", None
    for step, doc in enumerate(["solar", "kitchen", "travel", "leave", "grid", "solar", "travel"]):
        cat.publish((doc, DOCS[doc] if step < 5 else [f"{doc} revision {step}: warranty 住宿 electricity"]))
        index = sync(directory, cat, index, factor=2)
        assert_same(index, cat.flat())
        held = {k for s in index.segments for k in s.rev_keys}
        assert index.dead <= held  # masks of merged-away rows are forgotten
    assert len(index.segments) < 7  # merged as they piled up
    assert {p.name for p in directory.iterdir()} == {"manifest.json", *(s.name for s in index.segments)}
    cat.delete("grid")
    cat.delete("leave")
    index = sync(directory, cat, index, factor=2)
    assert_same(index, cat.flat())


def test_a_masked_revision_made_active_again_is_unmasked(tmp_path):
    cat, directory = Catalog(), tmp_path / "bm25"
    cat.publish(*((d, DOCS[d]) for d in ("solar", "kitchen", "travel")))
    index = sync(directory, cat)
    cat.publish(("solar", ["A newer solar text."]), ("grid", DOCS["grid"]))
    index = sync(directory, cat, index)
    assert index.dead == {"solar:1"}
    cat.active["solar"], cat.version = 1, cat.version + 1  # revision 1 restored
    index = sync(directory, cat, index)
    assert index.dead == {"solar:2"} and index.has("solar:1:1:0") and len(index.segments) == 2
    assert_same(index, cat.flat())


def test_leftovers_of_a_killed_write_are_removed_and_a_bad_index_rebuilt(tmp_path):
    cat, directory = Catalog(), tmp_path / "bm25"
    cat.publish(("solar", DOCS["solar"]))
    sync(directory, cat)
    (directory / ".tmp-x1").mkdir()  # a segment being written when the process died
    (directory / ".manifest.json.tmp").write_text("{")  # a manifest not yet renamed into place
    SegmentStore(directory).write(Segment.build("seg-000002", items("leave")))  # written, never named
    cat.publish(("grid", DOCS["grid"]))
    index = sync(directory, cat)  # a fresh process: nothing cached; the name is taken again
    assert sorted(p.name for p in directory.iterdir()) == ["manifest.json", "seg-000001", "seg-000002"]
    assert not index.has("leave:1:1:0") and index.has("grid:1:1:0")
    assert_same(index, cat.flat())
    (directory / "seg-000001" / "postings.npz").write_bytes(b"torn")
    cat.publish(("leave", DOCS["leave"]))
    index = sync(directory, cat)  # unreadable: rebuilt from the catalog
    assert_same(index, cat.flat())
    manifest = json.loads((directory / "manifest.json").read_text())
    assert manifest["version"] == cat.version and len(manifest["segments"]) == 1


def test_merge_plan_takes_a_full_tier_and_mostly_masked_segments():
    small = [Segment.build(f"s{i}", items("grid", i)) for i in range(3)]
    big = Segment.build("big", items("kitchen") + items("travel") + items("solar"))
    assert [s.name for s in merge_plan([big, *small], frozenset(), 3)] == ["s0", "s1", "s2"]
    assert merge_plan([big, *small[:2]], frozenset(), 3) == []
    stale = frozenset({"kitchen:1", "travel:1"})  # 6 of big's 9 rows masked
    assert [s.name for s in merge_plan([big, *small[:2]], stale, 3)] == ["big"]
    with pytest.raises(ValueError, match="merge factor 1"):
        merge_plan([big], frozenset(), 1)


def test_an_empty_index_answers_nothing(tmp_path):
    cat = Catalog()
    index = sync(tmp_path / "bm25", cat)
    assert index.ids == [] and index.search("solar", 5, doc_weight=1.0) == []
    assert index.term_stats(["solar"]).chunks == 0 and np.all(index.scores_of("solar", ["x:1:1:0"]) == 0)


def test_a_knowledge_base_adds_one_segment_per_upload_and_scores_as_a_full_rebuild(make_kb):
    """Real ingest: uploads, a replaced document and a deleted one, merges at factor 2; the index
    equals one built from every active chunk in Chroma (the rebuild an upload did before)."""
    from rag.ingest.pipeline import UploadItem
    from rag.records import ChunkRecord

    kb = make_kb(bm25_merge_factor=2)
    uploads = [
        [("solar.md", "# Solar\n\n" + "\n\n".join(DOCS["solar"])), ("kitchen.md", "\n\n".join(DOCS["kitchen"]))],
        [("travel.md", "# 出差\n\n" + "\n\n".join(DOCS["travel"]))],
        [("leave.md", "\n\n".join(DOCS["leave"])), ("solar.md", "# Solar\n\nShingles with a warranty.")],
    ]
    for batch in uploads:
        kb.ingest([UploadItem(name, text.encode()) for name, text in batch])
        assert kb.bm25().version == kb.index_revision
    kb.delete("kitchen.md")
    active = kb.catalog.active_revisions(kb.name)
    rebuilt = BM25Index.build(
        sorted(
            (cid, ChunkRecord.from_metadata(cid, text or "", meta).index_text)
            for cid, text, meta in kb.vectors.all_items()
            if active.get(str(meta.get("doc_id"))) == meta.get("revision")
        ),
        kb.index_revision,
    )
    index = kb.bm25()
    assert_same(index, rebuilt)
    assert len(index.segments) < 3 and index.ids == rebuilt.ids  # merged along the way
    kb._bm25 = None  # a fresh instance loads the segments from disk
    assert_same(kb.bm25(), rebuilt)
