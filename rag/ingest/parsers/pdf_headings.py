"""PDF headings: from the outline (bookmarks) where the file has one, else from font sizes.

Outline: each bookmark names a page and usually a height on it. Its heading is the line (or
up to ``MAX_HEADING_LINES`` lines, for a wrapped title) of that page, else of the first lines of
the next one, whose letters and digits are the title's, a section number or label before it
allowed ("1.1.4 The root shell prompt" for the bookmark "The root shell prompt"); of several
such lines the one nearest the bookmark's height wins. A label line just above ("Chapter 1")
joins the heading. The bookmark's depth is the heading level. Bookmarks whose title is on no
line of its page are left out.

Font sizes, for files without a usable outline: the body size is the size most characters are
set in; lines set ``MIN_SCALE`` times larger, short and not ending like a sentence, are headings,
the largest size level 1, the next level 2 and so on (at most ``MAX_LEVELS``). A size that sets
more than ``MAX_HEADING_SHARE`` of the characters is body text of another kind, not a heading.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from rag.ingest.parsers.pdf_lines import PdfLine

MAX_HEADING_LINES = 3
NEXT_PAGE_LINES = 4  # a bookmark at a page's foot whose heading went to the next page
MIN_SCALE = 1.15
MAX_LEVELS = 4
MAX_HEADING_CHARS = 120
MAX_HEADING_SHARE = 0.2
_LABEL = r"(?:chapter|part|appendix|section|annex|chap)"
_PREFIX_RE = re.compile(rf"{_LABEL}?(?:[ivxlc]+|[a-z])?\d+|{_LABEL}(?:[ivxlc]+|[a-z]|\d+)")
_NOT_ALNUM_RE = re.compile(r"[\W_]+")
_SENTENCE_END = (".", ",", ";", ":", "!", "?", "\u3002", "\uff0c")


@dataclass(frozen=True)
class Bookmark:
    level: int  # 1 = top
    title: str
    page: int  # 0-based page index
    y: float | None  # height on the page it points at, when it says


@dataclass(frozen=True)
class HeadingMark:
    """Lines ``line`` .. ``line + count - 1`` of page ``page`` (0-based) are a heading of ``level``."""

    page: int
    line: int
    count: int
    level: int


def read_outline(pdf: pdfium.PdfDocument) -> list[Bookmark]:
    """The outline's bookmarks that point at a page of this document, in outline order."""
    found = []
    for item in pdf.get_toc():
        dest = item.get_dest()
        index = dest.get_index() if dest is not None else None
        if index is None or not 0 <= index < len(pdf) or not item.get_title().strip():
            continue
        found.append(Bookmark(item.level + 1, item.get_title(), index, _height(dest)))
    return found


def _height(dest: pdfium.PdfDest) -> float | None:
    mode, position = dest.get_view()
    values = list(position)
    if mode == pdfium_c.PDFDEST_VIEW_XYZ and len(values) >= 2:
        y = values[1]
    elif mode in (pdfium_c.PDFDEST_VIEW_FITH, pdfium_c.PDFDEST_VIEW_FITBH) and values:
        y = values[0]
    else:
        return None
    return y if math.isfinite(y) and y > 0 else None


def outline_headings(pages: list[list[PdfLine]], bookmarks: list[Bookmark]) -> list[HeadingMark]:
    """One mark per bookmark found on its page (a line claimed once), in bookmark order."""
    wanted = {b.page for b in bookmarks} | {b.page + 1 for b in bookmarks}
    keys = [[key(line.text) for line in page] if n in wanted else [] for n, page in enumerate(pages)]
    marks, taken = [], set()
    for bookmark in bookmarks:
        mark = _locate(pages, keys, bookmark)
        if mark is not None and (mark.page, mark.line) not in taken:
            taken.add((mark.page, mark.line))
            marks.append(mark)
    return marks


def key(text: str) -> str:
    """Letters and digits, case folded: what a bookmark title and its line share."""
    return _NOT_ALNUM_RE.sub("", text.casefold())


def _locate(pages: list[list[PdfLine]], keys: list[list[str]], bookmark: Bookmark) -> HeadingMark | None:
    title = key(bookmark.title)
    if not title or bookmark.page >= len(pages):
        return None
    for page, limit in ((bookmark.page, None), (bookmark.page + 1, NEXT_PAGE_LINES)):
        lines = pages[page][:limit] if page < len(pages) else []
        line_keys = keys[page][:limit] if page < len(pages) else []
        spans = [(i, n) for i in range(len(lines)) for n in _title_lines(line_keys, i, title)]
        if spans:
            line, count = min(spans, key=lambda s: _distance(lines[s[0]], bookmark.y, page == bookmark.page))
            if line and _PREFIX_RE.fullmatch(line_keys[line - 1]):
                line, count = line - 1, count + 1
            return HeadingMark(page, line, count, bookmark.level)
    return None


def _title_lines(keys: list[str], start: int, title: str) -> list[int]:
    """How many lines from ``start`` (their ``key``s) spell ``title`` (at most one answer, as a list)."""
    first = keys[start]
    if not first or (title[:6] not in first and first not in title):
        return []  # the title's start is not on this line, nor is the line a part of the title
    joined = ""
    for count in range(1, min(MAX_HEADING_LINES, len(keys) - start) + 1):
        joined += keys[start + count - 1]
        if _same_title(joined, title):
            return [count]
        if len(joined) >= len(title) + 12:
            break
    return []


def _same_title(line: str, title: str) -> bool:
    if line == title:
        return True
    if line.endswith(title):
        return _PREFIX_RE.fullmatch(line[: -len(title)]) is not None
    return title.endswith(line) and _PREFIX_RE.fullmatch(title[: -len(line)]) is not None


def _distance(line: PdfLine, y: float | None, same_page: bool) -> float:
    if not same_page or y is None:
        return 0.0
    return abs(line.top - y)


def font_headings(pages: list[list[PdfLine]]) -> list[HeadingMark]:
    """Headings by size where the file has no outline (see the module docstring)."""
    chars = Counter()
    for line in (line for page in pages for line in page):
        chars[_rounded(line.size)] += len(line.text)
    if not chars:
        return []
    body = chars.most_common(1)[0][0]
    total = sum(chars.values())
    sizes = sorted(
        (s for s in chars if s >= body * MIN_SCALE and chars[s] <= MAX_HEADING_SHARE * total),
        reverse=True,
    )
    levels = {size: min(rank + 1, MAX_LEVELS) for rank, size in enumerate(sizes)}
    marks = []
    for number, page in enumerate(pages):
        marks.extend(_size_marks(number, page, levels))
    return marks


def _size_marks(number: int, page: list[PdfLine], levels: dict[float, int]) -> list[HeadingMark]:
    marks: list[HeadingMark] = []
    for i, line in enumerate(page):
        level = levels.get(_rounded(line.size))
        if level is None or not _looks_like_heading(line):
            continue
        last = marks[-1] if marks else None
        if last and last.line + last.count == i and last.level == level and last.count < MAX_HEADING_LINES:
            marks[-1] = HeadingMark(number, last.line, last.count + 1, level)  # a wrapped title
        else:
            marks.append(HeadingMark(number, i, 1, level))
    return marks


def _looks_like_heading(line: PdfLine) -> bool:
    text = line.text
    return (
        not line.cells
        and len(text) <= MAX_HEADING_CHARS
        and any(ch.isalpha() for ch in text)
        and not text.endswith(_SENTENCE_END)
    )


def _rounded(size: float) -> float:
    return round(size * 2) / 2
