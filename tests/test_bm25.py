"""The BM25 index on its own: document evidence added to chunk scores, persistence, filters."""

from __future__ import annotations

import json

import pytest

from rag.store.bm25 import BM25Index
from rag.store.tokenize import token_spans, tokenize

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
    manifest = tmp_path / "bm25" / "manifest.json"
    meta = json.loads(manifest.read_text())
    meta["format"] = 3  # what a version with one bm25s index (no segments) wrote
    manifest.write_text(json.dumps(meta))
    assert BM25Index.load(tmp_path / "bm25") is None  # the caller rebuilds it


def test_empty_index_and_unknown_words():
    empty = BM25Index.build([], 1)
    assert empty.search("anything", 5, doc_weight=1.0) == []
    assert _index().search("zzzz qqqq", 5, doc_weight=1.0) == []


def test_probe_places_a_chunk_beyond_k_as_the_full_list_does():
    index = _index()
    query = "solar inverter warranty"
    full = index.search(query, 10, doc_weight=1.0)
    assert len(full) == 4  # four chunks match at least one term
    last = full[-1]
    found = index.probe(query, last.chunk_id, doc_weight=1.0)
    assert index.search(query, 1, doc_weight=1.0)[0].chunk_id != last.chunk_id  # outside k = 1 ...
    assert (found.rank, found.scored) == (4, 4)  # ... yet its rank in the whole list is known
    assert found.score == pytest.approx(last.score)
    unmatched = index.probe(query, "kitchen:1:1:2", doc_weight=1.0)
    assert unmatched.rank is None and unmatched.score == 0.0
    assert set(unmatched.missing) == {"solar", "invert", "warranti"}


def test_term_contributions_come_from_bm25s_and_add_up_to_the_score():
    index = _index()
    query = "solar inverter warranty"
    for hit in index.search(query, 10, doc_weight=1.0):
        terms = index.term_scores(query, [hit.chunk_id], doc_weight=1.0)[hit.chunk_id]
        assert sum(terms.values()) == pytest.approx(hit.score, rel=1e-5)
    chunk_only = index.term_scores(query, ["kitchen:1:1:1"])["kitchen:1:1:1"]
    assert set(chunk_only) == {"invert", "warranti"}  # the kitchen chunk never says "solar"
    alone = index.search("warranty", 10)  # bm25s's own score of the one-word query
    assert chunk_only["warranti"] == pytest.approx(next(h.score for h in alone if h.chunk_id == "kitchen:1:1:1"))
    # "solar" reaches the solar warranty chunk through its document only: a contribution, and a missing term
    found = index.probe(query, "solar:1:1:2", doc_weight=1.0)
    assert found.terms["solar"] > 0 and "solar" in found.missing


def test_probe_of_a_chinese_query_scores_jieba_terms():
    index = BM25Index.build(
        [("zh:1:1:0", "员工出差的住宿标准为每晚五百元。"), ("zh:1:1:1", "报销需要在三十天内提交发票。")], 1
    )
    found = index.probe("出差住宿标准是多少", "zh:1:1:0")
    assert found.rank == 1 and {"出差", "住宿", "标准"} <= set(found.terms)
    assert sum(found.terms.values()) == pytest.approx(found.score, rel=1e-5)
    assert "多少" in found.missing


def test_token_spans_mark_what_tokenize_makes():
    text = "Full-time employees get 25 days of paid leave. 员工出差住宿标准"
    spans = token_spans(text)
    assert [t for t, _, _ in spans if not t.isascii()] == [t for t in tokenize(text) if not t.isascii()]
    assert sorted(t for t, _, _ in spans) == sorted(tokenize(text))
    assert {text[s:e] for t, s, e in spans if t == "employe"} == {"employees"}
    assert {text[s:e] for t, s, e in spans if t == "住宿"} == {"住宿"}
