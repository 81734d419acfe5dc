"""The frame of a Chinese question: tokens that shape it ("几项", "哪所", "此鱼") rather than name
its subject, by two rules over jieba's tokens (no list of single questions):

1. An interrogative or a demonstrative glued to one measure word (几项, 哪所, 此条, 每位) is a
   frame word: the answer says the count or the thing, never the pointer.
2. A token jieba's dictionary does not know (its HMM guessed it) that starts with an
   interrogative or a demonstrative, or ends in the copula or a particle, is a cut across the
   frame: "慧是" of "王法慧是谁", "此鱼" of "此鱼分布在哪里". A dictionary word is kept
   whatever its first character: 几何, 该死, 那曲.
"""

from __future__ import annotations

from functools import lru_cache

import jieba

from rag.text.figures import ZH_MEASURE

POINTERS = frozenset("哪几此该这那每")  # interrogatives and demonstratives
PARTICLES = frozenset("是的了吗呢吧啊")  # the copula and sentence particles


@lru_cache(maxsize=4096)
def known_word(token: str) -> bool:
    """A word of jieba's dictionary (not one its HMM made up for text it did not know)."""
    jieba.dt.check_initialized()
    return jieba.dt.FREQ.get(token, 0) > 0


def is_frame_token(token: str) -> bool:
    """A CJK token of two or more characters that frames the question (rules 1 and 2 above)."""
    if len(token) < 2:
        return False
    if len(token) == 2 and token[0] in POINTERS and token[1] in ZH_MEASURE:
        return True
    return not known_word(token) and (token[0] in POINTERS or token[-1] in PARTICLES)
