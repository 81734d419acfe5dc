"""`bench scale` through the real code path at a tiny size: a perturbed English + Chinese corpus
uploaded in batches (one BM25 segment each), queried in both languages, a PDF uploaded and deleted."""

from __future__ import annotations

import argparse
import json

import pytest

from rag.bench import scale
from rag.errors import RagError

EN = [
    "Vitamin D deficiency is common in older adults. Supplements reduce the risk of falls. "
    "The effect was larger in women than in men.",
    "Aspirin lowers the risk of heart attack. Bleeding is the main side effect. Low doses were studied.",
    "Sleep loss impairs memory consolidation. Students slept five hours per night. Recall dropped by a third.",
    "Exercise improves insulin sensitivity. The trial lasted twelve weeks. Glucose fell in every group.",
]
ZH = [
    "员工出差的住宿标准为每晚五百元。超出部分由个人承担。报销需要提供发票。",
    "公司每年组织一次体检。体检费用由公司支付。员工可以带家属参加。",
    "新产品将于下个月发布。发布会在上海举行。预计销量超过十万台。",
    "年度预算已经批准。研发投入增加百分之二十。市场费用保持不变。",
]


def _beir(root, rows, questions):
    root.mkdir(parents=True)
    (root / "corpus.jsonl").write_text("\n".join(json.dumps({"_id": str(i), "text": t}) for i, t in enumerate(rows)))
    (root / "queries.jsonl").write_text(
        "\n".join(json.dumps({"_id": str(i), "text": q}) for i, q in enumerate(questions))
    )


@pytest.fixture
def corpus(tmp_path, settings):
    _beir(tmp_path / "data" / "scifact", EN, ["Does vitamin D prevent falls?", "Does sleep loss impair memory?"])
    _beir(tmp_path / "data" / "rgb-zh" / "beir", ZH, ["出差住宿标准是多少？", "新产品在哪里发布？"])
    return scale.Corpus.load(settings.replace(bench_data=tmp_path / "data"))


def test_a_tiny_scale_point_builds_queries_and_uploads(settings, corpus):
    chunks = 40
    settings = scale.scale_settings(settings, chunks)
    built = scale.build(settings, chunks, corpus, out=lambda line: None)
    assert built["build_s"] > 0 and built["build_rss_mb"] > 0
    row = scale.measure(settings, chunks, corpus, n_queries=2, pages=2)
    assert row["chunks"] == chunks  # five one-chunk sections a document
    assert row["en_ms"]["p50"] > 0 and row["zh_ms"]["p50"] > 0
    assert row["en_full_ms"]["p50"] >= row["en_ms"]["p50"]
    assert row["upload_ok"] and row["upload_chunks"] >= 2 and row["delete_s"] > 0
    assert row["segments"] >= 1 and row["disk_mb"] > 0 and row["serve_rss_mb"] > 0
    assert row["bm25_same"] and row["zh_bm25_ms"]["pruned"]["p50"] > 0 and row["en_bm25_ms"]["scan"]["p50"] > 0
    lines = []
    scale.report(row | built, out=lines.append)
    assert "recall p50/p95 en" in lines[0] and "20-page upload" in lines[0] and "BM25 search p50" in lines[0]
    repeated = scale.bm25_repeated(settings, corpus, 3, n_queries=2)
    assert repeated["chunks"] == 3 * chunks and repeated["bm25_same"]
    assert repeated["zh_bm25_ms"]["scan"]["p50"] > 0 and repeated["en_bm25_ms"]["pruned"]["p50"] > 0
    again = scale.build(settings, chunks, corpus, out=lambda line: None)
    assert again["build_s"] is None  # kept from the first build


def test_the_perturbed_text_is_real_text_in_its_language(corpus):
    import random

    rng = random.Random(3)
    en, zh = corpus.chunk("en", rng), corpus.chunk("zh", rng)
    assert any(word in en for word in ("Vitamin", "Aspirin", "Sleep", "Exercise", "risk", "trial"))
    assert any("\u4e00" <= ch <= "\u9fff" for ch in zh) and len(zh) <= 320
    name, data = corpus.document(7)
    assert name == "doc0000007.md" and data.decode().count("\n## ") == scale.CHUNKS_PER_DOC


def test_bad_sizes_say_what_to_give():
    with pytest.raises(RagError, match="chunk counts of at least"):
        scale.main(argparse.Namespace(sizes="2", queries=1, data=""))


def test_the_ratio_line_divides_the_largest_size_by_the_smallest():
    def row(size, en_full, zh_full, en, zh):
        p50 = lambda v: {"p50": v, "p95": v}  # noqa: E731
        return {
            "size": size,
            "en_full_ms": p50(en_full),
            "zh_full_ms": p50(zh_full),
            "en_ms": p50(en),
            "zh_ms": p50(zh),
        }

    line = scale.ratios(row(1_000, 20.0, 500.0, 10.0, 1.0), row(1_000_000, 40.0, 550.0, 35.0, 30.0))
    assert "at 1,000,000 / at 1,000 chunks" in line
    assert "whole retrieve en 2.00x, zh 1.10x" in line and "recall stages en 3.50x, zh 30.00x" in line
