"""CMRC questions rewritten in a user's own words: the shipped file, the reader's pairs and the
refusal sets that ask them."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import write_beir

from rag.bench.answer_reader import READER_FOLDS, fold_of
from rag.bench.own_words import OWN_WORDS, ROUNDS, rewrites, rounds_of
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


def test_window_weight_tool_reports_where_the_window_holds_the_answer(tmp_path, capsys):
    """``fit_window_weight`` on a one-question CMRC-shaped folder, with the real multilingual-e5-small:
    by characters alone the window is the sentence about going home that names no fare; with the
    cosines at the shipped weight it is the one with the cap, so the share goes from 0 to 1."""
    from rag.bench import fit_window_weight

    para = (
        "加班结束后回家前，请关闭电脑并锁好抽屉，最多保留一盏台灯。出差期间的住宿费凭发票实报实销。"
        "因加班至 21:00 以后下班的，可乘坐出租车回家，单程上限为 100 元。"
    )
    q = {"_id": "Q1", "text": "打车回家最多能报多少钱？", "metadata": {"answers": ["100 元"]}}
    src = write_beir(tmp_path / "beir", {"P1": ("报销制度", para)}, [q], [("Q1", "P1")], "train")
    assert fit_window_weight.main(["--data", str(src), "--weights", "0,3"]) == 0
    rows = dict(line.split(" | ", 1) for line in capsys.readouterr().out.splitlines() if " | " in line)
    assert rows["0"] == "0.000" and rows["3"] == "1.000"


def test_a_later_round_rewrites_only_the_readers_folds_in_words_of_its_own():
    """Round 2 asks the readers' fold questions once more; the held-out folds keep one rewrite, so
    the benchmark sets and the reader's held-out report read the same questions as before."""
    first, second = rounds_of(2)
    assert len(second) >= 500 and all(fold_of(q) in READER_FOLDS for q in second)
    assert set(second) <= set(first)
    assert all(second[q] != first[q] for q in second)
    rows = [json.loads(line) for line in ROUNDS[1].read_text(encoding="utf-8").splitlines()]
    assert all(set(r) == {"qid", "own_words"} for r in rows) and len(rows) == len(second)


def test_own_worded_asks_a_pair_once_per_round_that_rewrites_its_question():
    first, second = rounds_of(2)
    qid = next(iter(second))
    pair = Pair(qid, "原来的问题", "窗口里有答案", "标题", 1, "own")
    assert [p.question for p in own_worded([pair], rounds=2)] == [first[qid], second[qid]]
    assert [p.question for p in own_worded([pair])] == [first[qid]]
    with pytest.raises(DatasetError, match="rounds of own-words rewrites"):
        own_worded([pair], rounds=len(ROUNDS) + 1)


def test_the_english_rewrites_are_one_a_squad_question_and_read_as_questions():
    from rag.bench.own_words import SQUAD2_EN, for_set

    rows = [json.loads(line) for line in SQUAD2_EN.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == len({r["qid"] for r in rows}) == len(for_set("squad2-en")) >= 250
    assert all(set(r) == {"qid", "own_words"} and not r["qid"].startswith("TRIAL_") for r in rows)


def test_the_cjk_reranker_fits_on_the_readers_folds_in_own_words_and_judges_on_the_others(tmp_path):
    """``fit_cjk_reranker``'s sources: CMRC as written (every fold), the fit folds' rewrites (both
    rounds) and the everyday Chinese documents' answerable fit-fold questions; held out, the other
    folds' first-round rewrites and everyday questions, and no question of them among the fit ones."""
    from rag.bench.fit_cjk_reranker import sources
    from rag.eval.beir import load_beir

    first = rewrites()
    picked = [next(q for q in first if fold_of(q) in READER_FOLDS), next(q for q in first if fold_of(q) == 4)]
    queries = [{"_id": q, "text": f"问题{i}？"} for i, q in enumerate(picked)]
    write_beir(
        tmp_path / "cmrc2018-trial" / "beir",
        {"P1": ("题目", "一段文字。")},
        queries,
        [(q, "P1") for q in picked],
        "train",
    )
    fit = {s.name: s for s in sources(tmp_path, tmp_path / "derived")}
    held = {s.name: s for s in sources(tmp_path, tmp_path / "derived", held=True)}

    assert set(fit["cmrc"].questions) == set(picked)
    own = fit["cmrc-own"].questions
    assert {q.split("~")[0] for q in own} == {picked[0]} and own[f"{picked[0]}~1"] == first[picked[0]]
    assert held["cmrc-own folds 3-4"].questions == {f"{picked[1]}~1": first[picked[1]]}
    everyday, everyday_held = fit["policies-zh"], held["policies-zh folds 3-4"]
    assert everyday.questions and everyday_held.questions
    assert not set(everyday.questions) & set(everyday_held.questions)
    meta = load_beir(everyday.data_dir, "train", load_corpus=False).query_meta
    assert all(meta[q]["fold"] in READER_FOLDS and not meta[q]["impossible"] for q in everyday.questions)
    assert all(meta[q]["fold"] not in READER_FOLDS and not meta[q]["impossible"] for q in everyday_held.questions)


def _decision_rows(qset: str, writer: str, folds: range, n: int, informative: str, seed: int) -> list:
    """``n`` questions of ``qset`` per fold (as is and removed), on which only the ``informative``
    feature tells the two apart; ``writer`` is the id's letter after the language."""
    from rag.bench.refusal_rows import Row

    rng = np.random.default_rng(seed)
    out = []
    for fold in folds:
        for i in range(n):
            for cond, good in (("as_is", True), ("removed", False)):
                feats = {f: float(rng.uniform()) for f in ("p_top", "cover_sentence")}
                feats[informative] = float(rng.uniform(0.45, 1.0) if good else rng.uniform(0.0, 0.55))
                qid = f"zh{writer}-{fold}-{i}"
                out.append(Row(qset, qid, cond, "问", False, "answer", 0.5, "cjk", feats, [], 1.0, fold=fold))
    return out


def test_the_decision_weighs_everyday_questions_but_chooses_its_operating_point_on_questions_as_written():
    """``fit_answerability``: an everyday set asked in a user's own words (here only ``p_top``
    separates its questions) shapes the weights as much as a larger set asked as written (where
    only ``cover_sentence`` does), its folds 3-4 stay out of the fit, and the threshold keeps at
    most 8% of the as-written set's answerable questions refused, whatever it costs the other."""
    from rag.bench.fit_answerability import MAX_FALSE_REFUSALS, fit
    from rag.retrieval.answerability.model import AnswerabilityModel

    cmrc = _decision_rows("cmrc-trial", "", range(5), 80, "cover_sentence", 0)
    everyday = _decision_rows("policies-zh", "F", range(5), 10, "p_top", 1)
    m = fit(cmrc + everyday)["cjk"]
    weights = dict(zip(m["features"], m["weights"], strict=True))
    assert weights["p_top"] > 1.0 and weights["cover_sentence"] > 1.0
    assert m["provenance"]["questions"] == 400 + 30  # folds 0-2 of the everyday set only
    assert "chosen on cmrc-trial:" in m["provenance"]["operating_point"]
    model = AnswerabilityModel("cjk", tuple(m["features"]), tuple(m["weights"]), m["bias"])
    refused = [model.probability(r.features) < 0.5 for r in cmrc if r.answerable]
    assert np.mean(refused) <= MAX_FALSE_REFUSALS
    # fit on the as-written set alone, the everyday set's feature would carry no weight
    alone = fit(cmrc)["cjk"]
    assert dict(zip(alone["features"], alone["weights"], strict=True))["p_top"] < 0.5


def test_the_reader_model_reads_only_everyday_documents_the_sentence_reader_never_saw():
    """The shipped sentence reader read folds 0-2 of the first round's everyday documents: a
    decision weighing the readers is fit on the second round's folds 0-2 (and CMRC's folds 3-4)."""
    from dataclasses import replace

    from rag.bench.fit_answerability import fit_rows

    rows = [
        replace(r, features=r.features | {"reader": 0.5, "reader_sentence": 0.5})
        for r in _decision_rows("policies-zh", "A", range(5), 1, "p_top", 2)
        + _decision_rows("policies-zh", "F", range(5), 1, "p_top", 3)
        + _decision_rows("cmrc-trial", "", range(5), 1, "p_top", 4)
    ]
    kept = {(r.set, r.qid[2:3], r.fold_key) for r in fit_rows(rows)["cjk/reader"]}
    assert kept == {("policies-zh", "F", f) for f in READER_FOLDS} | {("cmrc-trial", "-", f) for f in (3, 4)}
    # fit on the sentence reader's reading alone (``--drop reader``), the same questions stay out
    sentence_only = [replace(r, features={k: v for k, v in r.features.items() if k != "reader"}) for r in rows]
    assert set(fit_rows(sentence_only)) == {"cjk/reader"}
    assert {(r.set, r.qid[2:3], r.fold_key) for r in fit_rows(sentence_only)["cjk/reader"]} == kept


def test_the_sentence_readers_everyday_step_reads_the_first_round_as_it_did(tmp_path):
    """``fit_cjk_sentence_reader --first-round``: of the everyday sets, the documents written
    before the shipped sentence reader was trained (the ones ``fit_answerability`` keeps out of
    ``cjk/reader``'s fit): 903 windows, what its everyday step read (models/MANIFEST.json)."""
    from rag.bench import squad
    from rag.bench.reader_pairs import squad_split

    every, _ = squad_split(["policies-zh", "policies-en"], tmp_path, 0)
    first, held = squad_split(["policies-zh", "policies-en"], tmp_path, 0, first_round=True)
    assert {q.qid[:3] for q in first} == {"zhA", "zhB", "zhC", "enD", "enE"}
    assert {q.qid[:3] for q in every} > {q.qid[:3] for q in first}
    assert all(q.fold in READER_FOLDS for q in first) and not any(q.fold in READER_FOLDS for q in held)
    answerable = sum(not q.impossible for q in first)  # its own section and the section gutted
    assert 2 * answerable + (len(first) - answerable) == 903
    assert squad.first_round("cmrc-trial", "anything") and not squad.first_round("policies-zh", "zhF-1-1-1")
