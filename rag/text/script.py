"""Which script a text is written in, and the one set of CJK character ranges.

Every module that needs a CJK range builds its pattern from the ranges here (``HAN``,
``CJK_LETTERS``, ``CJK_WIDE``), and every module that asks "is this question Chinese?" asks
``script_of``: retrieval (which fitted model, which embedder), the refusal's wording, and the
extractive answerer read a question the same way.

The rule for mixed text: a CJK character carries about as much as three Latin letters (an
English word averages about five letters, a Chinese word under two characters), so a text is
``cjk`` when its CJK letters number at least a third of its Latin letters. "iPhone 15的价格是多少"
(6 CJK, 6 Latin) is Chinese-script: its frame (的价格是多少) is Chinese; "What does the policy
say about 住宿费?" (3 CJK, 22 Latin) is Latin-script: an English question quoting a word.
"""

from __future__ import annotations

import re
from typing import Literal

Script = Literal["cjk", "latin"]
CJK: Script = "cjk"
LATIN: Script = "latin"

# Character-class bodies (for ``[...]``), each range once.
HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"  # ideographs: Ext A, URO, compatibility, Ext B-H
KANA = "\u3040-\u30ff"  # hiragana, katakana
HANGUL = "\uac00-\ud7af"  # Hangul syllables
CJK_LETTERS = HAN + KANA + HANGUL
# radicals, CJK punctuation, bopomofo, full-width forms: one model token each, like a letter
CJK_MARKS = "\u2e80-\u2fdf\u3000-\u303f\u3100-\u31ff\uff00-\uffef"
CJK_WIDE = CJK_LETTERS + CJK_MARKS

HAN_RE = re.compile(f"[{HAN}]")
CJK_LETTER_RE = re.compile(f"[{CJK_LETTERS}]")
_KANA_HANGUL_RE = re.compile(f"[{KANA}{HANGUL}]")
_LATIN_RE = re.compile(r"[A-Za-z\u00c0-\u024f]")
LATIN_PER_CJK = 3  # Latin letters one CJK character weighs as much as (see the module docstring)


def script_of(text: str) -> Script:
    """``cjk`` when ``text``'s CJK letters (hanzi, kana, hangul) number at least a third of its
    Latin letters, else ``latin`` (also for text with no letter of either)."""
    cjk = len(CJK_LETTER_RE.findall(text))
    latin = len(_LATIN_RE.findall(text))
    return CJK if cjk and cjk * LATIN_PER_CJK >= latin else LATIN


def is_chinese(text: str) -> bool:
    """CJK-script text without kana or hangul: what a refusal is worded in Chinese for (a
    Japanese or Korean question gets the English wording rather than Chinese)."""
    return script_of(text) == CJK and not _KANA_HANGUL_RE.search(text)
