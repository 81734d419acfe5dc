"""One language check (rag.text.script): every stage reads a question's script the same way."""

from __future__ import annotations

import re

import pytest

from rag.text.script import CJK_LETTERS, CJK_WIDE, HAN, HAN_RE, is_chinese, script_of


@pytest.mark.parametrize(
    ("text", "script"),
    [
        ("住宿费每晚上限是多少？", "cjk"),
        ("What is the RCEP?", "latin"),
        ("RCEP具体包括哪些国家", "cjk"),
        # mixed: a CJK character weighs three Latin letters, so the Chinese frame decides
        ("iPhone 15的价格是多少", "cjk"),
        ("2021年香港GDP增长了多少？", "cjk"),
        # an English question quoting one Chinese word stays English
        ("What does the policy say about 住宿费?", "latin"),
        ("出張の上限はいくらですか", "cjk"),  # kana count as CJK letters
        ("1234 ???", "latin"),  # no letter at all: Latin (the default wording)
        ("", "latin"),
    ],
)
def test_script_of_reads_mixed_text_by_one_rule(text, script):
    assert script_of(text) == script


def test_is_chinese_is_cjk_without_kana_or_hangul():
    assert is_chinese("iPhone 15的价格是多少")
    assert not is_chinese("出張の上限はいくらですか")  # Japanese: the English wording, not Chinese
    assert not is_chinese("회의는 언제입니까")
    assert not is_chinese("What does the policy say about 住宿费?")


def test_retrieval_refusal_and_answerer_agree_on_a_mixed_question():
    """The three readers of a question's script (retrieval's model choice, the refusal's wording,
    the extractive answerer's splitting) all read it through ``script_of``."""
    from rag.answer.question import question_parts
    from rag.retrieval.answerability import script_of as retrieval_script
    from rag.retrieval.fallback import refusal_text

    q = "iPhone 15的价格是多少"
    assert retrieval_script(q) == "cjk"
    assert question_parts(q)[0].cjk
    assert refusal_text(q) != refusal_text("What is the price of the iPhone 15?")


def test_one_set_of_ranges():
    assert HAN_RE.fullmatch("𠀀")  # CJK Extension B counts as an ideograph
    assert not HAN_RE.search("かな한글abc")
    assert re.fullmatch(f"[{CJK_LETTERS}]+", "漢字かなカナ한글")
    assert re.fullmatch(f"[{CJK_WIDE}]+", "，。（）")  # full-width punctuation: one token each when chunking
    assert HAN in CJK_LETTERS and CJK_LETTERS in CJK_WIDE
