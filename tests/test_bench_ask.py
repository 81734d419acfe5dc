"""`bench ask`: whole asks timed on real benchmark knowledge bases, one English and one Chinese,
and the ratio line that compares them."""

from __future__ import annotations

import json
import re
from argparse import Namespace

import pytest

from rag.bench.ask_latency import AskTimes, main, ratio_line, time_set
from rag.config import Settings
from rag.errors import DatasetError


def _set(folder, docs: dict[str, str], queries: dict[str, str]) -> None:
    (folder / "qrels").mkdir(parents=True)
    with (folder / "corpus.jsonl").open("w", encoding="utf-8") as fh:
        for doc_id, text in docs.items():
            fh.write(json.dumps({"_id": doc_id, "title": "", "text": text}, ensure_ascii=False) + "\n")
    with (folder / "queries.jsonl").open("w", encoding="utf-8") as fh:
        for qid, text in queries.items():
            fh.write(json.dumps({"_id": qid, "text": text}, ensure_ascii=False) + "\n")
    qrels = "".join(f"{qid}\tp{qid}\t1\n" for qid in queries)
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + qrels)


@pytest.fixture(scope="module")
def settings(tmp_path_factory):
    root = tmp_path_factory.mktemp("bench-ask")
    _set(
        root / "data" / "scifact",
        {
            "p1": "Aspirin lowers the risk of a second heart attack in adults with heart disease.",
            "p2": "Vitamin D supplements did not change fracture rates in older women.",
            "p3": "Regular running improves resting heart rate within twelve weeks.",
        },
        {
            "1": "Does aspirin lower the risk of a second heart attack?",
            "2": "Do vitamin D supplements prevent fractures?",
            "3": "Does running improve resting heart rate?",
        },
    )
    _set(
        root / "data" / "rgb-zh" / "beir",
        {
            "p1": "2022年北京冬奥会于2月4日开幕，开幕式在国家体育场举行。",
            "p2": "张帅在辛辛那提网球公开赛女子单打比赛中止步八强。",
            "p3": "冬奥会的吉祥物是冰墩墩，受到很多观众喜爱。",
        },
        {"1": "2022年冬奥会哪天开幕？", "2": "张帅在辛辛那提赛的成绩如何？", "3": "冬奥会的吉祥物是什么？"},
    )
    return Settings.from_env(env={}, home=root / "home", bench_data=root / "data")


def test_each_set_is_asked_whole_and_timed_after_its_warm_up(settings):
    lines = []
    english = time_set("scifact", settings, limit=2, warm=1, out=lines.append)
    chinese = time_set("rgb-zh", settings, limit=2, warm=1, out=lines.append)
    for times, script in ((english, "latin"), (chinese, "cjk")):
        assert times.script == script and times.chunks == 3
        assert len(times.ask) == len(times.retrieval) == 2  # the warm-up question is not timed
        assert len(times.answer) + times.refused == 2
        assert all(r <= a for r, a in zip(times.retrieval, times.ask, strict=True))
        assert times.stages["total"] and times.stages["answerability"]
    assert any(m.startswith("readers: ") for m in chinese.models)  # which models scored the Chinese questions
    assert not any(m.startswith("readers: ") for m in english.models)
    text = "\n".join(chinese.lines())
    assert text.startswith("ask rgb-zh (cjk, 2 questions, ") and "knowledge base of 3 chunks" in text
    assert re.search(r"ask p50 \d+ ms, p95 \d+ ms · retrieval p50 \d+ ms", text)
    line = ratio_line([english, chinese])
    assert re.fullmatch(r"Chinese / English p50 \(rgb-zh / scifact\): ask \d+\.\d\dx, retrieval \d+\.\d\dx.*", line)


def test_the_ratio_is_chinese_over_english_and_needs_both():
    en = AskTimes("scifact", 10, "latin", ask=[100.0, 100.0], retrieval=[40.0], answer=[60.0])
    zh = AskTimes("rgb-zh", 10, "cjk", ask=[250.0, 250.0], retrieval=[30.0], answer=[])
    assert ratio_line([en, zh]) == "Chinese / English p50 (rgb-zh / scifact): ask 2.50x, retrieval 0.75x"
    assert ratio_line([en]) == "" and ratio_line([zh, zh]) == ""


def test_an_unknown_or_hard_set_is_refused_with_the_names_to_use():
    with pytest.raises(DatasetError, match="Use any of: scifact"):
        main(Namespace(sets=["cmrc-trial-hard"], limit=1, warm=0))
