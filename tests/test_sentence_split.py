"""Sentence boundaries on the cases scripts/compare_sentence_splitters.py measures against pysbd."""

from __future__ import annotations

import pytest

from rag.answer.sentences import split_sentences


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        ("Use e.g. the VPN. Then log in.", ["Use e.g. the VPN.", "Then log in."]),
        (
            "The U.S. office opened in 2016. It has 212 people.",
            ["The U.S. office opened in 2016.", "It has 212 people."],
        ),
        (
            "Load time fell from 3.4 seconds to 1.6 seconds. Good.",
            ["Load time fell from 3.4 seconds to 1.6 seconds.", "Good."],
        ),
        ("Version 5.0.0 removed API v1. Upgrade now.", ["Version 5.0.0 removed API v1.", "Upgrade now."]),
        ("Dr. Smith approves it. Ask him.", ["Dr. Smith approves it.", "Ask him."]),
        ("See section 4.2. It lists limits.", ["See section 4.2.", "It lists limits."]),
        (
            "一线城市住宿费每晚不超过 600 元。其他城市每晚不超过 450 元。",
            ["一线城市住宿费每晚不超过 600 元。", "其他城市每晚不超过 450 元。"],
        ),
        ("请联系财务部王磊（分机 8021）。谢谢！", ["请联系财务部王磊（分机 8021）。", "谢谢！"]),
        (
            "Rates are capped:\n- Tier A: USD 320.\n- Tier B: USD 230.",
            ["Rates are capped:", "- Tier A: USD 320.", "- Tier B: USD 230."],
        ),
    ],
)
def test_sentence_boundaries(text, sentences):
    segments = split_sentences(text)
    assert [s.text for s in segments] == sentences
    assert all(text[s.start : s.end] == s.text for s in segments)


def test_a_markdown_heading_is_its_own_segment():
    """A chunk that opens with its headings: the first sentence is not glued to them (it used to
    be, and then a sentence starting with '#' was never picked as an answer)."""
    text = "# Handbook\n## Refunds\nCustomers may request a refund within 7 days. Refunds are paid in 5 days."
    assert [s.text for s in split_sentences(text)] == [
        "# Handbook",
        "## Refunds",
        "Customers may request a refund within 7 days.",
        "Refunds are paid in 5 days.",
    ]
    assert all(text[s.start : s.end] == s.text for s in split_sentences(text))
