"""The frame of a Chinese question: tokens that shape it ("几项", "哪所", "此鱼") rather than name
its subject, by two rules over jieba's tokens (no list of single questions):

1. An interrogative or a demonstrative glued to one measure word (几项, 哪所, 此条, 每位) is a
   frame word: the answer says the count or the thing, never the pointer.
2. A token jieba's dictionary does not know (its HMM guessed it) that starts with an
   interrogative or a demonstrative, or ends in the copula or a particle, is a cut across the
   frame: "慧是" of "王法慧是谁", "此鱼" of "此鱼分布在哪里". A dictionary word is kept
   whatever its first character: 几何, 该死, 那曲.

Two closed classes are frames too: 几 or 哪 glued to the unit it asks in (``is_asked_unit``: 几点,
几号, 哪月; the answer states "9:30" or "15 日", never 几点), and the locatives of relation 以 / 之 +
a direction (``is_relation_word``: 以后, 之内, 以上), which English says with a preposition ("after",
"within", "above") and a document in other words (后, 内, 超过).

``is_grammar_cut`` widens rule 2 to the grammar a user's own words are full of: a made-up token
(or a rare dictionary phrase) that starts or ends on one of the most common single-character
words tagged as grammar is a cut across grammar, "我能" of "我能报销吗", "内要" of "三天内要交",
"还会" of "还会扣钱吗": the documents never write it, so it would count as a missing term (and be
named as one).
"""

from __future__ import annotations

from functools import lru_cache

import jieba

from rag.text.figures import ZH_MEASURE
from rag.text.script import CJK_LETTER_RE

POINTERS = frozenset("哪几此该这那每")  # interrogatives and demonstratives
PARTICLES = frozenset("是的了吗呢吧啊")  # the copula and sentence particles
# jieba's dictionary frequency at and above which a single character is one of its ~90 most common
# words; those of them that are grammar by jieba's part-of-speech tags (pronouns 我, adverbs 还,
# prepositions 在, conjunctions, locatives 前, particles, verbs 要 能 会) glue to a word in a made-up
# token that is no word to look for. Adjectives, numerals and nouns (大 高 年 人) begin names.
COMMON_CHAR_FREQ = 50_000
_GRAMMAR_TAGS = ("c", "d", "f", "p", "r", "u", "v", "zg")  # jieba tag prefixes
# the same without verbs: a whole word so tagged is grammar, not a subject (以后 之内 自己 每月), while
# a verb names one (体检 is tagged a verb), as numerals do
_GRAMMAR_WORD_TAGS = tuple(t for t in _GRAMMAR_TAGS if t not in ("v", "zg"))
# a dictionary entry this rare is the long tail of phrases jieba's dictionary lists at frequency 3
# (顶多能, 多长时间 beside 倒休, 扣钱): no evidence on its own that the cut is a word
PHRASE_FREQ = 3


@lru_cache(maxsize=4096)
def known_word(token: str) -> bool:
    """A word of jieba's dictionary (not one its HMM made up for text it did not know)."""
    jieba.dt.check_initialized()
    return jieba.dt.FREQ.get(token, 0) > 0


ASKING = frozenset("几哪")  # the interrogatives of a count or a choice
# what 几 / 哪 ask for when glued to it: a time of day, a day of the month, a month, a share (几点, 几号, 几成)
ASKED_UNITS = frozenset("点号月时日周成")
WEEKDAY_ASKED = "周几"  # the unit before 几: jieba cuts 星期几 and 礼拜几 in two, and a lone 几 is no term
# the grammaticalised locatives 以 / 之 + a direction: what English says with a preposition ("after",
# "within", "above"), which is never a term there either (以后, 之内, 以上)
RELATION_HEADS = frozenset("以之")
RELATION_TAILS = frozenset("上下内外后前来间际中")


def is_asked_unit(token: str) -> bool:
    """An interrogative glued to the unit it asks in (几点, 几号, 哪月, 周几): the answer states
    the time or the share, never the question's word for it."""
    return token == WEEKDAY_ASKED or (len(token) == 2 and token[0] in ASKING and token[1] in ASKED_UNITS)


def is_relation_word(token: str) -> bool:
    """以后, 之内, 以上: a relation a sentence may say in other words (后, 内, 超过)."""
    return len(token) == 2 and token[0] in RELATION_HEADS and token[1] in RELATION_TAILS


def is_frame_token(token: str) -> bool:
    """A CJK token of two or more characters that frames the question (rules 1 and 2 above)."""
    if len(token) < 2:
        return False
    if len(token) == 2 and token[0] in POINTERS and token[1] in ZH_MEASURE:
        return True
    return not known_word(token) and (token[0] in POINTERS or token[-1] in PARTICLES)


@lru_cache(maxsize=4096)
def is_grammar_cut(token: str) -> bool:
    """A CJK token jieba's dictionary does not know (or lists only as a rare phrase,
    ``PHRASE_FREQ``) that starts or ends on one of the most common single-character words
    (``COMMON_CHAR_FREQ``): "我能", "内要", "顶多能", not "报销" or "倒休"."""
    jieba.dt.check_initialized()
    freq = jieba.dt.FREQ
    if len(token) < 2 or freq.get(token, 0) > PHRASE_FREQ:
        return False
    return _grammar_char(token[0]) or _grammar_char(token[-1])


def is_grammar_word(token: str) -> bool:
    """A CJK word jieba's dictionary tags as grammar (``_GRAMMAR_WORD_TAGS``: conjunctions,
    adverbs, locatives, prepositions, pronouns, particles): the documents not writing 以后 or 之内
    says nothing a user can act on, so a refusal never names it."""
    if not token or not CJK_LETTER_RE.search(token):
        return False
    return _tag(token).startswith(_GRAMMAR_WORD_TAGS)


def _tag(word: str) -> str:
    """jieba's part-of-speech tag for a dictionary word ('' for one it does not list)."""
    import jieba.posseg

    jieba.dt.check_initialized()
    return jieba.posseg.dt.word_tag_tab.get(word, "")


@lru_cache(maxsize=512)
def _grammar_char(char: str) -> bool:
    """One of the most common single-character words, and grammar by its part-of-speech tag."""
    if jieba.dt.FREQ.get(char, 0) < COMMON_CHAR_FREQ:
        return False
    return _tag(char).startswith(_GRAMMAR_TAGS)
