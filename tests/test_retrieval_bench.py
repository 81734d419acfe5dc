"""Benchmark helpers (the benchmarks themselves print figures and are run by hand)."""

from __future__ import annotations

import numpy as np

from rag.bench.beir import StageScores, dataset_name, default_kb_name, doc_ranking
from rag.bench.latency import HashedStandIn, synthetic_docs


def test_doc_ranking_first_appearance_and_names():
    to_id = {"1.txt": "1", "2.txt": "2", "3.txt": "3"}
    assert doc_ranking(["2.txt", "1.txt", "2.txt", "x.txt", "3.txt"], to_id) == ["2", "1", "3"]
    assert dataset_name("/data/bench/scifact") == "scifact"
    assert dataset_name("/data/bench/rgb-zh/beir") == "rgb-zh"
    assert default_kb_name("/data/bench/rgb-zh/beir") == "beir-rgb-zh"


def test_stage_scores():
    s = StageScores()
    s.add(["a", "b", "c"], {"b": 1})
    s.add(["x"], {"y": 1})
    m = s.means()
    assert m["mrr10"] == 0.25 and m["recall10"] == 0.5
    assert 0 < m["ndcg10"] < 1


def test_synthetic_docs_and_stand_in_embedder():
    docs = synthetic_docs(["A sentence that is long enough to be used here.", "Another one, also long enough."], 3)
    assert [n for n, _ in docs] == ["syn000000.txt", "syn000001.txt", "syn000002.txt"]
    assert all(500 <= len(b) <= 700 for _, b in docs)
    emb = HashedStandIn("m", 16, 128)
    v = emb.embed_texts(["alpha beta", "alpha beta", "gamma"])
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0) and np.allclose(v[0], v[1])


def test_latency_report_compares_one_query_questions_with_the_raw_cost():
    from rag.bench.latency import STAGES, print_size

    def summary(p50):
        return {"mean": p50, "p50": p50, "p95": p50, "max": p50}

    m = {
        "stages": {s: summary(30.0 if s == "total" else 1.0) for s in STAGES},
        "raw": {"embed": summary(10.0), "chroma": summary(5.0), "bm25": summary(1.0)},
        "one_query": summary(20.0),
        "rewritten_share": 0.25,
    }
    lines: list[str] = []
    assert print_size(1000, 1000, m, lines.append) == 30.0
    text = "\n".join(lines)
    assert "20.00 / 16.00 = 1.25 (goal <= 1.3)" in text  # like for like: one-query questions only
    assert "25% rewritten into two queries" in text and "1.88x raw" in text
    m["one_query"] = summary(None)
    lines.clear()
    print_size(1000, 1000, m, lines.append)
    assert not any("like for like" in line for line in lines)
