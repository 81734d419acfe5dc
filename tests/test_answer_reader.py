"""The answer reader (fine-tuned MiniLM cross-encoder) and how the answerability stage uses it."""

from __future__ import annotations

import pytest

from rag.records import TermStats
from rag.retrieval.answerability import EvidenceChunk, assess, reader
from rag.retrieval.answerability.model import READER_FEATURE, model_for
from rag.retrieval.answerability.reader import READER_FILE, AnswerReader, answer_reader, fold_of, reader_base

pytestmark = pytest.mark.skipif(not READER_FILE.exists(), reason=f"{READER_FILE.name} not shipped")

QUESTION = "How many days of paid annual leave do employees get?"
ANSWERS = "Full-time employees receive 25 days of paid annual leave per calendar year, accrued monthly."
TOPICAL = "Annual leave requests must be submitted through the HR portal and approved by a line manager."


def test_saved_layers_load_back_over_the_bundled_base(tmp_path):
    import torch

    fresh = AnswerReader.from_base(reader_base())
    trained = {n for n, p in fresh.model.named_parameters() if p.requires_grad}
    assert trained and all(n.startswith(("head.", "encoder.encoder.layer.")) for n in trained)
    assert not any(n.startswith("encoder.embeddings.") for n in trained)  # the frozen base is not shipped
    with torch.no_grad():
        fresh.model.head.weight.normal_(0, 0.2)
    before = fresh.scores(QUESTION, [ANSWERS, TOPICAL])
    fresh.save(tmp_path / "r.pt", {"data": "unit test"})
    back = AnswerReader.load(tmp_path / "r.pt")
    assert back.scores(QUESTION, [ANSWERS, TOPICAL]) == pytest.approx(before, abs=2e-3)  # half precision
    assert back.provenance == {"data": "unit test"}


def test_shipped_reader_prefers_the_passage_that_answers():
    r = answer_reader()
    assert r is not None and "scifact-train" in r.label
    answers, topical = r.scores(QUESTION, [ANSWERS, TOPICAL])
    assert answers > topical


def test_folds_are_stable_and_split_the_training_questions():
    folds = [fold_of(str(q)) for q in range(1000)]
    assert folds == [fold_of(str(q)) for q in range(1000)]
    assert all(150 <= folds.count(k) <= 250 for k in range(5))


def test_latin_verdict_reads_the_reader_and_names_it():
    model = model_for("latin")
    assert READER_FEATURE in model.features
    stats = TermStats(10, {"day": 2, "paid": 2, "annual": 2, "leav": 3, "employe": 5})
    chunks = [EvidenceChunk(ANSWERS, 0.8, 1, 1), EvidenceChunk(TOPICAL, 0.6, 2, 2)]
    a = assess(QUESTION, chunks, stats, "latin", 0.5, 0.59)
    assert "reader all-MiniLM-L6-v2 cross-encoder" in a.model
    assert a.features[READER_FEATURE] == pytest.approx(answer_reader().best(QUESTION, [ANSWERS, TOPICAL]), abs=1e-4)
    assert a.contributions[READER_FEATURE] == pytest.approx(
        a.weights[READER_FEATURE] * a.features[READER_FEATURE], abs=1e-3
    )


def test_without_the_reader_the_model_fit_without_it_decides(monkeypatch):
    monkeypatch.setattr(reader, "READER_FILE", READER_FILE.with_name("missing.pt"))
    assert answer_reader() is None
    stats = TermStats(10, {"day": 2, "paid": 2, "annual": 2, "leav": 3, "employe": 5})
    a = assess(QUESTION, [EvidenceChunk(ANSWERS, 0.8, 1, 1)], stats, "latin", 0.5, 0.59)
    assert READER_FEATURE not in a.features and "reader" not in a.model
    assert a.model.endswith(":latin:no-reader")
    # Chinese questions never read it (the reader's vocabulary is English)
    assert READER_FEATURE not in model_for("cjk").features
