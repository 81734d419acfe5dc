"""The validator rejects, each as its own case, at the shipped support threshold: a verbatim sentence
cited to the wrong chunk, a sentence with a changed number, a sentence whose negation is flipped
(English and Chinese). The unchanged sentences pass, so each rejection is the change's doing."""

from __future__ import annotations

import pytest
from answer_helpers import minilm_embed

from rag.answer.citations import CitationValidator
from rag.answer.result import IssueCode
from rag.answer.support import EvidenceIndex
from rag.config import Settings

CHUNKS = [
    "Business class is allowed only for flights longer than 10 hours, with the approval of a VP. "
    "Seat selection fees are reimbursed.",
    "Premium economy may be booked for flights longer than 6 hours. Economy class is used for shorter flights.",
    "Customer data must never be stored on a personal device. Personal phones may be used for company email.",
    "出差期间按自然日发放餐费补贴，无需提供餐饮发票。业务招待须事先经部门经理批准，人均费用不超过 300 元。",
    "一线城市住宿费每晚不超过 600 元，其他城市每晚不超过 450 元。",
]


@pytest.fixture(scope="module")
def validator():
    return CitationValidator(EvidenceIndex(CHUNKS, minilm_embed()), Settings().support_threshold)


def codes(check) -> set[IssueCode]:
    return {i.code for i in check.issues}


@pytest.mark.parametrize(
    "sentence",
    [
        "Economy class is used for shorter flights. [2]",
        "Seat selection fees are reimbursed. [1]",
        "Customer data must never be stored on a personal device. [3]",
        "业务招待须事先经部门经理批准，人均费用不超过 300 元。[4]",
        "一线城市住宿费每晚不超过 600 元，其他城市每晚不超过 450 元。[5]",
    ],
)
def test_the_verbatim_sentence_cited_to_its_chunk_passes(validator, sentence):
    assert validator.check(sentence).ok


@pytest.mark.parametrize(
    "sentence",
    [
        "Economy class is used for shorter flights. [1]",  # same topic (flights), other chunk
        "Seat selection fees are reimbursed. [2]",
        "Personal phones may be used for company email. [1]",
        "一线城市住宿费每晚不超过 600 元，其他城市每晚不超过 450 元。[4]",  # same document's expense chunk
    ],
)
def test_a_verbatim_sentence_cited_to_the_wrong_chunk_is_rejected(validator, sentence):
    check = validator.check(sentence)
    assert not check.ok and IssueCode.UNSUPPORTED in codes(check)


@pytest.mark.parametrize(
    "sentence",
    [
        "Business class is allowed only for flights longer than 12 hours, with the approval of a VP. [1]",
        "Business class is allowed only for flights longer than eight hours, with the approval of a VP. [1]",
        "一线城市住宿费每晚不超过 800 元，其他城市每晚不超过 450 元。[5]",
    ],
)
def test_a_sentence_with_a_changed_number_is_rejected(validator, sentence):
    assert codes(validator.check(sentence)) == {IssueCode.NUMBER_MISMATCH}


@pytest.mark.parametrize(
    "sentence",
    [
        "Customer data must be stored on a personal device. [3]",  # "never" dropped
        "Customer data must not never be stored on a personal device. [3]",  # one negation added
        "出差期间按自然日发放餐费补贴，需提供餐饮发票。[4]",  # 无需 -> 需
        "业务招待须事先经部门经理批准，人均费用超过 300 元。[4]",  # 不超过 -> 超过
        "业务招待无需事先经部门经理批准，人均费用不超过 300 元。[4]",  # both hold a negation; counts differ
    ],
)
def test_a_sentence_whose_negation_is_flipped_is_rejected(validator, sentence):
    assert IssueCode.NEGATION_MISMATCH in codes(validator.check(sentence))
