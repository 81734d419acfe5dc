"""Running headers and footers: the lines at a page's top or bottom edge that repeat across pages.

A page's edge lines are its ``EDGE_LINES`` highest and lowest lines by position (not reading order:
a footer is often drawn first). An edge line is running when its text, digits and roman numerals
folded ("Debian Reference 57 / 233" and "... 58 / 233" are one), stands at the same edge and
height (within one or two ``HEIGHT_STEP``: a footer stays put, the last line of body text moves)
on enough pages: ``MIN_PAGES`` when it holds a number (page numbers change, so a repeated
numbered line is a header: "Chapter 4: Function reference 16"; a bare "Chapter 3" is not), else
``MIN_PAGES`` and ``MIN_SHARE`` of the pages (a plain line at the top of three pages of a long
book can be content). A line holding only a page number ("12", "iv", "- 3 -", "Page 3 of 9") at
an edge goes too. Lines are removed from each edge inwards and removal stops at the first line
that is not running; the last line removed must stand ``SET_APART`` times its size from the first
line kept (a numbered first line of body text is in the body's spacing, a header is not). Documents of fewer than ``MIN_PAGES`` pages keep their repeated lines (two
pages cannot tell a header from content).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from rag.ingest.parsers.pdf_lines import PdfLine

EDGE_LINES = 2
MIN_PAGES = 3
MIN_SHARE = 0.1
_ROMAN = r"(?=[ivxl])(?:xc|xl|l?x{0,3})(?:ix|iv|v?i{0,3})"  # i to lxxxix: front-matter page numbers
_ROMAN_RE = re.compile(_ROMAN, re.IGNORECASE)
_DIGITS_RE = re.compile(r"\d+")
_PAGE_NUMBER_RE = re.compile(
    rf"[-\u2013\u2014(\[]?\s*(?:page\s+)?(?:\d+|{_ROMAN})(?:\s*(?:/|of)\s*\d+)?\s*[-\u2013\u2014)\]]?",
    re.IGNORECASE,
)
_LABEL_RE = re.compile(r"(?:chapter|part|appendix|section|lesson|unit) #")  # "Chapter 1" opens a chapter
# Lines of text stand about one size (loose glyph box height) apart; a header or footer further.
SET_APART = 1.6
HEIGHT_STEP = 3.0  # points; a running line stands within a step or two of the same height on every page
_TOP, _BOTTOM = "top", "bottom"
_Key = tuple[str, str, int]


@dataclass(frozen=True)
class RunningLines:
    """Each page's lines without its running header and footer, and the lines removed."""

    pages: list[list[PdfLine]]
    removed: list[PdfLine]


def remove_running_lines(pages: list[list[PdfLine]]) -> RunningLines:
    """Drop running headers, footers and bare page numbers from the edges of every page."""
    if len([p for p in pages if p]) < MIN_PAGES:
        return RunningLines(pages, [])
    counts = Counter(key for page in pages for key in {_key(page, edge, i) for edge, i in _edge_lines(page)})
    plain_min = max(MIN_PAGES, math.ceil(MIN_SHARE * len(pages)))

    def running(key: _Key) -> bool:
        edge, text, height = key
        seen = sum(counts[(edge, text, height + step)] for step in (-1, 0, 1))
        return seen >= (MIN_PAGES if "#" in text else plain_min) and not _LABEL_RE.fullmatch(text)

    kept, removed = [], []
    for page in pages:
        drop = _dropped(page, running)
        kept.append([line for i, line in enumerate(page) if i not in drop])
        removed.extend(page[i] for i in sorted(drop))
    return RunningLines(kept, removed)


def fold(text: str) -> str:
    """The line with numbers as ``#`` and case and spacing folded: the key of a running line."""
    words = _DIGITS_RE.sub("#", text).casefold().split()
    for end in {0, len(words) - 1} if words else ():  # front-matter page numbers: "Debian Reference iv"
        if _ROMAN_RE.fullmatch(words[end]):
            words[end] = "#"
    return " ".join(words)


def is_page_number(text: str) -> bool:
    return _PAGE_NUMBER_RE.fullmatch(text.strip()) is not None


def _edge_lines(page: list[PdfLine]) -> list[tuple[str, int]]:
    """(edge, index) of the highest lines (top down) and the lowest (bottom up), ``EDGE_LINES`` each."""
    by_height = sorted(range(len(page)), key=lambda i: -page[i].top)
    top = [(_TOP, i) for i in by_height[:EDGE_LINES]]
    return top + [(_BOTTOM, i) for i in by_height[::-1][:EDGE_LINES]]


def _key(page: list[PdfLine], edge: str, index: int) -> _Key:
    """Folded text and height (``HEIGHT_STEP`` buckets) of an edge line: its top at the top, else its bottom."""
    line = page[index]
    return edge, fold(line.text), round((line.top if edge == _TOP else line.bottom) / HEIGHT_STEP)


def _dropped(page: list[PdfLine], running: Callable[[_Key], bool]) -> set[int]:
    by_height = sorted(range(len(page)), key=lambda i: -page[i].top)
    drop: set[int] = set()
    for order in (by_height, by_height[::-1]):
        edge = _TOP if order is by_height else _BOTTOM
        run = []
        for i in order[:EDGE_LINES]:
            if not running(_key(page, edge, i)) and not is_page_number(page[i].text):
                break
            run.append(i)
        while run and len(run) < len(order) and not _set_apart(page, run[-1], order[len(run)]):
            run.pop()  # the last line taken sits in the body's line spacing: it is body text
        drop.update(run)
    if len(drop) >= len(page):  # a page of nothing but edge lines keeps them (a title page)
        return set()
    return drop


def _set_apart(page: list[PdfLine], edge_line: int, body_line: int) -> bool:
    """A header or footer stands further from the body than the body's lines from each other."""
    return abs(page[edge_line].top - page[body_line].top) > SET_APART * page[body_line].size
