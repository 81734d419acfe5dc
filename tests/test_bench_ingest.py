"""The ingest benchmark times the raw encoder on exactly the texts the ingest embeds."""

from __future__ import annotations

import json

import pytest

from rag.bench.ingest import run


@pytest.mark.slow  # loads the bundled embedder
def test_bench_ingest_runs_on_a_beir_corpus_and_times_the_same_texts(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    docs = [
        {"_id": "1", "title": "Aspirin", "text": "Aspirin lowers the risk of heart attack in adults. " * 8},
        {"_id": "2", "title": "Sleep", "text": "Short sleep is linked to weight gain in children."},
        {"_id": "3", "title": "", "text": "Vitamin D status does not predict fracture risk."},
    ]
    corpus.write_text("\n".join(json.dumps(d) for d in docs), encoding="utf-8")
    figures = run(corpus, limit=2)
    assert figures["documents"] == 2  # --limit honoured
    assert figures["chunks"] >= 2
    # run() raises when the ingest embedded other texts than the raw encoder was timed on
    assert figures["ratio_to_raw"] > 0
    assert figures["raw_before_chunks_per_s"] > 0 and figures["raw_after_chunks_per_s"] > 0
    assert figures["llamaindex_same_chunks_s"] > 0


@pytest.mark.slow  # loads the bundled embedder and multilingual e5
def test_bench_ingest_times_the_multilingual_embedder_on_chinese_chunks_and_their_sentences(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    docs = [
        {"_id": "1", "title": "Sleep", "text": "Short sleep is linked to weight gain in children."},
        {"_id": "2", "title": "差旅", "text": "员工出差可以报销出租车费。每天上限为二百元。"},
    ]
    corpus.write_text("\n".join(json.dumps(d, ensure_ascii=False) for d in docs), encoding="utf-8")
    figures = run(corpus)
    assert figures["chunks"] == 2 and figures["multilingual_chunks"] == 1
    assert figures["multilingual_sentences"] >= 2  # both sentences of the Chinese chunk, each embedded at ingest
    assert figures["ratio_to_raw"] > 0
