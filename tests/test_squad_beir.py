"""The SQuAD-to-BEIR converter the Chinese fits need (CMRC 2018 trial's BEIR form)."""

from __future__ import annotations

import json

import pytest

from rag.cli import main
from rag.errors import BenchDataNotFound
from rag.eval.beir import load_beir
from rag.eval.squad_beir import convert

CMRC_SHAPED = {
    "version": "v1.0",
    "data": [
        {
            "id": "TRIAL_1",
            "title": "泡泡战士",
            "paragraphs": [
                {
                    "id": "TRIAL_1",
                    "context": "玩家以水枪泡封敌人。生命数耗完即算为踢爆。",
                    "qas": [
                        {
                            "question": "生命数耗完即算为什么？",
                            "id": "TRIAL_1_QUERY_0",
                            "answers": [{"text": "踢爆", "answer_start": 17}, {"text": "踢爆", "answer_start": 17}],
                        },
                        {
                            "question": "玩家用什么泡封敌人？",
                            "id": "TRIAL_1_QUERY_1",
                            "answers": [{"text": "水枪", "answer_start": 3}],
                        },
                    ],
                }
            ],
        },
        {
            "id": "TRIAL_2",
            "title": "卡塞雷斯",
            "paragraphs": [
                {
                    "id": "TRIAL_2",
                    "context": "2007年人口普查数据为91606人。",
                    "qas": [
                        {
                            "question": "2007年的人口有多少？",
                            "id": "TRIAL_2_QUERY_0",
                            "answers": [{"text": "91606人", "answer_start": 12}],
                        }
                    ],
                }
            ],
        },
    ],
}


def test_a_cmrc_shaped_file_becomes_the_beir_set_the_fits_read(tmp_path):
    src = tmp_path / "cmrc2018_trial.json"
    src.write_text(json.dumps(CMRC_SHAPED, ensure_ascii=False), encoding="utf-8")
    assert main(["eval", "import-squad", str(src), str(tmp_path / "beir")]) == 0
    assert convert(src, tmp_path / "again") == (2, 3)  # passages, queries
    corpus = [json.loads(line) for line in (tmp_path / "beir/corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    assert corpus[0] == {"_id": "TRIAL_1", "title": "泡泡战士", "text": "玩家以水枪泡封敌人。生命数耗完即算为踢爆。"}
    queries = (tmp_path / "beir/queries.jsonl").read_text(encoding="utf-8").splitlines()
    assert json.loads(queries[0]) == {
        "_id": "TRIAL_1_QUERY_0",
        "text": "生命数耗完即算为什么？",
        "metadata": {"answers": ["踢爆"]},  # each answer text once
    }
    assert "生命数" in queries[0]  # written as characters, not \u escapes
    assert (tmp_path / "beir/qrels/train.tsv").read_text().splitlines() == [
        "query-id\tcorpus-id\tscore",
        "TRIAL_1_QUERY_0\tTRIAL_1\t1",
        "TRIAL_1_QUERY_1\tTRIAL_1\t1",
        "TRIAL_2_QUERY_0\tTRIAL_2\t1",
    ]
    data = load_beir(tmp_path / "beir", "train")  # the loader the benchmarks use reads it
    assert len(data.corpus) == 2 and set(data.qrels["TRIAL_2_QUERY_0"]) == {"TRIAL_2"}


def test_a_question_without_an_answer_is_refused_with_why(tmp_path):
    bad = json.loads(json.dumps(CMRC_SHAPED))
    bad["data"][1]["paragraphs"][0]["qas"][0].update(answers=[], is_impossible=True)
    src = tmp_path / "squad2.json"
    src.write_text(json.dumps(bad), encoding="utf-8")
    with pytest.raises(ValueError, match="TRIAL_2_QUERY_0.*has no answer"):
        convert(src, tmp_path / "out")


def test_a_missing_or_wrong_file_says_what_to_pass(tmp_path):
    with pytest.raises(BenchDataNotFound, match="No SQuAD-shaped file"):
        convert(tmp_path / "absent.json", tmp_path / "out")
    (tmp_path / "x.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match="not a SQuAD-shaped file"):
        convert(tmp_path / "x.json", tmp_path / "out")


def test_the_readers_fits_say_how_to_build_the_set_they_need(tmp_path):
    from rag.bench.reader_pairs import cmrc_beir

    with pytest.raises(BenchDataNotFound, match="python -m rag eval import-squad .*cmrc2018_trial.json"):
        cmrc_beir(tmp_path / "cmrc2018-trial" / "beir")
    src = tmp_path / "cmrc2018_trial.json"
    src.write_text(json.dumps(CMRC_SHAPED, ensure_ascii=False), encoding="utf-8")
    convert(src, tmp_path / "beir")
    assert cmrc_beir(tmp_path / "beir") == tmp_path / "beir"
