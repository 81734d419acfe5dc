"""The answer-reader experiment (rag.bench.answer_reader / fit_answer_reader): what it trains on
and what it saves are what it says."""

from __future__ import annotations

import pytest

from rag.bench.answer_reader import READER_FOLDS, AnswerReader, fold_of, reader_base
from rag.bench.fit_answer_reader import NEGATIVES, pairs

QUESTION = "How many days of paid annual leave do employees get?"
ANSWERS = "Full-time employees receive 25 days of paid annual leave per calendar year, accrued monthly."
TOPICAL = "Annual leave requests must be submitted through the HR portal and approved by a line manager."


def test_saved_layers_load_back_over_the_bundled_base(tmp_path):
    import torch

    fresh = AnswerReader.from_base(reader_base())
    trained = {n for n, p in fresh.model.named_parameters() if p.requires_grad}
    assert trained and all(n.startswith(("head.", "encoder.encoder.layer.")) for n in trained)
    assert not any(n.startswith("encoder.embeddings.") for n in trained)  # the frozen base is not saved
    with torch.no_grad():
        fresh.model.head.weight.normal_(0, 0.2)
    before = fresh.scores(QUESTION, [ANSWERS, TOPICAL])
    fresh.save(tmp_path / "r.pt", {"data": "unit test"})
    back = AnswerReader.load(tmp_path / "r.pt")
    assert back.scores(QUESTION, [ANSWERS, TOPICAL]) == pytest.approx(before, abs=2e-3)  # half precision
    assert back.provenance == {"data": "unit test"}


def test_folds_are_stable_and_split_the_training_questions():
    folds = [fold_of(str(q)) for q in range(1000)]
    assert folds == [fold_of(str(q)) for q in range(1000)]
    assert all(150 <= folds.count(k) <= 250 for k in range(5))


def test_pairs_come_from_the_reader_folds_as_is_asks_only():
    def row(qid, condition, golds):
        chunks = [{"text": f"{qid}-{i}", "gold": g} for i, g in enumerate(golds)]
        return {"qid": qid, "fold": fold_of(qid), "condition": condition, "question": qid, "chunks": chunks}

    inside = next(str(q) for q in range(100) if fold_of(str(q)) in READER_FOLDS)
    outside = next(str(q) for q in range(100) if fold_of(str(q)) not in READER_FOLDS)
    rows = [
        row(inside, "as_is", [True, False, False, False, False, False, True]),
        row(inside, "removed", [False] * 6),  # removed asks hold no positive: never trained on
        row(outside, "as_is", [True, False]),  # a held-out claim: never trained on
    ]
    got = pairs(rows, READER_FOLDS)
    assert sorted(y for _, _, y in got) == [0.0] * NEGATIVES + [1.0, 1.0]
    assert {q for q, _, _ in got} == {inside}


def test_the_e5_recipe_trains_on_the_reader_folds_and_is_judged_on_the_others():
    """``train-e5`` (the Chinese reader's recipe on the English pairs): judged on held-out asks only,
    with the rerank probability's AUC beside it computed from the same asks."""
    from rag.bench.fit_answer_reader import train_e5

    def row(qid, condition, p_top, golds):
        texts = [ANSWERS if g else TOPICAL for g in golds]
        chunks = [{"text": t, "gold": g, "score": p_top} for t, g in zip(texts, golds, strict=True)]
        return {
            "qid": qid,
            "fold": fold_of(qid),
            "condition": condition,
            "question": QUESTION,
            "p_top": p_top,
            "chunks": chunks,
        }

    fit_ids = [str(q) for q in range(200) if fold_of(str(q)) in READER_FOLDS][:4]
    held_ids = [str(q) for q in range(200) if fold_of(str(q)) not in READER_FOLDS][:6]
    rows = [row(q, "as_is", 0.9, [True, False, False]) for q in fit_ids]
    for q in held_ids:  # as is ranks above removed on p_top, by construction: its AUC must read 1.0
        rows += [row(q, "as_is", 0.8, [True, False]), row(q, "removed", 0.3, [False, False])]
    got = train_e5(rows, {0, 1, 2, 3, 4} - READER_FOLDS, epochs=1, lr=1e-4)
    assert got["asks"] == 12 and got["p_top_auc"] == 1.0
    assert 0.0 <= got["reader_top_auc"] <= 1.0 and 0.0 <= got["both_cv_auc"] <= 1.0
