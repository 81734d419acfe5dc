"""The pruned BM25 top k (rag.store.topk) against scoring every row: the same ids and the same
scores, to the bit, on random English and Chinese corpora across segments, with masked
revisions, document filters, ties, k past the matches, empty queries and unknown terms."""

from __future__ import annotations

import random

import numpy as np
import pytest

from rag.store import topk
from rag.store.bm25 import BM25Index
from rag.store.segments import Segment
from rag.store.tokenize import tokenize

EN_WORDS = (
    "solar panel inverter warranty battery grid electricity noon summer roof tile bread soup oven "
    "dough recipe kitchen leave annual paid days travel hotel invoice budget trial insulin glucose "
    "sleep memory vitamin aspirin risk dose heart bleeding exercise"
).split()
ZH_WORDS = (
    "员工 出差 住宿 标准 每晚 报销 发票 补贴 城市 年假 带薪 公司 体检 费用 家属 产品 发布 上海 "
    "销量 预算 研发 市场 投入 电池 太阳能 保修 厨房 面包 旅行 酒店"
).split()


def _text(rng: random.Random, lang: str) -> str:
    words = EN_WORDS if lang == "en" else ZH_WORDS
    # Zipf-like: a few words in most chunks (long postings), most words rare
    n = rng.randint(3, 14)
    picked = [words[min(int(rng.paretovariate(0.8)) - 1, len(words) - 1)] for _ in range(n)]
    return (" " if lang == "en" else "，").join(picked)


def corpus(seed: int, n_docs: int) -> tuple[list[Segment], frozenset[str], dict[str, list[str]]]:
    """Segments of random one- to six-chunk documents (some revised: the old revision masked,
    some deleted), some chunks copied word for word into another document (equal scores)."""
    rng = random.Random(seed)
    batches: list[list[tuple[str, str]]] = [[]]
    dead: set[str] = set()
    revs: dict[str, int] = {}
    texts: dict[str, list[str]] = {}
    for _ in range(n_docs):
        doc = f"d{rng.randrange(10**6):06d}"
        lang = rng.choice(["en", "zh", "mixed"])
        chunks = [_text(rng, lang if lang != "mixed" else rng.choice(["en", "zh"])) for _ in range(rng.randint(1, 6))]
        if texts and rng.random() < 0.1:
            chunks[0] = rng.choice(list(texts.values()))[0]  # a tie across documents
        if doc in revs:
            dead.add(f"{doc}:{revs[doc]}")
        revs[doc] = revs.get(doc, 0) + 1
        texts[doc] = chunks
        batches[-1] += [(f"{doc}:{revs[doc]}:1:{i}", t) for i, t in enumerate(chunks)]
        if rng.random() < 0.2:
            batches.append([])
    for doc in rng.sample(sorted(revs), max(1, len(revs) // 10)):  # deleted
        dead.add(f"{doc}:{revs[doc]}")
    segments = [Segment.build(f"seg-{i:06d}", sorted(b)) for i, b in enumerate(batches) if b]
    return segments, frozenset(dead), texts


def queries(rng: random.Random, texts: dict[str, list[str]]) -> list[str]:
    chunks = [t for ts in texts.values() for t in ts]
    out = ["", "zzzz 无关词", "solar", "员工", "solar solar warranty", "出差 出差 住宿 标准"]
    for _ in range(12):
        words = rng.choice(chunks).replace("，", " ").split()
        out.append(" ".join(rng.sample(words, min(len(words), rng.randint(1, 6)))) + rng.choice(["", " qqqq"]))
    return out


def assert_pruned_equals_exhaustive(index: BM25Index, qs: list[str], scopes, ks=(1, 5, 20, 1000)) -> None:
    for query in qs:
        for weight in (0.0, 1.0, 0.3):
            for scope in scopes:
                for k in ks:
                    got = index.search(query, k, scope, weight, prune=True)
                    want = index.search(query, k, scope, weight, prune=False)
                    assert [(h.chunk_id, h.score) for h in got] == [(h.chunk_id, h.score) for h in want], (
                        query,
                        weight,
                        scope,
                        k,
                    )


@pytest.fixture
def prune_always(monkeypatch):
    """Small corpora: a tiny threshold pool and no fallback, so the pruned path is what runs."""
    monkeypatch.setattr(topk, "POOL", 3)
    monkeypatch.setattr(topk, "DENSE_SHARE", 1.0)
    monkeypatch.setattr(topk, "MIN_ROWS", 0)


@pytest.mark.parametrize("seed", range(6))
def test_the_pruned_top_k_is_the_exhaustive_one(seed, prune_always):
    segments, dead, texts = corpus(seed, 60)
    index = BM25Index(segments, 1, dead)
    rng = random.Random(seed)
    docs = sorted(texts)
    scopes = [None, set(rng.sample(docs, 5)), set(rng.sample(docs, 30)), {"nope"}, set()]
    assert_pruned_equals_exhaustive(index, queries(rng, texts), scopes)


def test_the_pruned_path_runs_and_prunes(prune_always):
    """On a corpus with a few common words the threshold leaves out rows: fewer candidates are
    scored than rows match, and the answer is still the exhaustive one."""
    segments, dead, texts = corpus(11, 400)
    index = BM25Index(segments, 1, dead)
    q = tokenize("员工 solar 住宿 dough vitamin")
    fields = index._fields
    for weight in (0.0, 1.0):
        query = topk.Query(fields, q, weight)
        pool = topk._pool(query, None, 10**9)
        theta = topk._kth(query.totals(pool), 5)
        candidates = topk._candidates(query, theta, 10**9)
        matching = np.flatnonzero(index._chunks.scores(q) > 0)
        assert theta > 0 and 5 <= len(candidates) < len(matching) / 2, (theta, len(candidates), len(matching))
        found = topk.top_k(fields, q, 5, weight, None)
        assert found is not None
        want = index.search("员工 solar 住宿 dough vitamin", 5, None, weight, prune=False)
        assert [index._all_ids[r] for r in found.rows] == [h.chunk_id for h in want]
        assert found.scores.tolist() == [h.score for h in want]


def test_with_the_shipped_limits_large_and_small_answers_agree():
    """The shipped pool and fallback share: whichever path a query takes, the answer is the same."""
    segments, dead, texts = corpus(5, 700)
    index = BM25Index(segments, 1, dead)
    rng = random.Random(5)
    scopes = [None, set(rng.sample(sorted(texts), 40))]
    assert_pruned_equals_exhaustive(index, queries(rng, texts), scopes, ks=(1, 20))


def test_scoring_every_row_picks_the_top_of_the_full_score_vector():
    """The reference itself: the k best of ``_scores`` (every row scored), ties in chunk id order."""
    segments, dead, texts = corpus(2, 80)
    index = BM25Index(segments, 1, dead)
    rng = random.Random(2)
    for query in queries(rng, texts):
        for scope in (None, set(rng.sample(sorted(texts), 10))):
            q = tokenize(query)
            if not any(index._chunks.knows(t) for t in q):
                assert index.search(query, 7, scope, 1.0) == []
                continue
            scores = index._scores(q, scope, 1.0)
            ids = index._all_ids
            want = sorted((i for i in range(len(ids)) if scores[i] > 0), key=lambda i: (-scores[i], ids[i]))[:7]
            got = index.search(query, 7, scope, 1.0, prune=False)
            assert [(h.chunk_id, h.score) for h in got] == [(ids[i], float(scores[i])) for i in want]


def test_scores_at_rows_are_the_full_scores_to_the_bit():
    segments, dead, texts = corpus(3, 80)
    index = BM25Index(segments, 1, dead)
    live = np.flatnonzero(index._chunks.live)
    for query in queries(random.Random(3), texts):
        q = tokenize(query)
        full = index._chunks.scores(q)
        assert np.array_equal(index._chunks.scores_at(q, live), full[live])
        docs = np.flatnonzero(index._docs.live)
        assert np.array_equal(index._docs.scores_at(q, docs), index._docs.scores(q)[docs])


def test_a_term_bound_is_at_least_every_rows_score():
    segments, dead, texts = corpus(4, 120)
    index = BM25Index(segments, 1, dead)
    for scorer in (index._chunks, index._docs):
        for term in {t for s in segments for t in s.chunks.terms}:
            for count in (1, 2):
                assert scorer.bound(term, count) >= scorer.scores([term] * count).max()


def test_a_segment_maps_its_documents_to_their_chunks():
    seg = Segment.build("s", [("b:1:1:0", "x"), ("a:1:1:0", "y"), ("b:1:1:1", "z"), ("a:1:1:1", "w")])
    indptr, rows = seg.doc_chunk_rows
    assert seg.rev_keys == ["b:1", "a:1"] and indptr.tolist() == [0, 2, 4] and rows.tolist() == [0, 2, 1, 3]
    index = BM25Index([seg, Segment.build("t", [("c:1:1:0", "x y")])], 1)
    assert index._fields.doc_chunks(np.array([2, 0])).tolist() == [0, 2, 4]
    assert index._fields.doc_chunks(np.array([], dtype=np.int64)).tolist() == []
