"""Sentence segmentation with character offsets, for English and Chinese text.

Citation markers that follow a sentence's final punctuation ("... 7 days. [1]") belong to
that sentence, so an answer splits into sentences that each carry their own [n].
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rag.llm import strip_reasoning

CJK_RE = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")

_CITE_TAIL = r"(?:[ \t]*\[\s*\d+(?:\s*[,，]\s*\d+)*\s*\])*"
_END_RE = re.compile(
    r"(?:[.!?]+[\"'”’)]*(?=\s|$|\[)"  # western terminator, then space / end / a citation
    r"|[。！？!?]+[”’」』）]*)" + _CITE_TAIL  # CJK terminator needs no space after it
)
_MARKERS_ONLY_RE = re.compile(r"^(?:\s*\[\s*\d+(?:\s*[,，]\s*\d+)*\s*\])+$")
_PARAGRAPH_RE = re.compile(r"\n[ \t]*\n")
_LINE_RE = re.compile(r"\n")
_BULLET_LINE_RE = re.compile(r"\n(?=[ \t]*(?:[-*•#>]|\d+[.)])\s)")
_HEADING_LINE_RE = re.compile(r"(?m)^[ \t]*#{1,6}[ \t][^\n]*\n")  # a Markdown heading is its own line
_ABBREVIATIONS = frozenset("e.g i.e etc vs mr mrs ms dr no fig approx cf al inc ltd co st jr sr p pp".split())
_WORD_BEFORE_RE = re.compile(r"([A-Za-z.]+)$")
_INITIALISM_RE = re.compile(r"(?:^|\.)[A-Za-z]\.[A-Za-z]$")
_LIST_NUMBER_RE = re.compile(r"(?:^|\n)[ \t]*\d+$")


@dataclass(frozen=True)
class Segment:
    """``text == source[start:end]``, stripped of surrounding whitespace."""

    text: str
    start: int
    end: int


def is_cjk(text: str) -> bool:
    """True when most letters in ``text`` are CJK ideographs."""
    cjk = len(CJK_RE.findall(text))
    latin = len(re.findall(r"[A-Za-z]", text))
    return cjk > 0 and cjk >= latin / 3


def split_sentences(text: str, newline_breaks: bool = False) -> list[Segment]:
    """Split ``text`` into sentences with offsets.

    Paragraph breaks and list items always end a sentence; with ``newline_breaks`` every
    line break does (answers), without it single newlines are treated as line wraps (PDFs).
    """
    cuts = {0, len(text)}
    for match in _END_RE.finditer(text):
        if not _is_false_stop(text, match.start()):
            cuts.add(match.end())
    line_re = _LINE_RE if newline_breaks else _BULLET_LINE_RE
    for regex in (_PARAGRAPH_RE, line_re):
        cuts.update(m.start() for m in regex.finditer(text))
    cuts.update(m.end() for m in _HEADING_LINE_RE.finditer(text))  # "## Refunds\nCustomers may ...": two
    bounds = sorted(cuts)
    segments: list[Segment] = []
    for start, end in zip(bounds, bounds[1:], strict=False):
        seg = _stripped(text, start, end)
        if seg is None:
            continue
        if segments and _MARKERS_ONLY_RE.match(seg.text):  # "...7 days.\n[1]": the marker is the previous one's
            prev = segments.pop()
            seg = Segment(text[prev.start : seg.end], prev.start, seg.end)
        segments.append(seg)
    return segments


def _is_false_stop(text: str, pos: int) -> bool:
    """A period after an abbreviation ("e.g.") or a list number ("1.") ends no sentence."""
    if text[pos] != ".":
        return False
    before = text[:pos]
    word = _WORD_BEFORE_RE.search(before)
    if word and (word.group(1).lower().rstrip(".") in _ABBREVIATIONS or len(word.group(1)) == 1):
        return True
    if word and _INITIALISM_RE.search(word.group(1)):  # "U.S." and "U.K." end no sentence
        return True
    return bool(_LIST_NUMBER_RE.search(before))


def _stripped(text: str, start: int, end: int) -> Segment | None:
    piece = text[start:end]
    lead = len(piece) - len(piece.lstrip())
    body = piece.strip()
    if not body:
        return None
    return Segment(body, start + lead, start + lead + len(body))


class SentenceStream:
    """Feed text deltas; get back sentences once they can no longer change.

    A sentence is complete when a later sentence has begun that is not a citation marker
    (the marker could still belong to it). ``<think>...</think>`` reasoning is dropped.
    """

    def __init__(self, newline_breaks: bool = True) -> None:
        self._buffer = ""
        self._emitted = 0
        self._newline_breaks = newline_breaks

    @property
    def text(self) -> str:
        return strip_reasoning(self._buffer)

    def feed(self, delta: str) -> list[Segment]:
        self._buffer += delta
        segments = split_sentences(self.text, self._newline_breaks)
        complete = len(segments) - 1
        if complete >= 1 and segments[-1].text.startswith("["):
            complete -= 1
        return self._take(segments, complete)

    def close(self) -> list[Segment]:
        segments = split_sentences(self.text, self._newline_breaks)
        return self._take(segments, len(segments))

    def _take(self, segments: list[Segment], complete: int) -> list[Segment]:
        new = segments[self._emitted : max(complete, self._emitted)]
        self._emitted += len(new)
        return new
