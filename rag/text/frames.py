"""The frame of a Chinese question: tokens that shape it ("几项", "哪所", "此鱼") rather than name
its subject, by three rules over jieba's tokens (no list of single questions):

1. An interrogative or a demonstrative glued to one measure word (几项, 哪所, 此条, 每位) is a
   frame word: the answer says the count or the thing, never the pointer.
2. A token jieba's dictionary does not know (its HMM guessed it) that starts with an
   interrogative, a demonstrative or a function word (rule 3), or ends in the copula or a
   particle, is a cut across the frame: "慧是" of "王法慧是谁", "此鱼" of "此鱼分布在哪里",
   "最多能" of "最多能报多少". A dictionary word is kept whatever its first character: 几何,
   该死, 那曲.
3. A function word or a quantity, as jieba's dictionary tags it (``is_function_token``): an
   adverb (最多), a preposition (经过), a conjunction, an auxiliary, a locative (以后, 之内), a
   pronoun (自己, 每年), a particle, a measure word, or a numeral compound that counts (一天, 两个,
   九点; a figure such as 六百块 stays a term: the documents may write it in digits). They
   frame what is asked, as English stop words do; documents say them in other words ("21:00",
   "每人每天") or not at all, so counting them as missing reads the wording, not the subject.
"""

from __future__ import annotations

from functools import lru_cache

import jieba

from rag.store.numerals import spelled_number
from rag.text.figures import ZH_MEASURE

POINTERS = frozenset("哪几此该这那每")  # interrogatives and demonstratives
PARTICLES = frozenset("是的了吗呢吧啊")  # the copula and sentence particles


@lru_cache(maxsize=4096)
def known_word(token: str) -> bool:
    """A word of jieba's dictionary (not one its HMM made up for text it did not know)."""
    jieba.dt.check_initialized()
    return jieba.dt.FREQ.get(token, 0) > 0


FUNCTION_TAGS = ("d", "p", "c", "u", "f", "r", "y", "e", "o", "q")  # jieba's part-of-speech tags (prefixes)
NUMERALS = frozenset("〇零一二两三四五六七八九十百千万亿第半")


@lru_cache(maxsize=4096)
def is_function_token(token: str) -> bool:
    """A CJK token jieba's dictionary tags as a function word, or as a numeral compound that
    counts (一天, 两个, 九点) but is no figure the documents could write in digits (六百块 and
    十二月 are: ``numerals.spelled_number`` finds them there); rule 3 above."""
    from jieba import posseg

    tag = posseg.dt.word_tag_tab.get(token, "")
    if tag.startswith("m"):
        return token[0] in NUMERALS and spelled_number(token) is None
    return bool(tag) and tag.startswith(FUNCTION_TAGS)


def is_frame_token(token: str) -> bool:
    """A CJK token of two or more characters that frames the question (rules 1 and 2 above)."""
    if len(token) < 2:
        return False
    if len(token) == 2 and token[0] in POINTERS and token[1] in ZH_MEASURE:
        return True
    if known_word(token):
        return False
    figure = spelled_number(token) is not None  # 六百块: a figure, whatever its first piece
    starts_with_function = not figure and any(is_function_token(token[:k]) for k in range(2, len(token)))
    return token[0] in POINTERS or token[-1] in PARTICLES or starts_with_function
