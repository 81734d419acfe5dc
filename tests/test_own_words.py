"""CMRC questions rewritten in a user's own words: the shipped file, the reader's pairs and the
refusal sets that ask them."""

from __future__ import annotations

import json

import pytest

from rag.bench.answer_reader import READER_FOLDS, fold_of
from rag.bench.own_words import OWN_WORDS, rewrites
from rag.bench.reader_pairs import Pair, own_worded
from rag.bench.refusal import SETS
from rag.errors import DatasetError


def test_every_rewrite_is_a_training_question_in_other_words():
    rows = [json.loads(line) for line in OWN_WORDS.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == len({r["qid"] for r in rows}) >= 390  # one rewrite a question
    assert all(r["qid"].startswith("TRIAL_") for r in rows)  # CMRC 2018 *trial*: a training set
    assert all(set(r) == {"qid", "own_words"} and r["own_words"].endswith("？") for r in rows)  # no CMRC text copied
    folds = [fold_of(r["qid"]) in READER_FOLDS for r in rows]
    assert sum(folds) >= 240 and len(folds) - sum(folds) >= 140  # the readers' folds and the held-out ones


def test_own_worded_pairs_keep_window_and_label_and_drop_questions_without_a_rewrite():
    qid, rewrite = next(iter(rewrites().items()))
    items = [
        Pair(qid, "原来的问题", "窗口里有答案", "标题", 1, "own"),
        Pair(qid, "原来的问题", "别的段落", "标题", 0, "other"),
        Pair("TRIAL_NO_SUCH_QUERY", "没有改写的问题", "窗口", "标题", 1, "own"),
    ]
    out = own_worded(items)
    assert [(p.question, p.window, p.label, p.role) for p in out] == [
        (rewrite, "窗口里有答案", 1, "own"),
        (rewrite, "别的段落", 0, "other"),
    ]


def test_own_words_sets_are_training_sets_of_cmrc():
    for name, hard in (("cmrc-trial-own", False), ("cmrc-trial-hard-own", True)):
        rs = SETS[name]
        assert rs.train and rs.own_words and rs.hard == hard and rs.folder == "cmrc2018-trial"


def test_a_malformed_rewrite_file_says_what_each_line_needs(tmp_path):
    bad = tmp_path / "own.jsonl"
    bad.write_text('{"qid": "TRIAL_1_QUERY_0"}\n', encoding="utf-8")
    with pytest.raises(DatasetError, match="no qid or own_words"):
        rewrites(bad)
    with pytest.raises(DatasetError, match="No own-words rewrites"):
        rewrites(tmp_path / "missing.jsonl")
