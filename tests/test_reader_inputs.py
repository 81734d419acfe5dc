"""What the Chinese answer reader reads, and what it is trained on: numbers in one spelling, and
training questions paraphrased with Cilin synonyms."""

from __future__ import annotations

import random

import pytest

from rag.store.numerals import canonical, chinese_value


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("单笔超过两万元的报销", "单笔超过20000元的报销"),
        ("单笔报销金额超过 20,000 元的", "单笔报销金额超过 20000 元的"),
        ("三千五百万人", "35000000人"),
        ("2.5万元", "25000元"),
        ("二〇二二年冬奥会", "2022年冬奥会"),
        ("十五天内冲账", "15天内冲账"),
        ("一百二十名员工", "120名员工"),
    ],
)
def test_a_number_is_written_in_digits_however_it_was_spelled(text, expected):
    assert canonical(text) == expected


@pytest.mark.parametrize("text", ["一线城市住宿费", "十分重要", "千万不要迟到", "每万元营收", "统一管理"])
def test_words_that_only_contain_a_numeral_character_stay(text):
    assert canonical(text) == text


def test_chinese_numerals_have_their_value():
    assert [chinese_value(n) for n in ("十", "十五", "两百零五", "三千五百", "两万", "一亿二千万")] == [
        10,
        15,
        205,
        3500,
        20000,
        120000000,
    ]
    assert chinese_value("万") is None


def test_the_reader_reads_both_spellings_of_a_figure_alike():
    from rag.readers.reader import reader_ids

    class Chars:  # a stand-in tokenizer: one id per character, XLM-R's pair layout
        def pair(self, first, second, max_tokens):
            return [0, *map(ord, first), 2, 2, *map(ord, second), 2]

    a = reader_ids(Chars(), "两万元以上谁审批？", "超过 20,000 元须由总经理审批")
    b = reader_ids(Chars(), "20000元以上谁审批？", "超过 20000 元须由总经理审批")
    assert a == b


def test_a_paraphrase_swaps_topic_words_for_cilin_synonyms_and_keeps_the_question_words():
    from rag.bench.synonyms import paraphrase, synonym_map

    syn = synonym_map()
    assert "丢失" in syn["遗失"] and "遗失" not in syn["遗失"]
    rng = random.Random(3)
    q = "发票遗失时，单张金额最多是多少？"
    out = {paraphrase(q, rng) for _ in range(20)}
    assert None not in out and q not in out  # at least one word is swapped every time
    assert all(p.endswith("是多少？") for p in out)  # what it asks is never swapped
    assert paraphrase("RCEP？", rng) is None


@pytest.mark.parametrize(
    ("term", "number"),
    [
        ("六百块", "600块"),
        ("三千元", "3000元"),
        ("一万元", "10000元"),
        ("十二月", "12月"),
        ("二〇二二年", "2022年"),
        ("六百", None),
        ("千元", None),
        ("两个", None),
        ("四海", None),
        ("十三号", None),
        ("一线", None),
    ],
)
def test_spelled_number(term, number):
    from rag.store.numerals import spelled_number

    assert spelled_number(term) == number


def test_holds_number_reads_the_figure_whole_and_a_date_by_its_unit():
    from rag.store.numerals import holds_number

    assert holds_number("每晚不超过 600 元", "600块") and holds_number("每晚六百元", "600块")
    assert holds_number("3,000 元以上", "3000元") and holds_number("每年 12 月 25 日前", "12月")
    assert not holds_number("1600 元", "600元") and not holds_number("6.005 元", "600元")
    assert not holds_number("12 日", "12月") and not holds_number("共 600 ", "600元")


def test_a_figure_is_found_however_the_scope_writes_it_in_digits():
    """The index looks for "一万元" as "10000", "10,000", "1万" or "一万" before reading a text
    whole (``figure_spellings``): each of those documents holds it, one about another sum does not."""
    from rag.store.bm25 import BM25Index

    holding = [
        "报销金额超过 10,000 元的须总经理审批。",
        "超过10000元须审批。",
        "超过1万元须审批。",
        "超过一万块须审批。",
    ]
    for k, text in enumerate([*holding, "超过 100 元须审批。"]):
        index = BM25Index.build([(f"d{k}:1:1:0", text)], version=1)
        near = index.term_stats(["一万元"]).near
        assert near == ({"一万元": "10000元"} if text in holding else {}), text
