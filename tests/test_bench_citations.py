"""`bench citations`: gold evidence sentences located in the document, the overlap rule, exact counts, the line."""

from __future__ import annotations

import json

import pytest

from rag.answer.result import Answer, Citation
from rag.bench.citations import CLAIMS_FILE, CitationCounts, Claim, falls_on, gold_spans, load_claims, score_answer
from rag.errors import DatasetError
from rag.records import ModelLabel

ABSTRACT = "# Title\n\nMice were fed a diet. Weight fell by 12%. The effect lasted 3 weeks. Funding came from X."
EXTRACTIVE = ModelLabel(backend="extractive", model="evidence-sentences")
GOLD = ["Weight fell by 12%.", "The effect lasted 3 weeks."]


class _Texts:
    """Only the document-text look-up the scorer needs (the knowledge base's own method name)."""

    def document_text(self, doc_id: str) -> str:
        return ABSTRACT


def _cite(sentence: str, doc_name: str = "42.md") -> Citation:
    start = ABSTRACT.index(sentence)
    return Citation(1, 0, "c", "d", doc_name, 1, (), start, start + len(sentence), 0, sentence, 0.9)


def test_gold_sentences_are_found_and_overlap_needs_half_the_shorter_span():
    spans = gold_spans(ABSTRACT, [*GOLD, "A sentence that is not there."])
    assert spans == [(ABSTRACT.index(g), ABSTRACT.index(g) + len(g)) for g in GOLD]
    s, e = spans[0]
    assert falls_on(s, e, spans) and falls_on(s + 2, e + 30, spans)
    assert not falls_on(s - 30, s + 3, spans)  # 3 shared characters of a 19-character sentence


def test_counts_split_wrong_abstract_from_wrong_sentence():
    claim = Claim("7", "Diet lowers weight.", {"42.md": GOLD})
    counts = CitationCounts(claims=2)
    answer = Answer(question=claim.text, text="...", generator=EXTRACTIVE)
    answer.citations = [_cite(GOLD[0]), _cite("Mice were fed a diet."), _cite(GOLD[1], doc_name="99.md")]
    score_answer(_Texts(), claim, answer, counts)
    miss = Answer(question=claim.text, text="...", generator=EXTRACTIVE)
    miss.citations = [_cite("Funding came from X.")]
    score_answer(_Texts(), Claim("8", "x", {"42.md": GOLD}), miss, counts)
    assert (counts.cited, counts.on_gold_doc, counts.on_gold, counts.claims_on_gold) == (4, 3, 1, 1)
    assert counts.misses == ["8"]
    counts.refused = 0
    assert counts.line("scifact") == (
        "citations scifact: cited sentences on gold evidence 1/4 (0.250) · on a gold abstract 3/4 (0.750) · "
        "claims with a gold citation 1/2 · refused 0/2"
    )


def test_claims_without_gold_sentences_are_left_out_and_limit_counts_kept_ones(tmp_path):
    rows = [
        {"id": "1", "claim": "a", "evidence_text": {}},
        {"id": "3", "claim": "b", "evidence_text": {"14717500": ["S1.", "S2."]}},
        {"id": "5", "claim": "c", "evidence_text": {"1/2": ["S3."]}},
    ]
    (tmp_path / CLAIMS_FILE).write_text("\n".join(json.dumps(r) for r in rows))
    claims = list(load_claims(tmp_path))
    assert [(c.id, c.evidence) for c in claims] == [("3", {"14717500.md": ["S1.", "S2."]}), ("5", {"1_2.md": ["S3."]})]
    assert [c.id for c in load_claims(tmp_path, limit=1)] == ["3"]
    with pytest.raises(DatasetError):
        list(load_claims(tmp_path / "missing"))
