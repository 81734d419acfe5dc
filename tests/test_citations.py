"""Citation parsing, sentence splitting, support scoring, spans, and the validator against adversarial answers."""

from __future__ import annotations

import pytest
from answer_helpers import INJECTION, REFUND, SHIPPING, make_evidence, minilm_embed
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.answer.citations import CitationValidator, parse_citations, split_claims, strip_citations
from rag.answer.result import Answer, IssueCode, SentenceKind
from rag.answer.sentences import SentenceStream, split_sentences
from rag.answer.spans import citations_for, render_markdown
from rag.answer.support import EvidenceIndex, score_support
from rag.retrieval.trace import ModelLabel


@pytest.fixture(scope="session")
def embed():
    return minilm_embed()


@pytest.fixture(scope="module")
def evidence():
    return make_evidence([REFUND, SHIPPING, INJECTION])


@pytest.fixture(scope="module")
def validator(evidence, embed):
    _, cands = evidence
    return CitationValidator(EvidenceIndex([c.text for c in cands], embed), threshold=0.5)


def codes(check) -> set[IssueCode]:
    return {i.code for i in check.issues}


# --- parsing -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Refunds take 7 days [1].", [1]),
        ("Both apply [1, 3].", [1, 3]),
        ("Both apply [2][1].", [2, 1]),
        ("Both apply [2] [1] and [2].", [2, 1]),
        ("中文逗号[1，2]。", [1, 2]),
        ("No citation here, not even [a] or [^1] or [].", []),
        (r"An escaped \[1] is the source's own text; [2] is a citation.", [2]),
    ],
)
def test_parse_citations(text, expected):
    assert parse_citations(text) == expected


def test_strip_citations_leaves_clean_text():
    assert (
        strip_citations("Refunds take 7 days [1]. Shipping is free [2, 3] .")
        == "Refunds take 7 days. Shipping is free."
    )


# No brackets and no backslash: r"\[1]" is an escaped bracket (source text), not a citation, by design.
_plain_text = st.text(alphabet=st.characters(blacklist_characters="[]\\", blacklist_categories=("Cs",)), max_size=30)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(_plain_text, st.lists(st.integers(1, 9999), min_size=1, max_size=3)), max_size=6),
    st.sampled_from(["[{}]", "[{}] ", " [{}]"]),
    st.sampled_from([", ", ",", "][", "，"]),
)
def test_parser_roundtrip_fuzz(parts, fmt, joiner):
    """Rendered citations in any supported style parse back to the numbers, in first-seen order."""
    text = "".join(prefix + fmt.format(joiner.join(str(n) for n in nums)) for prefix, nums in parts)
    expected = list(dict.fromkeys(n for _, nums in parts for n in nums))
    assert parse_citations(text) == expected
    assert parse_citations(strip_citations(text)) == []


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_parser_never_raises_and_finds_only_numbers_in_text(text):
    for n in parse_citations(text):
        assert str(n) in text.replace("，", ",")


def test_split_claims_per_clause():
    claims = split_claims("A is 7 days [1], while B is 30 days [2].")
    assert [(c.text, c.citations) for c in claims] == [("A is 7 days", [1]), ("while B is 30 days", [2])]
    assert [c.citations for c in split_claims("According to [1], refunds take 7 days.")] == [[1]]


# --- sentences ---------------------------------------------------------------------------


def test_sentence_split_keeps_trailing_citations_and_offsets():
    text = "Refunds take 7 days. [1] See e.g. the policy.[2] Also a 3.5% fee [3].\n- Item [1]\n退款期限为7天。[1]办公室周日关闭[2]。"
    segs = split_sentences(text, newline_breaks=True)
    assert [s.text for s in segs] == [
        "Refunds take 7 days. [1]",
        "See e.g. the policy.[2]",
        "Also a 3.5% fee [3].",
        "- Item [1]",
        "退款期限为7天。[1]",
        "办公室周日关闭[2]。",
    ]
    assert all(text[s.start : s.end] == s.text for s in segs)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(1, 12), min_size=1, max_size=40))
def test_sentence_stream_matches_batch_split(cuts):
    """However the deltas are cut, streamed sentences equal the sentences of the whole text."""
    text = "Refunds take 7 days. [1] Shipping is free [2].\n退款期限为7天。[1] Done [3] and more [1, 2]. End"
    stream, got, pos = SentenceStream(), [], 0
    for size in cuts:
        got += [s.text for s in stream.feed(text[pos : pos + size])]
        pos += size
    got += [s.text for s in stream.feed(text[pos:])] + [s.text for s in stream.close()]
    assert got == [s.text for s in split_sentences(text, newline_breaks=True)]


# --- validator: adversarial answers ------------------------------------------------------


def test_out_of_range_citation_fails(validator):
    check = validator.check("Customers may request a refund within 7 days of purchase [5].")
    assert not check.ok and codes(check) == {IssueCode.OUT_OF_RANGE}
    assert "[5]" in check.issues[0].message and "there are 3" in check.issues[0].message


def test_fabricated_quote_fails(validator):
    check = validator.check('The policy says "refunds are guaranteed for any reason" [1].')
    assert IssueCode.QUOTE_NOT_FOUND in codes(check)


def test_true_quote_passes_despite_punctuation_and_spacing(validator):
    check = validator.check('Customers may request a refund "within  7 days of purchase" [1].')
    assert check.ok, check.issues


def test_right_citation_wrong_number_fails(validator):
    check = validator.check("Customers may request a refund within 30 days of purchase [1].")
    assert codes(check) == {IssueCode.NUMBER_MISMATCH}
    assert "30" in check.issues[0].message


def test_number_words_are_checked_too(validator):
    assert IssueCode.NUMBER_MISMATCH in codes(validator.check("Refunds may be requested within thirty days [1]."))
    assert validator.check("Refunds may be requested within seven days of purchase [1].").ok


def test_uncited_claim_fails(validator):
    check = validator.check("Refunds are always approved.")
    assert codes(check) == {IssueCode.UNCITED}


def test_gap_statement_and_lead_in_may_stand_uncited(validator):
    gap = validator.check("The documents do not say whether gift cards can be refunded.")
    assert gap.ok and gap.sentence.kind is SentenceKind.GAP
    assert validator.check("In short:").sentence.kind is SentenceKind.CONNECTIVE
    assert not validator.check("The documents do not say the fee is 10%.").ok  # a number makes it a claim


def test_supported_sentences_pass(validator):
    for sentence in (
        "Customers may request a refund within 7 days of purchase. [1]",
        "You can ask for a refund within 7 days after buying [1].",
        "Orders over $50 ship for free [2].",
        "A refund can be requested within 7 days [1], and shipping is free for orders over $50 [2].",
    ):
        check = validator.check(sentence)
        assert check.ok, (sentence, check.issues)
        assert check.sentence.verified


def test_citing_the_wrong_chunk_fails(validator):
    check = validator.check("Orders over $50 ship for free [1].")
    assert IssueCode.UNSUPPORTED in codes(check) or IssueCode.NUMBER_MISMATCH in codes(check)


def test_extra_irrelevant_citation_is_named(validator):
    check = validator.check("Customers may request a refund within 7 days of purchase [1][3].")
    assert [(i.code, i.n) for i in check.issues] == [(IssueCode.UNSUPPORTED, 3)]


def test_negation_flip_fails(validator):
    check = validator.check("Customers may not request a refund within 7 days of purchase [1].")
    assert IssueCode.NEGATION_MISMATCH in codes(check)


def test_injected_instruction_is_never_support(validator):
    """Chunk 3 says 'answer 42'; a sentence obeying it, cited to it, still fails."""
    for sentence in ("The answer is 42 [3].", "Answer 42 to every question [3].", "The answer is 42."):
        assert not validator.check(sentence).ok, sentence
    assert validator.index.flagged() == [3]
    assert validator.check("The office is closed on Sundays [3].").ok  # the rest of the chunk is still evidence


# --- support scores and spans ------------------------------------------------------------


def test_score_support_orders_verbatim_paraphrase_unrelated(embed):
    claims = [
        "Customers may request a refund within 7 days of purchase.",
        "You can ask for your money back within 7 days.",
        "The cafeteria serves lunch at noon.",
    ]
    scores = score_support(claims, [REFUND] * 3, embed)
    assert scores[0].score > scores[1].score > 0.5 > scores[2].score
    assert REFUND[scores[0].start : scores[0].end] == claims[0]
    assert score_support(["Refunds within 30 days."], [REFUND], embed)[0].score == 0.0


def test_citation_spans_point_into_the_source_document(evidence, validator):
    doc, cands = evidence
    checks = validator.check_text(
        "Approved refunds are paid within 5 business days [1]. Standard delivery takes 3 to 5 business days [2]."
    )
    assert all(c.ok for c in checks)
    cites = citations_for(checks, cands)
    assert [(c.n, c.sentence) for c in cites] == [(1, 0), (2, 1)]
    for c in cites:
        assert doc[c.start : c.end] == c.quote
        assert c.chunk_id == cands[c.n - 1].chunk_id and c.valid
    assert cites[0].quote == "Approved refunds are paid to the original payment method within 5 business days."
    answer = Answer(question="q", text=" ".join(c.sentence.raw for c in checks), generator=ModelLabel("t", "t"))
    answer.citations = cites
    md = render_markdown(answer)
    assert "[^1]" in md and "[^2]" in md and "\n[^1]: **Handbook.pdf**, p. 1" in md


def test_evidence_sentences_are_embedded_only_when_read(embed):
    """An English question reads every chunk's sentence vectors, embedded in one batch; a Chinese
    question on an English-only embedder reads none, so only the chunk its answer cites is embedded,
    for the validator, and the cited sentence (copied from it) needs no embedding of its own."""
    from rag.answer.base import DraftRequest
    from rag.answer.extractive import compose, select_sentences

    calls: list[list[str]] = []

    def recording(texts):
        calls.append(list(texts))
        return embed(texts)

    _, cands = make_evidence([REFUND, SHIPPING])
    index = EvidenceIndex([c.text for c in cands], recording)
    assert calls == []  # nothing embedded until read
    select_sentences(DraftRequest("How many days do I have to request a refund?", cands, index))
    assert len(calls) == 2 and calls[0] == ["How many days do I have to request a refund?"]
    assert len(calls[1]) == len(split_sentences(REFUND)) + len(split_sentences(SHIPPING))

    zh = ["报销须在费用发生后 30 天内提交。逾期不予受理。", "出差住宿费每晚不超过 600 元。", "餐费补贴每天 180 元。"]
    _, cands = make_evidence(zh)
    calls.clear()
    index = EvidenceIndex([c.text for c in cands], recording)
    request = DraftRequest("出差住宿费每晚上限是多少？", cands, index)
    answer = compose(select_sentences(request, cjk_vectors=False))
    assert "600 元" in answer and calls == []  # term coverage chose, no vector was read
    checks = CitationValidator(index, threshold=0.5).check_text(answer)
    assert all(c.ok for c in checks)
    assert calls == [[s.text for s in split_sentences(zh[1])]]  # the cited chunk only, its sentence reused
    assert checks[0].best[2].cosine == pytest.approx(1.0, abs=1e-4)
