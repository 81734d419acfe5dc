"""What the extractive answerer picks for each part of a question (``Pick``: an evidence sentence;
``Gap``: a part no sentence answers) and how its picks are written as the answer (``compose``).

Sentences are shown verbatim, each followed by its [n]; only list markers ("1. ", "- ") and a
source's footnote marker after the sentence's end ("…市长。[33]") are dropped, line wraps
inside a sentence become single spaces, and a lead-in shown without its list (a yes/no answer:
"…，无需提供餐饮发票：") ends with a full stop instead of its colon.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rag.answer.sentences import Segment
from rag.text import lexical

SOURCE_REF_RE = re.compile(r"\[(\s*\d[\d\s,，]*)\]")
_FOOTNOTE_RE = re.compile(r"(?<=[。！？.!?])\s*(?:\[\s*\d[\d\s,，]*\])+\s*$")  # "…市长。[33]"
_LEAD_END_RE = re.compile(r"[:：]$")
LIST_MARKER_RE = re.compile(r"^\s*(?:[-*•]|\d{1,2}[.)、]|[一二三四五六七八九十]+、)\s*")
_CJK_TERMINAL = ("。", "！", "？", "」", "』", "）")
_TERMINAL = (".", "!", "?", '"', "”", ")", *_CJK_TERMINAL)


@dataclass(frozen=True)
class Pick:
    n: int  # 1-based evidence number
    segment: Segment  # offsets inside the chunk text
    score: float
    terms: frozenset[str] = frozenset()  # the question part's terms it holds
    reader: float | None = None  # the sentence reader's P(holds the answer), when it read the sentence
    carried: bool = True  # it carries what the part asks for (``asked.carries``)
    usable: bool = True  # it can answer at all: a whole sentence or row, not a lead-in or a cut-off row
    meaning: float = 0.0  # closeness in meaning to the part, 0-1, lowered as its score is (Chinese parts)


@dataclass(frozen=True)
class Gap:
    """A part of the question that no evidence sentence answers."""

    part: str
    cjk: bool
    why: str = ""  # what fell short, in the part's language (``unanswered.py``)

    def sentence(self) -> str:
        """A fixed gap statement (the validator's GAP kind: no numbers, no quotes)."""
        named = self.part.rstrip("?？。. ")
        if lexical.numbers(named) or '"' in named or "“" in named:
            return (
                "文档没有提及问题的这一部分。" if self.cjk else "The documents do not answer one part of the question."
            )
        return (
            f"文档没有提及：{named}。"
            if self.cjk
            else f"The documents do not answer this part of the question: {named}."
        )


def list_body(text: str) -> str:
    """``text`` without a leading list marker ("1. ", "- ", "• ", "2) ")."""
    return LIST_MARKER_RE.sub("", text, count=1)


def compose(picks: list[Pick | Gap]) -> str:
    """Sentences verbatim (list markers dropped), each followed by its [n], joined by a space (none
    after CJK) or a line break; a part the evidence does not answer is named in a gap sentence.

    Line wraps inside a sentence (PDF text) become single spaces, and the source's own
    bracketed numbers ("as shown in [3]") are Markdown-escaped so they are not read as citations;
    a footnote marker after the sentence's end is dropped, since the [n] that follows it would
    otherwise stand after the sentence it cites ("…市长。\\[33\\] [3]" reads as an uncited sentence).
    """
    out, prev = "", ""
    for pick in picks:
        if isinstance(pick, Gap):
            text, mark = pick.sentence(), ""
        else:
            body = _FOOTNOTE_RE.sub("", " ".join(list_body(pick.segment.text).split()))
            body = _LEAD_END_RE.sub(lambda m: "。" if m.group() == "：" else ".", body)
            text = SOURCE_REF_RE.sub(r"\\[\1\\]", body)
            mark = f"[{pick.n}]" if text.endswith(_CJK_TERMINAL) else f" [{pick.n}]"
        if prev:
            if not prev.endswith(_TERMINAL):
                out += "\n"
            elif not prev.endswith(_CJK_TERMINAL):
                out += " "
        out += text + mark
        prev = text
    return out
