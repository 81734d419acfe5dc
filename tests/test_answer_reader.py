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
