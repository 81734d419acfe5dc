"""Sentence segmentation with character offsets, for English and Chinese text.

Citation markers that follow a sentence's final punctuation ("... 7 days. [1]") belong to
that sentence, so an answer splits into sentences that each carry their own [n].

A table row rendered as a record line ("city: Dublin; headcount: 118; site_lead: ...", the
CSV parser's form) is one sentence: it ends at its line break, and a period inside a cell
does not end it. A row keeps its column names, so a cited row says what each value is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rag.llm import strip_reasoning
from rag.text.script import HAN_RE

CJK_RE = HAN_RE  # one ideograph

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
_LINE_SPAN_RE = re.compile(r"[^\n]+")
_FIELD_RE = re.compile(r"\s*([^:;\n]{1,60}): \S")  # "column: value"


@dataclass(frozen=True)
class Segment:
    """``text == source[start:end]``, stripped of surrounding whitespace."""

    text: str
    start: int
    end: int


def split_sentences(text: str, newline_breaks: bool = False) -> list[Segment]:
    """Split ``text`` into sentences with offsets.

    Paragraph breaks and list items always end a sentence; with ``newline_breaks`` every
    line break does (answers), without it single newlines are treated as line wraps (PDFs).
    """
    cuts = {0, len(text)}
    rows = record_lines(text)
    for match in _END_RE.finditer(text):
        if not _is_false_stop(text, match.start()) and not any(s < match.end() < e for s, e in rows):
            cuts.add(match.end())
    for start, end in rows:
        cuts.update((start, end))
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


def record_keys(line: str) -> list[str] | None:
    """The column names of a record line ("city: Dublin; headcount: 118" -> ["city", "headcount"]),
    None when some piece between "; " is not "name: value" or there are fewer than two."""
    pieces = line.strip().split("; ")
    if len(pieces) < 2:
        return None
    keys = [m.group(1).strip() for m in map(_FIELD_RE.match, pieces) if m]
    return keys if len(keys) == len(pieces) else None


def record_lines(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each line of ``text`` that is a record line."""
    return [m.span() for m in _LINE_SPAN_RE.finditer(text) if record_keys(m.group())]


def partial_row(segments: list[Segment]) -> bool:
    """The first segment is the tail of a row cut off by the chunk's start: a line of fields
    whose first piece is a bare value ("Floor 5, Valencia; site_lead: ...; headcount: 43"), or a
    record line starting at a column which the chunk's other rows hold after their first one."""
    if not segments:
        return False
    pieces = segments[0].text.strip().split("; ")
    if len(pieces) >= 3 and not _FIELD_RE.match(pieces[0]) and record_keys("; ".join(pieces[1:])):
        return True
    first = record_keys(segments[0].text)
    if not first:
        return False
    for seg in segments[1:]:
        keys = record_keys(seg.text)
        if keys and keys[0] != first[0] and first[0] in keys[1:]:
            return True
    return False


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
