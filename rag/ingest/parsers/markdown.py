"""Markdown: the normalized source text itself, with ATX (``#``) and setext headings located in it.

The text keeps its Markdown syntax (heading markers included) so offsets map 1:1 onto what the
user wrote. Lines inside fenced code blocks and YAML front matter are never headings.
"""

from __future__ import annotations

import re

from rag import __version__ as RAG_VERSION
from rag.ingest.normalize import normalize_text
from rag.ingest.parsers.builder import single_page
from rag.ingest.parsers.text import decode_text
from rag.records import Heading, ParsedDocument

_ATX_RE = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*")
_SETEXT_RE = re.compile(r" {0,3}(=+|-+)[ \t]*")
_FENCE_RE = re.compile(r" {0,3}(`{3,}|~{3,})")
_NOT_SETEXT_TITLE_RE = re.compile(r" {0,3}(?:[-*+>]|\d{1,9}[.)])(?:[ \t]|$)|#| {4}|\t")


def parse_markdown(name: str, data: bytes, max_pages: int) -> ParsedDocument:
    text = normalize_text(decode_text(name, data))
    return single_page(text, find_headings(text), "markdown", RAG_VERSION, empty=f"'{name}' contains only whitespace.")


def find_headings(text: str) -> tuple[Heading, ...]:
    """Headings in document order; ``Heading.title == text[start:end]``."""
    headings: list[Heading] = []
    fence = ""  # the opening fence while inside a code block
    candidate: tuple[int, str] | None = None  # a one-line paragraph that an underline would make a heading
    prev_blank = True
    lines = text.split("\n")
    skip = _front_matter_lines(lines)
    offset = sum(len(line) + 1 for line in lines[:skip])
    for line in lines[skip:]:
        fence, in_code = _update_fence(fence, line)
        heading = None if in_code else (_atx(line, offset) or _setext(candidate, line))
        if heading is not None:
            headings.append(heading)
        blank = not line.strip()
        titled = not (in_code or blank or heading is not None or _NOT_SETEXT_TITLE_RE.match(line))
        candidate = (offset, line) if titled and prev_blank else None
        prev_blank = blank
        offset += len(line) + 1
    return tuple(headings)


def _atx(line: str, offset: int) -> Heading | None:
    match = _ATX_RE.fullmatch(line)
    if match is None or not match.group(2):
        return None
    return Heading(len(match.group(1)), match.group(2), offset + match.start(2), offset + match.end(2))


def _setext(prev: tuple[int, str] | None, line: str) -> Heading | None:
    """``line`` underlines ``prev`` (a one-line paragraph) with ``===`` (level 1) or ``---`` (level 2)."""
    if prev is None:
        return None
    match = _SETEXT_RE.fullmatch(line)
    if match is None:
        return None
    start, title_line = prev
    title = title_line.strip()
    lead = len(title_line) - len(title_line.lstrip())
    return Heading(1 if match.group(1)[0] == "=" else 2, title, start + lead, start + lead + len(title))


def _update_fence(fence: str, line: str) -> tuple[str, bool]:
    """(fence after this line, whether this line is code or a fence line)."""
    match = _FENCE_RE.match(line)
    if not fence:
        return (match.group(1), True) if match else ("", False)
    if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence) and not line.strip(" `~"):
        return "", True
    return fence, True


def _front_matter_lines(lines: list[str]) -> int:
    """Number of lines taken by a leading YAML front-matter block (``---`` ... ``---``), else 0."""
    if not lines or lines[0] != "---":
        return 0
    for i in range(1, min(len(lines), 200)):
        if lines[i] in ("---", "..."):
            return i + 1
    return 0
