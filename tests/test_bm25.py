"""The BM25 index on its own: document evidence added to chunk scores, persistence, filters."""

from __future__ import annotations

import json

from rag.store.bm25 import BM25Index

SOLAR = [
    "Solar panels convert sunlight into electricity for the house.",
    "Panels face south; solar output peaks at noon in summer.",
    "The inverter warranty lasts ten years.",
]
KITCHEN = [
    "Recipes for bread, soup and cakes from the family kitchen.",
    "Oven inverter warranty: the inverter warranty lasts ten years.",
    "Knead the dough for ten minutes before baking.",
]


def _index(version: int = 1) -> BM25Index:
    items = [(f"solar:1:1:{i}", t) for i, t in enumerate(SOLAR)]
    items += [(f"kitchen:1:1:{i}", t) for i, t in enumerate(KITCHEN)]
    return BM25Index.build(items, version)


def test_document_evidence_breaks_a_tie_between_equal_chunks():
    index = _index()
    query = "solar inverter warranty"
    chunk_only = index.search(query, 10)
    with_docs = index.search(query, 10, doc_weight=1.0)
    assert {h.chunk_id for h in chunk_only} == {h.chunk_id for h in with_docs}  # no chunk is added by its document
    warranty = {h.chunk_id: h.score for h in chunk_only}
    assert warranty["kitchen:1:1:1"] > warranty["solar:1:1:2"] > 0  # on its own, the kitchen chunk wins
    ranked = [h.chunk_id for h in with_docs]
    assert ranked.index("solar:1:1:2") < ranked.index("kitchen:1:1:1")
    scores = {h.chunk_id: h.score for h in with_docs}
    assert scores["solar:1:1:2"] > warranty["solar:1:1:2"]  # the document's score is added, not swapped in
    assert index.search("recipes", 10, doc_weight=1.0)[0].chunk_id == "kitchen:1:1:0"


def test_filters_keep_only_the_allowed_documents():
    index = _index()
    hits = index.search("inverter warranty", 10, {"kitchen"}, doc_weight=1.0)
    assert [h.chunk_id for h in hits] == ["kitchen:1:1:1"]
    assert index.search("inverter warranty", 10, set(), doc_weight=1.0) == []


def test_save_load_roundtrip_and_old_format_is_rebuilt(tmp_path):
    index = _index(version=7)
    index.save(tmp_path / "bm25")
    loaded = BM25Index.load(tmp_path / "bm25")
    assert loaded is not None and loaded.version == 7 and loaded.ids == index.ids
    query = "solar inverter warranty"
    assert loaded.search(query, 10, doc_weight=1.0) == index.search(query, 10, doc_weight=1.0)
    meta_file = tmp_path / "bm25" / "ragscope.json"
    meta = json.loads(meta_file.read_text())
    del meta["format"]  # what a version without the document index wrote
    meta_file.write_text(json.dumps(meta))
    assert BM25Index.load(tmp_path / "bm25") is None  # the caller rebuilds it


def test_empty_index_and_unknown_words():
    empty = BM25Index.build([], 1)
    assert empty.search("anything", 5, doc_weight=1.0) == []
    assert _index().search("zzzz qqqq", 5, doc_weight=1.0) == []
