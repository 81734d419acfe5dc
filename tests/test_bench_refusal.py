"""`bench refusal`: the line format, the trade-off curve, the data lookup and the fit's guard."""

from __future__ import annotations

from dataclasses import replace

import pytest
from conftest import write_beir

from rag.bench.fit_answerability import fit, operating_point
from rag.bench.refusal import SETS, set_folder
from rag.bench.refusal_rows import Row, SetResult, print_result
from rag.config import Settings
from rag.errors import RagError
from rag.eval.metrics import auc


def _row(condition: str, refused: bool, p: float, set_name: str = "scifact", qid: str = "1") -> Row:
    return Row(set_name, qid, condition, "q", refused, "reject" if refused else "answer", p, "latin", {}, [], 10.0)


def test_line_has_exactly_the_issue_form():
    r = SetResult("rgb-zh")
    r.rows = [_row("removed", True, 0.1), _row("removed", False, 0.7), _row("removed", True, 0.2)]
    r.rows += [_row("as_is", False, 0.9), _row("as_is", True, 0.3)]
    assert r.line() == ("refusal rgb-zh: unanswerable refused 2/3 (0.667) · answerable refused 1/2 (0.500)")
    curve = dict((t, (u, a)) for t, u, a in r.curve((0.25, 0.5, 0.8)))
    assert curve[0.25] == (pytest.approx(2 / 3), 0.0)
    assert curve[0.5] == (pytest.approx(2 / 3), 0.5)
    assert curve[0.8] == (1.0, 0.5)


def test_a_sets_auc_does_not_move_with_its_operating_point():
    rows = [_row("as_is", False, p, qid=str(i)) for i, p in enumerate((0.9, 0.7, 0.4))]
    rows += [_row("removed", True, p, qid=str(i)) for i, p in enumerate((0.5, 0.2, 0.1))]
    result = SetResult("rgb-zh", rows)
    assert result.auc() == pytest.approx(8 / 9)  # one (answerable, unanswerable) pair of nine out of order
    shifted = SetResult("rgb-zh", [replace(r, probability=r.probability / 2) for r in rows])
    assert shifted.auc() == pytest.approx(8 / 9)  # every P halved: another operating point, the same curve
    assert shifted.curve((0.45,)) != result.curve((0.45,))
    worse = SetResult("rgb-zh", [replace(r, probability=1 - r.probability) for r in rows])
    assert worse.auc() == pytest.approx(1 / 9)  # a decision that orders them backwards scores below chance
    ties = SetResult("rgb-zh", [replace(r, probability=0.5) for r in rows])
    assert ties.auc() == pytest.approx(0.5)
    lines: list[str] = []
    print_result(result, lines.append)
    assert "  AUC of P(answerable), answerable vs unanswerable: 0.889 (whatever the threshold)" in lines
    lines.clear()
    print_result(SetResult("rgb-zh", rows[:3]), lines.append)  # no unanswerable question: no AUC to print
    assert not any("AUC" in line for line in lines)


def test_missing_data_says_where_to_get_it(tmp_path):
    with pytest.raises(RagError) as err:
        set_folder(SETS["rgb-zh"], Settings(bench_data=tmp_path))
    assert "RAG_BENCH_DATA" in err.value.fix and "rgb-zh" in str(err.value)


def test_auc_and_operating_point_on_known_values():
    import numpy as np

    p = np.array([0.9, 0.8, 0.4, 0.3, 0.6, 0.2])
    y = np.array([1, 1, 1, 0, 0, 0])
    assert auc(p, y) == pytest.approx(8 / 9)  # 8 of 9 (answerable, unanswerable) pairs ordered right
    t, right, false = operating_point(p, y, max_false=0.34)
    assert (t, right, false) == (0.8, 1.0, pytest.approx(1 / 3))  # at 0.8 all unanswerable and 1/3 answerable refused

    # two sets: pooled, the easy set's answerable questions hide the hard one's false refusals
    p = np.array([0.9, 0.9, 0.9, 0.9, 0.1, 0.5, 0.4, 0.45, 0.3])
    y = np.array([1, 1, 1, 1, 0, 1, 1, 0, 0])
    sets = np.array(["easy"] * 5 + ["hard"] * 4)
    assert operating_point(p, y, max_false=0.34)[0] == 0.5  # pooled: 1 of 6 answerable refused, but half of hard's
    t, right, false = operating_point(p, y, max_false=0.34, sets=sets)
    assert t == 0.4 and false == 0.0 and right == pytest.approx(2 / 3)  # no set loses over a third


def test_fit_refuses_test_data():
    rows = [_row("as_is", False, 0.9, "rgb-zh"), _row("removed", True, 0.1, "rgb-zh")]
    with pytest.raises(SystemExit, match="not training sets"):
        fit(rows)


def test_gutting_cuts_every_sentence_that_holds_the_answer():
    from rag.bench.hard_negatives import gut

    text = "青岚蜂鸟是蜂鸟科的一种小型鸟类，以花蜜为食。本种分布于安第斯山脉东坡的云雾林。成鸟约重4克，雌鸟分布于更低的山谷。"
    left = gut(text, ["安第斯山脉东坡"])
    assert left == "青岚蜂鸟是蜂鸟科的一种小型鸟类，以花蜜为食。成鸟约重4克，雌鸟分布于更低的山谷。"
    assert gut(text, ["分布于"]) is None  # both holders cut: too little left to be a passage
    assert gut(text, ["巴西"]) is None  # the answer is not in the paragraph: no hard negative
    english = "The Contoso X2 is a camera drone. A full battery gives 35 minutes of flight. It weighs 900 grams."
    assert gut(english, ["35 minutes"]) == "The Contoso X2 is a camera drone. It weighs 900 grams."


def test_hard_corpus_adds_one_gutted_copy_per_question(tmp_path):
    import json

    from rag.bench.hard_negatives import build

    para = (
        "青岚蜂鸟是蜂鸟科的一种小型鸟类，以花蜜和小型昆虫为食，常在清晨和黄昏时分访花。"
        "本种分布于安第斯山脉东坡的云雾林。成鸟约重4克，雄鸟喉部呈翠绿色，雌鸟羽色较暗。"
    )
    queries = [
        {"_id": "Q1", "text": "青岚蜂鸟分布在哪里？", "metadata": {"answers": ["安第斯山脉东坡"]}},
        {"_id": "Q2", "text": "青岚蜂鸟有多重？", "metadata": {"answers": ["约重4克"]}},
        {"_id": "Q3", "text": "青岚蜂鸟的寿命多长？", "metadata": {"answers": ["十年"]}},  # not in the paragraph
    ]
    qrels = [("Q1", "P1"), ("Q2", "P1"), ("Q3", "P1")]
    src = write_beir(tmp_path / "src", {"P1": ("青岚蜂鸟", para)}, queries, qrels, "train")
    hard = build(src, "train", tmp_path / "out")
    assert hard.gutted == {"Q1": "P1~Q1", "Q2": "P1~Q2"} and hard.originals == {"P1"}
    docs = {d["_id"]: d for d in map(json.loads, (hard.folder / "corpus.jsonl").read_text().splitlines())}
    assert "安第斯" not in docs["P1~Q1"]["text"] and "约重4克" in docs["P1~Q1"]["text"]
    assert docs["P1~Q2"]["title"] == "青岚蜂鸟" and "约重4克" not in docs["P1~Q2"]["text"]


def test_cjk_fit_with_the_reader_uses_only_questions_the_reader_never_saw_as_its_own_model():
    import random
    from dataclasses import replace

    from rag.bench.answer_reader import READER_FOLDS, fold_of
    from rag.bench.fit_answerability import READER_FEATURES
    from rag.retrieval.answerability.model import FEATURES

    rng = random.Random(3)
    rows = []
    for i in range(400):
        qid = f"TRIAL_{i}"
        for condition, good in (("as_is", 1.0), ("removed", 0.0)):
            x = {n: rng.random() for n in FEATURES}
            x["reader"] = 0.6 * good + 0.4 * rng.random()  # separates the two conditions
            rows.append(Row("cmrc-trial", qid, condition, "问", False, "answer", 0.5, "cjk", x, [], 10.0))
    models = fit(rows)
    held = sum(1 for i in range(400) if fold_of(f"TRIAL_{i}") not in READER_FOLDS)
    assert set(models) == {"cjk/reader"}  # the shipped cjk model is not touched
    assert models["cjk/reader"]["provenance"]["questions"] == held < 400
    assert "reader" in models["cjk/reader"]["features"]
    plain = fit([replace(r, features={k: v for k, v in r.features.items() if k not in READER_FEATURES}) for r in rows])
    assert "reader" not in plain["cjk"]["features"] and plain["cjk"]["provenance"]["questions"] == 400
    assert models["cjk/reader"]["provenance"]["cv5_auc"] > plain["cjk"]["provenance"]["cv5_auc"]


def test_paraphrased_sets_ask_the_training_questions_in_other_words_the_same_every_run():
    from rag.bench.refusal import _paraphrase

    assert SETS["cmrc-trial-para"].train and SETS["cmrc-trial-hard-para"].hard
    q = "尤金袋鼠分布在哪些地区？"
    first = _paraphrase("TRIAL_1_QUERY_4", q)
    assert first and first != q and "哪些" in first  # other words, the same question word
    assert _paraphrase("TRIAL_1_QUERY_4", q) == first  # seeded by the question's id
    assert _paraphrase("TRIAL_1_QUERY_4", "RCEP？") is None  # nothing Cilin knows: the question is left out


def _beir(root, docs: dict[str, str], queries: list[dict], qrels: list[tuple[str, str]]):
    return write_beir(root / "rgb-zh" / "beir", {d: ("", text) for d, text in docs.items()}, queries, qrels, "test")


def test_reference_answers_read_both_layouts(tmp_path):
    from rag.bench.refusal import reference_answers

    folder = _beir(
        tmp_path,
        {"a": "x"},
        [
            {"_id": "1", "text": "q1", "metadata": {"answer": [["SE 3", "SE3"], "新款iPhone SE"]}},  # RGB-zh
            {"_id": "2", "text": "q2", "metadata": {"answers": ["踢爆", " "]}},  # CMRC
            {"_id": "3", "text": "q3", "metadata": {"evidence": {}}},  # SciFact: no answer strings
        ],
        [("1", "a")],
    )
    assert reference_answers(folder) == {"1": ["SE 3", "SE3", "新款iPhone SE"], "2": ["踢爆"]}


def test_clean_line_counts_only_questions_whose_answer_is_gone():
    r = SetResult("rgb-zh")
    for qid, left, refused in (("1", False, True), ("2", True, False), ("3", False, False)):
        r.rows += [replace(_row("as_is", False, 0.9, "rgb-zh", qid), answer_left=left)]
        r.rows += [replace(_row("removed", refused, 0.3 if refused else 0.8, "rgb-zh", qid), answer_left=left)]
    assert r.line().startswith("refusal rgb-zh: unanswerable refused 1/3")
    assert r.clean_line() == (
        "refusal rgb-zh, answer in no passage left (2 of 3 questions): "
        "unanswerable refused 1/2 (0.500) · answerable refused 0/2 (0.000)"
    )
    no_answers = SetResult("scifact", [_row("removed", True, 0.1), _row("as_is", False, 0.9)])
    assert no_answers.clean_line() == ""


@pytest.mark.slow
def test_a_removed_question_whose_answer_another_passage_holds_is_not_counted_clean(tmp_path):
    """On a real benchmark KB: the two opening-ceremony passages each say both answers, so
    removing either question's own passage leaves its answer searchable (not unanswerable for
    certain); the tennis question's answer is in its own passage only (clean)."""
    from rag.bench.refusal import run_set

    docs = {
        "p1": "2022年北京冬奥会于2月4日开幕，开幕式在国家体育场举行。",
        "p2": "北京冬奥会开幕式在国家体育场举行，时间是2月4日晚。",
        "p3": "张帅在辛辛那提网球公开赛女子单打比赛中止步八强。",
        "n1": "冬奥会的吉祥物是冰墩墩，受到很多观众喜爱。",
    }
    queries = [
        {"_id": "1", "text": "2022年冬奥会开幕日期", "metadata": {"answer": ["2月4日"]}},
        {"_id": "2", "text": "北京冬奥会开幕式在哪里举行", "metadata": {"answer": ["国家体育场"]}},
        {"_id": "3", "text": "张帅在辛辛那提赛的成绩", "metadata": {"answer": ["八强"]}},
    ]
    _beir(tmp_path / "data", docs, queries, [("1", "p1"), ("2", "p2"), ("3", "p3")])
    settings = Settings.from_env(home=tmp_path / "home", bench_data=tmp_path / "data", fallback="reject")
    result = run_set(SETS["rgb-zh"], settings, out=lambda _line: None)
    left = {r.qid: r.answer_left for r in result.rows if r.condition == "removed"}
    assert left == {"1": True, "2": True, "3": False}
    assert {r.qid for r in result.clean().rows} == {"3"}
    assert "(1 of 3 questions)" in result.clean_line()


def _ablation_rows(set_name: str = "scifact-train", n: int = 120) -> list[Row]:
    """Questions whose answerability ``cover_sentence`` tells apart and ``kind_missing`` does not (noise)."""
    import random

    rng = random.Random(7)
    rows = []
    for i in range(n):
        for condition in ("as_is", "removed"):
            signal = rng.gauss(0.7 if condition == "as_is" else 0.3, 0.15)
            x = {f: rng.random() for f in ("p_top", "missing_share", "cover_chunk")}
            x |= {"cover_sentence": signal, "kind_missing": rng.random()}
            absent = ["sabbatical"] if condition == "removed" and i % 10 == 0 else []
            rows.append(Row(set_name, str(i), condition, "q", False, "answer", 0.5, "latin", x, absent, 1.0))
    return rows


def test_ablation_shows_what_a_feature_buys():
    from rag.bench.ablation import RULE, ablate

    results = {a.removed: a for a in ablate(_ablation_rows(), ["cover_sentence", "kind_missing", RULE])}
    assert results[""].model == "latin" and results[""].questions == 120
    assert results[""].auc > 0.9  # every feature: the signal is there
    assert results["cover_sentence"].auc < 0.7  # without the signal the model reads noise
    assert abs(results["kind_missing"].auc - results[""].auc) < 0.03  # the noise feature buys nothing
    # the rule refuses 12 unanswerable questions on its own: without it as many or fewer are refused
    assert results[RULE].unanswerable_refused <= results[""].unanswerable_refused
    assert all(a.answerable_refused <= 0.08 for a in results.values())
    (_, group) = ablate(_ablation_rows(), ["cover_sentence+kind_missing"])
    assert group.removed == "cover_sentence+kind_missing" and group.auc < 0.7  # a group goes at once


def test_ablation_reads_training_sets_only():
    from rag.bench.ablation import ablate
    from rag.errors import DatasetError

    with pytest.raises(DatasetError, match="training sets only"):
        ablate(_ablation_rows("scifact"), ["kind_missing"])
    with pytest.raises(ValueError, match="unknown ablation"):
        ablate(_ablation_rows(), ["no-such-feature"])


def test_ablate_option_refuses_test_sets_before_asking():
    import argparse

    from rag.bench.refusal import main
    from rag.errors import DatasetError

    args = argparse.Namespace(sets=["scifact"], ablate=["all"], fallback="", folds=frozenset(), limit=1, dump="")
    with pytest.raises(DatasetError, match="test sets"):
        main(args)
    args = argparse.Namespace(sets=["scifact-train"], ablate=["nope"], fallback="", folds=frozenset(), limit=1, dump="")
    with pytest.raises(DatasetError, match="Unknown --ablate"):
        main(args)


def test_a_fit_can_leave_out_features_a_script_s_readers_do_not_earn(tmp_path, capsys):
    """`fit_answerability --drop reader --drop reader_sentence`: rows that carry the readers'
    features refit the plain model of their script, not its reader twin; an unknown name is refused."""
    import random

    from rag.bench.fit_answerability import main
    from rag.bench.refusal_rows import dump
    from rag.retrieval.answerability.model import FEATURES

    rng = random.Random(5)
    result = SetResult("scifact-train")
    for i in range(60):
        for condition, good in (("as_is", 1.0), ("removed", 0.0)):
            x = {n: rng.random() for n in FEATURES}
            x["p_top"] = 0.5 * good + 0.5 * rng.random()
            result.rows.append(Row("scifact-train", str(i), condition, "q", False, "answer", 0.5, "latin", x, [], 1.0))
    path = tmp_path / "train.jsonl"
    dump([result], path)
    assert main([str(path)]) == 0
    assert capsys.readouterr().out.startswith("latin/reader: 60 questions")
    assert main([str(path), "--drop", "reader", "--drop", "reader_sentence"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("latin: 60 questions") and "'reader'" not in out and "'absent_word'" in out
    with pytest.raises(SystemExit, match="--drop readr: not features"):
        main([str(path), "--drop", "readr"])


def test_a_rule_asked_again_is_compared_question_by_question():
    from dataclasses import replace

    from rag.bench.ablation import again_tables, asked_again
    from rag.errors import DatasetError

    base = _ablation_rows()
    # the rule off: its signal gone from the features, and 30 unanswerable questions refused
    off = [
        replace(r, features={**r.features, "cover_sentence": 0.5}, refused=not r.answerable and int(r.qid) < 30)
        for r in base
    ]
    decided, refits = asked_again(base, {"frames": off})
    assert [(d.rule, d.questions) for d in decided] == [("", 120), ("frames", 120)]
    assert decided[0].unanswerable_refused == 0.0 and decided[1].unanswerable_refused == 0.25
    assert decided[1].answerable_refused == 0.0
    (every, without) = refits
    assert without.removed == "frames" and every.auc > 0.9 and without.auc < 0.7
    text = again_tables(decided, refits)
    assert "| frames | scifact-train | 120 | 0.000 · +0.000 | 0.250 · +0.250 | 30 | 240 |" in text
    assert (decided[0].changed, decided[0].features_changed) == (0, 0)
    with pytest.raises(DatasetError, match="other questions"):
        asked_again(base, {"frames": off[:-1]})
    with pytest.raises(DatasetError, match="Unknown rule"):
        asked_again(base, {"nope": off})


def test_what_each_term_rule_keeps_out_of_the_questions_terms(monkeypatch):
    from rag import rules
    from rag.bench.ablation import terms_again, terms_table
    from rag.errors import DatasetError

    monkeypatch.delenv(rules.ENV, raising=False)
    asked = [
        ("scifact-train", "1", "Which regions does the policy cover after 2020?"),
        ("cmrc-trial", "2", "该公司大约有多少员工？"),
        ("cmrc-trial", "3", "法规一共有几项规定？"),
    ]
    rows = [
        Row(s, q, cond, text, False, "answer", 0.5, "latin", {}, [], 1.0)
        for s, q, text in asked
        for cond in ("as_is", "removed")  # a question's two conditions count once
    ]
    found = {(t.rule, t.set): t for t in terms_again(rows)}
    assert found["categories", "scifact-train"].kept_out == ("regions",)
    assert found["grammar-words", "scifact-train"].kept_out == ("after",)
    assert found["hedges", "cmrc-trial"].kept_out == ("大约",) and found["hedges", "cmrc-trial"].changed == 1
    assert found["frames", "cmrc-trial"].kept_out == ("几项",) and found["frames", "cmrc-trial"].questions == 2
    assert found["hedges", "scifact-train"].changed == 0
    assert "| hedges | cmrc-trial | 2 | 1 (0.500) |" in terms_table(list(found.values()))
    with pytest.raises(DatasetError, match="training sets only"):
        terms_again([replace(rows[0], set="rgb-zh")])
