"""SQuAD-shaped training sets (rag.bench.squad): article folds shared across languages, the BEIR
view ``bench refusal`` asks, and the reader's pairs (an unanswerable question's own window is a
negative). Built on small SQuAD 2.0-format files written here, in the layout of the benchmark
data folder."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from rag.bench import squad
from rag.bench.fit_answerability import fit_rows
from rag.bench.reader_pairs import crossed, squad_pairs, squad_split
from rag.bench.refusal_rows import Row
from rag.eval.beir import iter_corpus, iter_queries, load_qrels

EN_CONTEXT = (
    "The Normans were the people who gave their name to Normandy. They descended from Norse raiders. "
    "Their leader Rollo swore fealty to King Charles III."
)
ZH_CONTEXT = (
    "诺曼人是在十世纪和十一世纪把名字赋予法国诺曼底地区的人。他们是丹麦、挪威和冰岛的北欧海盗的后裔。"
    "经过几代人的同化，他们与当地的法兰克人和罗马高卢人融合。他们的首领罗洛向查理三世宣誓效忠。"
)


def _squad(title: str, context: str, qas: list[dict]) -> dict:
    return {"version": "v2.0", "data": [{"title": title, "paragraphs": [{"context": context, "qas": qas}]}]}


def _qa(qid: str, question: str, answer: str | None) -> dict:
    if answer is None:
        return {"id": qid, "question": question, "answers": [], "is_impossible": True}
    return {"id": qid, "question": question, "answers": [{"text": answer, "answer_start": 0}], "is_impossible": False}


def _write(root, rel: str, payload: dict) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, ensure_ascii=False), encoding="utf-8")


def _bench(tmp_path):
    """A benchmark data folder: one article in each of the four sets; the Chinese one titled in
    Chinese, sharing question ids with XQuAD."""
    en_qas = [_qa("en1", "Who was the leader of the Normans?", "Rollo"), _qa("en2", "Who was the Norman queen?", None)]
    zh_qas = [
        _qa("x1", "诺曼人的首领是谁？", "罗洛"),
        _qa("zh2", "诺曼人的女王是谁？", None),
        _qa("zh3", "罗马皇帝是谁？", "恺撒"),
    ]
    _write(tmp_path, squad.SOURCES["squad2-en"][0], _squad("Normans", EN_CONTEXT, en_qas))
    _write(tmp_path, squad.SOURCES["squad2-zh"][0], _squad("诺曼人", ZH_CONTEXT, zh_qas))
    _write(tmp_path, squad.SOURCES["xquad-en"][0], _squad("Normans", EN_CONTEXT, [_qa("x1", "Who led them?", "Rollo")]))
    _write(tmp_path, squad.SOURCES["xquad-zh"][0], _squad("Normans", ZH_CONTEXT, [_qa("x1", "谁领导他们？", "罗洛")]))
    return tmp_path


def test_chinese_article_is_named_by_its_english_title_so_folds_hold_it_out_of_both_languages(tmp_path):
    data = _bench(tmp_path)
    en = squad.load("squad2-en", data)
    zh = squad.load("squad2-zh", data)
    assert {q.article for q in zh} == {"Normans"} == {q.article for q in en}
    assert {q.fold for q in zh} == {q.fold for q in en} == {squad.fold_of("Normans")}
    assert zh[0].title == "诺曼人"  # the heading stays as the set writes it


def test_answers_that_do_not_occur_in_their_paragraph_are_dropped(tmp_path):
    zh = squad.load("squad2-zh", _bench(tmp_path))
    assert [q.qid for q in zh] == ["x1", "zh2"]  # zh3's answer 恺撒 is not in its paragraph
    assert zh[1].impossible and zh[1].answers == ()


def test_unanswerable_question_gives_a_negative_window_of_its_own_paragraph(tmp_path):
    zh = squad.load("squad2-zh", _bench(tmp_path))
    roles = {(p.qid, p.role): p.label for p in squad_pairs(zh)}
    assert roles[("zh2", "impossible")] == 0
    assert roles[("x1", "own")] == 1  # its window holds 罗洛
    assert roles[("x1", "gutted")] == 0


def test_crossed_pairs_keep_the_windows_and_labels_and_ask_in_the_other_language(tmp_path):
    data = _bench(tmp_path)
    zh = squad.load("xquad-zh", data)
    twins = squad.twin_questions("xquad-zh", data)
    assert twins == {"x1": "Who led them?"}
    asked_in_zh, asked_in_en = squad_pairs(zh), crossed(zh, twins)
    # the same windows (chosen with the Chinese words), the same labels, the English question
    assert [(p.window, p.label, p.role) for p in asked_in_en] == [(p.window, p.label, p.role) for p in asked_in_zh]
    assert {p.question for p in asked_in_en} == {"Who led them?"}
    assert any(p.label == 1 for p in asked_in_en) and any(p.label == 0 for p in asked_in_en)
    assert crossed(zh, {}) == []  # no twin, no pair


def test_only_xquad_has_twins(tmp_path):
    with pytest.raises(ValueError, match="no twin"):
        squad.twin_questions("squad2-en", _bench(tmp_path))


def test_split_keeps_each_article_on_one_side(tmp_path):
    data = _bench(tmp_path)
    fit, held = squad_split(list(squad.SOURCES), data, per_source=0)
    assert not ({q.article for q in fit} & {q.article for q in held})
    assert len(fit) + len(held) == sum(len(squad.load(s, data)) for s in squad.SOURCES)


def test_beir_view_names_each_question_s_own_paragraph_and_its_fold(tmp_path):
    data = _bench(tmp_path)
    folder = squad.beir_view("squad2-en", data, tmp_path / "derived")
    docs = dict(iter_corpus(folder))
    assert [d.title for d in docs.values()] == ["Normans"]
    meta = {qid: m for qid, _text, m in iter_queries(folder)}
    assert meta["en2"] == {"answers": [], "impossible": True, "fold": squad.fold_of("Normans")}
    qrels = load_qrels(folder, "train")
    assert set(qrels) == {"en1", "en2"} and all(list(v) == list(docs) for v in qrels.values())


def _row(qset: str, qid: str, condition: str, fold: int | None) -> Row:
    features = {"p_top": 0.5, "reader": 0.5}
    return Row(qset, qid, condition, "q", False, "answer", 0.5, "latin", features, [], 1.0, fold=fold)


def test_reader_model_fits_only_on_questions_the_reader_was_not_trained_on():
    rows = [
        _row("cmrc-trial", "a", "as_is", 0),  # a reader training fold (the shipped reader read CMRC): left out
        _row("squad2-en", "b", "impossible", 3),
        _row("squad2-en", "d", "as_is", 0),  # the shipped reader never read SQuAD: every fold kept
        _row("scifact-train", "c", "as_is", None),  # nor SciFact
    ]
    rows[0] = replace(rows[0], script="cjk")
    parts = fit_rows(rows)
    assert {r.qid for r in parts["latin/reader"]} == {"b", "c", "d"} and "cjk/reader" not in parts
    assert not rows[1].answerable and rows[1].fold_key == 3


def test_held_out_set_is_decided_by_a_model_fit_without_it():
    """``fit_answerability --hold-out``: a set whose questions the fit never saw, at that fit's
    operating point. Here the held-out set reads the features the other way round, so a model that
    carries nothing over from it must get it wrong."""
    from rag.bench.fit_answerability import transfer

    def rows(qset: str, flip: bool) -> list[Row]:
        out = []
        for i in range(60):
            for cond, good in (("as_is", True), ("removed", False)):
                high = good != flip
                feats = {"p_top": 0.9 if high else 0.2, "cover_sentence": 0.8 if high else 0.1}
                out.append(Row(qset, f"{qset}{i}", cond, "q", False, "answer", 0.5, "cjk", feats, [], 1.0))
        return out

    (result,) = transfer(rows("cmrc-trial", False) + rows("squad2-zh", True), "squad2-zh")
    assert {r.set for r in result.rows} == {"squad2-zh"}
    refused_unanswerable, n = result.refused("unanswerable")
    refused_answerable, m = result.refused("as_is")
    assert n == m == 60 and refused_unanswerable == 0 and refused_answerable == 60


def test_a_set_no_model_is_fit_on_is_decided_when_held_out():
    """``--hold-out cmrc-trial-para``: no model is fit on the paraphrased set, yet holding it out
    decides its questions by the models fit on the rest, as they read them (an easy set: none of
    its answerable questions refused, every unanswerable one refused)."""
    from rag.bench.fit_answerability import transfer

    def rows(qset: str) -> list[Row]:
        out = []
        for i in range(60):
            for cond, good in (("as_is", True), ("removed", False)):
                feats = {"p_top": 0.9 if good else 0.2, "cover_sentence": 0.8 if good else 0.1}
                out.append(Row(qset, f"{qset}{i}", cond, "q", False, "answer", 0.5, "cjk", feats, [], 1.0))
        return out

    train = rows("cmrc-trial")
    assert "cmrc-trial-para" not in {r.set for part in fit_rows(train + rows("cmrc-trial-para")).values() for r in part}
    (result,) = transfer(train + rows("cmrc-trial-para"), "cmrc-trial-para")
    assert {r.set for r in result.rows} == {"cmrc-trial-para"}
    assert result.refused("unanswerable") == (60, 60) and result.refused("as_is") == (0, 60)


def test_the_reader_report_judges_questions_as_well_as_windows(capsys):
    """``squad_report``: a scorer that knows only whether a window holds the answer is perfect on
    windows and on answer-holding windows against unanswerable ones, but an answerable question
    whose own window misses its answer scores as low as an unanswerable one: per question, what the
    decision reads, it is worth less (here 0.75)."""
    from rag.bench.fit_cjk_reader import squad_report
    from rag.bench.reader_pairs import Pair

    held = [
        Pair("a", "q", "w", "t", 1, "own"),  # answerable, its window holds the answer
        Pair("b", "q", "w", "t", 0, "own"),  # answerable, its window misses it
        Pair("c", "q", "w", "t", 0, "impossible"),
        Pair("d", "q", "w", "t", 0, "impossible"),
    ]
    scores = np.array([0.9 if p.label else 0.1 for p in held])
    squad_report(held, scores, {p.qid: "squad2-en" for p in held})
    out = capsys.readouterr().out
    assert "windows AUC 1.000" in out and "same paragraph 1.000" in out and "per question 0.750" in out
    squad_report(held[:2], scores[:2], {"a": "xquad-en", "b": "xquad-en"})  # no unanswerable question
    assert "per question" not in capsys.readouterr().out


@pytest.mark.slow
def test_the_english_own_words_set_asks_each_rewritten_question_unanswerable_ones_too(tmp_path, monkeypatch):
    """``squad2-en-own`` on a real benchmark KB: a rewritten answerable question is asked as is and
    with its paragraph removed, a rewritten unanswerable one of its own paragraph, each in its
    rewrite's words; a question without a rewrite is not asked."""
    from rag.bench import own_words
    from rag.bench.refusal import SETS, run_set
    from rag.config import Settings

    data = _bench(tmp_path / "data")
    qas = [*json.loads((data / squad.SOURCES["squad2-en"][0]).read_text())["data"][0]["paragraphs"][0]["qas"]]
    qas.append(_qa("en3", "Who did Rollo swear fealty to?", "King Charles III"))
    _write(data, squad.SOURCES["squad2-en"][0], _squad("Normans", EN_CONTEXT, qas))
    own = tmp_path / "own.jsonl"
    own.write_text(
        '{"qid": "en1", "own_words": "Who ran things for the Normans?"}\n'
        '{"qid": "en2", "own_words": "Which woman ruled the Normans as queen?"}\n',
        encoding="utf-8",
    )
    monkeypatch.setattr(own_words, "SQUAD2_EN", own)
    rs = SETS["squad2-en-own"]
    assert rs.train and rs.own_words and rs.squad == "squad2-en"
    settings = Settings.from_env(home=tmp_path / "home", bench_data=data, fallback="reject")
    rows = run_set(rs, settings, out=lambda _line: None).rows
    assert sorted((r.qid, r.condition, r.question) for r in rows) == [
        ("en1", "as_is", "Who ran things for the Normans?"),
        ("en1", "removed", "Who ran things for the Normans?"),
        ("en2", "impossible", "Which woman ruled the Normans as queen?"),
    ]


def test_only_squad2_en_and_cmrc_have_own_words_rewrites():
    from rag.bench import own_words
    from rag.errors import DatasetError

    assert own_words.for_set("") is own_words.rewrites(own_words.OWN_WORDS)
    with pytest.raises(DatasetError, match="No own-words rewrites of xquad-en"):
        own_words.for_set("xquad-en")
